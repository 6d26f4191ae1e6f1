"""Theano's wider tensor surface (issue 12): indexing, orderings, construction, products, flags.

Each feature is compared with NumPy (hypothesis where the inputs vary) and,
where it has a gradient, with finite differences (``verify_grad``).
"""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import coursekit as theano
import coursekit.tensor as T
from coursekit.gradient import verify_grad
from coursekit.test_value import TestValueError

SETTINGS = settings(max_examples=20, deadline=None)
RNG = np.random.default_rng(0)


def floats(shape):
    return RNG.standard_normal(shape)


# ------------------------------------------------------------ advanced indexing
def test_the_tutorial_log_likelihood_index(device):
    p, y = T.matrix("p"), T.lvector("y")
    picked = T.log(p)[T.arange(y.shape[0]), y]
    f = theano.function([p, y], picked)
    pv = RNG.random((5, 3)).astype("float32") + 0.1
    yv = np.array([0, 2, 1, 1, 0])
    np.testing.assert_allclose(f(pv, yv), np.log(pv)[np.arange(5), yv], rtol=1e-6)


@SETTINGS
@given(st.data())
def test_integer_arrays_in_any_position_match_numpy(data):
    shape = data.draw(st.tuples(*[st.integers(1, 4)] * 3))
    x = floats(shape)
    axis = data.draw(st.integers(0, 2))
    idx = np.asarray(data.draw(st.lists(st.integers(-shape[axis], shape[axis] - 1), min_size=1, max_size=5)))
    index = [slice(None)] * 3
    index[axis] = idx
    if data.draw(st.booleans()):  # also an int scalar elsewhere (NumPy moves the advanced axes first then)
        other = (axis + 1) % 3
        index[other] = data.draw(st.integers(0, shape[other] - 1))
    xs, ids = T.dtensor3("x"), T.lvector("i")
    sym_index = tuple(ids if isinstance(e, np.ndarray) else e for e in index)
    got = theano.function([xs, ids], xs[sym_index])(x, idx)
    np.testing.assert_array_equal(got, x[tuple(index)])


@SETTINGS
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                  elements=st.floats(-5, 5)))
def test_boolean_masks_match_numpy(x):
    xs = T.TensorType("float64", (False,) * x.ndim)("x")
    f = theano.function([xs], [xs[xs > 0], T.set_subtensor(xs[xs > 0], 0.0), T.inc_subtensor(xs[xs < 1], 2.0)])
    got_mask, got_set, got_inc = f(x)
    np.testing.assert_array_equal(got_mask, x[x > 0])
    expected = x.copy()
    expected[x > 0] = 0
    np.testing.assert_array_equal(got_set, expected)
    expected = x.copy()
    expected[x < 1] += 2
    np.testing.assert_array_equal(got_inc, expected)


def test_inc_subtensor_accumulates_repeated_indices_and_set_does_not():
    x, i = T.dvector("x"), T.lvector("i")
    f = theano.function([x, i], [T.inc_subtensor(x[i], 1.0), T.set_subtensor(x[i], 5.0)])
    inc, set_ = f(np.zeros(4), np.array([1, 1, 3]))
    np.testing.assert_array_equal(inc, [0, 2, 0, 1])
    np.testing.assert_array_equal(set_, [0, 5, 0, 5])


def test_set_and_inc_subtensor_of_basic_slices():
    m = T.dmatrix("m")
    f = theano.function([m], [T.set_subtensor(m[1:, 0], 9.0), T.inc_subtensor(m[:, 1:], m[:, :1])])
    mv = floats((3, 3))
    a, b = f(mv)
    ea, eb = mv.copy(), mv.copy()
    ea[1:, 0] = 9
    eb[:, 1:] += mv[:, :1]
    np.testing.assert_array_equal(a, ea)
    np.testing.assert_allclose(b, eb)


