"""Result dtypes follow NumPy 2, symbolically (``out.dtype``) and at run time.

NumPy 2 rules (NEP 50): array dtypes combine by promotion; Python scalars are
*weak* and take the array's kind where they fit (``float32 * 2.5`` stays
float32, ``int8 + 1`` stays int8), and an out-of-range Python int is an
OverflowError rather than a silent upcast.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import coursekit as theano
import coursekit.tensor as T
from coursekit.tensor.type import TensorType

MODES = ["FAST_RUN", "FAST_COMPILE"]
DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint32", "float32", "float64"]
BINARY = {"add": (T.add, np.add), "sub": (T.sub, np.subtract), "mul": (T.mul, np.multiply),
          "true_div": (T.true_div, np.true_divide), "int_div": (T.int_div, np.floor_divide),
          "pow": (T.pow, np.power), "maximum": (T.maximum, np.maximum), "gt": (T.gt, np.greater),
          "eq": (T.eq, np.equal), "mod": (T.mod, np.mod)}


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


def values(dtype, shape=(3,)):
    if dtype == "bool":
        return np.array([True, False, True][: shape[0]])
    return (np.arange(1, shape[0] + 1) % 3 + 1).astype(dtype)


def _numpy_result(np_fn, *arrays):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(np_fn(*arrays))


def _supported(np_fn, *dtypes):
    try:
        _numpy_result(np_fn, *[values(d) for d in dtypes])
    except TypeError:  # e.g. subtracting booleans: NumPy refuses
        return False
    return True


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_dtype_pairs(op, mode):
    """For every pair of array dtypes: the symbolic dtype, the value's dtype and NumPy's agree."""
    fn, np_fn = BINARY[op]
    inputs, outputs, expected = [], [], []
    for da, db in itertools.product(DTYPES, DTYPES):
        if not _supported(np_fn, da, db):
            continue
        a, b = T.vector(f"a_{da}", da), T.vector(f"b_{db}", db)
        out = fn(a, b)
        want = _numpy_result(np_fn, values(da), values(db))
        assert out.dtype == want.dtype.name, f"{op}({da}, {db}): symbolic {out.dtype}, NumPy {want.dtype}"
        inputs.append((a, b, da, db))
        outputs.append(out)
        expected.append(want)
    # one function for all pairs of this op keeps the test fast
    flat_inputs = [v for a, b, _, _ in inputs for v in (a, b)]
    f = theano.function(flat_inputs, outputs, mode=mode)
    args = [values(d) for _, _, da, db in inputs for d in (da, db)]
    with np.errstate(all="ignore"):
        results = f(*args)
    for (_, _, da, db), got, want in zip(inputs, results, expected):
        assert got.dtype == want.dtype, f"{op}({da}, {db}): got {got.dtype}, NumPy {want.dtype}"
        np.testing.assert_allclose(got, want, err_msg=f"{op}({da}, {db})")


PY_SCALARS = [2, 2.5, True, -3, 1000, 0.1]


@pytest.mark.parametrize("dtype", DTYPES)
def test_python_scalars_are_weak(dtype, mode):
    """x op python_scalar has NumPy 2's dtype, or raises OverflowError where NumPy does."""
    x = T.vector("x", dtype)
    xv = values(dtype)
    for (name, (fn, np_fn)), c in itertools.product(sorted(BINARY.items()), PY_SCALARS):
        for order in ("left", "right"):
            args_np = (xv, c) if order == "left" else (c, xv)
            try:
                want = _numpy_result(np_fn, *args_np)
            except OverflowError:
                with pytest.raises(OverflowError):
                    fn(*((x, c) if order == "left" else (c, x)))
                continue
            except (TypeError, ValueError):  # bool - bool; ints to negative integer powers
                continue
            out = fn(*((x, c) if order == "left" else (c, x)))
            assert out.dtype == want.dtype.name, f"{name}({dtype} array, {c!r}) [{order}]: {out.dtype} vs {want.dtype}"
            f = theano.function([x], out, mode=mode)
            with np.errstate(all="ignore"):
                got = f(xv)
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, err_msg=f"{name}({dtype}, {c!r}) [{order}]")


