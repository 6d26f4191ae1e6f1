"""The two transfer ops, ``GpuFromHost`` and ``HostFromGpu``: the subject of the course.

Every byte they move crosses the PCIe bus (or, on the simulated GPU, is
copied between two memory spaces).  The placement pass inserts them at the
borders between host and device code and removes back-to-back pairs; the
profiler reports their time and bytes separately.
"""
from __future__ import annotations

from ..graph import Apply, Op
from ..tensor.type import TensorType
from ..tensor.var import as_tensor_variable
from ..work import transfer_work
from .device import GPUDevice
from .simarray import is_device_array
from .types import GpuArrayType


class _Deferred(GPUDevice):
    """Stands for "the GPU of whatever device the function is compiled for" (placement replaces it)."""

    name, label, simulated = "device", "the function's GPU device", None

    def is_device_array(self, value):
        return is_device_array(value)


DEFERRED = _Deferred()


class _Transfer(Op):
    """What both transfer ops share: a target device, and the flags placement and the profiler read."""
    verified_outputs = True

    __props__ = ("device_name",)
    device = "gpu"
    is_transfer = True
    fold_constants = False  # a transfer is work to be seen in the profile, never folded away

    def __init__(self, target=DEFERRED):
        self.target, self.device_name = target, target.name

    def __str__(self):
        return type(self).__name__


class GpuFromHost(_Transfer):
    """Copy a host array into device memory."""
    verified_outputs = True

    def make_node(self, x):
        x = as_tensor_variable(x)
        if isinstance(x.type, GpuArrayType):
            raise TypeError(f"gpu_from_host: {x} is already on the device ({x.type}); use it as it is")
        return Apply(self, [x], [GpuArrayType(x.type.dtype, x.type.broadcastable, self.target).make_variable()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = self.target.to_device(inputs[0])

    def work(self, node, shapes, dtypes):
        return transfer_work(shapes[0], dtypes[0], to_device=True)

    def make_thunk(self, node, storage_map):
        """Copy into the previous device buffer when it fits (a borrowed or kept buffer), else allocate."""
        src, dst = storage_map[node.inputs[0]], storage_map[node.outputs[0]]
        to_device = self.target.to_device

        def thunk():
            dst[0] = to_device(src[0], out=dst[0])

        return thunk

    def grad(self, inputs, output_grads):
        (g,) = output_grads  # a host gradient (built by host ops before placement) needs no copy
        return [HostFromGpu(self.target)(g) if isinstance(g.type, GpuArrayType) else g]


class HostFromGpu(_Transfer):
    """Copy a device array back into host memory."""
    verified_outputs = True

    def make_node(self, x):
        x = as_tensor_variable(x)
        if not isinstance(x.type, GpuArrayType):
            raise TypeError(f"host_from_gpu: {x} is a host value ({x.type}), not a device one; use it as it is")
        return Apply(self, [x], [TensorType(x.type.dtype, x.type.broadcastable).make_variable()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = self.target.to_host(inputs[0])

    def work(self, node, shapes, dtypes):
        return transfer_work(shapes[0], dtypes[0], to_device=False)

    def make_thunk(self, node, storage_map):
        """Copy into the previous host buffer when it fits: with ``Out(borrow=True)`` that buffer is reused."""
        src, dst = storage_map[node.inputs[0]], storage_map[node.outputs[0]]
        to_host = self.target.to_host

        def thunk():
            dst[0] = to_host(src[0], out=dst[0])

        return thunk

    def grad(self, inputs, output_grads):
        (g,) = output_grads
        return [g if isinstance(g.type, GpuArrayType) else GpuFromHost(self.target)(g)]


def gpu_from_host(x):
    """Make a graph end on the device: the function returns a device array (a "handle").

    Theano's tutorial spelled it ``sandbox.cuda.basic_ops.gpu_from_host``.
    On ``device='cpu'`` there is no device, and this is a no-op.
    """
    return GpuFromHost()(x)


def host_from_gpu(x):
    """Copy a device value back to the host (usually inserted for you)."""
    x = as_tensor_variable(x)
    return HostFromGpu(x.type.device if isinstance(x.type, GpuArrayType) else DEFERRED)(x)
