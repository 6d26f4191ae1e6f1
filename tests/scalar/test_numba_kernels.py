"""The optional numba path for fused elementwise chains gives the NumPy path's values.

Skipped where numba is not installed; ``config.cpu_kernels`` stays 'numpy' by default.
"""
import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit import config
from coursekit.scalar import numba_kernels


def test_importing_coursekit_does_not_import_numba():
    code = "import sys, coursekit, coursekit.tensor; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_numba_is_not_the_default():
    assert config.cpu_kernels == "numpy"


def test_asking_for_numba_without_it_is_a_clear_error(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "numba" else real_find_spec(name, *args))
    with pytest.raises(ValueError, match="pip install numba"):
        with config.change(cpu_kernels="numba"):
            pass


def test_transcendental_chains_over_matrices_keep_their_numpy_form():
    """A numba ufunc calls libm once per element: NumPy's SIMD exp/tanh/log are faster. Over
    vectors the loop kernel (with numba_math's vectorisable exp/log) takes them instead."""
    x = T.fvector("x")
    composite = theano.function([x], T.exp(x) * 2 + 1).toposort()[0].op.scalar_op
    assert not numba_kernels.supports(composite, composite.input_dtypes)
    plain = theano.function([x], (x * 2 + 1) * x).toposort()[0].op.scalar_op
    assert numba_kernels.supports(plain, plain.input_dtypes)
    assert "np.float32(" in numba_kernels.kernel_source(plain, plain.input_dtypes)
    assert numba_kernels.supports_loop(composite, ("a",))
    assert not numba_kernels.loop_modes([T.fmatrix().type], T.fmatrix().type)   # matrices: no loop kernel


def every_supported_op(x, y):
    """One expression using every op the numba path supports (so one JIT covers them all)."""
    z = (x * y - 0.5 * x) / (y + 1.5) - (-x)
    z = T.maximum(z, y) + T.minimum(x, z) + T.relu(x - y) + abs(y) * T.sqr(x)
    z = z + T.zeros_like(x) * 0 + T.cast(T.cast(y, "float64") * 2, "float32")
    return z


@pytest.fixture(scope="module", params=["vector", "matrix"])
def both_paths(request):
    """Vectors run as a loop kernel, matrices as a numba ufunc: both must give NumPy's bits."""
    pytest.importorskip("numba")
    x, y = (T.fvectors if request.param == "vector" else T.fmatrices)("x,y")
    out = every_supported_op(x, y)
    plain = theano.function([x, y], out)
    with config.change(cpu_kernels="numba"):
        jitted = theano.function([x, y], out)
    if request.param == "vector":
        return plain, jitted
    return (lambda a, b: plain(a[None], b[None])[0]), (lambda a, b: jitted(a[None], b[None])[0]), plain, jitted


def test_numba_kernel_is_one_node_and_really_numba(both_paths):
    plain, jitted = both_paths[-2:]
    assert len(jitted.toposort()) == 1 and len(plain.toposort()) == 1
    composite = jitted.toposort()[0].op.scalar_op
    assert plain.toposort()[0].op.scalar_op.kernel == "numpy"
    if jitted.toposort()[0].outputs[0].type.ndim == 1:
        assert composite.kernel == "numba-loop" and "for k in range(n):" in composite.impl.kernel_source
    else:
        assert composite.kernel == "numba" and isinstance(composite.impl, np.ufunc)


def test_numba_kernel_gives_the_numpy_paths_bits(both_paths):
    plain, jitted = both_paths[:2]
    rng = np.random.default_rng(0)
    xv = rng.standard_normal(1003).astype("float32") * 10
    yv = rng.standard_normal(1003).astype("float32")
    xv[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 3e38]
    yv[6:9] = [np.nan, np.inf, -0.0]
    with np.errstate(all="ignore"):
        expected, got = plain(xv, yv), jitted(xv, yv)
    assert got.dtype == expected.dtype == np.float32
    np.testing.assert_array_equal(got, expected)  # equal, NaN where NaN: the same rounding at every step


def test_numba_kernel_handles_0d_and_empty(both_paths):
    plain, jitted = both_paths[:2]
    for shape in [(0,), (1,), (7,)]:
        xv, yv = np.full(shape, 1.5, "float32"), np.full(shape, -2.0, "float32")
        np.testing.assert_array_equal(jitted(xv, yv), plain(xv, yv))
