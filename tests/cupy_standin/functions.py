"""``cupy.<function>``: creation and copies written out, every other NumPy function wrapped on demand.

The written-out ones are those whose counts differ from "one launch if it
computes": ``asarray`` of host data is a host->device copy, ``empty`` an
allocation with no kernel, ``asnumpy`` a device->host copy.
"""
from __future__ import annotations

import numpy as np

from . import _runtime as rt
from ._array import device_call, ndarray, new_array, unwrap, wrap


def _host(value, dtype=None, order="C"):
    return np.array(value, dtype=dtype, order=order, copy=True)


def asarray(a, dtype=None, order=None, blocking=False):
    """Device arrays as they are (or cast on the device); host data copied to the device."""
    if isinstance(a, ndarray):
        return a if dtype is None or np.dtype(dtype) == a.dtype else a.astype(dtype)
    if isinstance(a, (list, tuple)) and any(isinstance(v, ndarray) for v in a):
        return stack(a) if dtype is None else stack(a).astype(dtype)
    host = _host(a, dtype, order or "C")
    rt.h2d(host.nbytes)
    return new_array(host)


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, blocking=False):
    if isinstance(obj, ndarray):
        return device_call(np.array, (obj,), {"dtype": dtype, "copy": copy, "order": order, "ndmin": ndmin},
                           "copy")
    host = np.array(obj, dtype=dtype, order="C" if order == "K" else order, ndmin=ndmin, copy=True)
    rt.h2d(host.nbytes)
    return new_array(host)



def asnumpy(a, stream=None, order="C", out=None, blocking=True):
    """Device -> host copy; host values pass through (as in CuPy)."""
    if isinstance(a, ndarray):
        return a.get(order=order, out=out)
    return np.asarray(a, order=order)


def empty(shape, dtype=float, order="C"):
    return new_array(np.empty(shape, dtype, order=order))


def _filled(fill, kind):
    def make(shape, dtype=float, order="C"):
        array = new_array(np.empty(shape, dtype, order=order))
        array._a.fill(fill)
        rt.launch(kind, lambda: array._a.fill(fill))
        return array
    make.__name__ = kind
    return make


zeros, ones = _filled(0, "zeros"), _filled(1, "ones")


def full(shape, fill_value, dtype=None, order="C"):
    array = new_array(np.empty(shape, np.asarray(fill_value).dtype if dtype is None else dtype, order=order))
    array._a.fill(fill_value)
    rt.launch("full", lambda: array._a.fill(fill_value))
    return array


def empty_like(a, dtype=None, order="K", shape=None):
    return new_array(np.empty_like(unwrap(a), dtype=dtype, shape=shape))


def zeros_like(a, dtype=None, order="K", shape=None):
    return device_call(np.zeros_like, (a,), {"dtype": dtype, "shape": shape}, "zeros")


def ones_like(a, dtype=None, order="K", shape=None):
    return device_call(np.ones_like, (a,), {"dtype": dtype, "shape": shape}, "ones")


def full_like(a, fill_value, dtype=None, order="K", shape=None):
    return device_call(np.full_like, (a, fill_value), {"dtype": dtype, "shape": shape}, "full")


def copyto(dst, src, casting="same_kind", where=None):
    rt.before_write((dst._a,))
    buffer, value = dst._a, unwrap(src)
    np.copyto(buffer, value, casting=casting)
    rt.launch("copy", lambda: np.copyto(buffer, value, casting=casting))


def ascontiguousarray(a, dtype=None):
    return device_call(np.ascontiguousarray, (a,), {"dtype": dtype} if dtype else None, "copy")


def _dot_into(a, b, *, out):
    np.dot(a, b, out=out)
    return out                 # NumPy hands back a scalar for vector . vector; CuPy returns ``out`` itself


def dot(a, b, out=None):
    """``cupy.dot``: one kernel; with ``out`` the product lands there and ``out`` is returned (nothing allocated)."""
    if out is None:
        return device_call(np.dot, (a, b), None, "dot")
    return device_call(_dot_into, (a, b), {"out": out}, "dot")


def stack(arrays, axis=0, out=None):
    return device_call(np.stack, (list(arrays),), {"axis": axis, **({"out": out} if out is not None else {})},
                       "stack")


class ufunc:
    """``cupy.exp`` and friends: NumPy's ufunc on device buffers, one kernel per call."""

    def __init__(self, np_ufunc):
        self._u = np_ufunc
        self.__name__ = np_ufunc.__name__
        self.nin, self.nout = np_ufunc.nin, np_ufunc.nout

    def __call__(self, *args, **kwargs):
        return device_call(self._u, args, kwargs, self.__name__)

    def reduce(self, *args, **kwargs):
        return device_call(self._u.reduce, args, kwargs, f"{self.__name__}.reduce")

    def accumulate(self, *args, **kwargs):
        return device_call(self._u.accumulate, args, kwargs, f"{self.__name__}.accumulate")

    def outer(self, *args, **kwargs):
        return device_call(self._u.outer, args, kwargs, f"{self.__name__}.outer")

    def __repr__(self):
        return f"<ufunc '{self.__name__}'>"


class _Function:
    """Any other NumPy function, as a CuPy function (see ``_array.device_call`` for what it counts)."""

    def __init__(self, fn, name):
        self._f, self.__name__ = fn, name

    def __call__(self, *args, **kwargs):
        return device_call(self._f, args, kwargs, self.__name__)

    def __repr__(self):
        return f"<function cupy.{self.__name__} (stand-in)>"


class _Namespace:
    """``cupy.linalg``, ``cupy.lib.stride_tricks`` ...: NumPy's submodule, its functions wrapped the same way."""

    def __init__(self, module, name):
        self._m, self._name = module, name

    def __getattr__(self, name):
        value = _wrapped(getattr(self._m, name), f"{self._name}.{name}")
        setattr(self, name, value)
        return value


def _wrapped(value, name):
    if isinstance(value, np.ufunc):
        return ufunc(value)
    if isinstance(value, type(np)):
        return _Namespace(value, name)
    if callable(value) and not isinstance(value, type):
        return _Function(value, name)
    return value


_MADE = {}


def lookup(name):
    """``cupy.<name>`` for a name not written out here: NumPy's type or constant, or its function wrapped."""
    if name in _MADE:
        return _MADE[name]
    if name.startswith("_") or not hasattr(np, name):
        raise AttributeError(f"module 'cupy' (the stand-in) has no attribute {name!r}")
    value = _MADE[name] = _wrapped(getattr(np, name), name)
    return value


def __getattr__(name):
    return lookup(name)


__all__ = ["asarray", "array", "asnumpy", "dot", "empty", "zeros", "ones", "full", "empty_like", "zeros_like",
           "ones_like", "full_like", "copyto", "ascontiguousarray", "stack", "ufunc", "lookup", "wrap"]
