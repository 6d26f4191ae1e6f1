"""Two things Theano allowed that Lasagne's own tests use (issue 27).

* A *computed* variable as a function input: ``function([h], y)`` with ``h = f(x)``.  The graph is cut
  at ``h``; the value passed stands for ``h`` and nothing above it runs.
* Gradients of and with respect to integer variables, under Theano's op contract
  (``config.integer_grad = 'theano'``, which the ``theano`` alias sets): integer-valued outputs pass
  zero back, an int -> float cast passes the gradient on, and a gradient is always floatX.

Compared with NumPy (property tests) and with finite differences of the float function.
"""
from __future__ import annotations

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import coursekit as theano
import coursekit.tensor as T
from coursekit.compile.function import MissingInputError
from coursekit.compile.io import In
from coursekit.config import config
from coursekit.gradient import DisconnectedInputError

FLOATS = st.floats(-3, 3, allow_nan=False, width=64)


# ------------------------------------------------------------------ a computed variable as an input
@settings(max_examples=20, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 4)), elements=FLOATS))
def test_computed_input_stands_for_itself(v):
    x = T.dmatrix("x")
    h = T.tanh(x).T * 3.0  # never computed below: v takes its place
    y = T.exp(h) + h.sum()
    f = theano.function([h], y)
    np.testing.assert_allclose(f(v), np.exp(v) + v.sum(), rtol=1e-12)
    assert not any("tanh" in str(node.op) for node in f.maker.fgraph.toposort())


def test_eval_of_a_computed_variable_given_its_own_value():
    """Lasagne's test_recurrent_bck: ``out.eval({out: value})`` is the value."""
    x = T.dtensor3("x")
    out = T.tanh(x).dimshuffle(1, 0, 2)
    value = np.arange(24, dtype="float64").reshape(2, 3, 4)
    np.testing.assert_array_equal(out.eval({out: value}), value)


def test_computed_input_beside_a_leaf_input_and_by_keyword():
    x, z = T.dvector("x"), T.dvector("z")
    h = (x * 2).sum()
    f = theano.function([In(h, name="total"), z], z * h + 1)
    np.testing.assert_allclose(f(total=2.5, z=np.array([1.0, 2.0])), [3.5, 6.0])
    g = theano.function([h, x], h + x)  # x is used again beside h: both are inputs
    np.testing.assert_allclose(g(10.0, np.array([1.0, 2.0])), [11.0, 12.0])


def test_gradient_with_respect_to_a_computed_input():
    x = T.dvector("x")
    h = T.exp(x)
    cost = (h ** 2).sum()
    f = theano.function([h], T.grad(cost, h))  # the graph of the gradient is cut at h too
    v = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(f(v), 2 * v)


@settings(max_examples=15, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 5), elements=FLOATS))
def test_gradient_with_respect_to_a_computed_variable_and_its_input(zv):
    """As Theano: grad(cost, [s, z]) with s = sigmoid(z) is the partial in s and the total in z, even where
    the stable form of log(sigmoid(z)) would rewrite s away."""
    z = T.dvector("z")
    s = T.nnet.sigmoid(z)
    cost = T.log(s).sum() + (s * z).sum()
    gs, gz = T.grad(cost, [s, z])
    got_s, got_z = theano.function([z], [gs, gz])(zv)
    sv = 1 / (1 + np.exp(-zv))
    np.testing.assert_allclose(got_s, 1 / sv + zv, rtol=1e-10)
    eps = 1e-6
    total = lambda v: (np.log(1 / (1 + np.exp(-v))) + v / (1 + np.exp(-v))).sum()  # noqa: E731
    fd = [(total(zv + eps * e) - total(zv - eps * e)) / (2 * eps) for e in np.eye(len(zv))]
    np.testing.assert_allclose(got_z, fd, rtol=1e-5, atol=1e-7)


def test_what_the_cut_leaves_out_is_a_missing_input_naming_the_cut():
    x = T.dvector("x")
    h = x * 2
    with pytest.raises(MissingInputError, match=r"needs the variable x.*computed by"):
        theano.function([h], h + x)
    with pytest.raises(ValueError, match="both a function input and a key of givens"):
        theano.function([h], h + 1, givens={h: T.dvector()})


# ------------------------------------------------------------------ integers under Theano's contract
@pytest.fixture
def theano_integers():
    with config.change(integer_grad="theano", floatX="float64"):
        yield


