"""Devices: the simulated GPU, placement, transfers, handles, and device errors."""
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import cupy_standin

import coursekit as theano
import coursekit.devices as devices
import coursekit.tensor as T
from coursekit.devices import DeviceError, SimArray
from coursekit.devices.gpu_ops import GpuElemwise, GpuGemm
from coursekit.devices.transfer import HostFromGpu

no_gpu = pytest.mark.skipif(devices.gpu_available(), reason="this machine has a real GPU")
SCRIPTS = Path(__file__).resolve().parents[1] / "tutorial_scripts"


def names(f):
    return [type(n.op).__name__ for n in f.toposort()]


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


GPU_DEVICES = ["sim", cupy_standin.cuda_case()]   # CuPy's code path: a real GPU, else the CuPy stand-in


@pytest.fixture(params=GPU_DEVICES)
def sim(request):
    """The simulated GPU everywhere, and the real one too where CuPy sees a GPU (marked ``gpu``)."""
    with cupy_standin.on(request.param), theano.config.change(device=request.param):
        yield devices.current()


# ------------------------------------------------------------ the device array
def device_array_type(device):
    return device.array_type


def test_sim_array_refuses_numpy_arithmetic_but_copies_for_asarray():
    a = SimArray.from_host(np.arange(3, dtype="float32"))
    copied = np.asarray(a)
    copied[0] = 99
    assert a.get()[0] == 0  # numpy.asarray is a copy, as it was for Theano's CudaNdarray
    with pytest.raises(ValueError, match="copy=False.*device memory"):
        np.asarray(a, copy=False)
    with pytest.raises(TypeError, match="device memory"):
        np.exp(a)
    host = a.get()
    host[0] = 99
    assert a.get()[0] == 0  # .get() is a copy
    assert "simulated" in repr(a)


# ------------------------------------------------------------ selection
@no_gpu
def test_gpu_falls_back_to_sim_with_one_warning(monkeypatch):
    monkeypatch.setattr(devices, "_WARNED_FALLBACK", False)
    with theano.config.change(device="gpu"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert devices.current().simulated
        assert devices.current().simulated
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "SIMULATED GPU" in messages[0] and "not GPU timings" in messages[0]


@no_gpu
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "cuda:7"])
def test_cuda_without_a_gpu_is_a_clear_error(name):
    with theano.config.change(device=name):
        with pytest.raises(DeviceError, match=f"device='{name}' needs a real NVIDIA GPU.*device='gpu'.*'sim'"):
            theano.shared(np.zeros(3, "float32"))


@pytest.mark.gpu
@pytest.mark.skipif(not devices.gpu_available(), reason="needs a real GPU")
def test_cuda_device_that_does_not_exist():
    with theano.config.change(device="cuda:7"):
        with pytest.raises(DeviceError, match="no GPU 7"):
            devices.current()


# ------------------------------------------------------------ shared placement
def test_float32_shared_lives_on_the_device(sim):
    s = theano.shared(np.arange(3, dtype="float32"), name="s")
    assert isinstance(s.container.storage[0], device_array_type(sim))
    assert isinstance(s.get_value(), np.ndarray)
    assert isinstance(s.get_value(return_internal_type=True), device_array_type(sim))
    s.set_value(np.ones(3, "float32"))
    assert isinstance(s.container.storage[0], device_array_type(sim))
    np.testing.assert_array_equal(s.get_value(), 1)


def test_float64_shared_stays_on_the_host_with_a_warning(sim):
    with pytest.warns(UserWarning, match="float64.*stays in host memory"):
        s = theano.shared(np.zeros(3))
    assert isinstance(s.container.storage[0], np.ndarray)
    with theano.config.change(warn_float64="raise"):
        with pytest.raises(TypeError, match="float64"):
            theano.shared(np.zeros(3))
        x = T.dvector("x")
        with pytest.raises(TypeError, match="float64.*stay on the CPU"):
            theano.function([x], T.exp(x))


def test_host_array_passed_to_a_device_input_is_refused(sim):
    x = devices.device_variable("float32", (False,), "x")
    f = theano.function([x], T.exp(x))
    with pytest.raises(TypeError, match="on the host.*to_device"):
        f(np.ones(3, "float32"))
    np.testing.assert_allclose(f(devices.to_device(np.zeros(3, "float32"))), 1)


