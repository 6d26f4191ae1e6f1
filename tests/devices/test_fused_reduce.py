"""FusedSum (map + full sum + one-element tail in one reduction kernel), the rewrites that cut W3's launches
(dot + bias recomputed inside the fused readers, sum(sqr(w)) -> dot(w, w), 1/N on the host), and their values
against NumPy on the CPU, the simulated GPU and CuPy's code path (the stand-in, or a real GPU)."""
import warnings

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
import cupy_standin
from coursekit.scalar import ops as S
from coursekit.scalar.cuda_codegen import reduction_kernel_parts
from coursekit.tensor.mapreduce import FusedSum
from cupy_standin import counting

DEVICES = ["cpu", "sim", cupy_standin.cuda_case()]


@pytest.fixture(params=DEVICES)
def device(request):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with cupy_standin.on(request.param), theano.config.change(device=request.param, floatX="float32"):
            yield request.param


def op_names(f):
    return [type(n.op).__name__ for n in f.toposort()]


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


@pytest.mark.parametrize("shape", [(7,), (3, 5), (1, 4)])
def test_a_mapped_sum_with_a_tail_is_one_op_on_a_gpu_and_equals_numpy(device, shape):
    xv, yv = f32(*shape), f32(*shape, seed=1)
    x, y = theano.shared(xv), theano.shared(yv)       # on a GPU device they live there (host arrays would not)
    n = T.fscalar("n")
    out = (T.exp(x) * y - x).sum() / n + 3
    f = theano.function([n], out)
    got = f(np.float32(4))
    ref = (np.exp(xv.astype("float64")) * yv - xv).sum() / 4 + 3
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    names = op_names(f)
    if device == "cpu":
        assert "FusedSum" not in names and "Sum" in names, names    # the CPU graph keeps the ops lessons show
    else:
        assert names.count("GpuFusedSum") == 1 and "GpuCAReduce" not in names, names
        assert not [n for n in names if n == "GpuElemwise"], names  # map and tail live inside the reduction


def test_a_sum_read_by_others_keeps_its_map_and_tail_apart(device):
    x = T.vector("x")
    e = T.exp(x)
    s = e.sum()
    f = theano.function([x], [s * 2, e])                # exp is an output: the map cannot take it
    xv = f32(6)
    r2, re = f(xv)
    np.testing.assert_allclose(r2, 2 * np.exp(xv).sum(), rtol=1e-5)
    np.testing.assert_allclose(re, np.exp(xv), rtol=1e-6)
    if device != "cpu":
        (fused,) = [n for n in f.toposort() if type(n.op).__name__ == "GpuFusedSum"]
        assert fused.op.map_op is None and fused.op.post_op is not None


def test_the_stand_in_runs_the_generated_reduction_as_one_launch():
    """The CUDA C coursekit generates for CuPy's ReductionKernel, run on the emulator: map, sum and tail."""
    with cupy_standin.installed():
        parts = reduction_kernel_parts(S.get("sqr"), ["float32"], S.get("sub"), ["float32"], [False], "float32")
        assert parts[0] == "float32 i0, raw float32 p0" and parts[4] == "out0 = ck_post(a, p0[0])"
        kernel = cupy_standin.ReductionKernel(*parts[:7], reduce_type=parts[8], preamble=parts[7])
        xv = f32(300)
        x, b = cupy_standin.asarray(xv), cupy_standin.asarray(np.float32(3))
        out = cupy_standin.asarray(np.float32(0))
        with counting() as c:
            r = kernel(x, b, out=out)
        assert r is out and (c.launches, c.allocations) == (1, 0), c
        np.testing.assert_allclose(r.get(), (xv.astype("float64") ** 2).sum() - 3, rtol=1e-5)
        host = reduction_kernel_parts(None, ["float32"], S.get("mul"), ["float32"], [True], "float32")
        assert host[0] == "float32 i0, float32 p0" and host[4] == "out0 = ck_post(a, p0)"
        scaled = cupy_standin.ReductionKernel(*host[:7], reduce_type=host[8], preamble=host[7])
        np.testing.assert_allclose(scaled(x, 0.5).get(), xv.sum(dtype="float64") * 0.5, rtol=1e-5)


def test_fused_sum_refuses_a_tail_input_of_more_than_one_element():
    op = FusedSum(S.get("exp"), 1, S.get("add"), "float32")
    with pytest.raises(TypeError, match="one element"):
        op.make_node(T.fvector("x"), T.fvector("y"))


def test_sum_of_squares_is_one_dot(device):
    w = theano.shared(f32(9), name="w")
    f = theano.function([], (w ** 2).sum() * 0.5)
    np.testing.assert_allclose(f(), 0.5 * (w.get_value().astype("float64") ** 2).sum(), rtol=1e-5)
    names = op_names(f)
    assert ("GpuDot" if device != "cpu" else "Dot") in names and "Sum" not in names, names


def test_a_bias_read_by_two_fused_kernels_is_added_inside_both(device):
    """dot(X, w) + b read by two elementwise kernels: on a GPU no GEMV copies b into its output first."""
    X, w, b = theano.shared(f32(20, 4)), theano.shared(f32(4, seed=1)), theano.shared(np.float32(0.5))
    z = T.dot(X, w) + b
    f = theano.function([], [T.tanh(z) * 2, T.exp(z) + 1])
    zv = X.get_value().astype("float64") @ w.get_value() + 0.5
    r1, r2 = f()
    np.testing.assert_allclose(r1, np.tanh(zv) * 2, rtol=1e-5)
    np.testing.assert_allclose(r2, np.exp(zv) + 1, rtol=1e-5)
    names = op_names(f)
    if device == "cpu":
        assert "Gemv" in names, names
    else:
        assert "GpuGemv" not in names and "GpuDot" in names, names
        assert names.count("GpuElemwise") == 2, names           # the add lives inside each reader


def test_the_bias_copy_stays_when_the_sum_itself_is_returned(device):
    X, w, b = theano.shared(f32(20, 4)), theano.shared(f32(4, seed=1)), theano.shared(np.float32(0.5))
    f = theano.function([], T.dot(X, w) + b)
    np.testing.assert_allclose(f(), X.get_value() @ w.get_value() + 0.5, rtol=1e-5)
    assert ("GpuGemv" if device != "cpu" else "Gemv") in op_names(f)


def test_one_over_n_of_a_device_array_is_computed_on_the_host(device):
    x = theano.shared(f32(12), name="x")
    f = theano.function([], T.grad(T.exp(x).mean(), x))
    np.testing.assert_allclose(f(), np.exp(x.get_value()) / 12, rtol=1e-5)
    if device != "cpu":
        divisions = [n for n in f.toposort() if "true_div" in str(n.op) and not str(n.op).startswith("Gpu")]
        assert divisions, [str(n.op) for n in f.toposort()]       # 1/N: host scalars, a kernel's argument


def test_a_host_scalar_in_the_map_and_the_tail_is_a_scalar_argument(device):
    """sum(exp(x) * s) + s with s a float32 host input: s reaches the one kernel as a number, map and tail."""
    xv = f32(11)
    x, s = theano.shared(xv), T.fscalar("s")
    f = theano.function([s], (T.exp(x) * s).sum() + s)
    np.testing.assert_allclose(f(np.float32(2)), (np.exp(xv.astype("float64")) * 2).sum() + 2, rtol=1e-5)
    if device != "cpu":
        assert [type(n.op).__name__ for n in f.toposort()] == ["GpuFusedSum", "HostFromGpu"], op_names(f)