def test_lasagne_get_or_compute_grads_case(theano_integers):
    """Lasagne's test_updates: grad(A + B, [A, B]) of integer shared variables is zeros."""
    a, b = theano.shared(1), theano.shared(np.arange(3))
    ga, gb = theano.grad(a + b.sum(), [a, b])
    assert ga.type.dtype == gb.type.dtype == "float64"
    got_a, got_b = theano.function([], [ga, gb])()
    assert np.shape(got_a) == () and got_a == 0
    np.testing.assert_array_equal(got_b, np.zeros(3))


@settings(max_examples=20, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 6), elements=FLOATS), st.data())
def test_int_to_float_cast_passes_the_gradient_on(w, data):
    """Theano's documented example: f(x, y) = dot(x, float(y)) with integer y has d/dy = x."""
    iv = data.draw(hnp.arrays(np.int32, w.shape, elements=st.integers(-5, 5)))
    x, i = T.dvector("x"), T.ivector("i")
    cost = T.dot(x, T.cast(i, "float64")) + 0.5 * T.cast(i, "float64").sum()
    with config.change(integer_grad="theano", floatX="float64"):
        g = theano.function([x, i], T.grad(cost, i))(w, iv)
    assert g.dtype == np.float64
    # finite differences of the same float function of y, between the integers
    eps = 1e-6
    fd = [((w * (iv + eps * e)).sum() + 0.5 * (iv + eps * e).sum() - (w * (iv - eps * e)).sum()
           - 0.5 * (iv - eps * e).sum()) / (2 * eps) for e in np.eye(len(iv))]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


@settings(max_examples=15, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 5), elements=FLOATS))
def test_integer_valued_outputs_pass_zero(w):
    """floor-then-cast, comparisons and integer arithmetic are step functions: zero, and connected."""
    x = T.dvector("x")
    stepped = T.cast(T.floor(x * 3), "int32") + 1
    cost = (T.cast(stepped, "float64") * x).sum() + T.cast(T.eq(stepped, 2), "float64").sum()
    g = theano.function([x], T.grad(cost, x))(w)
    np.testing.assert_allclose(g, np.floor(w * 3) + 1)  # only the direct use of x counts


def test_integer_gradients_are_floatx_and_disconnection_still_reported(theano_integers):
    x, i = T.dvector("x"), T.ivector("i")
    with pytest.raises(DisconnectedInputError):
        theano.grad((x * 2).sum(), i)
    gi = theano.grad((x * 2).sum(), i, disconnected_inputs="ignore")
    assert gi.type.dtype == "float64"
    np.testing.assert_array_equal(theano.function([i], gi)(np.array([1, 2], "int32")), [0.0, 0.0])
    gi = theano.grad((i * 2).sum(), i)  # an integer cost: its seed is floatX ones, and int * 2 is a step
    np.testing.assert_array_equal(theano.function([i], gi)(np.array([4, 5, 6], "int32")), np.zeros(3))
    with config.change(floatX="float32"):
        assert theano.grad(T.cast(i, "float32").sum(), i).type.dtype == "float32"


def test_refused_without_the_flag():
    i = T.ivector("i")
    with pytest.raises(TypeError, match="integer_grad = 'theano'"):
        theano.grad(T.cast(i, "float64").sum(), i)


# ------------------------------------------------------------------ theano.map / reduce / foldl / foldr
@settings(max_examples=15, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 6), elements=FLOATS), st.floats(-2, 2))
def test_scan_shorthands_match_numpy(v, start):
    from coursekit.scan_module import foldl, foldr, map as scan_map, reduce as scan_reduce

    s, a0 = T.dvector("s"), T.dscalar("a0")
    squares, _ = scan_map(lambda x: x ** 2, s)
    total, _ = scan_reduce(lambda x, acc: acc + x, s, a0)
    left, _ = foldl(lambda x, acc: acc * 0.5 + x, s, a0)   # the order matters: ((a0/2 + v0)/2 + v1) ...
    right, _ = foldr(lambda x, acc: acc * 0.5 + x, s, a0)
    got = theano.function([s, a0], [squares, total, left, right])(v, start)
    acc_l = acc_r = start
    for x in v:
        acc_l = acc_l * 0.5 + x
    for x in v[::-1]:
        acc_r = acc_r * 0.5 + x
    np.testing.assert_allclose(got[0], v ** 2)
    np.testing.assert_allclose([got[1], got[2], got[3]], [start + v.sum(), acc_l, acc_r], rtol=1e-12, atol=1e-12)


def test_foldl_gradient_matches_finite_differences():
    from coursekit.gradient import verify_grad
    from coursekit.scan_module import foldl

    def product_fold(s):
        out, _ = foldl(lambda x, acc: acc * T.tanh(x) + x, s, T.constant(1.0, dtype="float64"))
        return out

    verify_grad(product_fold, [np.array([0.3, -0.7, 1.2, 0.1])])
