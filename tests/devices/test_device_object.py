"""One Device object per device: memory, kernels, timing, and who asks it (coursekit.cuda, graphs)."""
import numpy as np
import pytest

import cupy_standin

import coursekit as theano
import coursekit.devices as devices
import coursekit.tensor as T
from coursekit import cuda
from coursekit.devices import SimArray

DEVICE_NAMES = ["sim", pytest.param("cuda:0", marks=pytest.mark.gpu) if cupy_standin.real_gpu()
                else pytest.param("cuda:0", id="cuda:0-standin")]   # CuPy's code path: else on the CuPy stand-in


@pytest.fixture(params=DEVICE_NAMES)
def gpu(request):
    with cupy_standin.on(request.param):
        yield devices.get(request.param)


def test_one_object_per_device():
    assert devices.get("sim") is devices.get("sim")
    assert devices.get("cpu") is devices.get("cpu") and not devices.get("cpu").is_gpu
    with theano.config.change(device="sim"):
        assert devices.current() is devices.get("sim")
    with pytest.raises(devices.DeviceError, match="no device called 'tpu'"):
        devices.get("tpu")


def test_memory_round_trip_reuses_buffers_that_fit(gpu):
    host = np.arange(6, dtype="float32").reshape(2, 3)
    dev = gpu.to_device(host)
    assert gpu.is_device_array(dev) and not gpu.is_device_array(host)
    assert devices.is_device_array(dev) and not devices.is_device_array(host)
    again = gpu.to_device(host * 2, out=dev)
    assert again is dev  # same shape and dtype: copied into the old buffer
    back = np.empty((2, 3), "float32")
    assert gpu.to_host(dev, out=back) is back
    np.testing.assert_array_equal(back, host * 2)
    other = gpu.to_device(np.zeros(4, "float32"), out=dev)
    assert other is not dev and other.shape == (4,)  # does not fit: a new buffer
    np.testing.assert_array_equal(gpu.to_host(gpu.zeros((3,), "int32")), 0)


def test_sim_empty_memory_looks_uninitialised():
    sim = devices.get("sim")
    assert np.isnan(sim.to_host(sim.empty((5,), "float32"))).all()
    assert (sim.to_host(sim.empty((5,), "int32")) == -1).all()


def test_elementwise_kernel_of_a_device(gpu):
    from coursekit.scalar import ops as scalar
    kernel = gpu.elementwise(scalar.get("int_div"), ["int32", "int32"], "int32")
    a, b = gpu.to_device(np.int32([-7, 7, -8])), gpu.to_device(np.int32([2, -2, 3]))
    np.testing.assert_array_equal(gpu.to_host(gpu.wrap(kernel(gpu.unwrap(a), gpu.unwrap(b)))), [-4, -4, -3])


def test_stopwatch_says_which_clock(gpu):
    with gpu.stopwatch() as sw:
        gpu.to_device(np.ones(1000, "float32"))
    assert sw.seconds >= 0
    assert ("CUDA events" in sw.clock) == (not gpu.simulated)


def test_a_cost_model_attaches_to_the_device_object():
    """The hook the cost model uses: an attribute of the one device object, seen by everyone who asks."""
    sim = devices.get("sim")
    assert sim.model is None
    sentinel = object()
    sim.model = sentinel
    try:
        with theano.config.change(device="sim"):
            assert devices.current().model is sentinel
        assert devices.get("cpu").model is None
    finally:
        sim.model = None


@pytest.mark.parametrize("setting", ["cpu", "sim", "gpu"])
def test_source_module_follows_config_device(setting, recwarn):
    src = "__global__ void twice(float *x) { x[threadIdx.x] *= 2; }"
    with theano.config.change(device=setting):
        mod = cuda.SourceModule(src, nvcc_check=False)
        data = cuda.to_device(np.ones(4, "float32"))
        mod.get_function("twice")(data, block=(4, 1, 1), grid=(1, 1))
    real_gpu = setting == "gpu" and devices.gpu_available()
    assert mod.device is (devices.get("cuda:0") if real_gpu else devices.get("sim"))
    assert mod.device.is_device_array(data)
    assert ("emulator" in mod.backend) == (not real_gpu)
    np.testing.assert_array_equal(mod.device.to_host(data), 2)


def test_cuda_memory_helpers_use_the_kernel_device():
    with theano.config.change(device="cpu"):
        empty = cuda.empty((3,), np.float32)
        assert type(empty) is SimArray and np.isnan(empty.get()).all()
        assert type(cuda.zeros((2,), np.int32)) is SimArray


@pytest.mark.skipif(devices.gpu_available(), reason="checks the message given where there is no GPU")
def test_asking_for_the_gpu_backend_without_a_gpu_is_a_clear_error():
    with pytest.raises(cuda.BackendUnavailableError, match="needs a real NVIDIA GPU.*backend='auto'"):
        cuda.to_device(np.ones(2), backend="cupy")


def test_graph_values_live_in_the_device_object_memory(gpu):
    with theano.config.change(device="gpu" if not gpu.simulated else "sim"):
        x = theano.shared(np.ones(3, "float32"), name="x")
        assert gpu.is_device_array(x.get_value(borrow=True, return_internal_type=True))
        assert x.type.device is gpu
        f = theano.function([], theano.gpu_from_host(T.exp(x)))
        assert gpu.is_device_array(f())


def test_a_missing_cxx_compiler_is_a_clear_error(monkeypatch, tmp_path):
    """Defect 6: without g++ the emulator failed with a bare FileNotFoundError."""
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-g++"))
    monkeypatch.setenv("COURSEKIT_CACHE_DIR", str(tmp_path / "cache"))  # nothing compiled before can be reused
    with pytest.raises(cuda.BackendUnavailableError, match="C\\+\\+ compiler .*no-such-g\\+\\+.* is not installed.*"
                                                          "apt-get install g\\+\\+.*CXX"):
        cuda.SourceModule("__global__ void k(float *x) { x[0] = 1; }", backend="emulator", nvcc_check=False)