def test_device_array_passed_to_a_host_input_is_refused(sim):
    x = T.fvector("x")
    f = theano.function([x], x + 1)
    with pytest.raises(TypeError, match="device array.*get"):
        f(devices.to_device(np.ones(3, "float32")))


# ------------------------------------------------------------ placement
def test_exp_on_the_device_matches_numpy(sim):
    v = f32(50)
    x = theano.shared(v)
    f = theano.function([], T.exp(x))
    assert names(f) == ["GpuElemwise", "HostFromGpu"]
    assert not any(isinstance(n.op, T.Elemwise) for n in f.toposort())
    np.testing.assert_allclose(f(), np.exp(v), rtol=1e-6)
    assert f.device is sim and f.device.simulated == sim.simulated


def test_handle_and_borrow(sim):
    x = theano.shared(f32(10))
    handle = theano.function([], theano.gpu_from_host(T.exp(x)))
    assert names(handle) == ["GpuElemwise"]
    assert isinstance(handle(), device_array_type(sim))
    borrowed = theano.function([], theano.Out(theano.gpu_from_host(T.exp(x)), borrow=True))
    first = borrowed()
    x.set_value(np.zeros(10, "float32"))
    second = borrowed()
    assert second is first and np.all(first.get() == 1)  # the device buffer was reused
    plain = handle()
    assert plain is not handle()


def test_gpu_from_host_is_a_no_op_on_the_cpu():
    x = theano.shared(f32(5))
    f = theano.function([], theano.gpu_from_host(T.exp(x)))
    assert names(f) == ["Elemwise"]


def test_fused_chain_is_one_gpu_kernel(sim):
    x, y = T.fvectors("x,y")
    f = theano.function([x, y], T.tanh(x * y + 1) * 2)
    gpu_ops = [n.op for n in f.toposort() if isinstance(n.op, GpuElemwise)]
    assert len(gpu_ops) == 1 and "Composite" in str(gpu_ops[0])
    xv, yv = f32(8), f32(8, seed=1)
    np.testing.assert_allclose(f(xv, yv), np.tanh(xv * yv + 1) * 2, rtol=1e-6)


class TestMatpalm:
    """y = m.x + b in a loop: the curse of GpuFromHost (lesson 4)."""

    def test_inputs_passed_each_call_need_transfers(self, sim):
        m, x, b = T.fmatrix("m"), T.fmatrix("x"), T.fmatrix("b")
        f = theano.function([m, x, b], T.dot(m, x) + b)
        assert names(f).count("GpuFromHost") == 3 and names(f).count("HostFromGpu") == 1
        assert "GpuGemm" in names(f)

    def test_shared_parameters_drop_their_transfers(self, sim):
        m = theano.shared(f32(20, 20), name="m")
        b = theano.shared(f32(20, 1), name="b")
        x = T.fmatrix("x")
        f = theano.function([x], T.dot(m, x) + b)
        assert names(f).count("GpuFromHost") == 1

    def test_everything_shared_is_one_gpu_gemm(self, sim):
        m, x, b = (theano.shared(f32(*s, seed=i)) for i, s in enumerate([(30, 30), (30, 1), (30, 1)]))
        f = theano.function([], theano.gpu_from_host(T.dot(m, x) + b))
        assert len(f.toposort()) == 1 and isinstance(f.toposort()[0].op, GpuGemm)
        np.testing.assert_allclose(f().get(), m.get_value() @ x.get_value() + b.get_value(), rtol=1e-5)


def test_updates_keep_shared_values_on_the_device(sim):
    w = theano.shared(np.ones(4, "float32"), name="w")
    x = T.fvector("x")
    step = theano.function([x], (w * x).sum(), updates={w: w - 0.5 * x})
    assert "GpuFromHost" in names(step)
    assert not any(isinstance(n.op, HostFromGpu) and n.inputs[0] is w for n in step.toposort())
    step(np.ones(4, "float32"))
    assert isinstance(w.container.storage[0], device_array_type(sim))
    np.testing.assert_array_equal(w.get_value(), 0.5)


