"""``theano.sandbox.cuda.basic_ops`` compatibility: the transfer ops, and what the tutorial's PyCUDA op uses.

``as_cuda_ndarray_variable(x)`` and ``gpu_contiguous(x)`` build graph nodes on the
device that the function will be compiled for (placement fills it in), so a user's
op can ask for its inputs in device memory from its ``make_node``, as Theano's did.
"""
from ...devices.gpu_ops import gpu_twin
from ...devices.transfer import DEFERRED, GpuFromHost, HostFromGpu, gpu_from_host, host_from_gpu  # noqa: F401
from ...devices.types import GpuArrayType
from ...tensor.shape import Contiguous
from ...tensor.var import as_tensor_variable

GpuContiguous = gpu_twin(Contiguous)


def as_cuda_ndarray_variable(x):
    """``x`` as a device variable: itself if it already is one, else a ``GpuFromHost`` of it."""
    x = as_tensor_variable(x)
    return x if isinstance(x.type, GpuArrayType) else GpuFromHost(DEFERRED)(x)


def gpu_contiguous(x):
    """``x`` on the device and C-contiguous (copied only when it is not): what a hand-written kernel needs."""
    x = as_cuda_ndarray_variable(x)
    return GpuContiguous(Contiguous(), x.type.device)(x)
