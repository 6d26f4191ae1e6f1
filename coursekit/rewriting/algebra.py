"""Algebraic clean-ups (stage ``canonicalize``) and a few specialisations.

Each rewrite is safe under NumPy broadcasting: an operand is only dropped
when it is a constant whose every dimension has length 1 and the operand
that remains already has the output's layout, so shapes cannot change.
"""
from __future__ import annotations

from ..tensor import math as M
from ..tensor.elemwise import DimShuffle, Elemwise
from ..tensor.var import TensorConstant
from . import local_rewrite
from .shapes import shape_still_checked
from .patterns import (elemwise_name, is_constant, one_plus_exp, producer, same_layout, scalar_constant,
                       single_client, with_dtype)


def _keep(node, var):
    """``var`` standing in for node's output, if the layout allows it."""
    out = node.outputs[0]
    if not same_layout(var, out):
        return None
    return [with_dtype(var, out.type.dtype)]


@local_rewrite("canonicalize", "algebra", tracks=[Elemwise])
def remove_identity_ops(fgraph, node):
    """x*1, 1*x, x+0, 0+x, x-0, x/1, x**1  ->  x"""
    name = elemwise_name(node)
    if name in ("mul", "add"):
        unit = 1 if name == "mul" else 0
        a, b = node.inputs
        if is_constant(b, unit):
            return _keep(node, a)
        if is_constant(a, unit):
            return _keep(node, b)
    if name in ("sub", "true_div", "pow"):
        unit = {"sub": 0, "true_div": 1, "pow": 1}[name]
        if is_constant(node.inputs[1], unit):
            return _keep(node, node.inputs[0])
    return None


@local_rewrite("canonicalize", "algebra", tracks=[Elemwise])
def double_negation(fgraph, node):
    """-(-x) -> x"""
    if elemwise_name(node) == "neg":
        inner = producer(node.inputs[0], "neg")
        if inner is not None:
            return _keep(node, inner.inputs[0])
    return None


@local_rewrite("canonicalize", "algebra", tracks=[Elemwise])
def negated_subtraction(fgraph, node):
    """-(a - b) -> b - a ;  (-a) - b -> -(a + b)"""
    name = elemwise_name(node)
    if name == "neg":
        inner = producer(node.inputs[0], "sub")
        if inner is not None:
            return _keep(node, M.sub(inner.inputs[1], inner.inputs[0]))
    if name == "sub":
        inner = producer(node.inputs[0], "neg")
        if inner is not None:
            return _keep(node, M.neg(M.add(inner.inputs[0], node.inputs[1])))
    return None


@local_rewrite("canonicalize", "algebra", tracks=[Elemwise])
def useless_cast(fgraph, node):
    """cast(x, dtype of x) -> x ; cast(cast(x)) with a widening inner cast -> one cast"""
    if elemwise_name(node) and node.op.scalar_op.name.startswith("cast"):
        x = node.inputs[0]
        if x.type.dtype == node.outputs[0].type.dtype:
            return [x]
    return None


@local_rewrite("canonicalize", "dimshuffle", tracks=[DimShuffle])
def useless_dimshuffle(fgraph, node):
    """DimShuffle that keeps every axis in place -> its input"""
    if isinstance(node.op, DimShuffle) and node.op.new_order == tuple(range(len(node.op.input_broadcastable))):
        return [node.inputs[0]]
    return None


@local_rewrite("canonicalize", "dimshuffle", tracks=[DimShuffle])
def merge_dimshuffles(fgraph, node):
    """DimShuffle(DimShuffle(x)) -> one DimShuffle"""
    if not isinstance(node.op, DimShuffle):
        return None
    inner = node.inputs[0].owner
    if inner is None or not isinstance(inner.op, DimShuffle):
        return None
    order = tuple("x" if d == "x" else inner.op.new_order[d] for d in node.op.new_order)
    try:
        op = DimShuffle(inner.op.input_broadcastable, order)
    except ValueError:
        return None
    return [op(inner.inputs[0])]


@local_rewrite("canonicalize", "sigmoid", tracks=[Elemwise])
def recognise_sigmoid(fgraph, node):
    """1 / (1 + exp(t))  ->  sigmoid(-t)   (the tutorial's hand-written logistic)"""
    if elemwise_name(node) != "true_div" or not is_constant(node.inputs[0], 1):
        return None
    exp_node = one_plus_exp(node.inputs[1])
    if exp_node is None:
        return None
    return _keep(node, M.sigmoid(M.neg(exp_node.inputs[0])))


