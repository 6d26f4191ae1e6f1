"""Algebraic clean-ups (stage ``canonicalize``) and a few specialisations.

Rules that are patterns are written as patterns (:func:`.patterns.pattern_rewrite`: they match
CPU and GPU nodes alike); the others are code, building CPU ops with ``tensor.math``.  Each rewrite
is safe under NumPy broadcasting: an operand is only dropped
when it is a constant whose every dimension has length 1 and the operand
that remains already has the output's layout, so shapes cannot change.
"""
from __future__ import annotations

from ..scalar.ops import Cast
from ..tensor import math as M
from ..tensor.elemwise import DimShuffle, Elemwise
from ..tensor.var import TensorConstant
from . import local_rewrite
from .patterns import (ABS, ADD, EXP, LOG1P, MUL, NEG, POW, SECOND, SIGMOID, SOFTPLUS, SQR, SQRT, SUB, TRUE_DIV,
                       cpu_scalar_op, pattern_rewrite, producer, same_layout, scalar_constant, single_client,
                       with_dtype)
from .shapes import shape_still_checked


def _keep(node, var):
    """``var`` standing in for node's output, if the layout allows it."""
    out = node.outputs[0]
    if not same_layout(var, out):
        return None
    return [with_dtype(var, out.type.dtype)]


pattern_rewrite("canonicalize", "algebra", name="remove_identity_ops", rules=[
    ((MUL, "x", 1), "x"), ((MUL, 1, "x"), "x"), ((ADD, "x", 0), "x"), ((ADD, 0, "x"), "x"),
    ((SUB, "x", 0), "x"), ((TRUE_DIV, "x", 1), "x"), ((POW, "x", 1), "x")],
    doc="x*1, 1*x, x+0, 0+x, x-0, x/1, x**1  ->  x")

pattern_rewrite("canonicalize", "algebra", name="double_negation", rules=[((NEG, (NEG, "x")), "x")],
                doc="-(-x) -> x")

pattern_rewrite("canonicalize", "algebra", name="negated_subtraction", rules=[
    ((NEG, (SUB, "a", "b")), (SUB, "b", "a")),
    ((SUB, (NEG, "a"), "b"), (NEG, (ADD, "a", "b")))],
    doc="-(a - b) -> b - a ;  (-a) - b -> -(a + b)")


@local_rewrite("canonicalize", "algebra", tracks=[Elemwise])
def useless_cast(fgraph, node):
    """cast(x, dtype of x) -> x ; cast(cast(x)) with a widening inner cast -> one cast"""
    if isinstance(cpu_scalar_op(node), Cast):
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


pattern_rewrite("canonicalize", "sigmoid", name="recognise_sigmoid", rules=[
    ((TRUE_DIV, 1, (ADD, 1, (EXP, "t"))), (SIGMOID, (NEG, "t"))),
    ((TRUE_DIV, 1, (ADD, (EXP, "t"), 1)), (SIGMOID, (NEG, "t")))],
    doc="1 / (1 + exp(t))  ->  sigmoid(-t)   (the tutorial's hand-written logistic)")

pattern_rewrite("canonicalize", "sigmoid", name="one_minus_sigmoid", rules=[((SUB, 1, (SIGMOID, "x")), (SIGMOID, (NEG, "x")))],
                doc="1 - sigmoid(x) -> sigmoid(-x)")


@local_rewrite("canonicalize", "algebra", tracks=[Elemwise(SECOND)])
def fill_of_scalar(fgraph, node):
    """second(x, c) with x a scalar and c a constant -> c (the start of every gradient)"""
    if cpu_scalar_op(node) == SECOND and node.inputs[0].type.ndim == 0:
        c = scalar_constant(node.inputs[1])
        if c is not None:
            return [TensorConstant(node.outputs[0].type, c)]
    return None


pattern_rewrite("specialize", "algebra", name="specialise_pow", rules=[
    ((POW, "x", 2), (SQR, "x")), ((POW, "x", 0.5), (SQRT, "x")), ((POW, "x", -1), (TRUE_DIV, 1, "x"))],
    when=lambda bound, node: bound["x"].type.dtype[0] in "fc",
    doc="x**2 -> sqr(x), x**0.5 -> sqrt(x), x**-1 -> 1/x   (float x)")


pattern_rewrite("canonicalize", "algebra", name="sink_negation", rules=[
    ((MUL, (NEG, "a"), (NEG, "b")), (MUL, "a", "b")),
    ((TRUE_DIV, (NEG, "a"), (NEG, "b")), (TRUE_DIV, "a", "b")),
    ((MUL, (NEG, "a"), "b"), (NEG, (MUL, "a", "b"))),
    ((MUL, "a", (NEG, "b")), (NEG, (MUL, "a", "b"))),
    ((TRUE_DIV, (NEG, "a"), "b"), (NEG, (TRUE_DIV, "a", "b"))),
    ((ADD, "a", (NEG, "b")), (SUB, "a", "b")),
    ((ADD, (NEG, "a"), "b"), (SUB, "b", "a")),
    ((SUB, "a", (NEG, "b")), (ADD, "a", "b"))],
    doc="""Move negations outward so they cancel: (-a)*b -> -(a*b), (-a)*(-b) -> a*b,
    a + (-b) -> a - b, a - (-b) -> a + b, (-a)/b -> -(a/b).  Gradients are full of these.""")


