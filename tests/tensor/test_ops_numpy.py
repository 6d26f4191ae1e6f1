"""Every tensor op against NumPy on random inputs, with and without rewrites.

Each check compiles the same graph twice (``FAST_RUN``: fusion, GEMM,
constant folding ...; ``FAST_COMPILE``: the graph as written) and compares
both with the NumPy expression it stands for: values, shapes and dtypes.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import coursekit as theano
import coursekit.tensor as T
from coursekit.tensor.type import TensorType

# FAST_RUN_NO_GC: FAST_RUN compiled with allow_gc=False, so every node keeps its output buffer
# between calls and elementwise ops compute into it (out=); each such function is called twice,
# on different data first, so a stale or wrongly shared buffer shows as a wrong answer.
MODES = ["FAST_RUN", "FAST_COMPILE", "FAST_RUN_NO_GC"]
SETTINGS = settings(max_examples=25, deadline=None)


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


def sym(value, name=None, bcast=None):
    """A symbolic input matching the array ``value``: its length-1 dims are declared broadcastable
    (coursekit, like Theano, broadcasts only along declared dims), unless ``bcast`` is given."""
    value = np.asarray(value)
    bcast = tuple(s == 1 for s in value.shape) if bcast is None else bcast
    return TensorType(value.dtype, bcast).make_variable(name)


def compile_fn(inputs, outputs, mode, **kwargs):
    """``theano.function`` for one of MODES (FAST_RUN_NO_GC: FAST_RUN with allow_gc=False)."""
    if mode == "FAST_RUN_NO_GC":
        with theano.config.change(allow_gc=False):
            return theano.function(inputs, outputs, mode="FAST_RUN", **kwargs)
    return theano.function(inputs, outputs, mode=mode, **kwargs)


def run(build, arrays, mode, bcasts=None):
    """Compile ``build(*inputs)`` for inputs shaped like ``arrays`` and call it on them."""
    arrays = [np.asarray(a) for a in arrays]
    bcasts = bcasts or [None] * len(arrays)
    inputs = [sym(a, f"in{i}", b) for i, (a, b) in enumerate(zip(arrays, bcasts))]
    out = build(*inputs)
    f = compile_fn(inputs, out, mode)
    if mode == "FAST_RUN_NO_GC":  # a first call on other data (same shapes, same domains)
        f(*[np.flip(a, 0).copy() if a.ndim else a.copy() for a in arrays])
    return f(*[a.copy() for a in arrays])


def check(build, np_fn, arrays, mode, rtol=1e-7, atol=0.0, bcasts=None, check_dtype=True):
    got = run(build, arrays, mode, bcasts)
    with np.errstate(all="ignore"):
        want = np.asarray(np_fn(*[np.asarray(a) for a in arrays]))
    assert isinstance(got, np.ndarray), type(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    if check_dtype:
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    return got


rng = np.random.default_rng(1234)


def rand(*shape, dtype="float64", low=-3.0, high=3.0):
    return rng.uniform(low, high, size=shape).astype(dtype)


# ---------------------------------------------------------------- unary
def _sigmoid(x):
    with np.errstate(over="ignore"):  # exp(1000) = inf gives the right limit, 0
        return 1.0 / (1.0 + np.exp(-x))


def _softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


UNARY = [
    # name, coursekit fn, numpy fn, domain (low, high)
    ("neg", T.neg, np.negative, (-5, 5)),
    ("exp", T.exp, np.exp, (-5, 5)),
    ("log", T.log, np.log, (0.01, 10)),
    ("log1p", T.log1p, np.log1p, (-0.9, 10)),
    ("expm1", T.expm1, np.expm1, (-5, 5)),
    ("tanh", T.tanh, np.tanh, (-5, 5)),
    ("sqrt", T.sqrt, np.sqrt, (0, 10)),
    ("sqr", T.sqr, np.square, (-5, 5)),
    ("abs", T.abs, np.abs, (-5, 5)),
    ("sgn", T.sgn, np.sign, (-5, 5)),
    ("sin", T.sin, np.sin, (-5, 5)),
    ("cos", T.cos, np.cos, (-5, 5)),
    ("floor", T.floor, np.floor, (-5, 5)),
    ("ceil", T.ceil, np.ceil, (-5, 5)),
    ("sigmoid", T.sigmoid, _sigmoid, (-30, 30)),
    ("nnet.sigmoid", T.nnet.sigmoid, _sigmoid, (-30, 30)),
    ("softplus", T.softplus, _softplus, (-30, 30)),
    ("relu", T.relu, lambda x: np.maximum(x, 0), (-5, 5)),
    ("identity", T.identity, lambda x: x, (-5, 5)),
    ("python abs", abs, np.abs, (-5, 5)),
    ("method exp", lambda x: x.exp(), np.exp, (-5, 5)),
    ("method log", lambda x: x.log(), np.log, (0.01, 10)),
    ("method sqrt", lambda x: x.sqrt(), np.sqrt, (0, 10)),
]


@pytest.mark.parametrize("name,fn,np_fn,domain", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_unary_matches_numpy(name, fn, np_fn, domain, dtype, mode):
    for shape in [(), (7,), (3, 4), (2, 3, 2)]:
        x = rand(*shape, dtype=dtype, low=domain[0], high=domain[1])
        tol = 1e-6 if dtype == "float32" else 1e-12
        check(fn, np_fn, [x], mode, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "float32", "float64", "bool"])
def test_unary_dtype_follows_numpy(dtype, mode):
    x = (rng.integers(0, 5, size=(4,)) if dtype != "bool" else rng.integers(0, 2, size=(4,))).astype(dtype)
    for fn, np_fn in [(T.exp, np.exp), (T.sqrt, np.sqrt), (T.tanh, np.tanh), (T.log1p, np.log1p),
                      (T.sin, np.sin)]:
        check(fn, np_fn, [x], mode, rtol=1e-3, atol=1e-3)
    if dtype != "bool":  # sigmoid is no NumPy ufunc: only its value is compared
        check(T.sigmoid, lambda v: _sigmoid(v.astype("float64")), [x], mode, rtol=1e-6, check_dtype=False)
    for fn, np_fn in [(T.abs, np.abs), (T.sqr, np.square), (T.neg, np.negative)]:
        if dtype == "bool":
            continue
        check(fn, np_fn, [x], mode)


@SETTINGS
@given(hnp.arrays("float64", hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
                  elements=st.floats(-20, 20)))
def test_unary_property(x):
    for fn, np_fn in [(T.tanh, np.tanh), (T.exp, np.exp), (T.sigmoid, _sigmoid), (T.softplus, _softplus),
                      (T.relu, lambda v: np.maximum(v, 0)), (T.abs, np.abs)]:
        for m in MODES:
            check(fn, np_fn, [x], m, rtol=1e-12, atol=1e-15)


def test_sigmoid_softplus_extremes(mode):
    x = np.array([-1000.0, -100.0, -30.0, -17.3, -0.1, 0.0, 2.2, 30.0, 100.0, 1000.0])
    for dtype in ["float32", "float64"]:
        v = x.astype(dtype)
        s = run(T.sigmoid, [v], mode)
        assert s.dtype == dtype and np.all(np.isfinite(s))
        # absolute accuracy (as Theano's sigmoid): float32 rounding level, or float64's
        np.testing.assert_allclose(s, _sigmoid(x), atol=1e-7 if dtype == "float32" else 1e-15)
        sp = run(T.softplus, [v], mode)
        assert sp.dtype == dtype and np.all(np.isfinite(sp))
        np.testing.assert_allclose(sp, _softplus(x), rtol=1e-6, atol=1e-40)  # float32 subnormals


# --------------------------------------------------------------- binary
BINARY = [
    ("add", T.add, np.add, None),
    ("sub", T.sub, np.subtract, None),
    ("mul", T.mul, np.multiply, None),
    ("true_div", T.true_div, np.true_divide, "nonzero"),
    ("int_div", T.int_div, np.floor_divide, "nonzero"),
    ("mod", T.mod, np.mod, "nonzero"),
    ("pow", T.pow, np.power, "positive"),
    ("maximum", T.maximum, np.maximum, None),
    ("minimum", T.minimum, np.minimum, None),
    ("gt", T.gt, np.greater, None),
    ("lt", T.lt, np.less, None),
    ("ge", T.ge, np.greater_equal, None),
    ("le", T.le, np.less_equal, None),
    ("eq", T.eq, np.equal, None),
    ("neq", T.neq, np.not_equal, None),
    ("op +", lambda a, b: a + b, np.add, None),
    ("op -", lambda a, b: a - b, np.subtract, None),
    ("op *", lambda a, b: a * b, np.multiply, None),
    ("op /", lambda a, b: a / b, np.true_divide, "nonzero"),
    ("op //", lambda a, b: a // b, np.floor_divide, "nonzero"),
    ("op %", lambda a, b: a % b, np.mod, "nonzero"),
    ("op **", lambda a, b: a ** b, np.power, "positive"),
    ("op rmod", lambda a, b: a.__rmod__(b), lambda a, b: np.mod(b, a), "positive"),
    ("op >", lambda a, b: a > b, np.greater, None),
    ("op <", lambda a, b: a < b, np.less, None),
    ("op >=", lambda a, b: a >= b, np.greater_equal, None),
    ("op <=", lambda a, b: a <= b, np.less_equal, None),
]


def _operands(domain, shape_a, shape_b, dtype="float64"):
    a = rand(*shape_a, dtype=dtype)
    b = rand(*shape_b, dtype=dtype)
    if domain == "positive":
        a = np.abs(a) + 0.5
    if domain == "nonzero":
        b = np.where(np.abs(b) < 0.5, 1.5, b).astype(dtype)
    # a few exact ties so eq/ge/le see both outcomes
    if domain is None and a.shape == b.shape and a.size > 1:
        a.flat[0] = b.flat[0]
    return a, b


BROADCAST_SHAPES = [((5,), (5,)), ((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (3, 4)), ((), (3, 4)),
                    ((3, 4), ()), ((2, 1, 4), (3, 1)), ((2, 3, 4), (2, 3, 4))]


@pytest.mark.parametrize("name,fn,np_fn,domain", BINARY, ids=[b[0] for b in BINARY])
def test_binary_matches_numpy_with_broadcasting(name, fn, np_fn, domain, mode):
    for shape_a, shape_b in BROADCAST_SHAPES:
        a, b = _operands(domain, shape_a, shape_b)
        check(fn, np_fn, [a, b], mode, rtol=1e-12)


@pytest.mark.parametrize("name,fn,np_fn,domain", BINARY[:7], ids=[b[0] for b in BINARY[:7]])
def test_binary_with_python_scalars(name, fn, np_fn, domain, mode):
    x = np.abs(rand(3, 4)) + 0.5
    for c in [2, 2.5, 3]:
        check(lambda v: fn(v, c), lambda v: np_fn(v, c), [x], mode, rtol=1e-12)
        if domain is None:
            check(lambda v: fn(c, v), lambda v: np_fn(c, v), [x], mode, rtol=1e-12)


@pytest.mark.parametrize("bcast,shape", [((True, False), (1, 4)), ((False, True), (3, 1))],
                         ids=["row", "col"])
def test_broadcastable_dims_row_col(bcast, shape, mode):
    m = rand(3, 4)
    r = rand(*shape)
    check(lambda a, b: a + b, np.add, [m, r], mode, bcasts=[None, bcast])
    check(lambda a, b: a * b - b, lambda a, b: a * b - b, [m, r], mode, bcasts=[None, bcast])
    check(lambda a, b: T.maximum(b, a), lambda a, b: np.maximum(b, a), [m, r], mode, bcasts=[None, bcast])


def test_row_col_constructors_broadcast(mode):
    r, c = T.row("r"), T.col("c")
    assert r.broadcastable == (True, False) and c.broadcastable == (False, True)
    out = r + c
    assert out.broadcastable == (False, False)
    f = compile_fn([r, c], out, mode=mode)
    rv = rand(1, 5).astype(theano.config.floatX)
    cv = rand(3, 1).astype(theano.config.floatX)
    np.testing.assert_allclose(f(rv, cv), rv + cv)
    v = T.vector("v")
    out = v + r
    assert out.broadcastable == (True, False)


def test_broadcast_shape_mismatch_raises(mode):
    with pytest.raises(ValueError):
        run(lambda a, b: a + b, [rand(3), rand(4)], mode)


@SETTINGS
@given(st.data())
def test_binary_broadcast_property(data):
    shape_a, shape_b = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4)).input_shapes
    elems = st.floats(-10, 10)
    a = data.draw(hnp.arrays("float64", shape_a, elements=elems))
    b = data.draw(hnp.arrays("float64", shape_b, elements=elems))
    for fn, np_fn in [(T.add, np.add), (T.mul, np.multiply), (T.maximum, np.maximum), (T.gt, np.greater),
                      (lambda x, y: T.tanh(x) * y - x, lambda x, y: np.tanh(x) * y - x)]:
        for m in MODES:
            check(fn, np_fn, [a, b], m, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------ logic etc.
def test_reflected_operators_with_python_numbers(mode):
    x = np.abs(rand(5)) + 0.5
    check(lambda v: 2.5 % v, lambda v: 2.5 % v, [x], mode, rtol=1e-12)
    check(lambda v: 7 // v, lambda v: 7 // v, [x], mode)
    check(lambda v: 2 ** v, lambda v: 2 ** v, [x], mode, rtol=1e-12)
    check(lambda v: 1 - v, lambda v: 1 - v, [x], mode)
    check(lambda v: 3 / v, lambda v: 3 / v, [x], mode, rtol=1e-12)
    check(lambda v: +v, lambda v: +v, [x], mode)
    i = rng.integers(0, 16, size=(5,)).astype("int16")
    check(lambda v: 6 & v, lambda v: 6 & v, [i], mode)
    check(lambda v: 6 | v, lambda v: 6 | v, [i], mode)
    check(lambda v: True & (v > 3), lambda v: True & (v > 3), [i], mode)


def test_bitwise_and_or_invert(mode):
    a = rng.integers(0, 16, size=(5,)).astype("int32")
    b = rng.integers(0, 16, size=(5,)).astype("int32")
    check(lambda x, y: x & y, np.bitwise_and, [a, b], mode)
    check(lambda x, y: x | y, np.bitwise_or, [a, b], mode)
    check(lambda x: ~x, np.invert, [a], mode)
    p, q = a > 7, b > 7
    check(lambda x, y: T.and_(x, y), np.logical_and, [p, q], mode)
    check(lambda x, y: T.or_(x, y), np.logical_or, [p, q], mode)
    check(T.invert, np.logical_not, [p], mode)


def test_switch_matches_where(mode):
    c = rand(3, 4) > 0
    a, b = rand(3, 4), rand(4)
    check(T.switch, np.where, [c, a, b], mode)
    check(lambda x: T.switch(x > 0, x, 0.0), lambda x: np.where(x > 0, x, 0.0), [a], mode)
    check(lambda x, y: T.where(x > y, x, y), lambda x, y: np.where(x > y, x, y), [a, b], mode)
    # int condition, float branches of different dtypes
    ci = rng.integers(0, 2, size=(4,)).astype("int8")
    check(T.switch, np.where, [ci, rand(4, dtype="float32"), rand(4)], mode)


def test_clip(mode):
    x = rand(5, 6)
    check(lambda v: T.clip(v, -1.0, 1.5), lambda v: np.clip(v, -1.0, 1.5), [x], mode)
    x32 = x.astype("float32")
    got = check(lambda v: T.clip(v, -1.0, 1.5), lambda v: np.clip(v, -1.0, 1.5), [x32], mode)
    assert got.dtype == "float32"
    lo, hi = rand(6, low=-2, high=-1), rand(6, low=1, high=2)
    check(T.clip, np.clip, [x, lo, hi], mode)


@pytest.mark.parametrize("src,dst", [("float64", "float32"), ("float32", "float64"), ("float64", "int32"),
                                     ("int64", "float32"), ("int32", "int8"), ("float32", "bool"),
                                     ("bool", "float64"), ("uint8", "int64")])
def test_cast(src, dst, mode):
    x = (rand(3, 4, low=-100, high=100)).astype(src)
    got = check(lambda v: T.cast(v, dst), lambda v: v.astype(dst), [x], mode)
    assert got.dtype == dst
    got = check(lambda v: v.astype(dst), lambda v: v.astype(dst), [x], mode)
    # cast inside a fused chain
    check(lambda v: T.cast(v * 2, dst) + 1, lambda v: (v * 2).astype(dst) + 1, [x], mode)


def test_cast_to_same_dtype_is_identity():
    x = T.dvector("x")
    assert T.cast(x, "float64") is x


def test_zeros_ones_like(mode):
    x = rand(3, 2).astype("float32")
    check(T.zeros_like, np.zeros_like, [x], mode)
    check(T.ones_like, np.ones_like, [x], mode)
    check(lambda v: T.second(v, 3.0), lambda v: np.full_like(v, 3.0), [x], mode)


# ----------------------------------------------------------- reductions
AXES = [None, 0, 1, -1, -2, (0, 1), (0, 2), (2,), (-1, 0), ()]
REDUCTIONS = [("sum", T.sum, np.sum), ("mean", T.mean, np.mean), ("max", T.max, np.max),
              ("min", T.min, np.min), ("prod", T.prod, np.prod)]


@pytest.mark.parametrize("name,fn,np_fn", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_axes(name, fn, np_fn, keepdims, mode):
    x = rand(2, 3, 4, low=0.5, high=1.5)
    for axis in AXES:
        check(lambda v: fn(v, axis=axis, keepdims=keepdims),
              lambda v: np_fn(v, axis=axis, keepdims=keepdims), [x], mode, rtol=1e-12)
        method = getattr(sym(x), name)
        assert method is not None
        check(lambda v: getattr(v, name)(axis=axis, keepdims=keepdims),
              lambda v: np_fn(v, axis=axis, keepdims=keepdims), [x], mode, rtol=1e-12)


@pytest.mark.parametrize("name,fn,np_fn", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int8", "uint8", "bool"])
def test_reduction_dtypes(name, fn, np_fn, dtype, mode):
    x = rng.integers(0, 3, size=(3, 4)).astype(dtype)
    for axis in [None, 0, 1]:
        check(lambda v: fn(v, axis=axis), lambda v: np_fn(v, axis=axis), [x], mode, rtol=1e-6)


def test_reductions_of_vectors_and_scalars(mode):
    v = rand(7)
    for fn, np_fn in [(T.sum, np.sum), (T.mean, np.mean), (T.max, np.max), (T.min, np.min), (T.prod, np.prod)]:
        check(fn, np_fn, [v], mode, rtol=1e-12)
        check(lambda a: fn(a, axis=0, keepdims=True), lambda a: np_fn(a, axis=0, keepdims=True), [v], mode,
              rtol=1e-12)
        check(fn, np_fn, [np.asarray(2.5)], mode)


def test_reduction_axis_errors():
    x = T.matrix("x")
    with pytest.raises(ValueError, match="out of range"):
        T.sum(x, axis=2)
    with pytest.raises(ValueError, match="repeats"):
        T.sum(x, axis=(0, -2))


def test_max_of_empty_axis_is_an_error(mode):
    x = T.dmatrix("x")
    f = compile_fn([x], T.max(x, axis=0), mode=mode)
    with pytest.raises(ValueError, match="empty"):
        f(np.zeros((0, 3)))


@SETTINGS
@given(hnp.arrays("float64", hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), elements=st.floats(-5, 5)),
       st.data())
def test_reduction_property(x, data):
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1)
                     | st.lists(st.integers(0, x.ndim - 1), unique=True, max_size=x.ndim).map(tuple))
    keepdims = data.draw(st.booleans())
    for fn, np_fn in [(T.sum, np.sum), (T.max, np.max), (T.mean, np.mean)]:
        for m in MODES:
            check(lambda v: fn(v, axis=axis, keepdims=keepdims), lambda v: np_fn(v, axis=axis, keepdims=keepdims),
                  [x], m, rtol=1e-12, atol=1e-12)


def test_var_std(mode):
    x = rand(4, 5)
    for axis in [None, 0, 1]:
        check(lambda v: T.var(v, axis=axis), lambda v: np.var(v, axis=axis), [x], mode, rtol=1e-12)
        check(lambda v: T.std(v, axis=axis), lambda v: np.std(v, axis=axis), [x], mode, rtol=1e-12)


# ------------------------------------------------------------------ dot
DOT_SHAPES = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)), ((1, 4), (4, 1)), ((), (3,)),
              ((3, 4), ())]


@pytest.mark.parametrize("sa,sb", DOT_SHAPES, ids=[f"{a}x{b}" for a, b in DOT_SHAPES])
@pytest.mark.parametrize("dtypes", [("float64", "float64"), ("float32", "float32"), ("float32", "float64"),
                                    ("int32", "float32"), ("int64", "int64")])
def test_dot_all_combos(sa, sb, dtypes, mode):
    a = rand(*sa, dtype=dtypes[0], low=-3, high=3)
    b = rand(*sb, dtype=dtypes[1], low=-3, high=3)
    tol = 1e-5 if "float32" in dtypes else 1e-12
    check(T.dot, np.dot, [a, b], mode, rtol=tol)
    if a.ndim and b.ndim:
        check(lambda x, y: x @ y, np.matmul, [a, b], mode, rtol=tol)
        check(lambda x, y: x.dot(y), np.dot, [a, b], mode, rtol=tol)


def test_dot_op_rejects_rank3_and_T_dot_builds_theanos_nd_dot():
    with pytest.raises(TypeError, match="vectors and matrices"):
        T.Dot()(T.tensor3("a"), T.matrix("b"))
    assert T.dot(T.tensor3("a"), T.matrix("b")).ndim == 3  # as Theano: a tensordot (see test_theano_surface)


def test_dot_shape_mismatch_names_op_and_shapes(mode):
    x, y = T.dmatrix("x"), T.dmatrix("y")
    z = T.dot(x, y)  # the line the error must point at
    f = compile_fn([x, y], z, mode=mode)
    with pytest.raises(ValueError) as info:
        f(np.ones((2, 3)), np.ones((4, 5)))
    msg = str(info.value)
    assert "Dot" in msg
    assert "(2, 3)" in msg and "(4, 5)" in msg
    assert "float64" in msg
    assert "test_ops_numpy.py" in msg
    assert "z = T.dot(x, y)" in msg


def test_elemwise_shape_mismatch_names_op_and_line(mode):
    x, y = T.fvector("x"), T.fvector("y")
    z = T.exp(x) * y + 1  # elementwise chain that FAST_RUN fuses
    f = compile_fn([x, y], z, mode=mode)
    with pytest.raises(ValueError) as info:
        f(np.ones(3, "float32"), np.ones(4, "float32"))
    msg = str(info.value)
    assert "Elemwise" in msg
    assert "(3,)" in msg and "(4,)" in msg and "float32" in msg
    assert "test_ops_numpy.py" in msg


def test_reshape_error_names_op_and_line(mode):
    x = T.dvector("x")
    y = x.reshape((2, 3))
    f = compile_fn([x], y, mode=mode)
    with pytest.raises(ValueError) as info:
        f(np.arange(5.0))
    msg = str(info.value)
    assert "Reshape" in msg and "(5,)" in msg and "test_ops_numpy.py" in msg


# ----------------------------------------------------------- dimshuffle
def test_transpose_and_T(mode):
    m = rand(3, 4)
    check(lambda v: v.T, np.transpose, [m], mode)
    t = rand(2, 3, 4)
    check(lambda v: v.T, np.transpose, [t], mode)
    check(lambda v: v.transpose(1, 0, 2), lambda v: v.transpose(1, 0, 2), [t], mode)
    check(lambda v: v.transpose((2, 0, 1)), lambda v: v.transpose(2, 0, 1), [t], mode)
    check(lambda v: T.transpose(v), np.transpose, [t], mode)
    check(lambda v: v.T, lambda v: v, [rand(5)], mode)


def test_dimshuffle_patterns(mode):
    v = rand(4)
    check(lambda x: x.dimshuffle("x", 0), lambda x: x[None, :], [v], mode)
    check(lambda x: x.dimshuffle(0, "x"), lambda x: x[:, None], [v], mode)
    check(lambda x: x.dimshuffle("x", 0, "x"), lambda x: x[None, :, None], [v], mode)
    m = rand(3, 4)
    check(lambda x: x.dimshuffle(1, "x", 0), lambda x: x.T[:, None, :], [m], mode)
    check(lambda x: T.dimshuffle(x, (1, 0)), np.transpose, [m], mode)
    s = np.asarray(1.5)
    check(lambda x: x.dimshuffle("x", "x"), lambda x: x.reshape(1, 1), [s], mode)


def test_dimshuffle_drops_broadcastable_axes(mode):
    r = rand(1, 4)
    check(lambda x: x.dimshuffle(1), lambda x: x[0], [r], mode, bcasts=[(True, False)])
    c = rand(3, 1)
    check(lambda x: x.dimshuffle(0), lambda x: x[:, 0], [c], mode, bcasts=[(False, True)])
    check(lambda x: x.dimshuffle("x", 0), lambda x: x[:, 0][None], [c], mode, bcasts=[(False, True)])
    with pytest.raises(ValueError, match="not broadcastable"):
        T.matrix().dimshuffle(0)
    with pytest.raises(ValueError):
        T.matrix().dimshuffle(0, 0)
    with pytest.raises(ValueError):
        T.matrix().dimshuffle(0, 2)


def test_dimshuffle_output_broadcastable():
    x = T.matrix("x")
    assert x.dimshuffle("x", 1, 0).broadcastable == (True, False, False)
    assert T.row().T.broadcastable == (False, True)


def test_dimshuffle_then_elemwise_chain(mode):
    m, v = rand(3, 4), rand(3)
    check(lambda a, b: T.exp(a.T) * b + b.dimshuffle("x", 0),
          lambda a, b: np.exp(a.T) * b + b[None, :], [m, v], mode, rtol=1e-12)


# -------------------------------------------------------------- reshape
def test_reshape_constant_shapes(mode):
    x = rand(2, 3, 4)
    for shape in [(24,), (6, 4), (4, -1), (-1,), (2, 3, 2, 2), (-1, 2, 3), (1, 24)]:
        check(lambda v: v.reshape(shape), lambda v: v.reshape(shape), [x], mode)
        check(lambda v: T.reshape(v, shape), lambda v: v.reshape(shape), [x], mode)
    check(lambda v: v.reshape(4, 6), lambda v: v.reshape(4, 6), [x], mode)
    check(lambda v: v.flatten(), lambda v: v.reshape(-1), [x], mode)
    check(lambda v: T.flatten(v, 2), lambda v: v.reshape(2, -1), [x], mode)


def test_reshape_symbolic_shapes(mode):
    x = rand(6, 4)
    check(lambda v: v.reshape((v.shape[0], 2, -1)), lambda v: v.reshape(6, 2, -1), [x], mode)
    check(lambda v: v.reshape((v.shape[1], v.shape[0])), lambda v: v.reshape(4, 6), [x], mode)
    check(lambda v: v.reshape((v.shape[0] * v.shape[1],)), lambda v: v.reshape(24), [x], mode)
    check(lambda v: v.reshape(v.shape[::-1], ndim=2), lambda v: v.reshape(4, 6), [x], mode)
    check(lambda v: v.reshape((v.shape[0] // 2, -1)), lambda v: v.reshape(3, -1), [x], mode)
    # a shape coming from another input
    a, b = rand(2, 3), rand(3, 2)
    check(lambda p, q: p.reshape(q.shape, ndim=2), lambda p, q: p.reshape(q.shape), [a, b], mode)
    n = np.asarray(3, dtype="int32")
    check(lambda p, k: p.reshape((k, -1)), lambda p, k: p.reshape(int(k), -1), [a, n], mode)


def test_reshape_broadcastable_from_constant_shape():
    x = T.vector()
    assert x.reshape((1, -1)).broadcastable == (True, False)


def test_shape_and_size(mode):
    x = rand(3, 5)
    got = run(lambda v: v.shape, [x], mode)
    assert tuple(got) == (3, 5) and got.dtype == "int64"
    assert int(run(lambda v: v.size, [x], mode)) == 15
    assert int(run(lambda v: v.shape[1], [x], mode)) == 5
    assert int(run(lambda v: T.shape(v)[-1], [x], mode)) == 5


# -------------------------------------------------------------- indexing
BASIC_INDICES = [
    (2,), (-1,), (slice(1, None),), (slice(None, -1),), (slice(None, None, 2),), (slice(None, None, -1),),
    (slice(4, 0, -2),), (1, slice(None)), (slice(None), 2), (slice(1, 3), slice(None, None, 2)),
    (-2, -1), (None,), (slice(None), None), (None, 1, None), (1, None, slice(1, None)), (Ellipsis, 0),
    (0, Ellipsis), (slice(10, 20),), (slice(-100, 100),),
]


@pytest.mark.parametrize("index", BASIC_INDICES, ids=[repr(i) for i in BASIC_INDICES])
def test_basic_indexing(index, mode):
    x = rand(5, 4)
    check(lambda v: v[index], lambda v: v[index], [x], mode)


def test_basic_indexing_3d_and_vectors(mode):
    t = rand(3, 4, 5)
    for index in [(0,), (1, 2), (1, 2, 3), (slice(None), 1, slice(None, None, -2)), (Ellipsis, 1),
                  (None, slice(None), None, 0)]:
        check(lambda v: v[index], lambda v: v[index], [t], mode)
    v = rand(7)
    for index in [3, -7, slice(2, 5), slice(None, None, 3), (None,)]:
        check(lambda a: a[index], lambda a: a[index], [v], mode)


def test_scalar_index_result_is_0d_array(mode):
    got = run(lambda v: v[2], [rand(5)], mode)
    assert isinstance(got, np.ndarray) and got.shape == ()


def test_symbolic_integer_indices(mode):
    x = rand(6, 5)
    for dtype in ["int32", "int64", "uint8"]:
        i = np.asarray(4, dtype=dtype)
        check(lambda v, k: v[k], lambda v, k: v[int(k)], [x, i], mode)
        check(lambda v, k: v[1:k], lambda v, k: v[1:int(k)], [x, i], mode)
        check(lambda v, k: v[:, k - 2], lambda v, k: v[:, int(k) - 2], [x, i], mode)
        check(lambda v, k: v[::k, 1], lambda v, k: v[::int(k), 1], [x, i], mode)
    j = np.asarray(-2, dtype="int64")
    check(lambda v, k: v[k, k:], lambda v, k: v[int(k), int(k):], [x, j], mode)
    with pytest.raises(TypeError):
        T.matrix()[T.fscalar()]


def test_index_out_of_bounds(mode):
    x = T.dvector("x")
    k = T.lscalar("k")
    f = compile_fn([x, k], x[k], mode=mode)
    assert f(np.arange(3.0), 2) == 2.0
    with pytest.raises(IndexError) as info:
        f(np.arange(3.0), 3)
    assert "Subtensor" in str(info.value)
    with pytest.raises(IndexError):
        T.vector()[1, 2]


def test_advanced_int_vector_indexing(mode):
    x = rand(5, 3)
    idx = np.array([4, 0, 0, -1, 2], dtype="int64")
    check(lambda v, i: v[i], lambda v, i: v[i], [x, idx], mode)
    check(lambda v, i: v[i], lambda v, i: v[i], [rand(6), idx.astype("int32")], mode)
    check(lambda v: v[[1, 3]], lambda v: v[[1, 3]], [x], mode)
    check(lambda v: v[np.array([2, 2])], lambda v: v[[2, 2]], [x], mode)
    with pytest.raises(TypeError):
        T.matrix()[T.fvector()]


def test_stack_and_concatenate(mode):
    a, b, c = rand(2, 3), rand(2, 3), rand(4, 3)
    check(lambda x, y: T.stack([x, y]), lambda x, y: np.stack([x, y]), [a, b], mode)
    check(lambda x, y: T.stack([x, y], axis=1), lambda x, y: np.stack([x, y], axis=1), [a, b], mode)
    check(lambda x, y: T.stack([x, y], axis=2), lambda x, y: np.stack([x, y], axis=2), [a, b], mode)
    check(lambda x, y: T.concatenate([x, y]), lambda x, y: np.concatenate([x, y]), [a, c], mode)
    check(lambda x, y: T.concatenate([x, y, x], axis=1), lambda x, y: np.concatenate([x, y, x], axis=1),
          [a, b], mode)
    check(lambda x, y: T.concatenate([x, y], axis=-1), lambda x, y: np.concatenate([x, y], axis=-1),
          [a, b], mode)
    s, t = np.asarray(1.5), np.asarray(2, dtype="int32")
    check(lambda x, y: T.stack([x, y]), lambda x, y: np.stack([x, y]), [s, t], mode)
    check(lambda x, y: T.stack([x, y, x]), lambda x, y: np.stack([x, y, x]), [s, s], mode)
    v, w = rand(3, dtype="float32"), rand(2)
    check(lambda x, y: T.concatenate([x, y]), lambda x, y: np.concatenate([x, y]), [v, w], mode)
    with pytest.raises(TypeError):
        T.concatenate([T.vector(), T.matrix()])


def test_concatenate_runtime_mismatch(mode):
    x, y = T.dmatrix("x"), T.dmatrix("y")
    f = compile_fn([x, y], T.concatenate([x, y], axis=0), mode=mode)
    with pytest.raises(ValueError) as info:
        f(np.ones((2, 3)), np.ones((2, 4)))
    assert "Join" in str(info.value) and "test_ops_numpy.py" in str(info.value)


# ------------------------------------------------------------------ nnet
def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_softmax(dtype, mode):
    tol = 1e-6 if dtype == "float32" else 1e-12
    for shape in [(5,), (3, 4), (1, 7)]:
        x = rand(*shape, dtype=dtype, low=-10, high=10)
        # Theano's T.nnet.softmax makes a vector a (1, n) row; T.softmax keeps the rank
        got = check(T.nnet.softmax, lambda a: _softmax(a.reshape(-1, a.shape[-1])), [x], mode, rtol=tol, atol=tol)
        np.testing.assert_allclose(got.sum(axis=-1), 1, rtol=tol * 10)
        check(T.softmax, _softmax, [x], mode, rtol=tol, atol=tol)
    big = np.array([[1000.0, 0.0, -1000.0]], dtype=dtype)
    got = run(T.nnet.softmax, [big], mode)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, [[1, 0, 0]], atol=tol)


def test_nnet_crossentropies(mode):
    p = rand(4, 3, low=0.05, high=0.95)
    y = (rand(4, 3) > 0).astype("float64")
    check(T.nnet.binary_crossentropy, lambda a, b: -(b * np.log(a) + (1 - b) * np.log(1 - a)), [p, y], mode,
          rtol=1e-12)
    sm = _softmax(rand(4, 3))
    onehot = np.eye(3)[[0, 2, 1, 1]]
    check(T.nnet.categorical_crossentropy, lambda a, b: -(b * np.log(a)).sum(axis=-1), [sm, onehot], mode,
          rtol=1e-12)


# -------------------------------------------------------- compound graphs
def test_fusable_chain(mode):
    x, y = rand(50), rand(50)
    check(lambda a, b: T.tanh(a * b + 1.5) * T.exp(-a) - T.sqr(b) / (1 + T.abs(a)),
          lambda a, b: np.tanh(a * b + 1.5) * np.exp(-a) - np.square(b) / (1 + np.abs(a)), [x, y], mode,
          rtol=1e-12)
    check(lambda a: T.sigmoid(a * 3 - 1) + T.softplus(a) * T.relu(a - 0.5),
          lambda a: _sigmoid(a * 3 - 1) + _softplus(a) * np.maximum(a - 0.5, 0), [x], mode, rtol=1e-12,
          atol=1e-15)  # sigmoid is accurate in absolute terms (see test_sigmoid_softplus_extremes)


def test_chain_with_shared_subexpressions(mode):
    x = rand(4, 5)
    check(lambda a: (T.exp(a) + 1) * (T.exp(a) + 1) - T.exp(a),
          lambda a: (np.exp(a) + 1) ** 2 - np.exp(a), [x], mode, rtol=1e-12)
    # one intermediate used by two outputs
    xs = T.dmatrix("x")
    e = T.exp(xs) * 2
    f = compile_fn([xs], [e + 1, e.sum(axis=1), T.log(e)], mode=mode)
    r1, r2, r3 = f(x)
    np.testing.assert_allclose(r1, np.exp(x) * 2 + 1)
    np.testing.assert_allclose(r2, (np.exp(x) * 2).sum(axis=1))
    np.testing.assert_allclose(r3, np.log(np.exp(x) * 2))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gemv_and_gemm_patterns(dtype, mode):
    tol = 1e-5 if dtype == "float32" else 1e-12
    m, v, b = rand(4, 3, dtype=dtype), rand(3, dtype=dtype), rand(4, dtype=dtype)
    check(lambda a, x, c: T.dot(a, x) + c, lambda a, x, c: a @ x + c, [m, v, b], mode, rtol=tol)
    check(lambda a, x, c: c + T.dot(a, x), lambda a, x, c: c + a @ x, [m, v, b], mode, rtol=tol)
    check(lambda a, x, c: c - T.dot(a, x), lambda a, x, c: c - a @ x, [m, v, b], mode, rtol=tol)
    y, z = rand(3, 5, dtype=dtype), rand(4, 5, dtype=dtype)
    check(lambda a, x, c: 2.5 * T.dot(a, x) - 2 * c, lambda a, x, c: 2.5 * (a @ x) - 2 * c, [m, y, z], mode,
          rtol=tol)
    check(lambda a, x, c: T.dot(a, x) * 0.5 + c * 3, lambda a, x, c: (a @ x) * 0.5 + c * 3, [m, y, z], mode,
          rtol=tol)
    check(lambda a, x, c: -T.dot(a, x) + c, lambda a, x, c: -(a @ x) + c, [m, y, z], mode, rtol=tol)
    # bias broadcast along rows: a gemm must not be fed a row it would have to grow
    row = rand(5, dtype=dtype)
    check(lambda a, x, c: T.dot(a, x) + c, lambda a, x, c: a @ x + c, [m, y, row], mode, rtol=tol)
    check(lambda a, x, c: T.dot(a, x) + c.dimshuffle(0, "x"), lambda a, x, c: a @ x + c[:, None],
          [m, y, rand(4, dtype=dtype)], mode, rtol=tol)
    # the dot also used elsewhere: gemm must not steal it
    ms, ys, zs = T.matrix("m", dtype), T.matrix("y", dtype), T.matrix("z", dtype)
    d = T.dot(ms, ys)
    f = compile_fn([ms, ys, zs], [d + zs, d * 2], mode=mode)
    r1, r2 = f(m, y, z)
    np.testing.assert_allclose(r1, m @ y + z, rtol=tol)
    np.testing.assert_allclose(r2, (m @ y) * 2, rtol=tol)


def test_gemm_does_not_clobber_reused_bias(mode):
    m, y, z = rand(3, 3), rand(3, 3), rand(3, 3)
    ms, ys, zs = T.dmatrix("m"), T.dmatrix("y"), T.dmatrix("z")
    c = zs * 2  # an intermediate gemm may overwrite in place only if nobody else reads it
    f = compile_fn([ms, ys, zs], [T.dot(ms, ys) + c, c + 1], mode=mode)
    r1, r2 = f(m, y, z)
    np.testing.assert_allclose(r1, m @ y + 2 * z)
    np.testing.assert_allclose(r2, 2 * z + 1)
    zc = z.copy()
    f(m, y, z)
    np.testing.assert_array_equal(z, zc)


def test_a_dot_minus_2z(mode):
    a, x, y, z = np.asarray(1.7), rand(3, 4), rand(4, 2), rand(3, 2)
    check(lambda s, p, q, r: s * T.dot(p, q) - 2 * r, lambda s, p, q, r: s * (p @ q) - 2 * r, [a, x, y, z], mode,
          rtol=1e-12)
    check(lambda s, p, q, r: s * T.dot(p, q[:, 0]) - 2 * r[:, 1],
          lambda s, p, q, r: s * (p @ q[:, 0]) - 2 * r[:, 1], [a, x, y, z], mode, rtol=1e-12)


def test_constant_folding_matches(mode):
    c = T.constant(np.arange(6.0).reshape(2, 3))
    x = T.dmatrix("x")
    out = x * T.exp(c) + T.sum(c * 2, axis=0) + T.dot(c, c.T).sum()
    f = compile_fn([x], out, mode=mode)
    xv = rand(2, 3)
    cv = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(f(xv), xv * np.exp(cv) + (cv * 2).sum(axis=0) + (cv @ cv.T).sum())
    g = compile_fn([], T.exp(c) + 1, mode=mode)
    np.testing.assert_allclose(g(), np.exp(cv) + 1)


def test_algebraic_identities(mode):
    x = rand(3, 4)
    check(lambda a: a * 1 + 0 - 0, lambda a: a, [x], mode)
    check(lambda a: -(-a), lambda a: a, [x], mode)
    check(lambda a: -(a - 2), lambda a: 2 - a, [x], mode)
    check(lambda a: (-a) - 2, lambda a: -a - 2, [x], mode)
    check(lambda a: a ** 2 + a ** 0.5 * 0 + 1 / (a ** -1), lambda a: a ** 2 + 0 * np.sqrt(np.abs(a)) * 0 + a,
          [np.abs(x) + 0.1], mode, rtol=1e-12)
    check(lambda a: 1 / (1 + T.exp(-a)), _sigmoid, [x], mode, rtol=1e-12, atol=1e-15)
    check(lambda a: 1 - T.sigmoid(a), lambda a: 1 - _sigmoid(a), [x], mode, rtol=1e-12, atol=1e-15)
    check(lambda a: T.log(1 + T.exp(a)), lambda a: np.log1p(np.exp(a)), [x], mode, rtol=1e-12)
    check(lambda a: T.log(T.sigmoid(a)), lambda a: np.log(_sigmoid(a)), [x], mode, rtol=1e-10)
    check(lambda a: T.log(1 - T.sigmoid(a)), lambda a: np.log(1 - _sigmoid(a)), [x], mode, rtol=1e-10)


def test_identity_rewrites_keep_broadcast_shape(mode):
    # x * ones((3, 1)) changes the shape of a (1, 4) row: it must not be dropped
    r = rand(1, 4)
    check(lambda a: a * np.ones((3, 1)), lambda a: a * np.ones((3, 1)), [r], mode, bcasts=[(True, False)])
    v = rand(4)
    check(lambda a: a + np.zeros((2, 1)), lambda a: a + np.zeros((2, 1)), [v], mode)
    check(lambda a: a ** np.ones((2, 1)), lambda a: a ** np.ones((2, 1)), [np.abs(v)], mode)


def test_logistic_regression_step(mode):
    n, feats = 20, 7
    xv = rand(n, feats)
    yv = (rand(n) > 0).astype("float64")
    wv, bv = rand(feats), 0.3
    x, y = T.dmatrix("x"), T.dvector("y")
    w, b = theano.shared(wv.copy(), "w"), theano.shared(bv, "b")
    p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
    prediction = p_1 > 0.5
    xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
    cost = xent.mean() + 0.01 * (w ** 2).sum()
    gw, gb = T.grad(cost, [w, b])
    train = compile_fn([x, y], [prediction, xent], updates=[(w, w - 0.1 * gw), (b, b - 0.1 * gb)],
                            mode=mode)
    pred, xe = train(xv, yv)
    z = xv @ wv + bv
    p = _sigmoid(z)
    np.testing.assert_array_equal(pred, p > 0.5)
    expected = yv * _softplus(-z) + (1 - yv) * _softplus(z)
    if mode == "FAST_COMPILE":
        # FAST_COMPILE runs the literal log(p_1) and log(1 - p_1). p_1 is rounded to ~eps absolutely, so the
        # log of a probability q can be off by a few eps / q: 2e-8 where 1 - p_1 is 5e-9 (seen on one NumPy
        # build), while a stabilised graph keeps 1e-10 relative everywhere.
        q = np.minimum(p, 1 - p)
        bound = 1e-10 * np.abs(expected) + 4 * np.finfo(np.float64).eps / q
        worst = np.argmax(np.abs(xe - expected) / bound)
        assert np.all(np.abs(xe - expected) <= bound), (worst, xe[worst], expected[worst], q[worst])
    else:
        np.testing.assert_allclose(xe, expected, rtol=1e-10, atol=1e-14)
    gw_np = xv.T @ (p - yv) / n + 0.02 * wv
    gb_np = (p - yv).mean()
    np.testing.assert_allclose(w.get_value(), wv - 0.1 * gw_np, rtol=1e-10)
    np.testing.assert_allclose(b.get_value(), bv - 0.1 * gb_np, rtol=1e-10)


def test_scalar_shared_variable_updates_stay_arrays(mode):
    """A 0-d result (ufunc on 0-d arrays, full reduction, vector dot) stored in a shared variable."""
    b = theano.shared(0.5, "b")
    x = T.dvector("x")
    f = compile_fn([x], [], updates=[(b, b - 0.1 * x.sum() + T.dot(x, x) * 0 + x[0] * 0)], mode=mode)
    f(np.ones(3))
    f(np.ones(3))
    value = b.get_value()
    assert isinstance(value, np.ndarray) and value.shape == () and value.dtype == "float64"
    np.testing.assert_allclose(value, 0.5 - 0.6)
    assert isinstance(b.get_value(borrow=True), np.ndarray)


def test_outputs_do_not_alias_inputs(mode):
    x = rand(3, 4)
    for build in [lambda v: v.T, lambda v: v[1:], lambda v: v.reshape((12,)), lambda v: v * 1,
                  lambda v: v.dimshuffle(0, "x", 1), lambda v: T.identity(v)]:
        xs = T.dmatrix("x")
        f = compile_fn([xs], build(xs), mode=mode)
        out = f(x)
        out[...] = -99
        assert not np.any(x == -99)


def test_repeated_calls_give_fresh_results(mode):
    """Results of earlier calls are neither stale nor overwritten by later calls."""
    x, y, m = T.dvector("x"), T.dvector("y"), T.dmatrix("m")
    outs = [-x * np.array([1.0, 2.0, 3.0]), T.exp(x) * y + 1, (T.tanh(x) - y).sum(), T.dot(m, x) + y,
            T.sigmoid(T.dot(m, x) * 2 + y), x.dimshuffle(0, "x") * y, x[1:] * 2, T.nnet.softmax(m)]
    f = compile_fn([x, y, m], outs, mode)
    calls = [(rand(3), rand(3), rand(3, 3)) for _ in range(3)]
    results = [f(*args) for args in calls]
    for (xv, yv, mv), res in zip(calls, results):
        want = [-xv * [1, 2, 3], np.exp(xv) * yv + 1, (np.tanh(xv) - yv).sum(), mv @ xv + yv,
                _sigmoid((mv @ xv) * 2 + yv), xv[:, None] * yv, xv[1:] * 2, _softmax(mv)]
        for got, w in zip(res, want):
            np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-15)


def test_fast_run_really_rewrites_what_these_tests_compare():
    """The FAST_RUN cases above exercise Gemv/Gemm, fusion and constant folding (not a no-op)."""
    m, x, b, z = T.dmatrix("m"), T.dvector("x"), T.dvector("b"), T.dmatrix("z")
    names = lambda f: [type(n.op).__name__ for n in f.maker.fgraph.toposort()]  # noqa: E731
    assert "Gemv" in names(theano.function([m, x, b], T.dot(m, x) + b, mode="FAST_RUN"))
    assert "Gemm" in names(theano.function([m, z], 1.5 * T.dot(m, m) - 2 * z, mode="FAST_RUN"))
    assert "Gemv" not in names(theano.function([m, x, b], T.dot(m, x) + b, mode="FAST_COMPILE"))
    f = theano.function([x, b], T.tanh(x * b + 1.5) * T.exp(-x), mode="FAST_RUN")
    assert len(f.maker.fgraph.toposort()) == 1 and "Composite" in str(f.maker.fgraph.toposort()[0].op)
    c = T.constant(np.arange(3.0))
    f = theano.function([x], x + T.exp(c).sum(), mode="FAST_RUN")
    assert not any(type(n.op).__name__ == "Sum" for n in f.maker.fgraph.toposort())
