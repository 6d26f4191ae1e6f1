"""Numerical stabilisation: rewrite formulas that overflow into ones that don't.

The tutorial writes the logistic loss literally::

    p_1 = 1 / (1 + exp(-dot(x, w) - b))
    xent = -y * log(p_1) - (1 - y) * log(1 - p_1)

In float32, ``exp`` overflows for arguments above ~88, ``p_1`` rounds to
exactly 0 or 1, and ``log`` returns -inf.  Canonicalisation has already
turned ``p_1`` into ``sigmoid(z)`` and ``1 - p_1`` into ``sigmoid(-z)``;
here ``log(sigmoid(z))`` becomes ``-softplus(-z)``, which is finite for
every finite z.  :func:`stabilize_graph` applies the same rewrites *before*
differentiation (:func:`coursekit.gradient.stabilized` calls it: gradient sits above rewriting), so the
gradients are finite too.
"""
from __future__ import annotations

from ..fgraph import FunctionGraph
from ..graph import clone_replace, graph_inputs
from ..tensor import math as M
from ..tensor.elemwise import Elemwise
from . import _DB, local_rewrite, run_stage
from .patterns import (ADD, EXP, LOG, LOG1P, MUL, NEG, SIGMOID, SOFTPLUS, SUB, cpu_scalar_op, is_constant,
                       pattern_rewrite, producer, same_layout, single_client, with_dtype)


pattern_rewrite("stabilize", "stabilize", name="log_sigmoid", rules=[
    ((LOG, (SIGMOID, (NEG, "x"))), (NEG, (SOFTPLUS, "x"))),
    ((LOG, (SIGMOID, "x")), (NEG, (SOFTPLUS, (NEG, "x"))))],
    doc="log(sigmoid(x)) -> -softplus(-x)   (and log(sigmoid(-x)) -> -softplus(x))")

pattern_rewrite("stabilize", "stabilize", name="log_one_minus_sigmoid", rules=[
    ((LOG, (SUB, 1, (SIGMOID, "x"))), (NEG, (SOFTPLUS, "x")))],
    doc="log(1 - sigmoid(x)) -> -softplus(x)")

pattern_rewrite("stabilize", "stabilize", name="log_one_plus_exp", rules=[
    ((LOG1P, (EXP, "x")), (SOFTPLUS, "x")),
    ((LOG, (ADD, 1, (EXP, "x"))), (SOFTPLUS, "x")),
    ((LOG, (ADD, (EXP, "x"), 1)), (SOFTPLUS, "x"))],
    doc="log(1 + exp(x)) and log1p(exp(x)) -> softplus(x)")


@local_rewrite("stabilize", "stabilize", tracks=[Elemwise(op) for op in (ADD, SUB, NEG)])
def logistic_cross_entropy(fgraph, node):
    """c*softplus(-z) + (1-c)*softplus(z) -> softplus(z) - c*z, inside any sum of terms.

    That is the tutorial's cross-entropy once ``log_sigmoid`` has run (``-y*log(p) - (1-y)*log(1-p)``
    with ``p = sigmoid(z)``), and the identity ``softplus(-z) = softplus(z) - z`` makes it exact
    for every c.  One softplus instead of two, and because the cost is stabilised *before*
    differentiation its gradient is ``sigmoid(z) - c``: two operations where the literal form's
    was six (W3).  ``softplus_minus_linear`` then computes the value in an order that keeps its
    relative accuracy.  Fires only at the outermost node of the sum.
    """
    if cpu_scalar_op(node) not in _LINEAR or _inside_a_larger_sum(fgraph, node):
        return None
    terms = _signed_terms(node.outputs[0])
    if terms is None:
        return None
    found = _cross_entropy_pair(terms)
    if found is None:
        return None
    sign, c, z, softplus_z, pair = found
    result = M.sub(softplus_z, M.mul(c, z)) if sign > 0 else M.sub(M.mul(c, z), softplus_z)
    for k, (s, var) in enumerate(terms):
        if k not in pair:
            result = M.add(result, var) if s > 0 else M.sub(result, var)
    out = node.outputs[0]
    return [with_dtype(result, out.type.dtype)] if same_layout(result, out) else None


_LINEAR = (ADD, SUB, NEG)
_MAX_TERMS = 16


def _inside_a_larger_sum(fgraph, node):
    clients = fgraph.clients.get(node.outputs[0], [])
    return len(clients) == 1 and clients[0][0] != "output" and cpu_scalar_op(clients[0][0]) in _LINEAR


