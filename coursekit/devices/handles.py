"""What a compiled function returns on a real GPU: a CuPy array that ``numpy.asarray`` copies home.

Theano's ``CudaNdarray`` let ``numpy.asarray(r)`` copy a device result to
the host, and the tutorial's ``check2.py`` and ``check3.py`` print their
results that way.  coursekit's simulated GPU keeps that meaning
(:class:`~coursekit.devices.simarray.SimArray`).  CuPy does not: its
``ndarray.__array__`` raises ``TypeError``, so that no copy can hide in a
loop.  To run Theano code unchanged, the device arrays a compiled function
returns on a real GPU (and ``get_value(return_internal_type=True)``) are
*handles*: a zero-copy view of CuPy's array, of a small ``cupy.ndarray``
subclass (``array.view(CupyHandle)``) that changes one thing:

* ``numpy.asarray(handle)`` (and ``numpy.array``) is ``handle.get()``, an
  explicit device -> host copy made by the caller after the call, so no
  function's profile counts it; ``copy=False`` is a clear error (device
  memory cannot be viewed from the host).

Everything else is CuPy's own: a handle *is* a ``cupy.ndarray``, so cupy
functions, kernels and ``.get()`` work as before, and NumPy arithmetic that
mixes it with a host array is still refused by CuPy (that is a mix-up, not
a copy anybody asked for).  Arrays made any other way (``cupy.asarray``,
``devices.to_device``) are plain CuPy arrays with CuPy's refusal.

CuPy is never imported here: the CUDA device passes its ``cupy.ndarray`` in.
"""
from __future__ import annotations

import functools
import operator


def host_copy(array, dtype=None, copy=None):
    """``numpy.asarray(handle)``: a host copy of a device array (``array.get()``), in ``dtype`` if given."""
    if copy is False:
        raise ValueError("numpy.asarray(..., copy=False) of a GPU array: its data lives in device memory, so the "
                         "host can only get a copy. Drop copy=False, or call .get().")
    host = array.get()
    return host if dtype is None else host.astype(dtype, copy=False)


@functools.lru_cache(maxsize=None)
def handle_class(ndarray):
    """The handle class for CuPy's ``ndarray`` class (made once per class)."""

    class CupyHandle(ndarray):
        """A ``cupy.ndarray`` that a coursekit function returned: ``numpy.asarray`` of it is a host copy,
        as it was for Theano's ``CudaNdarray`` (see :mod:`coursekit.devices.handles`)."""

        __slots__ = ()

        def __array__(self, dtype=None, copy=None):
            return host_copy(self, dtype, copy)

    return CupyHandle


def handing_out(array_class, borrowed):
    """How a compiled function turns an output buffer into the handle it returns.

    A plain output is a new buffer every call: it gets a new view.  A
    borrowed output (``Out(expr, borrow=True)``) is the *same* buffer every
    call, and the caller gets the same handle back every call (``f() is
    f()``, as on the other devices) until the buffer changes.
    """
    if borrowed:
        return _SameHandle(array_class)
    return operator.methodcaller("view", array_class)


class _SameHandle:
    """The handle of a borrowed output buffer, made again only when the buffer is another one."""

    __slots__ = ("array_class", "buffer", "handle")

    def __init__(self, array_class):
        self.array_class, self.buffer, self.handle = array_class, None, None

    def __call__(self, buffer):
        if buffer is not self.buffer:  # the function keeps this buffer anyway, so holding it costs nothing
            self.buffer, self.handle = buffer, buffer.view(self.array_class)
        return self.handle
