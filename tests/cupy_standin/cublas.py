"""``cupy.cublas``: ``gemm`` and ``gemv`` as cuBLAS computes them (one kernel, the result in the given buffer).

Imported as ``cupy_standin.cublas`` (absolute imports below: the package's state is shared, never copied).
"""
from __future__ import annotations

import numpy as np

from cupy_standin import _runtime as rt
from cupy_standin._array import ndarray, new_array


def _op(a, trans):
    if trans in ("N", 0):
        return a
    if trans in ("T", 1):
        return a.T
    raise TypeError(f"invalid trans (actual: {trans})")


def _check(*arrays):
    if not all(isinstance(a, ndarray) for a in arrays):
        raise TypeError("cupy.cublas takes device arrays only")
    if len({a.dtype for a in arrays}) != 1 or arrays[0].dtype.char not in "fdFD":
        raise TypeError("invalid dtype (cuBLAS needs one float or complex dtype for every operand)")


def gemm(transa, transb, a, b, out=None, alpha=1.0, beta=0.0):
    """out = alpha * op(a) @ op(b) + beta * out (beta ignored without ``out``)."""
    _check(a, b, *(() if out is None else (out,)))
    A, B = _op(a._a, transa), _op(b._a, transb)
    if out is None:
        out, beta = new_array(np.empty((A.shape[0], B.shape[1]), a.dtype, order="F")), 0.0
    if out.shape != (A.shape[0], B.shape[1]) or A.shape[1] != B.shape[0]:
        raise AssertionError(f"gemm: shapes {A.shape} @ {B.shape} into {out.shape}")
    C = out._a

    def run():
        product = alpha * (A @ B)
        C[...] = product if beta == 0 else product + beta * C

    rt.before_write((C,))
    run()
    rt.launch("gemm", run)
    return out


def gemv(transa, alpha, a, x, beta, y):
    """y = alpha * op(a) @ x + beta * y, in place."""
    _check(a, x, y)
    A, X, Y = _op(a._a, transa), x._a, y._a
    if a.ndim != 2 or x.ndim != 1 or y.ndim != 1 or A.shape != (Y.shape[0], X.shape[0]):
        raise AssertionError(f"gemv: shapes {A.shape} @ {X.shape} into {Y.shape}")

    def run():
        product = alpha * (A @ X)
        Y[...] = product if beta == 0 else product + beta * Y

    rt.before_write((Y,))
    run()
    rt.launch("gemv", run)
