"""Devices: where data lives and where ops run.

``config.device`` picks one:

=========  ==============================================================
``cpu``    host memory, NumPy
``sim``    the simulated GPU: a separate "device" memory space made of NumPy
           buffers, so graphs, transfers and handles behave as on a GPU
``gpu``    a real GPU if CuPy sees one, else ``sim`` (with one warning)
``cuda``   a real GPU (``cuda:N`` for GPU N), or a clear error
=========  ==============================================================

CuPy is imported only when a real GPU is asked for, never by ``import coursekit``.
"""
from __future__ import annotations


import numpy as np

from ..config import config
from .simarray import SimArray  # noqa: F401


class CPUDevice:
    """Host memory, NumPy kernels."""

    name = "cpu"
    label = "CPU (NumPy)"
    is_gpu = False
    simulated = False
    backend = None

    def initial_shared(self, host_value, ttype):
        return host_value, ttype


class GPUDevice:
    """A GPU device: the simulated one or a real one, through its backend."""

    is_gpu = True

    def __init__(self, backend):
        self.backend = backend
        self.name, self.label, self.simulated = backend.name, backend.label, backend.simulated

    def initial_shared(self, host_value, ttype):
        """float32 values move to the device; float64 stays on the host (with a warning)."""
        from .types import GpuArrayType

        if ttype.dtype == "float32":
            return self.backend.to_device(host_value), GpuArrayType(ttype.dtype, ttype.broadcastable, self.backend)
        if ttype.dtype == "float64":
            float64_on_gpu(f"a float64 shared variable of shape {host_value.shape} stays in host memory")
        return host_value, ttype

    def __repr__(self):
        return f"<device {self.name}: {self.label}>"


_CPU = CPUDevice()
_DEVICES: dict = {}
_CUPY_STATUS = None
_WARNED_FALLBACK = False


class DeviceError(RuntimeError):
    """The requested device cannot be used here."""

    user_facing = True


class Float64Error(TypeError):
    """float64 data on a GPU device with ``warn_float64='raise'``."""

    user_facing = True


def cupy_status():
    """(cupy module or None, reason it cannot be used).  Imports CuPy the first time only."""
    global _CUPY_STATUS
    if _CUPY_STATUS is None:
        try:
            import cupy
        except ImportError:
            _CUPY_STATUS = (None, "CuPy is not installed (pip install cupy-cuda12x on a machine with CUDA 12)")
        else:
            try:
                available = cupy.cuda.is_available()
            except Exception as exc:  # driver problems surface here
                available, _ = False, exc
            _CUPY_STATUS = (cupy, None) if available else (None, "CuPy sees no usable NVIDIA GPU (no driver or no device)")
    return _CUPY_STATUS


def gpu_available():
    return cupy_status()[0] is not None


def current():
    """The device object selected by ``config.device``."""
    global _WARNED_FALLBACK
    name = config.device
    if name == "cpu":
        return _CPU
    if name == "sim":
        return _device("sim")
    cupy, reason = cupy_status()
    if name == "gpu":
        if cupy is None:
            if not _WARNED_FALLBACK:
                from ..graph import warn_at_user_line

                warn_at_user_line(f"device='gpu': {reason}. Using the SIMULATED GPU instead: results are exact, but "
                                  "its timings are CPU timings, not GPU timings.")
                _WARNED_FALLBACK = True
            return _device("sim")
        return _device("cuda:0")
    index = int(name.split(":")[1]) if ":" in name else 0
    if cupy is None:
        raise DeviceError(f"device={name!r} needs a real NVIDIA GPU, but {reason}. Use device='gpu' (a GPU if there "
                          "is one, else the simulated GPU) or device='sim'.")
    count = cupy.cuda.runtime.getDeviceCount()
    if index >= count:
        raise DeviceError(f"device={name!r}: there is no GPU {index}; CuPy sees {count} GPU(s), "
                          f"cuda:0 to cuda:{count - 1}.")
    return _device(f"cuda:{index}")


def _device(name):
    if name not in _DEVICES:
        from .backends import CupyBackend, SimBackend

        backend = SimBackend() if name == "sim" else CupyBackend(cupy_status()[0], int(name.split(":")[1]))
        _DEVICES[name] = GPUDevice(backend)
    return _DEVICES[name]


def float64_on_gpu(what):
    """Apply ``config.warn_float64`` to something float64 that cannot live on the GPU."""
    message = (f"{what}: GPUs are fast in float32, so coursekit keeps float64 on the host. Cast to float32 "
               "(floatX=float32, .astype('float32')) to use the GPU, or set warn_float64='ignore'.")
    if config.warn_float64 == "raise":
        raise Float64Error(message)
    if config.warn_float64 == "warn":
        from ..graph import warn_at_user_line

        warn_at_user_line(message)


def to_device(value):
    """Copy a host array to the current GPU device (a host -> device transfer)."""
    device = current()
    if not device.is_gpu:
        raise DeviceError("to_device: config.device is 'cpu'; set device='gpu' or 'sim' first")
    return device.backend.to_device(np.asarray(value))


def to_host(value):
    """Copy a device array back to the host; host arrays are returned as they are."""
    return value if isinstance(value, np.ndarray) else value.get()


def synchronize(device=None):
    """Wait until queued device work is done (a no-op on the CPU and the simulated GPU).

    Timing GPU code without this measures only how long it took to *queue*
    the kernels, not to run them.
    """
    dev = _DEVICES.get(device) if device else (current() if config.device != "cpu" else None)
    if dev is not None and dev.is_gpu:
        dev.backend.synchronize()


def device_variable(dtype, broadcastable, name=None):
    """A function input that takes device arrays of the current GPU device (no transfer per call)."""
    from .types import GpuArrayType

    device = current()
    if not device.is_gpu:
        raise DeviceError("device_variable: config.device is 'cpu'; device inputs need device='gpu' or 'sim'")
    return GpuArrayType(dtype, broadcastable, device.backend).make_variable(name)
