"""Backends: how a GPU device stores arrays and runs array code.

Two backends share one interface, so every GPU op is written once:

* :class:`SimBackend` — the *simulated* GPU.  Arrays are
  :class:`~coursekit.devices.simarray.SimArray` (NumPy buffers behind a
  device-array type); "kernels" are NumPy calls on those buffers.  It keeps
  the lessons' graphs, transfers and host/device mix-ups exactly as on a
  GPU, and it is never faster than NumPy.
* :class:`CupyBackend` — a real NVIDIA GPU through CuPy.

``xp`` is the array module for kernels (NumPy or CuPy), ``unwrap`` turns a
device array into an ``xp`` array and ``wrap`` does the reverse.
"""
from __future__ import annotations

import numpy as np

from .simarray import DEVICE_LABEL, SimArray


class SimBackend:
    name = "sim"
    label = DEVICE_LABEL
    simulated = True
    xp = np
    array_type = SimArray

    def wrap(self, arr):
        return SimArray(arr if isinstance(arr, np.ndarray) else np.asarray(arr))

    def unwrap(self, dev):
        return dev._buf

    def to_device(self, host):
        return SimArray.from_host(host)

    def to_host(self, dev):
        return dev.get()

    def copy_to_host(self, dev, out):
        np.copyto(out, dev._buf)

    def is_device_array(self, value):
        return isinstance(value, SimArray)

    def synchronize(self):
        return None

    def elementwise(self, scalar_op, input_dtypes, output_dtype):
        """A callable ``f(*xp_arrays, out=None)`` computing the op on device buffers."""
        return scalar_op.impl


class CupyBackend:
    simulated = False

    def __init__(self, cupy, device_id=0):
        self.cupy = self.xp = cupy
        self.device_id = device_id
        self.name = f"cuda:{device_id}"
        props = cupy.cuda.runtime.getDeviceProperties(device_id)
        name = props["name"]
        self.label = f"GPU {device_id}: {name.decode() if isinstance(name, bytes) else name} (CuPy)"
        self.array_type = cupy.ndarray
        self._kernels = {}

    def wrap(self, arr):
        return arr

    def unwrap(self, dev):
        return dev

    def to_device(self, host):
        with self.cupy.cuda.Device(self.device_id):
            return self.cupy.asarray(host)

    def to_host(self, dev):
        return self.cupy.asnumpy(dev)

    def copy_to_host(self, dev, out):
        dev.get(out=out)

    def is_device_array(self, value):
        return isinstance(value, self.cupy.ndarray)

    def synchronize(self):
        self.cupy.cuda.Device(self.device_id).synchronize()

    def elementwise(self, scalar_op, input_dtypes, output_dtype):
        """ONE generated CUDA kernel (``cupy.ElementwiseKernel``) for the whole scalar expression."""
        from .kernels import elementwise_kernel_parts

        key = (scalar_op, tuple(input_dtypes), output_dtype)
        kernel = self._kernels.get(key)
        if kernel is None:
            in_params, out_params, operation, name, preamble = elementwise_kernel_parts(
                scalar_op, input_dtypes, output_dtype)
            kernel = self.cupy.ElementwiseKernel(in_params, out_params, operation, name, preamble=preamble)
            self._kernels[key] = kernel

        def run(*arrays, out=None):
            return kernel(*arrays, out) if out is not None else kernel(*arrays)

        return run