def _signed_terms(var):
    """``var`` as a list of (+1 or -1, term) through add, sub and neg (no recursion); None if too many."""
    terms, stack = [], [(1, var)]
    while stack:
        sign, v = stack.pop()
        op = cpu_scalar_op(v.owner)
        if op == ADD:
            stack += [(sign, v.owner.inputs[1]), (sign, v.owner.inputs[0])]
        elif op == SUB:
            stack += [(-sign, v.owner.inputs[1]), (sign, v.owner.inputs[0])]
        elif op == NEG:
            stack.append((-sign, v.owner.inputs[0]))
        else:
            terms.append((sign, v))
        if len(terms) + len(stack) > _MAX_TERMS:
            return None
    return terms


def _softplus_factor(sign, term):
    """(sign, coefficient, softplus node) for ``c * (+-softplus(u))`` or a lone ``+-softplus(u)``."""
    factors = term.owner.inputs if cpu_scalar_op(term.owner) == MUL else [term]
    for k, f in enumerate(factors):
        s = sign
        while producer(f, NEG) is not None:
            s, f = -s, f.owner.inputs[0]
        sp = producer(f, SOFTPLUS)
        if sp is not None:
            others = [g for j, g in enumerate(factors) if j != k]
            return s, (others[0] if others else None), sp
    return None


def _cross_entropy_pair(terms):
    """(sign, c, z, softplus(z) variable, the two term positions) for a pair of terms
    ``sign*c*softplus(-z)`` and ``sign*(1-c)*softplus(z)`` (either coefficient may be the ``1 - ...``)."""
    parts = [_softplus_factor(s, t) if t.owner is not None else None for s, t in terms]
    for i, a in enumerate(parts):
        negated = producer(a[2].inputs[0], NEG) if a is not None and a[1] is not None else None
        if negated is None:
            continue
        z = negated.inputs[0]
        for j, b in enumerate(parts):
            if j == i or b is None or b[0] != a[0] or b[1] is None or b[2].inputs[0] is not z:
                continue
            if _one_minus(b[1], a[1]) or _one_minus(a[1], b[1]):
                return a[0], a[1], z, b[2].outputs[0], (i, j)
    return None


def _one_minus(var, c):
    """Is ``var`` the expression ``1 - c``?"""
    node = producer(var, SUB)
    return node is not None and node.inputs[1] is c and is_constant(node.inputs[0], 1)


@local_rewrite("specialize", "stabilize", tracks=[Elemwise(SUB)])
def softplus_minus_linear(fgraph, node):
    """softplus(z) - c*z -> (max(z, 0) - c*z) + log1p(exp(-|z|))   (and c*z - softplus(z) likewise)

    The same value in the order PyTorch's and TensorFlow's logistic losses use: for c = 0 or 1 the
    bracket is exact, so a tiny loss keeps its digits (c = 1, z = 100: 3.7e-44, where
    softplus(z) - z rounds to 0).  A specialisation, after gradients were taken from the short form."""
    if cpu_scalar_op(node) != SUB:
        return None
    a, b = node.inputs
    sign, sp, linear = (1, producer(a, SOFTPLUS), producer(b, MUL))
    if sp is None:
        sign, sp, linear = (-1, producer(b, SOFTPLUS), producer(a, MUL))
    if sp is None or linear is None or not single_client(fgraph, sp.outputs[0]):
        return None
    z = sp.inputs[0]
    if z not in linear.inputs:
        return None
    bracket = M.sub(M.maximum(z, 0), linear.outputs[0])
    tail = M.log1p(M.exp(M.neg(M.abs(z))))
    result = M.add(bracket, tail) if sign > 0 else M.sub(M.neg(bracket), tail)
    out = node.outputs[0]
    return [with_dtype(result, out.type.dtype)] if same_layout(result, out) else None


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
        # sound only where its reasoning ("this is computed anyway") holds for the compiled graph; no
        # "compile_only" rewrite (Theano's register_canonicalize: in Theano they never ran before grad, and an
        # OpRemove of a ViewOp with its own gradient must run only after the gradient is built)
        skip = {"constant_folding", "shape", "compile_only"}
        run_stage(fgraph, stage, [rw for rw in _DB[stage] if not skip & set(rw.tags)])
    return fgraph.outputs, memo