@local_rewrite("canonicalize", "algebra", tracks=[Elemwise(ADD), Elemwise(SUB)])
def common_factor(fgraph, node):
    """a*b + a*c -> a*(b + c), and a*b - a*c -> a*(b - c), when neither product is read elsewhere.

    One multiplication less; gradients of means are full of these (the logistic-regression step's
    ``(1/N)*sigmoid(z) - (1/N)*y`` becomes ``(1/N)*(sigmoid(z) - y)``, NumPy's ``(p - y) / N``)."""
    op = cpu_scalar_op(node)
    if op not in (ADD, SUB):
        return None
    left, right = producer(node.inputs[0], MUL), producer(node.inputs[1], MUL)
    if left is None or right is None or left is right:
        return None
    if not (single_client(fgraph, left.outputs[0]) and single_client(fgraph, right.outputs[0])):
        return None
    for a in left.inputs:
        if a in right.inputs:
            b = left.inputs[1] if left.inputs[0] is a else left.inputs[0]
            c = right.inputs[1] if right.inputs[0] is a else right.inputs[0]
            inner = M.add(b, c) if op == ADD else M.sub(b, c)
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
    op = cpu_scalar_op(node)
    if op is None or op == SECOND or len(node.outputs) != 1:
        return None
    out = node.outputs[0]
    for k, inp in enumerate(node.inputs):
        fill = producer(inp, SECOND)
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


@local_rewrite("specialize", "sigmoid", tracks=[Elemwise(SIGMOID)])
def share_sigmoid(fgraph, node):
    """sigmoid(-x) -> 1 - sigmoid(x), when sigmoid(x) is computed anyway (one transcendental,
    not two: the logistic-regression gradient needs both).  coursekit's sigmoid is accurate
    in absolute terms (``0.5 * tanh(x / 2) + 0.5``), and so is the subtraction."""
    if cpu_scalar_op(node) != SIGMOID:
        return None
    negation = producer(node.inputs[0], NEG)
    if negation is None:
        return None
    twin = _client_named(fgraph, negation.inputs[0], SIGMOID, node.outputs[0].type)
    return _keep(node, M.sub(1, twin.outputs[0])) if twin is not None else None


@local_rewrite("specialize", "softplus", "fusion", tracks=[Elemwise(SOFTPLUS)])  # pays only when fused: excluded with fusion
def share_softplus(fgraph, node):
    """softplus(x) and softplus(-x) both in the graph -> each as max(+-x, 0) + log1p(exp(-|x|)),
    so the expensive part is one shared node (the logistic loss needs both).  These are the
    very steps of coursekit's softplus, so the values are the same to the last bit, tails included
    (``softplus(x) - x`` would be shorter, but loses every digit of softplus(-x) for large x)."""
    if cpu_scalar_op(node) != SOFTPLUS:
        return None
    arg = node.inputs[0]
    negation = producer(arg, NEG)
    if negation is not None and _client_named(fgraph, negation.inputs[0], SOFTPLUS, node.outputs[0].type):
        base = negation.inputs[0]
    else:
        partners = [_client_named(fgraph, c.outputs[0], SOFTPLUS, node.outputs[0].type)
                    for c, _ in fgraph.clients.get(arg, []) if c != "output" and cpu_scalar_op(c) == NEG]
        if not any(partners) and not _expanded_tail_exists(fgraph, arg):
            return None
        base = arg
    shared_tail = M.log1p(M.exp(M.neg(M.abs(base))))
    return _keep(node, M.add(M.maximum(arg, 0), shared_tail))


def _client_named(fgraph, var, op, out_type):
    """An ``op(var)`` node already in the graph (with output type ``out_type``), else None."""
    for client, _ in fgraph.clients.get(var, []):
        if client != "output" and cpu_scalar_op(client) == op and client.outputs[0].type == out_type:
            return client
    return None


def _expanded_tail_exists(fgraph, x):
    """Was the partner of ``softplus(x)`` already expanded (is ``log1p(exp(-abs(x)))`` in the graph)?"""
    frontier = [x]
    for op in (ABS, NEG, EXP, LOG1P):
        frontier = [c.outputs[0] for v in frontier for c, _ in fgraph.clients.get(v, [])
                    if c != "output" and cpu_scalar_op(c) == op]
        if not frontier:
            return False
    return True
