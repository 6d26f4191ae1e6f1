"""The CuPy stand-in itself: it refuses what CuPy refuses, counts what a GPU would be asked to do, compiles
kernels through coursekit's emulator, and follows CUDA's graph-capture rules.  (What it lets coursekit's
tests check is in test_launch_budgets.py and the ``cuda`` cases of the device tests.)"""
import numpy as np
import pytest

import cupy_standin
from cupy_standin import counting


@pytest.fixture
def cp():
    with cupy_standin.installed() as module:
        yield module


def test_device_memory_is_not_host_memory(cp):
    a = cp.asarray(np.arange(4, dtype="float32"))
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(a)
    with pytest.raises(TypeError):
        a + np.ones(4, "float32")                 # a host array where device data is expected
    with pytest.raises(TypeError):
        np.ones(4, "float32") + a
    np.testing.assert_array_equal(cp.asnumpy(np.exp(a)), np.exp(np.arange(4, dtype="float32")))  # NumPy ufunc -> CuPy


def test_counts_copies_launches_syncs_and_allocations(cp):
    host = np.arange(12, dtype="float32")
    with counting() as c:
        a = cp.asarray(host)                      # H2D + allocation
        b = cp.exp(a).reshape(3, 4)               # 1 launch + allocation; the reshape is a view
        total = float(b.sum())                    # 1 launch + allocation, then a D2H that the host waits for
        b += 1                                    # in place: 1 launch, no allocation
    assert (c.h2d, c.h2d_bytes, c.d2h, c.d2h_bytes) == (1, 48, 1, 4)
    assert c.kernels == ["exp", "sum", "iadd"] and c.launches == 3
    assert (c.allocations, c.syncs) == (3, 1)
    assert total == pytest.approx(np.exp(host).sum(), rel=1e-6)


def test_elementwise_kernel_runs_the_cuda_c_on_the_emulator(cp):
    k = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x > y ? x - y : 2 * y;", "standin_diff")
    a, b = cp.asarray(np.array([3, 1, 5], "float32")), cp.asarray(np.array([[1], [2]], "float32"))
    out = cp.empty((2, 3), "float32")
    with counting() as c:
        assert k(a, b, out) is out                # broadcast (2, 3), into the given buffer
        k(a, 0.5)                                 # a scalar argument
    np.testing.assert_array_equal(out.get(), np.where(a.get() > b.get(), a.get() - b.get(), 2 * b.get()))
    assert c.launches == 2 and c.allocations == 1 and c.kernels == ["standin_diff"] * 2
    with pytest.raises(TypeError, match="mismatched"):
        k(cp.asarray(np.ones(3, "float64")), a)   # float64 into a float32 parameter


def test_a_kernel_the_cuda_compiler_rejects_fails_to_compile(cp):
    k = cp.ElementwiseKernel("float32 x", "float32 z", "z = undefined_function(x);", "standin_bad")
    with pytest.raises(cp.cuda.compiler.CompileException, match="undefined_function"):
        k(cp.zeros(3, "float32"))


def test_raw_module_launches_and_counts(cp):
    src = 'extern "C" __global__ void twice(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] *= 2; }'
    f = cp.RawModule(code=src).get_function("twice")
    x = cp.asarray(np.arange(5, dtype="float32"))
    with counting() as c:
        f((1,), (32,), (x, np.int32(5)))
    np.testing.assert_array_equal(x.get(), 2 * np.arange(5))
    assert c.kernels == ["raw:twice"] and c.allocations == 0


def test_captured_work_runs_only_when_the_graph_is_launched(cp):
    x = cp.asarray(np.ones(4, "float32"))
    out = cp.zeros(4, "float32")
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        cp.multiply(x, 3, out=out)
        x += 1
        graph = stream.end_capture()
    np.testing.assert_array_equal(out.get(), 0)        # nothing ran during capture
    np.testing.assert_array_equal(x.get(), 1)
    with counting() as c:
        graph.launch(stream)
        graph.launch(stream)
    assert (c.graph_launches, c.launches) == (2, 0) and graph.nodes == 2
    np.testing.assert_array_equal(out.get(), 6)        # the second replay read x == 2
    np.testing.assert_array_equal(x.get(), 3)


def test_a_sync_during_capture_is_an_error_and_invalidates_it(cp):
    stream = cp.cuda.Stream(non_blocking=True)
    x = cp.zeros(3, "float32")
    with stream:
        stream.begin_capture()
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="StreamCaptureUnsupported"):
            x.get()
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="Invalidated"):
            stream.end_capture()
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="legacy default stream"):
        cp.cuda.Stream.null.begin_capture()


def test_work_on_another_stream_during_capture_is_an_error(cp):
    stream = cp.cuda.Stream(non_blocking=True)
    x = cp.zeros(3, "float32")
    stream.begin_capture()
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="CaptureImplicit"):
        cp.exp(x)                                     # launched on the legacy stream, not the capturing one
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError):
        stream.end_capture()


def test_installed_is_undone():
    import sys

    from coursekit import devices
    with cupy_standin.installed():
        assert devices.gpu_available() and sys.modules["cupy"] is cupy_standin
    assert sys.modules.get("cupy") is not cupy_standin
    assert devices.gpu_available() == cupy_standin.real_gpu()
