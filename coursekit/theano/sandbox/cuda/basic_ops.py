"""``theano.sandbox.cuda.basic_ops``: the transfer ops, and what the tutorial's PyCUDA op uses.

coursekit's own names: :func:`coursekit.gpu_from_host` / ``host_from_gpu`` (:mod:`coursekit.devices.transfer`)
and :func:`coursekit.devices.kernel_inputs.gpu_contiguous` (``as_cuda_ndarray_variable`` is
``as_device_variable`` there).
"""
from __future__ import annotations

from ....devices.kernel_inputs import GpuContiguous, gpu_contiguous  # noqa: F401
from ....devices.kernel_inputs import as_device_variable as as_cuda_ndarray_variable  # noqa: F401
from ....devices.transfer import GpuFromHost, HostFromGpu, gpu_from_host, host_from_gpu  # noqa: F401