def test_advanced_indexing_gradients():
    idx = np.array([2, 0, 2, 1])
    verify_grad(lambda x: x[idx, 1:], [floats((3, 4))])
    verify_grad(lambda x: x[np.arange(3), [1, 0, 1]], [floats((3, 2))])
    verify_grad(lambda x, y: T.set_subtensor(x[[0, 2]], y), [floats((3, 2)), floats((2, 2))])
    verify_grad(lambda x, y: T.inc_subtensor(x[[0, 0, 2], 1], y), [floats((3, 2)), floats(3)])
    verify_grad(lambda x: x[x > 0.1] * 2, [floats((3, 3))])


def test_out_of_range_index_names_the_index_and_the_users_line():
    x, i = T.dvector("x"), T.lvector("i")
    f = theano.function([x, i], x[i, None] * 2)
    with pytest.raises(IndexError) as err:
        f(np.zeros(3), np.array([0, 7]))
    text = str(err.value)
    assert "shape (3,)" in text and "test_theano_surface.py" in text and "x[i, None]" in text


def test_set_subtensor_of_a_non_indexed_variable_says_what_to_write():
    x = T.dvector("x")
    with pytest.raises(TypeError, match=r"set_subtensor\(a\[index\], y\)"):
        T.set_subtensor(x * 2, 1.0)


# ------------------------------------------------------------------- orderings
@SETTINGS
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 5)), elements=st.floats(-9, 9)),
       st.sampled_from([None, 0, 1, -1]))
def test_argmax_argmin_sort_argsort_match_numpy(x, axis):
    xs = T.dmatrix("x")
    outs = [T.argmax(xs, axis=axis), xs.argmin(axis=axis), *T.max_and_argmax(xs, axis=axis)]
    sort_axis = -1 if axis is None else axis
    outs += [T.sort(xs, axis=sort_axis), T.argsort(xs, axis=sort_axis, kind="stable")]
    got = theano.function([xs], outs)(x)
    expected = [np.argmax(x, axis), np.argmin(x, axis), np.max(x, axis), np.argmax(x, axis),
                np.sort(x, sort_axis), np.argsort(x, sort_axis, kind="stable")]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    assert got[0].dtype == np.int64


def test_sort_gradient_and_argmax_has_none():
    verify_grad(lambda x: T.sort(x, axis=1), [floats((3, 4))])
    verify_grad(lambda x: T.sort(x, axis=None), [floats((2, 3))])
    x = T.dvector("x")
    with pytest.raises(Exception, match="does not depend"):
        theano.grad(T.cast(T.argmax(x), "float64"), x)


# ---------------------------------------------------------------- construction
def test_arange_alloc_eye_zeros_ones_fill_match_numpy():
    n = T.lscalar("n")
    f = theano.function([n], [T.arange(n), T.arange(1, n, 2), T.alloc(1.5, n, 2), T.eye(n, 3, 1),
                              T.zeros((n, 2)), T.ones((2,), dtype="int32"), T.arange(0.5, n)])
    got = f(4)
    expected = [np.arange(4), np.arange(1, 4, 2), np.full((4, 2), 1.5, "float32"), np.eye(4, 3, 1, dtype="float32"),
                np.zeros((4, 2), "float32"), np.ones(2, "int32"), np.arange(0.5, 4)]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
        assert g.dtype == e.dtype or (e.dtype == np.float64 and g.dtype == np.float32)
    x = T.dmatrix("x")
    np.testing.assert_array_equal(T.fill(x, 3.0).eval({x: np.zeros((2, 2))}), np.full((2, 2), 3.0))


def test_alloc_gradient_sums_over_the_copies():
    verify_grad(lambda v: T.alloc(v, 3, 2), [floats(2)])
    verify_grad(lambda v: T.alloc(v, 4) * T.arange(4), [np.asarray(0.3)])


def test_specify_shape_checks_at_run_time():
    x = T.dmatrix("x")
    f = theano.function([x], T.specify_shape(x, (2, 3)) * 2)
    f(np.zeros((2, 3)))
    with pytest.raises(AssertionError, match=r"shape \(3, 3\)"):
        f(np.zeros((3, 3)))


