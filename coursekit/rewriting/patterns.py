"""Rewrites as patterns, and small helpers for the rules that stay code.

A rule that *is* a pattern is written as one::

    pattern_rewrite("canonicalize", "algebra", name="double_negation",
                    rules=[((NEG, (NEG, "x")), "x")])

A pattern is a tuple ``(scalar_op, *arguments)``: an elementwise node of that
scalar op -- matched by the op itself, never by its name, on the CPU
``Elemwise`` and on its GPU twin ``GpuElemwise`` alike -- whose inputs match
the arguments.  An argument is a pattern, a name (``"x"``: any variable; the
same name twice must be the same variable) or a number (a constant of that
value, every dimension of length 1).  The replacement is a template of the
same form, built on the matched node's device.  The rule *tracks* exactly the
ops its patterns start with, so the rewrite loop shows it only those nodes.
A rule that needs code (it looks at the graph's clients, walks a sum) stays a
function; it reads nodes with :func:`scalar_op_of` and :func:`producer`.
"""
from __future__ import annotations

import numpy as np

from ..graph import Constant
from ..scalar import ops as S
from ..tensor.elemwise import DimShuffle, Elemwise
from ..tensor.math import cast
from ..tensor.type import TensorType
from ..tensor.var import TensorConstant, weak_constants
from . import local_rewrite

ADD, SUB, MUL, TRUE_DIV, NEG, POW = (S.get(n) for n in ("add", "sub", "mul", "true_div", "neg", "pow"))
EXP, LOG, LOG1P, SQR, SQRT, ABS = (S.get(n) for n in ("exp", "log", "log1p", "sqr", "sqrt", "abs"))
SIGMOID, SOFTPLUS, SECOND, MAXIMUM = (S.get(n) for n in ("sigmoid", "softplus", "second", "maximum"))


# one flop per element: cheaper for a fused kernel to redo than to write to memory and read back
# (fusion recomputes such an op inside each elementwise reader; shape checks read through it)
RECOMPUTED = ("add", "sub", "mul", "neg")


def scalar_op_of(node):
    """The scalar op of an elementwise node (CPU ``Elemwise`` or its GPU twin), else None."""
    if node is None:
        return None
    op = node.op
    op = getattr(op, "cpu_op", op) if not isinstance(op, Elemwise) else op  # a twin runs its CPU op's code
    return op.scalar_op if isinstance(op, Elemwise) else None


def cpu_scalar_op(node):
    """The scalar op of a CPU ``Elemwise`` node, else None: for code rules that build CPU ops (tensor.math)."""
    return node.op.scalar_op if node is not None and isinstance(node.op, Elemwise) else None


def elemwise_name(node):
    """The scalar op name of an elementwise node ('add', 'exp', ...), else None (for rules of one's own)."""
    scalar_op = scalar_op_of(node)
    return scalar_op.name if scalar_op is not None else None


def producer(var, op):
    """``var.owner`` if it is an elementwise node of ``op`` (a scalar op, or its name), else None."""
    node = var.owner
    scalar_op = scalar_op_of(node)
    if scalar_op is None:
        return None
    return node if (scalar_op == op if not isinstance(op, str) else scalar_op.name == op) else None


def scalar_constant(var):
    """The single value of a constant whose every dimension has length 1, else None.

    Looks through the DimShuffles that only add broadcastable axes.
    """
    while var.owner is not None and isinstance(var.owner.op, DimShuffle) and not var.owner.op.drop:
        var = var.owner.inputs[0]
    if isinstance(var, Constant) and var.data.size == 1:
        return var.data.reshape(()).item()
    return None


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


# ------------------------------------------------------------------ the matcher
def match(pattern, var, bindings):
    """Does ``var`` match ``pattern``?  Names are bound in ``bindings`` (a dict) as they match."""
    if isinstance(pattern, str):
        bound = bindings.setdefault(pattern, var)
        return bound is var
    if not isinstance(pattern, tuple):
        return is_constant(var, pattern)
    node = producer(var, pattern[0])
    if node is None or len(node.inputs) != len(pattern) - 1:
        return False
    return all(match(p, v, bindings) for p, v in zip(pattern[1:], node.inputs))


def build(template, bindings, like):
    """The variable ``template`` describes, its nodes on the device of the node ``like``."""
    if isinstance(template, str):
        return bindings[template]
    op, *args = template
    values = [build(a, bindings, like) if isinstance(a, (str, tuple)) else a for a in args]
    return apply_scalar_op(op, values, like)


def apply_scalar_op(op, args, like):
    """``op`` applied elementwise to ``args`` (variables and Python numbers), on ``like``'s device."""
    twin = like.op if not isinstance(like.op, Elemwise) else None
    if twin is None:
        return Elemwise(op)(*weak_constants(args, op))
    # on a device: numbers become one-element host constants of full rank (a kernel's scalar arguments)
    ndim = like.outputs[0].type.ndim
    dtype = np.result_type(*[np.dtype(a.type.dtype) for a in args if not _is_number(a)],
                           *[a for a in args if _is_number(a)])
    args = [TensorConstant(TensorType(dtype, (True,) * ndim), np.full((1,) * ndim, a, dtype)) if _is_number(a)
            else a for a in args]
    return type(twin)(Elemwise(op), twin.target)(*args)


def _is_number(value):
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)


def pattern_rewrite(stage, *tags, name, rules, when=None, doc=None):
    """Register a rewrite made of ``rules``: ``[(pattern, replacement template), ...]``, tried in order.

    ``when(bindings, node)``: an optional condition on what matched.  The replacement stands in for the
    node only when it has the node's layout (cast to its dtype if needed), so shapes cannot change.
    """
    roots = tuple(dict.fromkeys(pattern[0] for pattern, _ in rules))

    def rewrite(fgraph, node):
        out = node.outputs[0]
        for pattern, template in rules:
            bindings = {}
            if match(pattern, out, bindings) and (when is None or when(bindings, node)):
                result = build(template, bindings, node)
                if not same_layout(result, out):
                    continue
                return [result if result.type.dtype == out.type.dtype else _cast_like(result, out, node)]
        return None

    rewrite.__name__ = name
    rewrite.__doc__ = doc or "\n".join(f"{_text(p)} -> {_text(t)}" for p, t in rules)
    rewrite.rules = rules
    return local_rewrite(stage, *tags, name=name, tracks=[Elemwise(op) for op in roots])(rewrite)


def _cast_like(var, out, node):
    return with_dtype(var, out.type.dtype) if isinstance(node.op, Elemwise) else \
        apply_scalar_op(S.Cast(out.type.dtype), [var], node)


def _text(pattern):
    if isinstance(pattern, tuple):
        return f"{pattern[0].name}({', '.join(_text(p) for p in pattern[1:])})"
    return str(pattern)
