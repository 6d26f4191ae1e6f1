"""numba loop kernels (issue 17): vectorisable float32 exp/log/log1p, fused chains over vectors as
one loop, compiled lazily, with NumPy's values (within a few ulp) and NumPy's errors."""
import subprocess
import sys

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit import config

numba = pytest.importorskip("numba")
from coursekit.scalar import numba_math  # noqa: E402  (needs numba)

SPECIAL = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0, -1.0, 1e-45, -1e-45, 1e-38, 88.72283935546875,
                    88.7228394, -87.4, -103.9728317, -104.0, 3.4e38, -0.9999999, 1e-8, -1e-8], np.float32)


@numba.njit
def _apply(kind, x, out):
    for i in range(x.shape[0]):
        if kind == 0:
            out[i] = numba_math.exp32(x[i])
        elif kind == 1:
            out[i] = numba_math.log32(x[i])
        else:
            out[i] = numba_math.log1p32(x[i])


def _ulps(got, want):
    """Distance in units in the last place (float32 bit patterns on one monotonic line)."""
    g, w = (v.view(np.int32).astype(np.int64) for v in (got, want))
    g, w = (np.where(v < 0, -(v & 0x7FFFFFFF), v) for v in (g, w))
    return np.abs(g - w)


@pytest.mark.parametrize("kind, reference", [(0, np.exp), (1, np.log), (2, np.log1p)])
def test_vectorisable_math_is_within_3_ulp_of_numpy_with_the_same_specials(kind, reference):
    every_9973rd = np.arange(0, 2**32, 9973, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([every_9973rd[np.isfinite(every_9973rd)], SPECIAL])
    got = np.empty_like(x)
    _apply(kind, x, got)
    with np.errstate(all="ignore"):
        want = reference(x)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    assert _ulps(got[finite], want[finite]).max() <= 3
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]))


def logistic_pieces(z, y, scale):
    """W3's fused steps: a sigmoid, the stable cross-entropy (exp, log1p), a gradient with a broadcast scale."""
    p = T.nnet.sigmoid(z)
    xent = -y * T.log(p) - (1 - y) * T.log(1 - p)
    return [p > 0.5, xent, scale.dimshuffle("x") * (p - y) + T.exp(-abs(z))]


@pytest.fixture(scope="module")
def logistic_both():
    z, y, s = T.fvector("z"), T.fvector("y"), T.fscalar("s")
    outs = logistic_pieces(z, y, s)
    plain = theano.function([z, y, s], outs)
    with config.change(cpu_kernels="numba"):
        jitted = theano.function([z, y, s], outs)
    return plain, jitted


def test_fused_vector_chains_become_loop_kernels(logistic_both):
    plain, jitted = logistic_both
    kinds = [getattr(n.op.scalar_op, "kernel", None) for n in jitted.toposort() if hasattr(n.op, "scalar_op")]
    assert kinds.count("numba-loop") >= 2 and "numba-loop" not in [
        getattr(n.op.scalar_op, "kernel", None) for n in plain.toposort() if hasattr(n.op, "scalar_op")]


def test_loop_kernels_give_numpys_values_specials_included(logistic_both):
    plain, jitted = logistic_both
    rng = np.random.default_rng(1)
    z = (rng.standard_normal(1001) * 20).astype(np.float32)
    z[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 100.0, -100.0, 1e-30]
    y = (rng.random(1001) > 0.5).astype(np.float32)
    with np.errstate(all="ignore"):
        want, got = plain(z, y, np.float32(0.25)), jitted(z, y, np.float32(0.25))
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-7)   # NaN where NaN, inf where inf


def test_loop_kernel_refuses_undeclared_broadcasting_like_numpy_path(logistic_both):
    plain, jitted = logistic_both
    for f in (plain, jitted):
        with pytest.raises(ValueError, match="broadcastable|disagree"):
            f(np.ones(5, np.float32), np.ones(1, np.float32), np.float32(1))


def test_loop_kernel_reuses_and_borrows_buffers_safely():
    x = theano.shared(np.linspace(-3, 3, 50).astype(np.float32))
    with config.change(cpu_kernels="numba"):
        plain = theano.function([], T.exp(x))
        borrowed = theano.function([], theano.Out(T.exp(x), borrow=True))
    assert plain.toposort()[0].op.scalar_op.kernel == "numba-loop"
    a, b = plain(), plain()
    assert not np.shares_memory(a, b)
    c, d = borrowed(), borrowed()
    assert np.shares_memory(c, d)
    np.testing.assert_allclose(a, np.exp(x.get_value()), rtol=4e-7)


def test_compiling_with_numba_kernels_imports_numba_only_at_the_first_call():
    code = ("import sys, numpy as np, coursekit as th, coursekit.tensor as T\n"
            "from coursekit import config\n"
            "x = T.fvector('x')\n"
            "with config.change(cpu_kernels='numba'):\n"
            "    f = th.function([x], T.exp(x) * 2 + x)\n"
            "print('numba' in sys.modules)\n"
            "f(np.ones(3, np.float32))\n"
            "print('numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_zero_d_fused_chains_use_scalar_operators_with_the_ufunc_results():
    a, b = T.fscalar("a"), T.fscalar("b")
    f = theano.function([a, b], (a - 0.1 * b) / (b + 2.5) * a)
    (node,) = f.toposort()
    composite = node.op.scalar_op
    assert composite.scalar_impl is not None
    for u, v in [(1.5, -2.0), (0.0, -2.5), (3e38, 1e-30), (np.nan, 1.0), (-np.inf, 2.0)]:
        u, v = np.float32(u), np.float32(v)
        with np.errstate(all="ignore"):
            want = composite.numpy_impl(*[np.asarray({"a": u, "b": v}[str(i)]) for i in node.inputs])
            got = f(u, v)
        assert got.dtype == np.float32 and got.shape == ()
        np.testing.assert_array_equal(got, want)