def test_shape_of_a_device_shared_variable_needs_no_download(sim):
    """x.shape read first (before any other reader of x) takes the device value's shape: no HostFromGpu.

    Regression: the placement pass downloaded the whole matrix to read its shape when Shape was x's first
    reader (e.g. the size of a random mask, ``srng.binomial(size=x.shape)``)."""
    x = theano.shared(f32(5, 3), name="x")
    f = theano.function([], [], updates={x: x * T.cast(T.prod(x.shape), "float32")})
    assert not any(isinstance(n.op, HostFromGpu) for n in f.toposort()), names(f)
    f()
    np.testing.assert_allclose(x.get_value(), f32(5, 3) * 15)


def test_shared_device_value_used_on_the_cpu_device(sim):
    w = theano.shared(np.ones(3, "float32"))
    with theano.config.change(device="cpu"):
        f = theano.function([], w * 2, updates={w: w + 1})
    assert names(f)[0] == "HostFromGpu" and "GpuFromHost" in names(f)
    np.testing.assert_array_equal(f(), 2)
    assert isinstance(w.container.storage[0], device_array_type(sim))


def test_logistic_regression_on_the_simulated_gpu(sim):
    rng = np.random.default_rng(3)
    D = rng.standard_normal((60, 15)).astype("float32"), rng.integers(0, 2, 60).astype("float32")
    x, y = T.matrix("x"), T.vector("y")
    w = theano.shared(rng.standard_normal(15).astype("float32"), name="w")
    b = theano.shared(np.float32(0), name="b")
    p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
    xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
    gw, gb = T.grad(xent.mean() + 0.01 * (w ** 2).sum(), [w, b])
    train = theano.function([x, y], [p_1 > 0.5, xent], updates={w: w - 0.1 * gw, b: b - 0.1 * gb})
    classes = [type(n.op).__name__ for n in train.toposort()]
    assert "GpuGemv" in classes and not {"Gemv", "Gemm"} & set(classes)
    with theano.config.change(device="cpu"):
        w_cpu = theano.shared(w.get_value(), name="w")
        b_cpu = theano.shared(b.get_value(), name="b")
        gw2, gb2 = T.grad((-y * T.log(1 / (1 + T.exp(-T.dot(x, w_cpu) - b_cpu)))
                           - (1 - y) * T.log(1 - 1 / (1 + T.exp(-T.dot(x, w_cpu) - b_cpu)))).mean()
                          + 0.01 * (w_cpu ** 2).sum(), [w_cpu, b_cpu])
        train_cpu = theano.function([x, y], [], updates={w_cpu: w_cpu - 0.1 * gw2, b_cpu: b_cpu - 0.1 * gb2})
    for _ in range(50):
        train(*D)
        train_cpu(*D)
    np.testing.assert_allclose(w.get_value(), w_cpu.get_value(), rtol=1e-4, atol=1e-5)


def test_debugmode_compares_gpu_ops_with_their_cpu_ops(sim, monkeypatch):
    from coursekit.debugmode import DebugModeError
    from coursekit.devices.device import SimDevice

    if not sim.simulated:
        pytest.skip("breaks the simulated backend's kernels on purpose")

    x = theano.shared(f32(6), name="x")
    f = theano.function([], T.exp(x) + 1, mode="DebugMode")
    np.testing.assert_allclose(f(), np.exp(x.get_value()) + 1, rtol=1e-6)
    original = SimDevice.elementwise

    def broken(self, scalar_op, input_dtypes, output_dtype):
        impl = original(self, scalar_op, input_dtypes, output_dtype)
        return lambda *a, out=None: impl(*a) * 1.01  # a "GPU kernel" that is slightly off

    monkeypatch.setattr(SimDevice, "elementwise", broken)
    g = theano.function([], T.exp(x) + 1, mode="DebugMode")
    with pytest.raises(DebugModeError, match="GpuElemwise.*differs"):
        g()


