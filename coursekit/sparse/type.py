"""Sparse matrices in graphs: a ``SparseType`` (CSR or CSC, a dtype) whose values are ``scipy.sparse`` matrices.

Theano's ``theano.sparse``: a sparse variable is always a matrix (SciPy's sparse formats are 2-d only), so no
broadcastable flags.  Values are stored as SciPy keeps them (``data``, ``indices``, ``indptr``); ops compute
on the host with SciPy, and a function compiled for a GPU device keeps them there (sparse ops have no GPU
twin: placement leaves them on the host and copies their dense inputs and outputs across).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..config import config
from ..graph import Type, Variable

__all__ = ["SparseType", "all_dtypes", "csc_matrix", "csr_matrix", "matrix", "FORMATS"]

FORMATS = {"csr": sp.csr_matrix, "csc": sp.csc_matrix}
all_dtypes = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
              "complex64", "complex128"}


class SparseType(Type):
    """A CSR or CSC matrix of one dtype."""

    ndim = 2
    broadcastable = (False, False)

    def __init__(self, format, dtype):
        if format not in FORMATS:
            raise ValueError(f"sparse format {format!r}: coursekit.sparse has 'csr' and 'csc'")
        dtype = np.dtype(dtype).name
        if dtype not in all_dtypes:
            raise TypeError(f"sparse dtype {dtype!r} is not one of sparse.all_dtypes ({sorted(all_dtypes)})")
        self.format, self.dtype = format, dtype

    @property
    def numpy_dtype(self):
        return np.dtype(self.dtype)

    def __eq__(self, other):
        return type(self) is type(other) and (self.format, self.dtype) == (other.format, other.dtype)

    def __hash__(self):
        return hash((SparseType, self.format, self.dtype))

    def __str__(self):
        return f"Sparse[{self.dtype}, {self.format}]"

    __repr__ = __str__

    variable_class = Variable  # SparseVariable, once basic.py (its methods are ops) has defined it

    def make_variable(self, name=None):
        return self.variable_class(self, name=name)

    def filter(self, value, strict=False, allow_downcast=None, where="value"):
        if not sp.issparse(value):
            raise TypeError(f"{where}: expected a scipy.sparse {self.format}_matrix, got {type(value).__name__}; "
                            f"convert with scipy.sparse.{self.format}_matrix(array)")
        if value.format != self.format:
            if strict:
                raise TypeError(f"{where}: expected a {self.format} matrix, got {value.format} (strict=True)")
            value = value.asformat(self.format)
        if value.dtype.name != self.dtype:
            if strict or not (allow_downcast or np.can_cast(value.dtype, self.dtype, "same_kind")):
                raise TypeError(f"{where}: a {value.dtype} sparse matrix where {self.dtype} is expected; cast it "
                                f"(m.astype('{self.dtype}')) or pass allow_input_downcast=True")
            value = value.astype(self.dtype)
        return value


def matrix(format, name=None, dtype=None):
    return SparseType(format, dtype or config.floatX).make_variable(name)


def csc_matrix(name=None, dtype=None):
    """A symbolic CSC matrix (``dtype`` defaults to floatX)."""
    return matrix("csc", name, dtype)


def csr_matrix(name=None, dtype=None):
    """A symbolic CSR matrix (``dtype`` defaults to floatX)."""
    return matrix("csr", name, dtype)
