"""Numerical stabilisation: rewrite formulas that overflow into ones that don't.

The tutorial writes the logistic loss literally::

    p_1 = 1 / (1 + exp(-dot(x, w) - b))
    xent = -y * log(p_1) - (1 - y) * log(1 - p_1)

In float32, ``exp`` overflows for arguments above ~88, ``p_1`` rounds to
exactly 0 or 1, and ``log`` returns -inf.  Canonicalisation has already
turned ``p_1`` into ``sigmoid(z)`` and ``1 - p_1`` into ``sigmoid(-z)``;
here ``log(sigmoid(z))`` becomes ``-softplus(-z)``, which is finite for
every finite z.  :func:`stabilize_graph` applies the same rewrites *before*
differentiation (it is registered with
:func:`coursekit.gradient.register_cost_rewrite`), so the gradients are finite too.
"""
from __future__ import annotations

from ..fgraph import FunctionGraph
from ..gradient import register_cost_rewrite
from ..graph import clone_replace, graph_inputs
from ..tensor import math as M
from ..tensor.elemwise import Elemwise
from . import _DB, local_rewrite, run_stage
from .patterns import elemwise_name, is_constant, one_plus_exp, producer, same_layout


@local_rewrite("stabilize", "stabilize", tracks=[Elemwise])
def log_sigmoid(fgraph, node):
    """log(sigmoid(x)) -> -softplus(-x)   (and log(sigmoid(-x)) -> -softplus(x))"""
    if elemwise_name(node) != "log":
        return None
    inner = producer(node.inputs[0], "sigmoid")
    if inner is None:
        return None
    arg = inner.inputs[0]
    negated = producer(arg, "neg")
    result = M.neg(M.softplus(negated.inputs[0] if negated is not None else M.neg(arg)))
    return [result] if same_layout(result, node.outputs[0]) else None


@local_rewrite("stabilize", "stabilize", tracks=[Elemwise])
def log_one_minus_sigmoid(fgraph, node):
    """log(1 - sigmoid(x)) -> -softplus(x)"""
    if elemwise_name(node) != "log":
        return None
    sub = producer(node.inputs[0], "sub")
    if sub is None or not is_constant(sub.inputs[0], 1):
        return None
    inner = producer(sub.inputs[1], "sigmoid")
    if inner is None:
        return None
    result = M.neg(M.softplus(inner.inputs[0]))
    return [result] if same_layout(result, node.outputs[0]) else None


@local_rewrite("stabilize", "stabilize", tracks=[Elemwise])
def log_one_plus_exp(fgraph, node):
    """log(1 + exp(x)) and log1p(exp(x)) -> softplus(x)"""
    name = elemwise_name(node)
    if name == "log1p":
        inner = producer(node.inputs[0], "exp")
    elif name == "log":
        inner = one_plus_exp(node.inputs[0])
    else:
        return None
    if inner is None:
        return None
    result = M.softplus(inner.inputs[0])
    return [result] if same_layout(result, node.outputs[0]) else None


@register_cost_rewrite
def stabilize_graph(outputs):
    """A clone of ``outputs`` with the canonicalize and stabilize stages applied.

    Returns (new_outputs, memo) where memo maps old variables to new ones.
    Leaves (inputs, shared variables, constants) are kept, so gradients taken
    on the result are gradients with respect to the user's own variables.
    """
    cloned, memo = clone_replace(outputs)
    fgraph = FunctionGraph(graph_inputs(cloned), cloned)
    for stage in ("canonicalize", "stabilize"):
        # no constant folding (it would bake in values), and no shape shortcuts: a shortcut is
        # sound only where its reasoning ("this is computed anyway") holds for the compiled graph
        run_stage(fgraph, stage, [rw for rw in _DB[stage] if not {"constant_folding", "shape"} & set(rw.tags)])
    return fgraph.outputs, memo
