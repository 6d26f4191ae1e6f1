"""The stand-in's ``cupy.ndarray`` and the one wrapper that turns a NumPy function into a "CuPy" one.

Device memory is a NumPy buffer behind :class:`ndarray`, a type NumPy does not
know: like CuPy, it refuses ``numpy.asarray`` (no hidden copy home), refuses a
host array where device data is expected, and copies only through ``get``,
``set``, ``asarray`` and ``asnumpy`` (each counted).

:func:`device_call` runs a NumPy function on the buffers and counts what CuPy
would do for the same call: one kernel launch when the call computes (it made
a new buffer or wrote one), one allocation per new buffer, nothing for a view
(``reshape``, basic slicing, ``.T``).  Real CuPy sometimes launches more than
one kernel for a call (a two-pass reduction, ``concatenate`` of many arrays);
the stand-in counts one.
"""
from __future__ import annotations

import numpy as np

from . import _runtime as rt


class Device:
    """``cupy.cuda.Device``: GPU 0 is the only one."""

    def __init__(self, device=None):
        index = 0 if device is None else int(getattr(device, "id", device))
        if index != 0:
            raise rt.CUDARuntimeError("cudaErrorInvalidDevice", f"invalid device ordinal {index} (the stand-in has 1)")
        self.id = index

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        rt.host_waits("Device.synchronize()")

    compute_capability = "80"

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


DEVICE0 = Device(0)


def _refuse_host(value):
    raise TypeError(f"Unsupported type {type(value)} (a host array where device data is expected: the CuPy stand-in, "
                    "like CuPy, never copies it implicitly; use cupy.asarray)")


def unwrap(value, host_ok=False, owners=None):
    """Device arrays -> their buffers, through lists and tuples; a host array is refused unless ``host_ok``.
    ``owners`` (a dict) collects ``id(memory root) -> device array`` for the arrays met."""
    kind = type(value)
    if kind is np.ndarray:
        if host_ok:
            rt.h2d(value.nbytes)             # CuPy copies a host index or value to the device first
            return value
        _refuse_host(value)
    if isinstance(value, ndarray):
        if owners is not None:
            owners.setdefault(id(rt.root_of(value._a)), value)
        return value._a
    if kind is tuple or kind is list:
        return kind(unwrap(v, host_ok, owners) for v in value)
    return value


def wrap(buffer, base=None):
    """A buffer -> a device array (no allocation counted: the caller says whether it is new).  A view keeps
    the array it views in ``base``, as CuPy's views do (so it keeps that array alive, and counts as a reference)."""
    array = object.__new__(ndarray)
    array._a, array._base = buffer, base
    return array


def new_array(buffer):
    """A buffer the device just allocated."""
    rt.allocated(buffer)
    return wrap(buffer)


def _wrap_result(result, owners, new):
    """Arrays in ``result`` -> device arrays; those whose memory is not an input's are new (listed in ``new``),
    the others are views of the input that owns their memory (``owners``: id(root) -> device array)."""
    if type(result) is np.ndarray:
        root = rt.root_of(result)
        base = owners.get(id(root))
        if base is None:
            new.append((result, root))
        return wrap(result, base)
    if isinstance(result, np.generic):                       # CuPy's reductions give 0-d arrays, never scalars
        buffer = np.asarray(result)
        new.append((buffer, buffer))
        return wrap(buffer)
    if type(result) in (tuple, list):
        return type(result)(_wrap_result(r, owners, new) for r in result)
    return result


def device_call(fn, args, kwargs, kind, host_ok=False):
    """Run NumPy's ``fn`` on device buffers and count it as CuPy's call ``kind`` would be counted."""
    owners = {}
    h_args = unwrap(args, host_ok, owners)
    h_kwargs = {k: unwrap(v, host_ok, owners) for k, v in kwargs.items()} if kwargs else {}
    out = h_kwargs.get("out")
    if out is not None:
        rt.before_write(out if type(out) is tuple else (out,))
    with np.errstate(all="ignore"):                          # a GPU never warns about inf or nan
        result = fn(*h_args, **h_kwargs)
    new = []
    wrapped = _wrap_result(result, owners, new)
    if new or out is not None:
        for buffer, root in new:
            rt.allocated(root)
        rt.launch(kind, _replayer(fn, h_args, h_kwargs, result, new))
    return wrapped


def _replayer(fn, h_args, h_kwargs, result, new):
    """Run the call again on the same buffers (a captured graph's node): results land where they did."""
    if not new:
        return lambda: fn(*h_args, **h_kwargs)
    flat = result if type(result) in (tuple, list) else (result,)
    places = [i for i, r in enumerate(flat) if any(r is b or rt.root_of(r) is root for b, root in new)]

    def replay():
        with np.errstate(all="ignore"):
            again = fn(*h_args, **h_kwargs)
        again = again if type(again) in (tuple, list) else (again,)
        for i in places:
            np.copyto(flat[i], again[i], casting="unsafe")

    return replay


