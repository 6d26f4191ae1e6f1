"""TensorType: a dtype plus a broadcastable pattern.

``broadcastable[i]`` is True when dimension ``i`` is known to have length 1
(so it may broadcast).  A vector is ``(False,)``, a row ``(True, False)``.
The type is also the gatekeeper for runtime values: :meth:`TensorType.filter`
turns what the user passed into an ndarray of the right dtype, or explains
exactly what was wrong and how to fix it.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import wiring
from ..config import config
from ..graph import Type

_DTYPES: dict = {}  # dtype spelling -> (name, np.dtype): NumPy's dtype.name is slow, and types are made per node
_KIND_NAMES = {0: "scalar", 1: "vector", 2: "matrix", 3: "tensor3", 4: "tensor4"}


class TensorType(Type):
    """The type of NumPy-array values with a given dtype and rank."""

    def __init__(self, dtype, broadcastable, name=None, sparse_grad=False):  # Theano's last two: accepted
        try:
            self.dtype, self.numpy_dtype = _DTYPES[dtype]
        except (KeyError, TypeError):  # first time (or an unhashable spelling): ask NumPy
            self.dtype = np.dtype(dtype).name
            self.numpy_dtype = np.dtype(self.dtype)
            try:
                _DTYPES[dtype] = (self.dtype, self.numpy_dtype)
            except TypeError:
                pass
        self.broadcastable = tuple(bool(b) for b in broadcastable)
        self.ndim = len(self.broadcastable)

    # equality matters: merge and givens compare types
    def __eq__(self, other):
        return type(self) is type(other) and self.dtype == other.dtype and self.broadcastable == other.broadcastable

    def __hash__(self):
        return hash((type(self), self.dtype, self.broadcastable))

    def kind_name(self):
        if self.broadcastable == (True, False):
            return "row"
        if self.broadcastable == (False, True):
            return "col"
        return _KIND_NAMES.get(self.ndim, f"{self.ndim}d")

    def __str__(self):
        return f"TensorType({self.dtype}, {self.kind_name()})"

    __repr__ = __str__

    def clone(self, dtype=None, broadcastable=None):
        return TensorType(dtype or self.dtype, self.broadcastable if broadcastable is None else broadcastable)

    def make_variable(self, name=None):
        from .var import TensorVariable

        return TensorVariable(self, name=name)

    def is_valid_value(self, value):
        return (
            isinstance(value, np.ndarray)
            and value.dtype == self.numpy_dtype
            and value.ndim == self.ndim
            and all(s == 1 for s, b in zip(value.shape, self.broadcastable) if b)
        )

    def filter(self, value, strict=False, allow_downcast=None, where="value"):
        """Return ``value`` as an ndarray of this type, or raise a clear TypeError.

        * ``strict``: the value must already be an ndarray of exactly this dtype.
        * otherwise a value is cast when no precision can be lost
          (``int32 -> float64``), or when ``allow_downcast`` is True, or when
          ``allow_downcast`` is None and the value is a Python float or list
          of them and this type's dtype is ``floatX`` (as in Theano).
        """
        if isinstance(value, np.ndarray) and value.dtype == self.numpy_dtype:
            data = value
        elif strict:
            got = f"{value.dtype} array" if isinstance(value, np.ndarray) else type(value).__name__
            raise TypeError(f"{where} must be an ndarray of dtype {self.dtype} (strict input); got {got}")
        else:
            data = self._convert(value, allow_downcast, where)
        if data.ndim != self.ndim:
            raise TypeError(
                f"{where} has the wrong number of dimensions: expected {self.ndim} ({self}), "
                f"got {data.ndim} (shape {data.shape}). "
                + _ndim_hint(data.ndim, self.ndim)
            )
        for axis, (size, bcast) in enumerate(zip(data.shape, self.broadcastable)):
            if bcast and size != 1:
                raise TypeError(
                    f"{where} has shape {data.shape}, but dimension {axis} of {self} is broadcastable "
                    f"(must have length 1). Use a type without broadcastable dimensions, or reshape the value."
                )
        return data

    def _convert(self, value, allow_downcast, where):
        kind = self.numpy_dtype.kind
        if type(value) is float and kind == "f" and (allow_downcast is not False):
            return np.asarray(value, dtype=self.numpy_dtype)  # Python floats are weak (NumPy 2)
        if type(value) is int and kind in "iuf":
            try:
                arr = np.asarray(value, dtype=self.numpy_dtype)
            except OverflowError:
                raise TypeError(f"{where}: the integer {value} does not fit in {self.dtype}") from None
            if kind != "f" or float(arr) == value:
                return arr
        if _is_device_array(value):
            raise TypeError(
                f"{where} is a device array ({type(value).__name__}) but this input lives on the host. "
                "Copy it with .get(), or make the function take device inputs."
            )
        try:
            arr = np.asarray(value)
        except Exception as exc:  # noqa: BLE001 -- ragged lists and the like
            raise TypeError(f"{where} could not be converted to an array of {self.dtype}: {exc}") from None
        if arr.dtype == object:
            raise TypeError(f"{where} is not numeric data (got {type(value).__name__}); expected {self}")
        if arr.dtype == self.numpy_dtype:
            return arr
        python_scalar = isinstance(value, (numbers.Number, list, tuple)) and not isinstance(value, np.generic)
        safe = np.can_cast(arr.dtype, self.numpy_dtype, "safe")
        if python_scalar and not safe and arr.dtype.kind in "iub" and self.numpy_dtype.kind in "iuf":
            # a Python int that fits is fine (NumPy 2: Python scalars are weak)
            cast = arr.astype(self.numpy_dtype)
            if np.array_equal(cast, arr):
                return cast
        if safe or allow_downcast or (
            allow_downcast is None and python_scalar and self.dtype == config.floatX and arr.dtype.kind == "f"
        ):
            return arr.astype(self.numpy_dtype)
        raise TypeError(
            f"{where}: got a {arr.dtype} value, but the input is {self}; converting {arr.dtype} to "
            f"{self.dtype} could lose precision. Cast it yourself (value.astype('{self.dtype}')), "
            f"declare the input with dtype {arr.dtype}, or pass allow_input_downcast=True to function()."
            + (OLD_FLOAT64_HINT if arr.dtype == np.float64 and self.dtype == config.floatX else "")
        )


# Theano's floatX defaulted to float64; coursekit's is float32 (the course is about GPUs): docs/theano-scripts.md
OLD_FLOAT64_HINT = (" If this is a script written for Theano, whose floatX defaulted to float64 (coursekit's is "
                    "float32), run it with Theano's default: COURSEKIT_FLAGS=floatX=float64 (or THEANO_FLAGS="
                    "floatX=float64), or put coursekit.config.floatX = 'float64' at its top.")


def host_like(var):
    """A new host tensor variable with ``var``'s dtype and pattern: what a host op outputs, even when
    its input has a device type (a shared variable living on a GPU device)."""
    return TensorType(var.type.dtype, var.type.broadcastable).make_variable()


def _ndim_hint(got, expected):
    if got == 0 and expected > 0:
        return "Wrap the value in a list or array."
    if expected == 0:
        return "Pass a single number, or declare the input as a vector/matrix."
    return "Reshape the value, or declare the input with the matching constructor (vector, matrix, ...)."


def _is_device_array(value):
    return wiring.get("is_device_array")(value)
