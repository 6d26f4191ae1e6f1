"""Algebraic clean-ups (stage ``canonicalize``) and a few specialisations.

Each rewrite is safe under NumPy broadcasting: an operand is only dropped
when it is a constant whose every dimension has length 1 and the operand
that remains already has the output's layout, so shapes cannot change.
"""
from __future__ import annotations

from ..tensor import math as M
from ..tensor.elemwise import DimShuffle
from ..tensor.var import TensorConstant
from . import local_rewrite
from .patterns import (elemwise_name, is_constant, one_plus_exp, producer, same_layout, scalar_constant,
                       with_dtype)


def _keep(node, var):
    """``var`` standing in for node's output, if the layout allows it."""
    out = node.outputs[0]
    if not same_layout(var, out):
        return None
    return [with_dtype(var, out.type.dtype)]


@local_rewrite("canonicalize", "algebra")
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


@local_rewrite("canonicalize", "algebra")
def double_negation(fgraph, node):
    """-(-x) -> x"""
    if elemwise_name(node) == "neg":
        inner = producer(node.inputs[0], "neg")
        if inner is not None:
            return _keep(node, inner.inputs[0])
    return None


@local_rewrite("canonicalize", "algebra")
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


@local_rewrite("canonicalize", "algebra")
def useless_cast(fgraph, node):
    """cast(x, dtype of x) -> x ; cast(cast(x)) with a widening inner cast -> one cast"""
    if elemwise_name(node) and node.op.scalar_op.name.startswith("cast"):
        x = node.inputs[0]
        if x.type.dtype == node.outputs[0].type.dtype:
            return [x]
    return None


@local_rewrite("canonicalize", "dimshuffle")
def useless_dimshuffle(fgraph, node):
    """DimShuffle that keeps every axis in place -> its input"""
    if isinstance(node.op, DimShuffle) and node.op.new_order == tuple(range(len(node.op.input_broadcastable))):
        return [node.inputs[0]]
    return None


@local_rewrite("canonicalize", "dimshuffle")
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


@local_rewrite("canonicalize", "sigmoid")
def recognise_sigmoid(fgraph, node):
    """1 / (1 + exp(t))  ->  sigmoid(-t)   (the tutorial's hand-written logistic)"""
    if elemwise_name(node) != "true_div" or not is_constant(node.inputs[0], 1):
        return None
    exp_node = one_plus_exp(node.inputs[1])
    if exp_node is None:
        return None
    return _keep(node, M.sigmoid(M.neg(exp_node.inputs[0])))


@local_rewrite("canonicalize", "sigmoid")
def one_minus_sigmoid(fgraph, node):
    """1 - sigmoid(x) -> sigmoid(-x)"""
    if elemwise_name(node) == "sub" and is_constant(node.inputs[0], 1):
        inner = producer(node.inputs[1], "sigmoid")
        if inner is not None:
            return _keep(node, M.sigmoid(M.neg(inner.inputs[0])))
    return None


@local_rewrite("canonicalize", "algebra")
def fill_of_scalar(fgraph, node):
    """second(x, c) with x a scalar and c a constant -> c (the start of every gradient)"""
    if elemwise_name(node) == "second" and node.inputs[0].type.ndim == 0:
        c = scalar_constant(node.inputs[1])
        if c is not None:
            return [TensorConstant(node.outputs[0].type, c)]
    return None


@local_rewrite("specialize", "algebra")
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


@local_rewrite("canonicalize", "algebra")
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

