"""GPU twins: made from the CPU op by one mechanism, placed by declarations, run on any GPU device."""
import numpy as np
import pytest

import cupy_standin

import coursekit as theano
import coursekit.devices as devices
import coursekit.tensor as T
from coursekit.devices.gpu_ops import (GpuCAReduce, GpuDimShuffle, GpuElemwise, GpuGemm, GpuGemv, GpuOp, GpuReshape,
                                       gpu_twin)
from coursekit.tensor.blas import Gemm, Gemv
from coursekit.tensor.reduction import CAReduce, Sum

GPU_DEVICES = ["sim", cupy_standin.cuda_case()]   # CuPy's code path: a real GPU, else the CuPy stand-in


@pytest.fixture(params=GPU_DEVICES)
def gpu(request):
    with cupy_standin.on(request.param), theano.config.change(device=request.param):
        yield devices.current()


def names(f):
    return [type(n.op).__name__ for n in f.toposort()]


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def test_twins_come_from_one_factory():
    assert gpu_twin(Gemm) is GpuGemm and gpu_twin(Gemv) is GpuGemv
    assert issubclass(GpuGemv, GpuGemm) and issubclass(GpuGemm, GpuOp)  # the CPU hierarchy, mirrored
    assert gpu_twin(Sum) is gpu_twin(CAReduce) is GpuCAReduce  # the class that declares gpu_name owns the twin
    assert not issubclass(GpuElemwise, T.Elemwise)  # the tutorial's isinstance test tells CPU from GPU
    with pytest.raises(TypeError, match="declares no gpu_name"):
        gpu_twin(theano.Op)


def test_a_twin_prints_as_its_cpu_op_and_reads_its_attributes(gpu):
    x = theano.shared(f32(3, 4), name="x")
    f = theano.function([], [T.exp(x).sum(axis=0), x.T])
    ops = {type(n.op): n.op for n in f.toposort()}
    assert str(ops[GpuElemwise]) == "GpuElemwise{exp}" and ops[GpuElemwise].scalar_op.name == "exp"
    assert str(ops[GpuCAReduce]) == "GpuCAReduce{add, axis=[0]}" and ops[GpuCAReduce].axis == (0,)
    assert str(ops[GpuDimShuffle]) == "GpuDimShuffle{1,0}"
    assert all(op.target is gpu for op in ops.values() if isinstance(op, GpuOp))


def test_gpu_reshape(gpu):
    x = theano.shared(np.arange(12, dtype="float32"), name="x")
    n = T.lscalar("n")
    f = theano.function([n], (x.reshape((n, 12 // 3)) * 2).sum(axis=1))
    assert "GpuReshape" in names(f)
    reshape = next(node for node in f.toposort() if isinstance(node.op, GpuReshape))
    assert reshape.op.host_input(1, reshape.inputs[1]) and type(reshape.inputs[1].type) is T.TensorType  # shape: host
    np.testing.assert_array_equal(f(3), (np.arange(12).reshape(3, 4) * 2).sum(axis=1))
    with pytest.raises(ValueError, match="cannot reshape an array of shape"):
        f(5)
    # a view of the device buffer: no copy on the device
    g = theano.function([], theano.gpu_from_host(x.reshape((2, 6))))
    assert names(g) == ["GpuReshape"]
    out = g()
    assert gpu.is_device_array(out) and out.shape == (2, 6)
    np.testing.assert_array_equal(gpu.to_host(out), np.arange(12).reshape(2, 6))


def test_gpu_subtensor_with_symbolic_indices(gpu):
    x = theano.shared(f32(5, 4), name="x")
    i = T.lscalar("i")
    f = theano.function([i], x[i, 1:] * 2)
    assert "GpuSubtensor" in names(f)
    np.testing.assert_allclose(f(3), x.get_value()[3, 1:] * 2)


def test_inplace_gemm_runs_in_place_on_the_device(gpu):
    """Gemm{inplace} (z an intermediate nobody else reads) keeps its in-place branch on the device."""
    a, b, c = (theano.shared(f32(4, 4, seed=s), name=n) for s, n in enumerate("abc"))
    f = theano.function([], T.dot(a, b) + T.exp(c))
    gemm = next(n.op for n in f.toposort() if isinstance(n.op, GpuGemm))
    assert gemm.inplace and gemm.destroy_map == {0: [0]} and str(gemm) == "GpuGemm{inplace}"
    expected = a.get_value() @ b.get_value() + np.exp(c.get_value())
    for _ in range(3):  # the in-place write must not leak into the next call
        np.testing.assert_allclose(f(), expected, rtol=1e-5)


@pytest.mark.parametrize("build", [lambda A: A * 1, lambda A: A * 2, lambda A: A + 0, lambda A: A,
                                   lambda A: A.T, lambda A: A[0]], ids=["A*1", "A*2", "A+0", "A", "A.T", "A[0]"])
def test_functions_return_host_arrays_whatever_the_rewrites_did(gpu, build):
    """Defect 6: on sim, ``A * 1`` returned a device array (rewritten to the shared A) and ``A * 2`` a host one."""
    A = theano.shared(f32(2, 3), name="A")
    out = theano.function([], build(A))()
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, np.asarray(build(A.get_value())))


def test_gpu_from_host_is_how_an_output_stays_on_the_device(gpu):
    A = theano.shared(f32(2, 3), name="A")
    for scale in (1, 2):
        out = theano.function([], theano.gpu_from_host(A * scale))()
        assert gpu.is_device_array(out)
        np.testing.assert_allclose(gpu.to_host(out), A.get_value() * scale)


def test_std_gradient_over_a_length_one_axis_is_zero_not_nan():
    """Defect 6: sqrt's infinite slope at 0 times a zero gradient gave NaN."""
    x = T.fmatrix("x")
    f = theano.function([x], [T.std(x, axis=1), T.grad(T.std(x, axis=1).sum(), x)])
    values, grads = f(np.float32([[3.0], [-1.0]]))
    np.testing.assert_array_equal(values, [0, 0])
    np.testing.assert_array_equal(grads, [[0], [0]])
    data = f32(3, 4)  # elsewhere: the ordinary gradient, and NaN stays NaN
    values, grads = f(data)
    np.testing.assert_allclose(values, data.std(axis=1), rtol=1e-5)
    centred = data - data.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(grads, centred / (4 * data.std(axis=1, keepdims=True)), rtol=1e-4)
    assert np.isnan(f(np.float32([[np.nan, 1.0]]))[0]).all()
    theano.gradient.verify_grad(lambda v: T.std(v, axis=0), [np.random.default_rng(1).random((4, 2))])


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
def test_a_transfer_pair_is_cut(gpu, mode):
    """host_from_gpu(gpu_from_host(y)) in the user's graph: cut_transfer_pairs fires, the data never leaves the GPU."""
    x = T.fmatrix("x")
    y = T.exp(x)
    round_trip = theano.host_from_gpu(theano.gpu_from_host(y)) * 2
    f = theano.function([x], round_trip, mode=mode)
    assert "cut_transfer_pairs" in [name for _, name, _ in f.maker.fgraph.rewrite_log]
    assert names(f).count("GpuFromHost") == 1 and names(f).count("HostFromGpu") == 1   # the input's and the result's
    data = f32(3, 4)
    np.testing.assert_allclose(f(data), np.exp(data) * 2, rtol=1e-6)
