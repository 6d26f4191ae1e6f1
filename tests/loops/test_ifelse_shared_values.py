"""ifelse computes a value both branches read outside the op, once, as Theano's lazy evaluation did.

Keras 1.x puts an ifelse on the learning phase in every BatchNormalization and Dropout layer, and both
branches read the layer's input.  When each branch carried everything down to the graph's leaves, every
earlier layer (and its ifelse) was nested inside every later branch, and the gradient (each IfElse
differentiating both of its branches) grew as 2 ** depth: Keras's mnist_swwae.py (20 such layers) never
finished building its training function.
"""
from __future__ import annotations

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit.gradient import verify_grad
from coursekit.graph import apply_nodes_between
from coursekit.ifelse import IfElse, ifelse

RNG = np.random.default_rng(7)


def test_a_value_both_branches_read_is_an_input_of_the_op():
    x, c = T.dvector("x"), T.lscalar("c")
    shared = T.exp(x)
    out = ifelse(c, shared * 2, shared + T.sum(x))
    assert out.owner.inputs[0] is c
    assert {id(v) for v in out.owner.inputs[1:]} == {id(shared), id(x)}  # x: only the else branch's sum reads it
    inner = apply_nodes_between(out.owner.op.inner_inputs, out.owner.op.then_outputs + out.owner.op.else_outputs)
    assert not any("Exp" in str(node.op) for node in inner)  # exp(x) is not recomputed inside a branch
    f = theano.function([x, c], out)
    v = RNG.standard_normal(4)
    np.testing.assert_allclose(f(v, 1), np.exp(v) * 2)
    np.testing.assert_allclose(f(v, 0), np.exp(v) + v.sum())


@pytest.mark.parametrize("taken", [1, 0])
def test_stacked_choices_stay_flat_and_differentiate(taken):
    x, c = T.dvector("x"), T.lscalar("c")
    h, depth = x, 24
    for _ in range(depth):
        h = ifelse(c, h * 2.0 + 1.0, h * 0.5)
    nodes = [n for n in apply_nodes_between([x, c], [h]) if isinstance(n.op, IfElse)]
    assert len(nodes) == depth
    for node in nodes:  # each branch holds its own one or two ops, not the layers below it
        assert len(apply_nodes_between(node.op.inner_inputs, node.op.then_outputs)) <= 2
    g = theano.function([x, c], T.grad(h.sum(), x))
    np.testing.assert_allclose(g(np.ones(3), taken), np.full(3, 2.0 ** depth if taken else 0.5 ** depth))


def test_gradient_through_shared_values_matches_finite_differences():
    for cond in (1, 0):
        def chosen(a, b, cond=cond):
            s = T.tanh(a) * b  # read by both branches, and by the rest of the graph
            first = ifelse(T.constant(cond), s * s, s + b)
            return ifelse(T.constant(1 - cond), T.exp(first) * s, first * a) + s
        verify_grad(chosen, [RNG.standard_normal(3), RNG.standard_normal(3)], rng=np.random.RandomState(0))
