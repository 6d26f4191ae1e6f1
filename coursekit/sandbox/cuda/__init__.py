"""``theano.sandbox.cuda`` compatibility: see :mod:`coursekit.devices`.

``CudaNdarray`` stands for Theano's device array type where old code allocates with it
(``CudaNdarray.zeros(shape)`` in the tutorial's PyCUDA op): it returns an array of the
device that runs hand-written kernels now (a real GPU, else the simulated one).
"""
from ...devices import kernel_device
from . import basic_ops  # noqa: F401


class CudaNdarray:
    """Theano's float32 device array: only its allocators (coursekit's device arrays do the rest)."""

    def __init__(self, *args, **kwargs):
        raise TypeError("CudaNdarray(...) is not a coursekit type: allocate with CudaNdarray.zeros(shape) or "
                        "coursekit.cuda.empty(shape, dtype), or copy with coursekit.devices.to_device(array)")

    @staticmethod
    def zeros(shape):
        """float32 zeros in the memory of the device that runs hand-written kernels (Theano's signature)."""
        return kernel_device().zeros(tuple(int(s) for s in shape), "float32")