def test_tutorial_examples_of_weak_scalars():
    assert (T.fvector() * 2.5).dtype == "float32"
    assert (2.5 * T.fvector()).dtype == "float32"
    assert (T.fvector() + 1).dtype == "float32"
    assert (T.ivector() / 2).dtype == "float64"
    assert (T.ivector() // 2).dtype == "int32"
    assert (T.ivector() * 2).dtype == "int32"
    assert (T.ivector() * 2.5).dtype == "float64"
    assert (T.bvector() + 1).dtype == "int8"
    assert (T.bvector() + 1.5).dtype == "float64" == (np.ones(1, "int8") + 1.5).dtype
    assert (T.fvector() ** 2).dtype == "float32"
    assert (T.fvector() > 0.5).dtype == "bool"
    assert T.exp(T.ivector()).dtype == "float64"
    assert T.exp(T.bvector()).dtype == "float16"
    assert T.sqrt(T.fvector()).dtype == "float32"
    assert T.switch(T.fvector() > 0, T.fvector(), 0).dtype == "float32"
    assert T.maximum(T.fvector(), 0).dtype == "float32"
    assert T.clip(T.fvector(), 0, 1).dtype == "float32"
    assert T.clip(T.fvector(), 0.0, 1.0).dtype == "float32"


def test_int8_plus_1000_is_a_clear_overflow_error():
    x = T.bvector("x")
    with pytest.raises(OverflowError) as info:
        x + 1000
    msg = str(info.value)
    assert "1000" in msg and "int8" in msg
    with pytest.raises(OverflowError):
        1000 + x
    with pytest.raises(OverflowError):
        T.wvector() * 100000
    with pytest.raises(OverflowError):
        T.vector(dtype="uint8") - (-1)
    # what fits is fine and stays int8
    assert (x + 100).dtype == "int8"
    assert (x + 1000.0).dtype == "float64" == (np.ones(1, "int8") + 1000.0).dtype


def test_int32_true_div_gives_float64(mode):
    x = T.ivector("x")
    f = theano.function([x], x / 2, mode=mode)
    out = f(np.array([1, 2, 3], dtype="int32"))
    assert out.dtype == "float64"
    np.testing.assert_array_equal(out, [0.5, 1.0, 1.5])
    y = T.fvector("y")
    g = theano.function([y], y * 2.5 + 1, mode=mode)
    assert g(np.ones(3, "float32")).dtype == "float32"


def test_float32_graph_stays_float32(mode):
    x, w = T.fmatrix("x"), T.fvector("w")
    b = theano.shared(np.float32(0.5), "b")
    y = T.fvector("y")
    p = 1 / (1 + T.exp(-T.dot(x, w) - b))
    xent = -y * T.log(p) - (1 - y) * T.log(1 - p)
    cost = xent.mean() + 0.01 * (w ** 2).sum()
    gw, gb = T.grad(cost, [w, b])
    for v in (p, xent, cost, gw, gb):
        assert v.dtype == "float32", v
    f = theano.function([x, w, y], [p, cost, gw, gb], mode=mode)
    rng = np.random.default_rng(0)
    outs = f(rng.standard_normal((5, 3)).astype("float32"), rng.standard_normal(3).astype("float32"),
             (rng.random(5) > 0.5).astype("float32"))
    for o in outs:
        assert o.dtype == "float32"


@pytest.mark.parametrize("dtype", DTYPES)
def test_reduction_dtypes_follow_numpy(dtype, mode):
    x = T.matrix("x", dtype)
    xv = np.stack([values(dtype), values(dtype)])
    for fn, np_fn in [(T.sum, np.sum), (T.prod, np.prod), (T.max, np.max), (T.min, np.min), (T.mean, np.mean)]:
        for axis in (None, 0, -1):
            out = fn(x, axis=axis)
            want = np_fn(xv, axis=axis)
            assert out.dtype == np.asarray(want).dtype.name, (fn.__name__, dtype, out.dtype, np.asarray(want).dtype)
            got = theano.function([x], out, mode=mode)(xv)
            assert got.dtype == np.asarray(want).dtype
            np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("da,db", [("float32", "float32"), ("float32", "float64"), ("int32", "float32"),
                                   ("int64", "int64"), ("int8", "int16"), ("float64", "int32")])
def test_dot_dtypes(da, db, mode):
    for sa, sb in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 2))]:
        a = TensorType(da, (False,) * len(sa)).make_variable("a")
        b = TensorType(db, (False,) * len(sb)).make_variable("b")
        av, bv = np.ones(sa, da), np.ones(sb, db)
        out = T.dot(a, b)
        assert out.dtype == np.dot(av, bv).dtype.name
        got = theano.function([a, b], out, mode=mode)(av, bv)
        assert got.dtype == np.dot(av, bv).dtype
        np.testing.assert_array_equal(got, np.dot(av, bv))


