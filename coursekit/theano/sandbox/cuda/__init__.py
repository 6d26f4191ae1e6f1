"""``theano.sandbox.cuda``: Theano's old CUDA back end, as far as ported programs reach for it.

Libraries read ``cuda_enabled`` before they import layers built on that back end's own kernels
(cuda-convnet, ``GpuCorrMM``).  coursekit runs GPU work its own way (``device=gpu``), so the answer is
``False`` on every device, and those libraries fall back to their portable layers (the ones that use
``conv2d``).  ``CudaNdarray`` stands for Theano's device array type where old code allocates with it
(``CudaNdarray.zeros(shape)`` in the tutorial's PyCUDA op): it returns an array of the device that runs
hand-written kernels (a real GPU, else the simulated one); coursekit's own spelling is
``coursekit.devices.kernel_device().zeros(shape, "float32")``.
"""
from __future__ import annotations

from ....devices import kernel_device
from . import basic_ops  # noqa: F401

cuda_enabled = False


class CudaNdarray:
    """Theano's float32 device array: only its allocators (coursekit's device arrays do the rest)."""

    def __init__(self, *args, **kwargs):
        raise TypeError("CudaNdarray(...) is not a coursekit type: allocate with CudaNdarray.zeros(shape) or "
                        "coursekit.cuda.empty(shape, dtype), or copy with coursekit.devices.to_device(array)")

    @staticmethod
    def zeros(shape):
        """float32 zeros in the memory of the device that runs hand-written kernels (Theano's signature)."""
        return kernel_device().zeros(tuple(int(s) for s in shape), "float32")