@local_rewrite("canonicalize", "sigmoid", tracks=[Elemwise])
def one_minus_sigmoid(fgraph, node):
    """1 - sigmoid(x) -> sigmoid(-x)"""
    if elemwise_name(node) == "sub" and is_constant(node.inputs[0], 1):
        inner = producer(node.inputs[1], "sigmoid")
        if inner is not None:
            return _keep(node, M.sigmoid(M.neg(inner.inputs[0])))
    return None


@local_rewrite("canonicalize", "algebra", tracks=[Elemwise])
def fill_of_scalar(fgraph, node):
    """second(x, c) with x a scalar and c a constant -> c (the start of every gradient)"""
    if elemwise_name(node) == "second" and node.inputs[0].type.ndim == 0:
        c = scalar_constant(node.inputs[1])
        if c is not None:
            return [TensorConstant(node.outputs[0].type, c)]
    return None


@local_rewrite("specialize", "algebra", tracks=[Elemwise])
def specialise_pow(fgraph, node):
    """x**2 -> sqr(x), x**0.5 -> sqrt(x), x**-1 -> 1/x"""
    if elemwise_name(node) != "pow":
        return None
    exponent = scalar_constant(node.inputs[1])
    x = node.inputs[0]
    if x.type.dtype[0] not in "fc":
        return None
    replacement = {2: lambda: M.sqr(x), 0.5: lambda: M.sqrt(x), -1: lambda: M.true_div(1, x)}.get(exponent)
    return _keep(node, replacement()) if replacement else None


@local_rewrite("canonicalize", "algebra", tracks=[Elemwise])
def sink_negation(fgraph, node):
    """Move negations outward so they cancel: (-a)*b -> -(a*b), (-a)*(-b) -> a*b,
    a + (-b) -> a - b, a - (-b) -> a + b, (-a)/b -> -(a/b).  Gradients are full of these."""
    name = elemwise_name(node)
    if name not in ("mul", "true_div", "add", "sub"):
        return None
    a, b = node.inputs
    na, nb = producer(a, "neg"), producer(b, "neg")
    if na is None and nb is None:
        return None
    ia = na.inputs[0] if na is not None else None
    ib = nb.inputs[0] if nb is not None else None
    if name in ("mul", "true_div"):
        op = M.mul if name == "mul" else M.true_div
        if na is not None and nb is not None:
            return _keep(node, op(ia, ib))
        if name == "true_div" and na is None:
            return None  # a / (-b): leave it
        return _keep(node, M.neg(op(ia, b) if na is not None else op(a, ib)))
    if name == "add":
        if nb is not None:
            return _keep(node, M.sub(a, ib))
        return _keep(node, M.sub(b, ia))
    if nb is not None:  # a - (-b)
        return _keep(node, M.add(a, ib))
    return None



@local_rewrite("canonicalize", "algebra", tracks=[Elemwise])
def common_factor(fgraph, node):
    """a*b + a*c -> a*(b + c), and a*b - a*c -> a*(b - c), when neither product is read elsewhere.

    One multiplication less; gradients of means are full of these (the logistic-regression step's
    ``(1/N)*sigmoid(z) - (1/N)*y`` becomes ``(1/N)*(sigmoid(z) - y)``, NumPy's ``(p - y) / N``)."""
    name = elemwise_name(node)
    if name not in ("add", "sub"):
        return None
    left, right = producer(node.inputs[0], "mul"), producer(node.inputs[1], "mul")
    if left is None or right is None or left is right:
        return None
    if not (single_client(fgraph, left.outputs[0]) and single_client(fgraph, right.outputs[0])):
        return None
    for a in left.inputs:
        if a in right.inputs:
            b = left.inputs[1] if left.inputs[0] is a else left.inputs[0]
            c = right.inputs[1] if right.inputs[0] is a else right.inputs[0]
            inner = M.add(b, c) if name == "add" else M.sub(b, c)
            return _keep(node, M.mul(a, inner))
    return None