def test_concatenate_and_stack_dtypes(mode):
    a, b = T.fvector("a"), T.ivector("b")
    out = T.concatenate([a, b])
    want = np.concatenate([np.ones(2, "float32"), np.ones(2, "int32")])
    assert out.dtype == want.dtype.name == "float64"
    got = theano.function([a, b], out, mode=mode)(np.ones(2, "float32"), np.ones(2, "int32"))
    assert got.dtype == want.dtype
    s, t = T.fscalar("s"), T.bscalar("t")
    out = T.stack([s, t])
    assert out.dtype == np.stack([np.float32(1), np.int8(1)]).dtype.name
    got = theano.function([s, t], out, mode=mode)(np.float32(1.5), np.int8(2))
    np.testing.assert_array_equal(got, [1.5, 2.0])


def test_cast_and_astype_dtypes(mode):
    x = T.dvector("x")
    for dtype in ["float32", "int8", "int64", "bool", "uint16", "float16"]:
        out = T.cast(x, dtype)
        assert out.dtype == dtype
        got = theano.function([x], out, mode=mode)(np.array([1.7, -2.2, 0.0]))
        np.testing.assert_array_equal(got, np.array([1.7, -2.2, 0.0]).astype(dtype))
        assert got.dtype == dtype
    with pytest.raises(TypeError):
        T.cast(x, "not_a_dtype")


def test_mean_dtypes():
    assert T.mean(T.fmatrix()).dtype == "float32"
    assert T.mean(T.imatrix()).dtype == "float64"
    assert T.mean(T.dmatrix(), axis=0).dtype == "float64"
    assert T.mean(T.bvector()).dtype == "float64" == np.mean(np.ones(2, "int8")).dtype


def test_constants_and_floatx():
    assert T.constant(1).dtype == "int64"
    assert T.constant(1.5).dtype == theano.config.floatX
    assert T.constant(True).dtype == "bool"
    assert T.constant(np.float32(1.5)).dtype == "float32"
    assert T.constant(np.arange(3, dtype="int16")).dtype == "int16"
    with theano.config.change(floatX="float32"):
        assert T.vector().dtype == "float32"
        assert T.matrix().dtype == "float32"
        assert T.constant(2.5).dtype == "float32"
    with theano.config.change(floatX="float64"):
        assert T.vector().dtype == "float64"
    assert T.fvector().dtype == "float32" and T.dvector().dtype == "float64" and T.ivector().dtype == "int32"
    assert T.lvector().dtype == "int64" and T.bvector().dtype == "int8" and T.wvector().dtype == "int16"


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.sampled_from(sorted(BINARY)))
def test_dtype_pairs_property(da, db, op):
    """Symbolic dtype of a 0-d op equals NumPy's for 0-d arrays too (no value-based casting)."""
    fn, np_fn = BINARY[op]
    a, b = T.scalar("a", da), T.scalar("b", db)
    av, bv = np.asarray(values(da)[0]), np.asarray(values(db)[0])
    try:
        want = _numpy_result(np_fn, av, bv)
    except TypeError:
        return
    out = fn(a, b)
    assert out.dtype == want.dtype.name
    got = theano.function([a, b], out)(av, bv)
    assert isinstance(got, np.ndarray) and got.dtype == want.dtype
