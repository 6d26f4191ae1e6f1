"""The per-call fast paths (issue 17, W2): what they skip must not change what a call does."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T


def test_the_call_is_the_generated_code_itself():
    x = T.fvector("x")
    f = theano.function([x], x + 1)
    assert f.__call__ is f._call            # no Python wrapper frame in between
    assert f.source.startswith("def call(a0=MISSING, /, *extra, **named):")


def test_positional_keyword_default_and_wrong_calls_after_the_fast_path():
    x, y = T.fvector("x"), T.fscalar("y")
    f = theano.function([x, theano.In(y, value=2.0)], x * y)
    one = np.ones(2, "float32")
    np.testing.assert_array_equal(f(one, np.float32(5)), [5, 5])
    np.testing.assert_array_equal(f(one), [2, 2])                    # default filled in
    np.testing.assert_array_equal(f(x=one), [2, 2])                  # everything by name
    np.testing.assert_array_equal(f(one, y=3), [3, 3])
    with pytest.raises(TypeError, match="twice"):
        f(one, 4, y=3)
    with pytest.raises(TypeError, match="takes 2 argument"):
        f(one, 1, 2)
    with pytest.raises(TypeError, match="missing a value for input 0"):
        f()
    g = theano.function([], theano.shared(np.float32(3)) * 2)
    assert g() == 6
    with pytest.raises(TypeError, match="takes 0 argument"):
        g(1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "true_div", "neg"])
def test_zero_d_arithmetic_through_scalar_operators_equals_the_ufunc(name, dtype):
    a, b = T.scalar("a", dtype=dtype), T.scalar("b", dtype=dtype)
    expr = {"add": a + b, "sub": a - b, "mul": a * b, "true_div": a / b, "neg": -a}[name]
    f = theano.function([a, b], expr, on_unused_input="ignore")
    ufunc = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "true_div": np.true_divide}.get(name)
    values = [1.5, -2.25, 0.0, -0.0, 3e38, np.inf, -np.inf, np.nan, 1e-45]
    for u in values:
        for v in values:
            x, y = np.asarray(u, dtype), np.asarray(v, dtype)
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                got = f(x, y)
                want = np.negative(x) if ufunc is None else ufunc(x, y)
            assert isinstance(got, np.ndarray) and got.dtype == dtype and got.shape == ()
            np.testing.assert_array_equal(got, want)
            assert np.signbit(got) == np.signbit(want)


def test_mixed_dtype_zero_d_arithmetic_keeps_the_ufunc_rules():
    a, b = T.fscalar("a"), T.iscalar("b")
    f = theano.function([a, b], a + b)   # not all one dtype: the ufunc path, with the graph's dtype
    got = f(np.float32(1.5), np.int32(2))
    assert got.dtype == (a + b).type.dtype and got == 3.5
