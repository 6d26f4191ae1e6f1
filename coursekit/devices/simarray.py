"""A device array for the *simulated* GPU.

On a machine without an NVIDIA GPU, coursekit still keeps a separate "device"
memory space so that every lesson about transfers behaves as it would on a
GPU.  The data lives in host RAM, in a NumPy buffer that only this class
touches, but it is not an ``ndarray``:

* ``.get()`` returns a host copy (as ``cupy.ndarray.get()`` does);
* ``numpy.asarray(sim_array)`` is that same explicit copy, as it was for
  Theano's ``CudaNdarray`` (the tutorial's ``check2.py`` prints its result
  this way).  It happens outside any compiled function, so no function's
  profile counts it as its transfer.  On a real GPU a function's results are
  CuPy arrays that do the same (:mod:`coursekit.devices.handles`);
* NumPy arithmetic between a ``SimArray`` and a host array is refused, and so
  is a coursekit function given one where it expects host data: those are
  host/device mix-ups, and they fail loudly.

Nothing about it is faster than NumPy.  It is labelled *simulated* everywhere
it appears, and its timings are never shown as GPU timings.
"""
from __future__ import annotations

import numpy as np

DEVICE_LABEL = "simulated GPU (NumPy on the CPU)"


class SimArray:
    """An n-dimensional array in the simulated GPU's memory space."""

    __slots__ = ("_buf",)
    device = "sim"

    def __init__(self, buf: np.ndarray):
        if not isinstance(buf, np.ndarray):
            raise TypeError(
                f"SimArray wraps a NumPy buffer, got {type(buf).__name__}; "
                "use SimArray.from_host(value) to copy host data to the simulated device."
            )
        self._buf = buf

    # -- construction ---------------------------------------------------
    @classmethod
    def from_host(cls, value) -> "SimArray":
        """Copy host data into the simulated device (a host -> device transfer)."""
        if isinstance(value, SimArray):
            raise TypeError("value is already on the simulated device; use .copy() to duplicate it")
        return cls(np.array(value, copy=True, order="C"))

    @classmethod
    def empty(cls, shape, dtype) -> "SimArray":
        return cls(np.empty(shape, dtype=dtype))

    @classmethod
    def zeros(cls, shape, dtype) -> "SimArray":
        return cls(np.zeros(shape, dtype=dtype))

    # -- transfers -------------------------------------------------------
    def get(self) -> np.ndarray:
        """Copy the data back to the host (a device -> host transfer)."""
        return self._buf.copy()

    def set(self, value) -> None:
        """Overwrite the device data with host data of the same shape."""
        value = np.asarray(value)
        if value.shape != self._buf.shape:
            raise ValueError(f"SimArray.set: shape {value.shape} does not match {self._buf.shape}")
        self._buf[...] = value

    def copy(self) -> "SimArray":
        return SimArray(self._buf.copy())

    # -- array-like metadata (no data leaves the device) -------------------
    shape = property(lambda self: self._buf.shape)
    dtype = property(lambda self: self._buf.dtype)
    ndim = property(lambda self: self._buf.ndim)
    size = property(lambda self: self._buf.size)
    strides = property(lambda self: self._buf.strides)
    nbytes = property(lambda self: self._buf.nbytes)
    flags = property(lambda self: self._buf.flags)

    def __len__(self):
        return len(self._buf)

    def __repr__(self):
        return f"<SimArray shape={self.shape} dtype={self.dtype} on the {DEVICE_LABEL}>"

    # -- numpy.asarray(handle): an explicit copy to the host, as in Theano ----
    def __array__(self, dtype=None, copy=None):
        """A host copy (device memory cannot be viewed from the host): ``copy=False`` is an error."""
        if copy is False:
            raise ValueError("numpy.asarray(..., copy=False) of a simulated-GPU array: its data lives in device "
                             "memory, so the host can only get a copy. Drop copy=False, or call .get().")
        host = self._buf.copy()
        return host if dtype is None else host.astype(dtype, copy=False)

    __array_priority__ = 1000

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise TypeError(
            f"cannot apply NumPy's {ufunc.__name__} to a simulated-GPU array: it lives in device "
            "memory. Call .get() to copy it to the host first, or compute it inside a coursekit function."
        )

    def __bool__(self):
        if self._buf.size != 1:
            raise ValueError("the truth value of a device array with more than one element is ambiguous")
        return bool(self._buf.reshape(()))

    def __float__(self):
        return float(self._buf.reshape(()))

    def __int__(self):
        return int(self._buf.reshape(()))


# modules whose array classes hold GPU memory: CuPy's, and the handles a function returns on a real GPU
_GPU_ARRAY_MODULES = ("cupy", "coursekit.devices.handles")


def is_device_array(value) -> bool:
    """True for device memory: a simulated-GPU array or a CuPy array (checked without importing CuPy)."""
    return isinstance(value, SimArray) or type(value).__module__.startswith(_GPU_ARRAY_MODULES)
