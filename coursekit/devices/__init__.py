"""Devices: where data lives and ops run.

``current()`` returns the device object for ``config.device``.  In this
version only the CPU device exists; the GPU devices (CuPy on a real GPU,
and the simulated GPU) plug in here.
"""
from __future__ import annotations

from ..config import config


class CPUDevice:
    """Host memory, NumPy kernels."""

    name = "cpu"
    label = "CPU (NumPy)"
    is_gpu = False

    def store_shared(self, var, value, borrow=False, previous=None):
        from ..compile.placement import host_filter

        return host_filter(var, value, borrow)


_CPU = CPUDevice()


def current():
    """The device object selected by ``config.device``."""
    device = config.device
    if device == "cpu":
        return _CPU
    raise NotImplementedError(
        f"config.device={device!r}: GPU devices are not available in this version of coursekit yet; "
        "use device='cpu'.")


def synchronize(device=None):
    """Wait until queued device work is done (a no-op on the CPU and the simulated GPU).

    Timing GPU code without this measures only how long it took to *queue*
    the kernels, not to run them.
    """
    return None