# ------------------------------------------------------- products and layouts
@SETTINGS
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3))
def test_dot_of_any_ranks_matches_numpy(a, b, c, d):
    x, y = floats((a, b, c)), floats((c, d))
    xs, ys = T.dtensor3("x"), T.dmatrix("y")
    z = floats((b, d, c))
    zs = T.dtensor3("z")
    got = theano.function([xs, ys, zs], [T.dot(xs, ys), theano.dot(ys, zs), T.tensordot(xs, zs, [[1, 2], [0, 2]])])(
        x, y, z)
    np.testing.assert_allclose(got[0], np.dot(x, y))
    np.testing.assert_allclose(got[1], np.dot(y, z))
    np.testing.assert_allclose(got[2], np.tensordot(x, z, [[1, 2], [0, 2]]))


def test_nd_dot_batched_dot_outer_gradients():
    verify_grad(lambda x, y: T.dot(x, y), [floats((2, 3, 4)), floats((4, 2))])
    verify_grad(T.batched_dot, [floats((3, 2, 4)), floats((3, 4, 2))])
    verify_grad(T.batched_dot, [floats((3, 4)), floats((3, 4))])
    verify_grad(T.outer, [floats(3), floats(2)])
    verify_grad(lambda x, y: T.tensordot(x, y, 1), [floats((2, 3)), floats((3, 2))])


def test_tile_repeat_round_clip_flatten_join_stack_match_numpy():
    x = floats((2, 3))
    xs = T.dmatrix("x")
    f = theano.function([xs], [T.tile(xs, (2, 1)), T.repeat(xs, 2, axis=1), T.repeat(xs, [1, 2], axis=0),
                               T.round(xs * 2), T.round(xs * 2, mode="half_to_even"), xs.clip(-0.5, 0.5),
                               T.flatten(xs), xs.flatten(outdim=2), T.join(1, xs, xs), T.stack(xs, xs),
                               T.stack([xs, xs], axis=2), T.concatenate([xs, xs])])
    x[0, 0] = 0.25  # a half after *2
    got = f(x)
    expected = [np.tile(x, (2, 1)), np.repeat(x, 2, 1), np.repeat(x, [1, 2], 0),
                np.sign(x * 2) * np.floor(np.abs(x * 2) + 0.5), np.round(x * 2), np.clip(x, -0.5, 0.5),
                x.reshape(-1), x, np.concatenate([x, x], 1), np.stack([x, x]), np.stack([x, x], 2),
                np.concatenate([x, x])]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e)
    verify_grad(lambda v: T.tile(v, (2, 3)), [floats((2, 2))])
    verify_grad(lambda v: T.repeat(v, [1, 3], axis=1), [floats((2, 2))])
    verify_grad(lambda v: T.repeat(v, 2), [floats((2, 2))])


def test_comparisons_and_logic():
    a, b = T.lvector("a"), T.lvector("b")
    f = theano.function([a, b], [T.eq(a, b), T.neq(a, b), T.and_(a, b), T.or_(a, b), T.xor(a, b), a ^ b])
    av, bv = np.array([1, 2, 3]), np.array([1, 0, 6])
    for g, e in zip(f(av, bv), [av == bv, av != bv, av & bv, av | bv, av ^ bv, av ^ bv]):
        np.testing.assert_array_equal(g, e)


# ------------------------------------------------------------ Theano's manners
def test_truth_value_as_in_theano():
    W = T.dmatrix("W")
    assert W and not (not W)  # "if not W:" checks that W exists
    with pytest.raises(TypeError, match="chained comparison"):
        if W < 1:
            pass


def test_plural_constructors_follow_theano():
    x, y, z = T.vectors("xyz")
    assert [v.name for v in (x, y, z)] == ["x", "y", "z"] and x.ndim == 1
    assert T.dscalars("a").name == "a"  # one name: one variable, not a list
    assert [v.name for v in T.fmatrices("u", "v")] == ["u", "v"]


def test_pp_and_pprint_are_theano_names():
    x = T.dvector("x")
    assert theano.printing.pprint(T.exp(x) + 1) == theano.pp(T.exp(x) + 1) == "exp(x) + [1.]"


