"""Inputs for a hand-written kernel: in device memory, C-contiguous.

An op whose thunk launches a CUDA C kernel (``coursekit.cuda.SourceModule``) needs its inputs where the kernel
runs and laid out row by row.  Its ``make_node`` asks for that with ``gpu_contiguous(x)``: the graph gets a
``GpuFromHost`` whose device placement fills in (the device the function is compiled for) and a copy only
when the array is not contiguous already.  Theano's tutorial spelled these
``theano.sandbox.cuda.basic_ops.as_cuda_ndarray_variable`` and ``gpu_contiguous``; the ``import theano`` alias
(:mod:`coursekit.theano`) keeps those paths.
"""
from __future__ import annotations

from ..tensor.shape import Contiguous
from ..tensor.var import as_tensor_variable
from .gpu_ops import gpu_twin
from .transfer import DEFERRED, GpuFromHost
from .types import GpuArrayType

__all__ = ["GpuContiguous", "as_device_variable", "gpu_contiguous"]

GpuContiguous = gpu_twin(Contiguous)


def as_device_variable(x):
    """``x`` as a device variable: itself if it already is one, else a ``GpuFromHost`` of it."""
    x = as_tensor_variable(x)
    return x if isinstance(x.type, GpuArrayType) else GpuFromHost(DEFERRED)(x)


def gpu_contiguous(x):
    """``x`` on the device and C-contiguous (copied only when it is not): what a hand-written kernel needs."""
    x = as_device_variable(x)
    return GpuContiguous(Contiguous(), x.type.device)(x)
