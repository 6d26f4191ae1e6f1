"""Devices: where data lives and where ops run.

``config.device`` picks one:

=========  ==============================================================
``cpu``    host memory, NumPy
``sim``    the simulated GPU: a separate "device" memory space made of NumPy
           buffers, so graphs, transfers and handles behave as on a GPU
``gpu``    a real GPU if CuPy sees one, else ``sim`` (with one warning)
``cuda``   a real GPU (``cuda:N`` for GPU N), or a clear error
=========  ==============================================================

Each device is ONE object (:mod:`coursekit.devices.device`): ``current()`` is
the one ``config.device`` selects, ``get(name)`` any by name.  It owns its
memory, array module, kernels, synchronisation and timing; everything else
(graph ops, ``coursekit.cuda``, the linker, the profiler) asks it.

CuPy is imported only when a real GPU is asked for, never by ``import coursekit``.
"""
from __future__ import annotations

import numpy as np

from ..config import config
from ..graph import warn_at_user_line
from .device import CPUDevice, CudaDevice, Device, DeviceError, Float64Error, SimDevice, float64_on_gpu  # noqa: F401
from .simarray import SimArray, is_device_array  # noqa: F401

_CPU = CPUDevice()
_DEVICES: dict = {"cpu": _CPU}
_CUPY_STATUS = None
_WARNED_FALLBACK = False


def cupy_status():
    """(cupy module or None, reason it cannot be used).  The one place that imports CuPy to look for a GPU."""
    global _CUPY_STATUS
    if _CUPY_STATUS is None:
        try:
            import cupy
        except ImportError:
            _CUPY_STATUS = (None, "CuPy is not installed (pip install cupy-cuda12x on a machine with CUDA 12)")
        else:
            try:
                available = cupy.cuda.is_available()
            except Exception:  # noqa: BLE001 -- driver problems surface here
                available = False
            _CUPY_STATUS = (cupy, None) if available else (None, "CuPy sees no usable NVIDIA GPU (no driver or no device)")
    return _CUPY_STATUS


def use_cupy(module):
    """Make ``module`` the CuPy that the CUDA device runs on; ``None`` looks for the real one again.

    For tests: the CuPy stand-in (``tests/cupy_standin``) runs coursekit's real
    CuPy code path on a CPU and counts its launches, copies and syncs.  Device
    objects made with the previous CuPy are forgotten.
    """
    global _CUPY_STATUS
    for name in [n for n in _DEVICES if n.startswith("cuda:")]:
        del _DEVICES[name]
    _CUPY_STATUS = None if module is None else (module, None)


def gpu_available():
    """True when CuPy imports and sees a GPU."""
    return cupy_status()[0] is not None


def current() -> Device:
    """The device object selected by ``config.device``."""
    global _WARNED_FALLBACK
    name = config.device
    if name in ("cpu", "sim"):
        return get(name)
    cupy, reason = cupy_status()
    if name == "gpu":
        if cupy is None:
            if not _WARNED_FALLBACK:
                warn_at_user_line(f"device='gpu': {reason}. Using the SIMULATED GPU instead: results are exact, but "
                                  "its timings are CPU timings, not GPU timings.")
                _WARNED_FALLBACK = True
            return get("sim")
        return get("cuda:0")
    index = int(name.split(":")[1]) if ":" in name else 0
    if cupy is None:
        raise DeviceError(f"device={name!r} needs a real NVIDIA GPU, but {reason}. Use device='gpu' (a GPU if there "
                          "is one, else the simulated GPU) or device='sim'.")
    count = cupy.cuda.runtime.getDeviceCount()
    if index >= count:
        raise DeviceError(f"device={name!r}: there is no GPU {index}; CuPy sees {count} GPU(s), "
                          f"cuda:0 to cuda:{count - 1}.")
    return get(f"cuda:{index}")


def get(name) -> Device:
    """The one device object called ``name`` ("cpu", "sim", "cuda:N"); made on first use, then kept.

    Keeping one object per device is what lets per-device state (compiled
    kernels, an attached cost model) live on it.
    """
    if name not in _DEVICES:
        if name == "sim":
            _DEVICES[name] = SimDevice()
        elif name.startswith("cuda:"):
            cupy, reason = cupy_status()
            if cupy is None:
                raise DeviceError(f"{name} needs a real NVIDIA GPU, but {reason}.")
            _DEVICES[name] = CudaDevice(cupy, int(name.split(":")[1]))
        else:
            raise DeviceError(f"no device called {name!r}: use 'cpu', 'sim' or 'cuda:N'")
    return _DEVICES[name]


def forget_scalar_op(scalar_op):
    """Drop every device's compiled kernels that compute with ``scalar_op``: ``register(op, replace=True)``
    retired it (the kernels could never be reached again, but they hold memory and, on a GPU, a module)."""
    for device in _DEVICES.values():
        device.forget_kernels(scalar_op)


def kernel_device() -> Device:
    """The device hand-written CUDA kernels (``coursekit.cuda``) run on now: the GPU where
    ``config.device`` asks for one and there is one, else the simulated device (the emulator)."""
    name = config.device
    if name.split(":")[0] in ("gpu", "cuda") and gpu_available():
        return get(f"cuda:{name.split(':')[1]}" if ":" in name else "cuda:0")
    return get("sim")


def to_device(value):
    """Copy a host array to the current GPU device (a host -> device transfer)."""
    device = current()
    if not device.is_gpu:
        raise DeviceError("to_device: config.device is 'cpu'; set device='gpu' or 'sim' first")
    return device.to_device(np.asarray(value))


def to_host(value):
    """Copy a device array back to the host; host arrays are returned as they are."""
    return value if isinstance(value, np.ndarray) else value.get()


def synchronize(device=None):
    """Wait until queued device work is done (a no-op on the CPU and the simulated GPU).

    Timing GPU code without this measures only how long it took to *queue*
    the kernels, not to run them.  ``device``: a device name or object
    (default: the current one).
    """
    if device is None:
        dev = current() if config.device != "cpu" else _CPU
    else:
        dev = device if isinstance(device, Device) else _DEVICES.get(device)
    if dev is not None:
        dev.synchronize()


def device_variable(dtype, broadcastable, name=None):
    """A function input that takes device arrays of the current GPU device (no transfer per call)."""
    device = current()
    if not device.is_gpu:
        raise DeviceError("device_variable: config.device is 'cpu'; device inputs need device='gpu' or 'sim'")
    from .types import GpuArrayType  # a tensor type: coursekit.cuda uses devices without tensors

    return GpuArrayType(dtype, broadcastable, device).make_variable(name)