# ------------------------------------------------------------------ the flags
def test_compute_test_value_raises_at_the_users_line():
    x, W = T.dmatrix("x"), T.dmatrix("W")
    x.tag.test_value = np.zeros((5, 10))
    W.tag.test_value = np.zeros((3, 4))
    with theano.config.change(compute_test_value="raise"):
        h = T.tanh(x)
        assert h.tag.test_value.shape == (5, 10)
        with pytest.raises(TestValueError) as err:
            T.dot(h, W)  # the shape mistake, found while building
        assert "test_theano_surface.py" in str(err.value) and "T.dot(h, W)" in str(err.value)
        with pytest.raises(TestValueError, match="has no test value"):
            T.exp(T.dvector("v"))
    with theano.config.change(compute_test_value="warn"), pytest.warns(UserWarning, match="no test value"):
        T.exp(T.dvector("v"))


def test_print_test_value_and_theano_flags_are_accepted():
    x = T.dvector("x")
    x.tag.test_value = np.array([1.0, 2.0])
    with theano.config.change(print_test_value=True):
        assert "array([1., 2.])" in repr(x)
    assert repr(x) == "x"
    with theano.config.change(**{"warn.sum_div_dimshuffle_bug": False, "optimizer_excluding": "gemm",
                                 "exception_verbosity": "high"}):
        theano.config.warn.round = False
        assert theano.config.warn.sum_div_dimshuffle_bug is False
        m = T.dmatrix("m")
        f = theano.function([m], T.dot(m, m) + m)
        assert not any("Gemm" in str(n.op) for n in f.toposort())
        with pytest.raises(ValueError, match="Debugprint of the node's graph"):
            f(np.zeros((2, 3)))
    with pytest.raises(AttributeError, match="Did you mean 'floatX'"):
        theano.config.floatx = "float32"
    with pytest.raises(AttributeError, match="unknown flag 'warn.no_such_bug'"):
        theano.config.warn.no_such_bug = True


def test_print_op_prints_at_run_time_and_passes_the_gradient(capsys):
    x = T.dvector("x")
    shown = theano.printing.Print("x is", attrs=("shape", "__str__"))(x)
    f = theano.function([x], [shown * 2, theano.grad((shown ** 2).sum(), x)])
    value, grad = f(np.array([1.0, 3.0]))
    out = capsys.readouterr().out
    assert "x is shape = (2,)" in out and "x is __str__ = [1. 3.]" in out
    np.testing.assert_array_equal(value, [2, 6])
    np.testing.assert_array_equal(grad, [2, 6])


def test_rop_and_lop_match_jacobian_products():
    W, V, x, v = T.dmatrix("W"), T.dmatrix("V"), T.dvector("x"), T.dvector("v")
    y = T.tanh(T.dot(x, W))
    f = theano.function([W, V, x, v], [T.Rop(y, W, V), theano.gradient.Lop(y, W, v)])
    Wv, Vv, xv, vv = floats((3, 2)), floats((3, 2)), floats(3), floats(2)
    jv, vj = f(Wv, Vv, xv, vv)
    eps = 1e-6
    numeric = (np.tanh(xv @ (Wv + eps * Vv)) - np.tanh(xv @ (Wv - eps * Vv))) / (2 * eps)
    np.testing.assert_allclose(jv, numeric, rtol=1e-6)
    np.testing.assert_allclose(vj, np.outer(xv, vv * (1 - np.tanh(xv @ Wv) ** 2)))
    with pytest.raises(TypeError, match="same rank"):
        T.Rop(y, W, v)


def test_transfer_and_pydotprint_options():
    x = T.fvector("x")
    on_device = T.exp(x).transfer("gpu")
    assert type(on_device.owner.op).__name__ == "GpuFromHost"
    assert type(on_device.transfer("cpu").owner.op).__name__ == "HostFromGpu"
    assert x.transfer("cpu") is x
    with pytest.raises(ValueError, match="use 'cpu', or 'gpu'"):
        x.transfer("tpu")
    picture = theano.printing.pydotprint(theano.function([x], T.exp(x)), var_with_name_simple=True, compact=True)
    assert picture is not None
    with pytest.raises(TypeError, match="unknown option"):
        theano.printing.pydotprint(theano.function([x], T.exp(x)), colour=True)
