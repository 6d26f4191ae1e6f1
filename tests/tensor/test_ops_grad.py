"""Gradients of every differentiable op, checked by finite differences (verify_grad).

Inputs are float64 and drawn from safe domains: positive for log/sqrt, away
from the kinks of abs/relu/maximum, away from ties for max/min.  Each check
runs in FAST_RUN and FAST_COMPILE, so the rewritten gradient graph (fusion,
GEMM, constant folding) is compared with the plain one.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import coursekit as theano
import coursekit.tensor as T
from coursekit.gradient import DisconnectedInputError, UndefinedGrad, UndefinedGradientError, verify_grad
from coursekit.graph import Apply, Op

MODES = ["FAST_RUN", "FAST_COMPILE"]


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


rng = np.random.default_rng(7)


def rand(*shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, size=shape)


def away_from_zero(*shape, margin=0.3):
    x = rand(*shape)
    return np.where(np.abs(x) < margin, np.sign(x + 1e-12) * margin + x, x)


def vg(fun, pt, mode, **kw):
    verify_grad(fun, [np.asarray(p, dtype="float64") for p in pt], n_tests=1, mode=mode, **kw)


# -------------------------------------------------------------- elementwise
UNARY = [
    ("neg", T.neg, rand), ("exp", T.exp, rand), ("log", T.log, lambda *s: rand(*s, low=0.2, high=3)),
    ("log1p", T.log1p, lambda *s: rand(*s, low=-0.5, high=3)), ("expm1", T.expm1, rand),
    ("tanh", T.tanh, rand), ("sqrt", T.sqrt, lambda *s: rand(*s, low=0.2, high=3)), ("sqr", T.sqr, rand),
    ("abs", T.abs, away_from_zero), ("sin", T.sin, rand), ("cos", T.cos, rand), ("sigmoid", T.sigmoid, rand),
    ("softplus", T.softplus, rand), ("relu", T.relu, away_from_zero), ("identity", T.identity, rand),
    ("sigmoid big", lambda x: T.sigmoid(10 * x), rand),
    ("softplus big", lambda x: T.softplus(20 * x), away_from_zero),
]


@pytest.mark.parametrize("name,fn,gen", UNARY, ids=[u[0] for u in UNARY])
def test_unary_grads(name, fn, gen, mode):
    for shape in [(), (5,), (3, 4)]:
        vg(fn, [gen(*shape)], mode)


def test_piecewise_constant_ops_have_zero_grad(mode):
    for fn in [T.floor, T.ceil, T.sgn, lambda x: T.cast(x > 0, "float64"), lambda x: x // 1.0]:
        x = T.dvector("x")
        g = T.grad(fn(x).sum() + 0 * x.sum(), x)
        out = theano.function([x], g, mode=mode)(away_from_zero(4))
        np.testing.assert_array_equal(out, 0)


BINARY = [
    ("add", T.add, rand, rand), ("sub", T.sub, rand, rand), ("mul", T.mul, rand, rand),
    ("true_div", T.true_div, rand, away_from_zero),
    ("pow", T.pow, lambda *s: rand(*s, low=0.3, high=2), rand),
    ("mod", T.mod, lambda *s: rand(*s, low=0.1, high=0.9) + np.floor(rand(*s, low=0, high=4)), lambda *s: np.full(s, 1.0)),
    ("maximum", T.maximum, rand, rand), ("minimum", T.minimum, rand, rand),
]


@pytest.mark.parametrize("name,fn,ga,gb", BINARY, ids=[b[0] for b in BINARY])
def test_binary_grads_with_broadcasting(name, fn, ga, gb, mode):
    for sa, sb in [((4,), (4,)), ((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (3, 4)), ((), (3, 4)), ((3, 4), ()),
                   ((2, 1, 3), (4, 1))]:
        a, b = ga(*sa), gb(*sb)
        if name in ("maximum", "minimum"):  # no near-ties: the kink would spoil finite differences
            while np.any(np.abs(np.subtract(a, b)) < 0.05):
                b = b + 0.037
        vg(fn, [a, b], mode)


def test_pow_both_arguments(mode):
    vg(lambda a, b: a ** b, [rand(3, 4, low=0.5, high=2), rand(3, 4)], mode)
    vg(lambda a, b: a ** b, [rand(4, low=0.5, high=2), rand(3, 4)], mode)
    vg(lambda a: a ** 3, [rand(5)], mode)
    vg(lambda a: a ** 2, [rand(5)], mode)  # specialised to sqr in FAST_RUN
    vg(lambda a: a ** 0.5, [rand(5, low=0.5, high=2)], mode)  # sqrt
    vg(lambda a: a ** -1, [away_from_zero(5)], mode)  # 1/x
    vg(lambda b: 2.0 ** b, [rand(5)], mode)
    vg(lambda b: 2.0 % b, [rand(5, low=0.75, high=0.95)], mode)  # reflected mod: grad wrt the divisor


def test_row_broadcast_grad_sums_over_broadcast_axis(mode):
    """grad of a (1, n) row added to an (m, n) matrix is the column sum."""
    m = T.dmatrix("m")
    r = T.drow("r")
    cost = ((m + r) * np.arange(12.0).reshape(3, 4)).sum()
    g = T.grad(cost, r)
    assert g.broadcastable == (True, False)
    out = theano.function([m, r], g, mode=mode)(rand(3, 4), rand(1, 4))
    np.testing.assert_allclose(out, np.arange(12.0).reshape(3, 4).sum(axis=0, keepdims=True))
    c = T.dcol("c")
    g = T.grad(((m * c) ** 2).sum(), c)
    assert g.broadcastable == (False, True)
    mv, cv = rand(3, 4), rand(3, 1)
    out = theano.function([m, c], g, mode=mode)(mv, cv)
    np.testing.assert_allclose(out, (2 * mv * mv * cv).sum(axis=1, keepdims=True))
    v = T.dvector("v")
    g = T.grad((m * v).sum(), v)
    out = theano.function([m, v], g, mode=mode)(mv, rand(4))
    np.testing.assert_allclose(out, mv.sum(axis=0))
    s = T.dscalar("s")
    g = T.grad((m * s).sum(), s)
    out = theano.function([m, s], g, mode=mode)(mv, 2.0)
    np.testing.assert_allclose(out, mv.sum())


def test_broadcastable_input_grads_via_verify_grad(mode):
    # verify_grad builds non-broadcastable inputs; express row/col through dimshuffle
    vg(lambda m, v: m * v.dimshuffle("x", 0), [rand(3, 4), rand(4)], mode)
    vg(lambda m, v: m / (2 + v.dimshuffle(0, "x")), [rand(3, 4), rand(3, low=0, high=1)], mode)
    vg(lambda t, m: T.tanh(t + m), [rand(2, 3, 4), rand(3, 4)], mode)


def test_switch_grad(mode):
    vg(lambda c, a, b: T.switch(c > 0, a, b), [away_from_zero(3, 4), rand(3, 4), rand(3, 4)], mode)
    a = rand(5)
    vg(lambda a, b: T.switch(a > b, a * b, a + b), [a, a + np.array([0.3, -0.4, 0.5, -0.2, 0.6])], mode)
    vg(lambda a, b: T.switch(a > 0, a, b), [away_from_zero(3, 4), rand(4)], mode)  # broadcast branch
    vg(lambda a: T.switch(a > 0, a, 0.0), [away_from_zero(6)], mode)
    vg(lambda a: T.where(a > 0, T.exp(a), T.sqr(a)), [away_from_zero(6)], mode)


def test_clip_grad(mode):
    x = rand(20)
    x = x[(np.abs(x - 0.5) > 0.05) & (np.abs(x + 1) > 0.05)]
    vg(lambda a: T.clip(a, -1.0, 0.5), [x], mode)


@pytest.mark.parametrize("src,dst", [("float64", "float32"), ("float32", "float64")])
def test_cast_grad(src, dst, mode):
    x = T.vector("x", src)
    y = T.cast(x, dst)
    cost = (y * y).sum()
    g = T.grad(cost, x)
    assert g.dtype == src
    xv = rand(4).astype(src)
    out = theano.function([x], g, mode=mode)(xv)
    assert out.dtype == src
    np.testing.assert_allclose(out, 2 * xv, rtol=1e-6)
    # through a float32 round trip, checked by finite differences (float32 tolerances)
    vg(lambda a: T.cast(T.cast(a, "float32") * 3, "float64") ** 2, [rand(5)], mode, abs_tol=1e-3, rel_tol=1e-3,
       eps=1e-3)


def test_cast_to_int_has_no_gradient(mode):
    x = T.dvector("x")
    y = T.cast(x, "int32") * 2.0 + x
    g = T.grad(y.sum(), x)
    out = theano.function([x], g, mode=mode)(np.array([1.2, 3.4]))
    np.testing.assert_allclose(out, [1.0, 1.0])


# -------------------------------------------------------------- reductions
@pytest.mark.parametrize("fn", [T.sum, T.mean, T.prod, T.max, T.min], ids=["sum", "mean", "prod", "max", "min"])
def test_reduction_grads(fn, mode):
    x = rand(2, 3, 4, low=0.3, high=2) * rng.choice([-1, 1], size=(2, 3, 4))
    if fn in (T.max, T.min):
        x = np.arange(24.0).reshape(2, 3, 4) / 7
        x = rng.permuted(x.reshape(-1)).reshape(2, 3, 4)  # distinct values: no ties
    for axis in [None, 0, 1, -1, (0, 2), (1, 2), (0, 1, 2)]:
        for keepdims in [False, True]:
            vg(lambda a: fn(a, axis=axis, keepdims=keepdims), [x], mode)
    vg(lambda v: fn(v), [x[0, 0]], mode)


def test_var_std_grad(mode):
    vg(lambda a: T.var(a, axis=0), [rand(4, 3)], mode)
    vg(lambda a: T.std(a), [rand(4, 3)], mode)


def test_max_grad_goes_to_argmax(mode):
    x = T.dmatrix("x")
    g = T.grad(T.max(x, axis=1).sum(), x)
    xv = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, -1.0]])
    out = theano.function([x], g, mode=mode)(xv)
    np.testing.assert_array_equal(out, [[0, 1, 0], [1, 0, 0]])


# --------------------------------------------------------------------- dot
@pytest.mark.parametrize("sa,sb", [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)),
                                   ((1, 4), (4, 1)), ((), (4,))])
def test_dot_grads(sa, sb, mode):
    vg(T.dot, [rand(*sa), rand(*sb)], mode)
    if sa and sb:
        vg(lambda a, b: T.tanh(a @ b), [rand(*sa), rand(*sb)], mode)


def test_gemm_shaped_grads(mode):
    # graphs the gemm rewrite turns into Gemm/Gemv, forward and backward
    vg(lambda m, x, b: T.tanh(T.dot(m, x) + b), [rand(3, 4), rand(4), rand(3)], mode)
    vg(lambda m, x, b: 2 * T.dot(m, x) - 3 * b, [rand(3, 4), rand(4, 2), rand(3, 2)], mode)
    vg(lambda a, x, y, z: a * T.dot(x, y) - 2 * z, [np.asarray(1.3), rand(3, 4), rand(4, 2), rand(3, 2)], mode)
    vg(lambda x, w, b: T.sigmoid(T.dot(x, w) + b), [rand(5, 3), rand(3), np.asarray(0.2)], mode)
    vg(lambda x, w: T.dot(T.dot(x, w), w.T), [rand(3, 4), rand(4, 2)], mode)


def test_outer_grad(mode):
    vg(T.outer, [rand(3), rand(4)], mode)


# ------------------------------------------------------------ shape / index
def test_dimshuffle_grads(mode):
    vg(lambda a: a.T, [rand(3, 4)], mode)
    vg(lambda a: a.dimshuffle(2, 0, 1), [rand(2, 3, 4)], mode)
    vg(lambda a: a.dimshuffle("x", 0, "x") * np.arange(1.0, 5.0).reshape(1, 4, 1), [rand(4)], mode)
    vg(lambda a: a.dimshuffle(1, "x", 0), [rand(3, 4)], mode)
    vg(lambda a: (a.dimshuffle(0, "x") * a.dimshuffle("x", 0)), [rand(4)], mode)
    # dropping a broadcastable axis
    vg(lambda a: a.dimshuffle(0, "x").dimshuffle(0) * 3, [rand(4)], mode)
    vg(lambda a: T.sum(a, axis=1, keepdims=True).dimshuffle(0) ** 2, [rand(3, 2)], mode)


def test_reshape_grads(mode):
    vg(lambda a: a.reshape((6, 4)) * np.arange(24.0).reshape(6, 4), [rand(2, 3, 4)], mode)
    vg(lambda a: a.reshape((-1,)) ** 2, [rand(3, 4)], mode)
    vg(lambda a: a.reshape((a.shape[1], a.shape[0])).dot(np.ones(3)), [rand(3, 4)], mode)
    vg(lambda a: T.flatten(a, 2), [rand(2, 3, 4)], mode)


def test_subtensor_grads(mode):
    vg(lambda a: a[1], [rand(4, 3)], mode)
    vg(lambda a: a[-1, 1:], [rand(4, 3)], mode)
    vg(lambda a: a[::2, ::-1], [rand(5, 3)], mode)
    vg(lambda a: a[1:3, None, 0], [rand(5, 3)], mode)
    vg(lambda a: a[2] * a[:, 0].sum(), [rand(4, 4)], mode)  # two views of the same input
    vg(lambda a: a[..., 1], [rand(2, 3, 4)], mode)
    vg(lambda a: a[2], [rand(5)], mode)


def test_symbolic_index_grad(mode):
    x, i = T.dmatrix("x"), T.lscalar("i")
    y = (x[i] ** 2).sum() + x[i:, 1].sum()
    g, = T.grad(y, [x])
    f = theano.function([x, i], g, mode=mode)
    xv = rand(4, 3)
    want = np.zeros_like(xv)
    want[2] = 2 * xv[2]
    want[2:, 1] += 1
    np.testing.assert_allclose(f(xv, 2), want)
    with pytest.raises(TypeError, match="integer"):
        T.grad(y, i)


def test_advanced_subtensor_grads(mode):
    idx = np.array([2, 0, 2, 3])  # repeated rows accumulate
    vg(lambda a: a[idx], [rand(4, 3)], mode)
    vg(lambda a: a[idx] ** 2, [rand(5)], mode)
    x, iv = T.dmatrix("x"), T.lvector("i")
    g = T.grad(x[iv].sum(), x)
    out = theano.function([x, iv], g, mode=mode)(rand(4, 2), idx)
    np.testing.assert_array_equal(out, [[1, 1], [0, 0], [2, 2], [1, 1]])


def test_inc_subtensor_grads(mode):
    from coursekit.tensor.subtensor import AdvancedIncSubtensor1, IncSubtensor, make_subtensor

    def inc_rows(a, b):
        sub = make_subtensor(a, (slice(1, 3),)).owner.op
        return IncSubtensor(sub.idx_list)(a, b) * np.arange(1.0, 13.0).reshape(4, 3)

    def set_rows(a, b):
        sub = make_subtensor(a, (slice(1, 3),)).owner.op
        return IncSubtensor(sub.idx_list, set_instead_of_inc=True)(a, b) * np.arange(1.0, 13.0).reshape(4, 3)

    vg(inc_rows, [rand(4, 3), rand(2, 3)], mode)
    vg(set_rows, [rand(4, 3), rand(2, 3)], mode)
    vg(lambda a, b: AdvancedIncSubtensor1()(a, b, T.constant(np.array([0, 2, 0]))) ** 2,
       [rand(4, 3), rand(3, 3)], mode)


def test_join_and_stack_grads(mode):
    vg(lambda a, b: T.concatenate([a, b]), [rand(2, 3), rand(4, 3)], mode)
    vg(lambda a, b: T.concatenate([a, b, a], axis=1), [rand(2, 3), rand(2, 1)], mode)
    vg(lambda a, b: T.concatenate([a, b], axis=-1) ** 2, [rand(3), rand(2)], mode)
    vg(lambda a, b: T.stack([a, b]), [rand(3, 2), rand(3, 2)], mode)
    vg(lambda a, b: T.stack([a, b], axis=2), [rand(3, 2), rand(3, 2)], mode)
    vg(lambda a, b: T.stack([a, b * a]), [np.asarray(0.7), np.asarray(-1.2)], mode)


def test_softmax_grads(mode):
    vg(T.nnet.softmax, [rand(5)], mode)
    vg(T.nnet.softmax, [rand(3, 4)], mode)
    vg(lambda a: T.nnet.softmax(a * 10), [rand(2, 3)], mode)
    onehot = np.eye(4)[[1, 3, 0]]
    vg(lambda a: T.nnet.categorical_crossentropy(T.nnet.softmax(a), onehot), [rand(3, 4)], mode)
    vg(lambda a: -(T.log(T.nnet.softmax(a)) * onehot).sum(axis=1), [rand(3, 4)], mode)


def test_compound_graph_grads(mode):
    vg(lambda a, b: T.tanh(a * b + 1.5) * T.exp(-a) - T.sqr(b) / (1 + T.abs(a)),
       [away_from_zero(6), rand(6)], mode)
    vg(lambda a, b: T.log(T.sigmoid(a)) + T.log(1 - T.sigmoid(b)), [rand(5), rand(5)], mode)
    vg(lambda a: T.log(1 + T.exp(a)), [rand(5)], mode)
    vg(lambda a: 1 / (1 + T.exp(-a)), [rand(5)], mode)
    vg(lambda a: (T.exp(a) + 1) * (T.exp(a) + 1) - T.exp(a), [rand(5)], mode)


@settings(max_examples=25, deadline=None)
@given(hnp.arrays("float64", hnp.array_shapes(min_dims=1, max_dims=2, max_side=4), elements=st.floats(-2, 2)),
       st.sampled_from(["tanh_mul", "sigmoid_sum", "softplus", "sqr_mean", "exp_max"]))
def test_grad_property(x, which):
    fns = {"tanh_mul": lambda a: T.tanh(a) * a, "sigmoid_sum": lambda a: T.sigmoid(a).sum(axis=-1),
           "softplus": lambda a: T.softplus(3 * a), "sqr_mean": lambda a: T.sqr(a).mean(axis=0),
           "exp_max": lambda a: T.exp(a).sum() + a.max() * 0}
    vg(fns[which], [x], "FAST_RUN")


# ------------------------------------------------------------- grad errors
def test_cost_must_be_scalar():
    x = T.dvector("x")
    with pytest.raises(TypeError, match="scalar"):
        T.grad(x * 2, x)
    with pytest.raises(TypeError, match="scalar"):
        theano.grad(T.dmatrix() + x, x)


def test_integer_cost_or_wrt_is_rejected():
    x = T.dvector("x")
    i = T.ivector("i")
    with pytest.raises(TypeError, match="integer"):
        T.grad((x * 2).sum(), i)
    with pytest.raises(TypeError, match="integer"):
        T.grad(i.sum(), i)
    with pytest.raises(TypeError):
        T.grad((i * 2).sum(), x)
    with pytest.raises(TypeError, match="not a symbolic variable"):
        T.grad(x.sum(), np.ones(3))


def test_disconnected_inputs(mode):
    x, y = T.dvector("x"), T.dvector("y")
    cost = (x ** 2).sum()
    with pytest.raises(DisconnectedInputError) as info:
        T.grad(cost, [x, y])
    assert "y" in str(info.value) and "test_ops_grad.py" in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.warns(UserWarning, match="does not depend"):
        gx, gy = T.grad(cost, [x, y], disconnected_inputs="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gx, gy = T.grad(cost, [x, y], disconnected_inputs="ignore")
    f = theano.function([x, y], [gx, gy], mode=mode)
    rx, ry = f(np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0]))
    np.testing.assert_allclose(rx, [2.0, 4.0])
    np.testing.assert_array_equal(ry, np.zeros(3))
    with pytest.raises(ValueError):
        T.grad(cost, x, disconnected_inputs="bogus")


def test_disconnected_through_shape_and_consider_constant(mode):
    x = T.dvector("x")
    # depends on x only through its shape: disconnected, not an error of the op
    cost = T.cast(x.shape[0], "float64") * 2.0
    with pytest.raises(DisconnectedInputError):
        T.grad(cost, x)
    g = T.grad(cost, x, disconnected_inputs="ignore")
    np.testing.assert_array_equal(theano.function([x], g, mode=mode)(np.ones(3)), 0)
    # consider_constant cuts the path
    y = x * 3
    cost = (y * x).sum()
    g = T.grad(cost, x, consider_constant=[y])
    out = theano.function([x], g, mode=mode)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(out, [3.0, 6.0])


class _RoundOp(Op):
    """A test op whose gradient is undefined (not merely zero)."""

    def make_node(self, x):
        return Apply(self, [x], [x.type.make_variable()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.round(inputs[0])

    def grad(self, inputs, output_grads):
        return [UndefinedGrad("rounding has no derivative here")]


def test_undefined_is_distinct_from_disconnected():
    x = T.dvector("x")
    y = T.dvector("y")
    cost = _RoundOp()(x).sum() + y.sum()
    with pytest.raises(UndefinedGradientError) as info:
        T.grad(cost, x)
    assert "rounding" in str(info.value) and "test_ops_grad.py" in str(info.value)
    assert not isinstance(info.value, DisconnectedInputError)
    # 'ignore' is about disconnected inputs: it does not hide an undefined gradient
    with pytest.raises(UndefinedGradientError):
        T.grad(cost, [x, y], disconnected_inputs="ignore")
    # but the other input's gradient is fine, and a disconnected one is reported as such
    g = T.grad(cost, y)
    np.testing.assert_array_equal(theano.function([x, y], g, on_unused_input="ignore")(np.ones(2), np.ones(2)), 1)
    z = T.dvector("z")
    with pytest.raises(DisconnectedInputError):
        T.grad(cost, z)


def test_op_without_grad_names_the_node():
    class NoGrad(Op):
        def make_node(self, x):
            return Apply(self, [x], [x.type.make_variable()])

        def perform(self, node, inputs, output_storage):
            output_storage[0][0] = inputs[0].copy()

    x = T.dvector("x")
    out = NoGrad()(x)
    with pytest.raises(NotImplementedError) as info:
        T.grad(out.sum(), x)
    assert "NoGrad" in str(info.value) and "test_ops_grad.py" in str(info.value)


def test_known_grads(mode):
    x = T.dvector("x")
    y = T.exp(x)
    g = T.grad(None, x, known_grads={y: T.ones_like(y) * 2})
    xv = np.array([0.0, 1.0])
    np.testing.assert_allclose(theano.function([x], g, mode=mode)(xv), 2 * np.exp(xv))


def test_grad_of_grad(mode):
    x = T.dscalar("x")
    y = x ** 3 + T.sin(x)
    g = T.grad(y, x)
    h = T.grad(g, x)
    f = theano.function([x], [g, h], mode=mode)
    gv, hv = f(0.7)
    np.testing.assert_allclose(gv, 3 * 0.7 ** 2 + np.cos(0.7))
    np.testing.assert_allclose(hv, 6 * 0.7 - np.sin(0.7))


def test_verify_grad_catches_a_wrong_gradient():
    class BadDouble(Op):
        def make_node(self, x):
            return Apply(self, [x], [x.type.make_variable()])

        def perform(self, node, inputs, output_storage):
            output_storage[0][0] = inputs[0] * 2

        def grad(self, inputs, output_grads):
            return [output_grads[0] * 3]

    with pytest.raises(AssertionError, match="verify_grad"):
        verify_grad(lambda a: BadDouble()(a), [rand(3)])


# ------------------------------------------- the tutorial's cross-entropy
@pytest.mark.parametrize("scale", [1.0, 100.0, 1000.0])
def test_tutorial_cross_entropy_grad_is_finite_in_float32(scale, mode):
    n, feats = 40, 10
    data_rng = np.random.default_rng(3)
    xv = (data_rng.standard_normal((n, feats)) * scale).astype("float32")
    yv = data_rng.integers(0, 2, size=n).astype("float32")
    x, y = T.fmatrix("x"), T.fvector("y")
    w = theano.shared(data_rng.standard_normal(feats).astype("float32"), name="w")
    b = theano.shared(np.float32(0.0), name="b")
    p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
    xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
    cost = xent.mean() + 0.01 * (w ** 2).sum()
    gw, gb = T.grad(cost, [w, b])
    f = theano.function([x, y], [cost, gw, gb], updates=[(w, w - 0.1 * gw), (b, b - 0.1 * gb)], mode=mode)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # FAST_COMPILE's literal cost
        c, gwv, gbv = f(xv, yv)
    for v in (c, gwv, gbv, w.get_value(), b.get_value()):
        assert v.dtype == "float32"
    # grad() differentiates the stabilised cost in every mode; the cost's own value is only
    # stabilised by the FAST_RUN rewrites (FAST_COMPILE runs the literal formula: log(0) there)
    for v in (gwv, gbv, w.get_value(), b.get_value()) + ((c,) if mode == "FAST_RUN" else ()):
        assert np.all(np.isfinite(v)), v
    # against a float64 reference computed stably
    z = xv.astype("float64") @ w.get_value().astype("float64") * 0 + xv.astype("float64") @ (
        w.get_value().astype("float64") + 0.1 * gwv.astype("float64"))
    p = 0.5 * np.tanh(z / 2) + 0.5
    want_gw = xv.astype("float64").T @ (p - yv) / n + 0.02 * (w.get_value().astype("float64") + 0.1 * gwv)
    np.testing.assert_allclose(gwv, want_gw, rtol=2e-3, atol=2e-3 * scale)
    np.testing.assert_allclose(gbv, (p - yv).mean(), rtol=1e-3, atol=1e-4)


def test_cross_entropy_verify_grad_float64(mode):
    yv = np.array([0.0, 1.0, 1.0, 0.0, 1.0])

    def xent(x, w):
        p_1 = 1 / (1 + T.exp(-T.dot(x, w)))
        return -yv * T.log(p_1) - (1 - yv) * T.log(1 - p_1)

    vg(xent, [rand(5, 3), rand(3)], mode)
    if mode == "FAST_RUN":  # |z| up to ~300: only the stabilised forward cost is finite there
        vg(xent, [rand(5, 3) * 30, rand(3)], mode, abs_tol=1e-4, rel_tol=1e-4)


def test_verify_grad_fails_on_nan():
    with pytest.raises(AssertionError, match="verify_grad"), np.errstate(invalid="ignore"):
        verify_grad(lambda a: T.log(a), [np.array([-1.0, 2.0])])
    with pytest.raises(AssertionError, match="shape"):
        class WrongShape(Op):
            def make_node(self, x):
                return Apply(self, [x], [x.type.make_variable()])

            def perform(self, node, inputs, output_storage):
                output_storage[0][0] = inputs[0] * 2

            def grad(self, inputs, output_grads):
                return [T.concatenate([output_grads[0], output_grads[0]])]

        verify_grad(lambda a: WrongShape()(a), [rand(3)])