@local_rewrite("canonicalize", "algebra", "fill", tracks=[Elemwise])
def sink_fill(fgraph, node):
    """op(second(a, b), c) -> op(b, c) when c gives the result the same shape; else
    -> second(a, op(b, c)), so the fill moves toward the outputs until something else
    carries the shape (or the graph ends).

    Gradients start from ``fill(cost, 1)`` and ``fill(x, 0.01)``: materialised, each
    is a buffer written only to be read once.  ``mul(mul(fill(sqr(w), 0.01), 2), w)``
    becomes ``mul(0.02, w)`` (the inner product is folded once both are constants).
    The fill is cut only where dropping ``a`` cannot hide a shape error: ``a`` is
    computed anyway, or every array it was built from is still an input of the result.
    """
    name = elemwise_name(node)
    if name is None or name == "second" or len(node.outputs) != 1:
        return None
    out = node.outputs[0]
    for k, inp in enumerate(node.inputs):
        fill = producer(inp, "second")
        if fill is None:
            continue
        shape_source, value = fill.inputs
        new_inputs = list(node.inputs)
        new_inputs[k] = value
        without_fill = node.op(*new_inputs)
        if without_fill.type.dtype != out.type.dtype:
            continue
        if (without_fill.type.broadcastable == out.type.broadcastable
                and shape_still_checked(fgraph, shape_source, without_fill)):
            return [without_fill]
        # sink it: a fill read by several ops becomes one per reader, each cut where it can be
        return [M.second(shape_source, without_fill)]
    return None


@local_rewrite("specialize", "sigmoid", tracks=[Elemwise])
def share_sigmoid(fgraph, node):
    """sigmoid(-x) -> 1 - sigmoid(x), when sigmoid(x) is computed anyway (one transcendental,
    not two: the logistic-regression gradient needs both).  coursekit's sigmoid is accurate
    in absolute terms (``0.5 * tanh(x / 2) + 0.5``), and so is the subtraction."""
    if elemwise_name(node) != "sigmoid":
        return None
    negation = producer(node.inputs[0], "neg")
    if negation is None:
        return None
    twin = _client_named(fgraph, negation.inputs[0], "sigmoid", node.outputs[0].type)
    return _keep(node, M.sub(1, twin.outputs[0])) if twin is not None else None


@local_rewrite("specialize", "softplus", "fusion", tracks=[Elemwise])  # pays only when fused: excluded with fusion
def share_softplus(fgraph, node):
    """softplus(x) and softplus(-x) both in the graph -> each as max(+-x, 0) + log1p(exp(-|x|)),
    so the expensive part is one shared node (the logistic loss needs both).  These are the
    very steps of coursekit's softplus, so the values are the same to the last bit, tails included
    (``softplus(x) - x`` would be shorter, but loses every digit of softplus(-x) for large x)."""
    if elemwise_name(node) != "softplus":
        return None
    arg = node.inputs[0]
    negation = producer(arg, "neg")
    if negation is not None and _client_named(fgraph, negation.inputs[0], "softplus", node.outputs[0].type):
        base = negation.inputs[0]
    else:
        partners = [_client_named(fgraph, c.outputs[0], "softplus", node.outputs[0].type)
                    for c, _ in fgraph.clients.get(arg, []) if c != "output" and elemwise_name(c) == "neg"]
        if not any(partners) and not _expanded_tail_exists(fgraph, arg):
            return None
        base = arg
    shared_tail = M.log1p(M.exp(M.neg(M.abs(base))))
    return _keep(node, M.add(M.maximum(arg, 0), shared_tail))


def _client_named(fgraph, var, name, out_type):
    """A ``name(var)`` node already in the graph (with output type ``out_type``), else None."""
    for client, _ in fgraph.clients.get(var, []):
        if client != "output" and elemwise_name(client) == name and client.outputs[0].type == out_type:
            return client
    return None


def _expanded_tail_exists(fgraph, x):
    """Was the partner of ``softplus(x)`` already expanded (is ``log1p(exp(-abs(x)))`` in the graph)?"""
    frontier = [x]
    for name in ("abs", "neg", "exp", "log1p"):
        frontier = [c.outputs[0] for v in frontier for c, _ in fgraph.clients.get(v, [])
                    if c != "output" and elemwise_name(c) == name]
        if not frontier:
            return False
    return True
