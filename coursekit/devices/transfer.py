"""The two transfer ops, ``GpuFromHost`` and ``HostFromGpu``: the subject of the course.

Every byte they move crosses the PCIe bus (or, on the simulated GPU, is
copied between two memory spaces).  The placement pass inserts them at the
borders between host and device code and removes back-to-back pairs; the
profiler reports their time and bytes separately.
"""
from __future__ import annotations

import numpy as np

from ..graph import Apply, Op
from ..tensor.type import TensorType
from ..tensor.var import as_tensor_variable
from ..work import transfer_work
from .simarray import is_device_array
from .types import GpuArrayType


class _Deferred:
    """Stands for "the GPU of whatever device the function is compiled for"."""

    name, label, simulated = "device", "the function's GPU device", None

    @staticmethod
    def is_device_array(value):
        return is_device_array(value)


DEFERRED = _Deferred()


class _Transfer(Op):
    """What both transfer ops share: a backend, and the flags placement and the profiler read."""

    __props__ = ("backend_name",)
    device = "gpu"
    is_transfer = True
    fold_constants = False  # a transfer is work to be seen in the profile, never folded away

    def __init__(self, backend=DEFERRED):
        self.backend, self.backend_name = backend, backend.name

    def __str__(self):
        return type(self).__name__


class GpuFromHost(_Transfer):
    """Copy a host array into device memory."""

    def make_node(self, x):
        x = as_tensor_variable(x)
        if isinstance(x.type, GpuArrayType):
            raise TypeError(f"gpu_from_host: {x} is already on the device ({x.type}); use it as it is")
        return Apply(self, [x], [GpuArrayType(x.type.dtype, x.type.broadcastable, self.backend).make_variable()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = self.backend.to_device(inputs[0])

    def work(self, node, shapes, dtypes):
        return transfer_work(shapes[0], dtypes[0], to_device=True)

    def make_thunk(self, node, storage_map):
        """Copy into the previous device buffer when it fits (a borrowed or kept buffer), else allocate."""
        src, dst = storage_map[node.inputs[0]], storage_map[node.outputs[0]]
        backend = self.backend

        def thunk():
            host, out = src[0], dst[0]
            if out is not None and out.shape == host.shape and out.dtype == host.dtype:
                out.set(host)
            else:
                dst[0] = backend.to_device(host)

        return thunk

    def grad(self, inputs, output_grads):
        return [HostFromGpu(self.backend)(output_grads[0])]


class HostFromGpu(_Transfer):
    """Copy a device array back into host memory."""

    def make_node(self, x):
        x = as_tensor_variable(x)
        if not isinstance(x.type, GpuArrayType):
            raise TypeError(f"host_from_gpu: {x} is a host value ({x.type}), not a device one; use it as it is")
        return Apply(self, [x], [TensorType(x.type.dtype, x.type.broadcastable).make_variable()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = self.backend.to_host(inputs[0])

    def work(self, node, shapes, dtypes):
        return transfer_work(shapes[0], dtypes[0], to_device=False)

    def make_thunk(self, node, storage_map):
        """Copy into the previous host buffer when it fits: with ``Out(borrow=True)`` that buffer is reused."""
        src, dst = storage_map[node.inputs[0]], storage_map[node.outputs[0]]
        backend, ndarray = self.backend, np.ndarray

        def thunk():
            dev, out = src[0], dst[0]
            if type(out) is ndarray and out.shape == dev.shape and out.dtype == dev.dtype:
                backend.copy_to_host(dev, out)
            else:
                dst[0] = backend.to_host(dev)

        return thunk

    def grad(self, inputs, output_grads):
        return [GpuFromHost(self.backend)(output_grads[0])]


def gpu_from_host(x):
    """Make a graph end on the device: the function returns a device array (a "handle").

    Theano's tutorial spelled it ``sandbox.cuda.basic_ops.gpu_from_host``.
    On ``device='cpu'`` there is no device, and this is a no-op.
    """
    return GpuFromHost()(x)


def host_from_gpu(x):
    """Copy a device value back to the host (usually inserted for you)."""
    x = as_tensor_variable(x)
    return HostFromGpu(getattr(x.type, "backend", DEFERRED))(x)