def _method(name):
    unbound = getattr(np.ndarray, name)

    def method(self, *args, **kwargs):
        return device_call(unbound, (self,) + args, kwargs, name)   # self's memory: a view is no new buffer
    method.__name__ = name
    return method


def _operator(name, inplace=False):
    ufunc_method = getattr(np.ndarray, name)

    def op(self, other):
        if not inplace:
            return device_call(ufunc_method, (self, other), None, name.strip("_"))
        buffer, value = self._a, unwrap(other)
        rt.before_write((buffer,))
        with np.errstate(all="ignore"):
            ufunc_method(buffer, value)
        rt.launch(name.strip("_"), lambda: ufunc_method(buffer, value))
        return self
    op.__name__ = name
    return op


class ndarray:
    """Device memory (a NumPy buffer that only device code reads), CuPy's ``ndarray`` as far as coursekit uses it."""

    __slots__ = ("_a", "_base", "__weakref__")
    __array_priority__ = 100

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        self._a, self._base = np.empty(shape, dtype, order=order), None
        rt.allocated(self._a)

    # -- what it is (no data moves) ---------------------------------------------
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    flags = property(lambda self: self._a.flags)
    device = property(lambda self: DEVICE0)
    T = property(lambda self: wrap(self._a.T, self))
    base = property(lambda self: self._base)

    def __len__(self):
        return len(self._a)

    def __repr__(self):
        return f"<cupy stand-in array shape={self.shape} dtype={self.dtype}>"

    __str__ = __repr__
    __hash__ = None

    # -- copies between host and device -------------------------------------------
    def get(self, stream=None, order="C", out=None, blocking=True):
        """Device -> host copy (the host waits for it)."""
        rt.d2h(self.nbytes)
        if out is not None:
            np.copyto(out, self._a)
            return out
        return np.array(self._a, order=order, copy=True)

    def set(self, arr, stream=None):
        """Host -> device copy into this buffer."""
        arr = np.asarray(arr)
        if arr.shape != self.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        rt.h2d(arr.nbytes)
        self._a[...] = arr

    def item(self):
        return self.get().item()

    def tolist(self):
        return self.get().tolist()

    def __float__(self):
        return float(self.get())

    def __int__(self):
        return int(self.get())

    def __complex__(self):
        return complex(self.get())

    def __bool__(self):
        if self.size != 1:
            raise ValueError("The truth value of an array with more than one element is ambiguous.")
        return bool(self.get())

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
                        "NumPy array explicitly.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if any(type(v) is np.ndarray for v in inputs):
            return NotImplemented
        return device_call(getattr(ufunc, method), inputs, kwargs, ufunc.__name__)

    def __array_function__(self, func, types, args, kwargs):
        from . import functions
        mine = getattr(functions, func.__name__, None)
        if mine is None:
            return NotImplemented
        return mine(*args, **kwargs)

    # -- views and copies on the device ---------------------------------------------
    def view(self, dtype=None):
        if isinstance(dtype, type) and issubclass(dtype, ndarray):
            array = object.__new__(dtype)
            array._a, array._base = self._a, self
            return array
        return wrap(self._a.view(dtype) if dtype is not None else self._a.view(), self)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (wrap(self._a[i], self) for i in range(len(self._a)))

    def __getitem__(self, index):
        return device_call(np.ndarray.__getitem__, (self, index), None, "getitem", host_ok=True)

    def __setitem__(self, index, value):
        host_value = unwrap(value, host_ok=True)
        h_index = unwrap(index, host_ok=True)
        rt.before_write((self._a,))
        buffer = self._a
        buffer[h_index] = host_value
        rt.launch("setitem", lambda: buffer.__setitem__(h_index, host_value))

    def fill(self, value):
        rt.before_write((self._a,))
        buffer = self._a
        buffer.fill(value)
        rt.launch("fill", lambda: buffer.fill(value))

    for _name in ("astype", "reshape", "ravel", "flatten", "transpose", "swapaxes", "squeeze", "copy", "sum",
                  "prod", "max", "min", "mean", "var", "std", "argmax", "argmin", "all", "any", "dot", "clip",
                  "cumsum", "take", "repeat", "sort", "argsort", "nonzero", "diagonal", "conj", "round", "trace"):
        locals()[_name] = _method(_name)
    for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
                  "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__",
                  "__matmul__", "__rmatmul__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__",
                  "__lshift__", "__rshift__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
        locals()[_name] = _operator(_name)
    for _name in ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
                  "__iand__", "__ior__", "__ixor__"):
        locals()[_name] = _operator(_name, inplace=True)
    del _name

    def __neg__(self):
        return device_call(np.negative, (self,), None, "negative")

    def __pos__(self):
        return device_call(np.positive, (self,), None, "positive")

    def __abs__(self):
        return device_call(np.absolute, (self,), None, "absolute")

    def __invert__(self):
        return device_call(np.invert, (self,), None, "invert")


ndarray.__module__ = "cupy"           # what coursekit (and users) see: a CuPy array
