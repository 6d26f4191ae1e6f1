"""Small helpers for writing rewrites: "is this node an elemwise add?" and friends."""
from __future__ import annotations

import numpy as np

from ..graph import Constant
from ..tensor.elemwise import DimShuffle, Elemwise
from ..tensor.math import cast


def elemwise_name(node):
    """The scalar op name of an Elemwise node ('add', 'exp', ...), else None."""
    if node is not None and isinstance(node.op, Elemwise) and node.op.device == "cpu":
        return node.op.scalar_op.name
    return None


def producer(var, name):
    """``var.owner`` if it is an Elemwise ``name`` node, else None."""
    node = var.owner
    return node if elemwise_name(node) == name else None


def scalar_constant(var):
    """The single value of a constant whose every dimension has length 1, else None.

    Looks through the DimShuffles that only add broadcastable axes.
    """
    while var.owner is not None and isinstance(var.owner.op, DimShuffle) and not var.owner.op.drop:
        var = var.owner.inputs[0]
    if isinstance(var, Constant) and var.data.size == 1:
        return var.data.reshape(()).item()
    return None


def one_plus_exp(var):
    """The ``exp`` node of ``1 + exp(t)`` (either order), else None."""
    add = producer(var, "add")
    if add is None:
        return None
    a, b = add.inputs
    other = a if is_constant(b, 1) else b if is_constant(a, 1) else None
    return producer(other, "exp") if other is not None else None


def is_constant(var, value):
    c = scalar_constant(var)
    return c is not None and c == value


def same_layout(a, b):
    """True when ``a`` can stand in for ``b``: same rank and broadcastable pattern."""
    return a.type.broadcastable == b.type.broadcastable


def with_dtype(var, dtype):
    return var if var.type.dtype == dtype else cast(var, dtype)


def single_client(fgraph, var):
    """True when exactly one node reads ``var`` and it is not a graph output."""
    clients = fgraph.clients.get(var, [])
    return len(clients) == 1 and clients[0][0] != "output"


def np_scalar(value, dtype):
    return np.asarray(value, dtype=dtype)
