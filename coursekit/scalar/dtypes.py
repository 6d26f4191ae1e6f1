"""The dtype families and Theano's ``upcast``: the dtype an operation on several dtypes produces.

``upcast`` is NumPy's promotion with one exception that keeps a float32 (or float16) program in its
precision: when ``config.floatX`` is float32 and no argument is float64 itself, a promotion that NumPy takes
to float64 (``int32`` with ``float32``, ``int64`` with ``float32``) stays float32.  Theano's
``theano.scalar.upcast`` did exactly this; libraries call it to choose an accumulator's or an output's dtype.
"""
from __future__ import annotations

import numpy as np

from ..config import config

__all__ = ["upcast", "float_dtypes", "complex_dtypes", "int_dtypes", "uint_dtypes", "integer_dtypes",
           "discrete_dtypes", "continuous_dtypes", "all_dtypes"]

float_dtypes = ["float16", "float32", "float64"]
complex_dtypes = ["complex64", "complex128"]
int_dtypes = ["int8", "int16", "int32", "int64"]
uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
integer_dtypes = int_dtypes + uint_dtypes
discrete_dtypes = ["bool"] + integer_dtypes
continuous_dtypes = float_dtypes + complex_dtypes
all_dtypes = discrete_dtypes + continuous_dtypes


def upcast(dtype, *dtypes):
    """The dtype of an operation on ``dtype`` and ``dtypes`` (names or NumPy dtypes), as Theano computed it."""
    names = []
    for d in (dtype, *dtypes):
        try:
            names.append(np.dtype(d).name)
        except TypeError:
            raise TypeError(f"upcast: {d!r} is not a dtype; pass dtype names such as 'int32' or 'float32'") from None
    result = np.result_type(*[np.zeros((), n) for n in names]).name  # arrays: no value-based casting
    if result == "float64" and "float64" not in names:
        if config.floatX == "float16" and "float32" not in names:
            return "float16"
        if config.floatX == "float32":
            return "float32"
    if result == "float32" and config.floatX == "float16" and "float32" not in names:
        return "float16"
    return result