# ------------------------------------------------------------ the tutorial's scripts
def run_script(name, flags):
    env = dict(os.environ, COURSEKIT_FLAGS=flags)
    out = subprocess.run([sys.executable, str(SCRIPTS / name)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


REAL_GPU = [pytest.mark.gpu, pytest.mark.skipif(not devices.gpu_available(), reason="needs a real GPU")]


@pytest.mark.parametrize("script", ["check1.py", "check2.py", "check3.py"])
@pytest.mark.parametrize("device, expected", [("cpu", "Used the cpu"), ("sim", "Used the gpu"),
                                              ("gpu", "Used the gpu"),  # the real GPU where there is one
                                              pytest.param("cuda", "Used the gpu", marks=REAL_GPU)])
def test_tutorial_exp_scripts(script, device, expected):
    out = run_script(script, f"device={device},floatX=float32")
    assert expected in out
    rng = np.random.RandomState(22)
    reference = np.exp(np.asarray(rng.rand(10 * 30 * 768), "float32"))
    first = out.split("Result is")[1] if script == "check1.py" else out.split("Numpy result is")[1]
    shown = [float(t) for t in first.replace("[", " ").replace("]", " ").split()[:3]]
    np.testing.assert_allclose(shown, reference[:3], rtol=1e-6)
    if device != "cpu" and script != "check1.py":
        assert "GpuElemwise" in out and "HostFromGpu" not in out.split("\n")[0]


# ------------------------------------------------------------ generated CUDA compiles
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_generated_elementwise_kernels_compile_with_nvcc(tmp_path, sim):
    from coursekit.scalar import ops as scalar
    from coursekit.scalar.cuda_codegen import standalone_kernel_source

    sources = []
    for name in scalar.all_names():
        op = scalar.get(name)
        dtypes = ["bool", "float32", "float32"] if name == "switch" else ["float32"] * op.nin
        if name in ("and_", "or_", "invert", "xor"):
            dtypes = ["int32"] * op.nin
        sources.append(standalone_kernel_source(op, dtypes, op.output_dtype(*dtypes)))
    # and fused composites from a real graph (the logistic-regression step)
    x, y = T.fvectors("x,y")
    f = theano.function([x, y], [T.log(1 / (1 + T.exp(-x * y))) * 2 - T.cast(x > y, "float32"),
                                 T.maximum(T.tanh(x), y) ** 2])
    for node in f.toposort():
        if isinstance(node.op, GpuElemwise):
            dtypes = [i.type.dtype for i in node.inputs]
            sources.append(standalone_kernel_source(node.op.scalar_op, dtypes, node.outputs[0].type.dtype))
    assert any("Composite" in str(n.op) for n in f.toposort())
    cu = tmp_path / "generated.cu"
    cu.write_text("\n".join(s.replace("ck_max(T a", "ck_max(T a") for s in _dedupe_prelude(sources)))
    result = subprocess.run(["nvcc", "-c", "-x", "cu", "-arch=sm_80", str(cu), "-o", str(tmp_path / "g.o")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr + cu.read_text()


def _dedupe_prelude(sources):
    from coursekit.scalar.cuda_codegen import PRELUDE

    return [PRELUDE] + [s.replace(PRELUDE, "") for s in sources]


def test_borrowed_host_output_reuses_its_buffer_on_a_gpu_device(sim):
    x = theano.shared(f32(8), name="x")
    f = theano.function([], theano.Out(T.exp(x), borrow=True))
    assert names(f) == ["GpuElemwise", "HostFromGpu"]
    first = f()
    x.set_value(np.zeros(8, "float32"))
    second = f()
    assert second is first and np.all(first == 1)
    g = theano.function([], T.exp(x))
    assert g() is not g()  # without borrow every call gets its own array


def test_scalar_result_left_on_the_device(sim):
    x = theano.shared(np.ones(3, "float32"))
    r = theano.function([], theano.gpu_from_host(x.sum()))()
    assert isinstance(r, device_array_type(sim)) and float(devices.to_host(r)) == 3


def test_borrowed_device_buffer_reused_with_a_broadcast_input(sim):
    x = theano.shared(np.arange(5, dtype="float32"))
    c = theano.shared(np.float32(2))
    f = theano.function([], theano.Out(theano.gpu_from_host(x * c), borrow=True))
    first = f()
    assert f() is first
    np.testing.assert_array_equal(devices.to_host(first), np.arange(5) * 2)


def test_gpu_ops_print_without_their_backend(sim):
    m = T.fmatrix("m")
    f = theano.function([m], T.dot(m, m))
    assert "GpuDot(" in str(f.toposort()) and sim.name not in str(f.toposort())
