"""Jacobians and Hessians written as Theano's tutorial writes them: ``T.grad`` inside a ``scan`` step (issue 38).

Theano passed a step function the non-sequences' *outer* variables (and read them from inner copies in the
loop's graph), so ``T.grad(y[i], x)`` inside a step, for ``y`` computed from ``x`` outside it, is connected.
coursekit raised ``DisconnectedInputError`` there; these are the tutorial's "Computing the Jacobian" and
"Computing the Hessian" blocks, checked against the closed forms and by finite differences.
"""
from __future__ import annotations

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T


def test_the_tutorials_jacobian_block():
    x = T.dvector("x")
    y = x ** 2
    J, updates = theano.scan(lambda i, y, x: T.grad(y[i], x), sequences=T.arange(y.shape[0]), non_sequences=[y, x])
    f = theano.function([x], J, updates=updates)
    np.testing.assert_allclose(f([4, 4]), [[8, 0], [0, 8]])  # the tutorial prints [[ 8.  0.] [ 0.  8.]]


def test_the_tutorials_hessian_block():
    x = T.dvector("x")
    cost = (x ** 2).sum()
    gy = T.grad(cost, x)
    H, updates = theano.scan(lambda i, gy, x: T.grad(gy[i], x), sequences=T.arange(gy.shape[0]),
                             non_sequences=[gy, x])
    f = theano.function([x], H, updates=updates)
    np.testing.assert_allclose(f([4, 4]), [[2, 0], [0, 2]])


def test_a_jacobian_through_scan_matches_finite_differences_of_a_nonlinear_map():
    x = T.dvector("x")
    W = np.array([[1.0, -2.0, 0.5], [0.3, 0.1, -1.0]])
    y = T.tanh(T.dot(W, x)) * T.exp(x[0])
    J, _ = theano.scan(lambda i, y, x: T.grad(y[i], x), sequences=T.arange(y.shape[0]), non_sequences=[y, x])
    f, fy = theano.function([x], J), theano.function([x], y)
    x0 = np.array([0.2, -0.4, 0.7])
    eps = 1e-6
    numeric = np.stack([(fy(x0 + eps * e) - fy(x0 - eps * e)) / (2 * eps) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(f(x0), numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(theano.function([x], theano.gradient.jacobian(y, x))(x0), numeric, rtol=1e-6,
                               atol=1e-8)


def test_a_step_still_refuses_a_variable_the_cost_does_not_depend_on():
    x, z = T.dvector("x"), T.dvector("z")
    y = x ** 2
    with pytest.raises(theano.gradient.DisconnectedInputError, match="does not depend on z"):
        theano.scan(lambda i, y, z: T.grad(y[i], z), sequences=T.arange(y.shape[0]), non_sequences=[y, z])


def test_a_reshape_to_a_constant_1_is_broadcastable_inside_and_outside_a_scan():
    v = T.dvector("v")
    assert v.reshape((1, v.shape[0])).broadcastable == (True, False)
    assert v.reshape((v.shape[0], 1)).broadcastable == (False, True)
    assert v.reshape((2, v.shape[0] // 2)).broadcastable == (False, False)
    seen = []

    def step(row, M):  # a Neural Turing Machine's read head: (1, n) weights times memory
        w = T.nnet.softmax(row).reshape((1, row.shape[0]))
        seen.append(w.broadcastable)
        return T.dot(w, M).dimshuffle(1)  # drops the broadcastable axis: refused unless it is one

    M = T.dmatrix("M")
    out, _ = theano.scan(step, sequences=M, non_sequences=M)
    Mv = np.arange(9.0).reshape(3, 3) / 9
    expected = [np.exp(r) / np.exp(r).sum() @ Mv for r in Mv]
    np.testing.assert_allclose(theano.function([M], out)(Mv), expected)
    assert seen == [(True, False)]
