"""The sparse ops: conversions, construction from properties, structured arithmetic, and products.

Each op computes with SciPy on the host (``perform``).  *Structured* ops (Theano's word) touch only the stored
entries of a sparse input: ``structured_add(x, 2)`` adds 2 where ``x`` stores a value and leaves its zeros
alone, and a structured gradient is the gradient restricted to those entries (a sparse matrix of ``x``'s
pattern).  ``dot`` is the true product and its gradient with respect to a sparse input is dense, as Theano's.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..graph import Apply, Constant, Op, Variable
from ..tensor import math as M
from ..tensor.type import TensorType
from ..tensor.var import as_tensor_variable
from .type import FORMATS, SparseType

__all__ = ["SparseVariable", "as_sparse_variable", "CSM", "CSR", "CSC", "CSMProperties", "csm_properties",
           "csm_data", "csm_indices", "csm_indptr", "csm_shape", "dense_from_sparse", "csr_from_dense",
           "csc_from_dense", "transpose", "structured_add", "structured_dot", "dot", "add", "mul", "neg",
           "sp_ones_like"]


def _is_sparse(var):
    return isinstance(var, Variable) and isinstance(var.type, SparseType)


class SparseVariable(Variable):
    """A symbolic sparse matrix: ``x.toarray()``, ``x.T``, ``x.shape``, ``-x``, ``x + y``, ``x * y``."""

    dtype = property(lambda self: self.type.dtype)
    format = property(lambda self: self.type.format)
    ndim = 2
    broadcastable = (False, False)
    shape = property(lambda self: csm_shape(self))
    T = property(lambda self: transpose(self))

    def toarray(self):
        return dense_from_sparse(self)

    def __neg__(self):
        return neg(self)

    def __add__(self, other):
        return add(self, other)

    __radd__ = __add__

    def __mul__(self, other):
        return mul(self, other)

    __rmul__ = __mul__

    def __str__(self):
        return self.name or f"<{self.type}>"


SparseType.variable_class = SparseVariable


def as_sparse_variable(x):
    """``x`` as a sparse variable: a sparse variable itself, or a constant holding a ``scipy.sparse`` matrix."""
    if _is_sparse(x):
        return x
    if sp.issparse(x):
        fmt = x.format if x.format in FORMATS else "csr"
        value = x.asformat(fmt)
        return Constant(SparseType(fmt, value.dtype), value)
    raise TypeError(f"expected a sparse variable or a scipy.sparse matrix, got {x!r}; make a dense matrix sparse "
                    "with csr_from_dense(x) or csc_from_dense(x)")


def _dense(dtype):
    return TensorType(dtype, (False, False)).make_variable()


class _SparseOp(Op):
    """Host-only: SciPy computes it (no GPU twin, so placement keeps it on the host)."""

    __props__ = ()

    def __str__(self):
        props = ", ".join(str(getattr(self, p)) for p in self.__props__)
        return f"{type(self).__name__}{{{props}}}" if props else type(self).__name__


class CSMProperties(_SparseOp):
    """sparse -> (data, indices, indptr, shape): the arrays SciPy stores (Theano's ``csm_properties``)."""

    def make_node(self, x):
        x = as_sparse_variable(x)
        outs = [TensorType(x.dtype, (False,)).make_variable()] + [TensorType("int32", (False,)).make_variable()
                                                                   for _ in range(3)]
        return Apply(self, [x], outs)

    def perform(self, node, inputs, out):
        x = inputs[0]
        out[0][0] = np.asarray(x.data)
        out[1][0] = np.asarray(x.indices, dtype="int32")
        out[2][0] = np.asarray(x.indptr, dtype="int32")
        out[3][0] = np.asarray(x.shape, dtype="int32")

    def grad(self, inputs, output_grads):
        x = inputs[0]
        g_data = output_grads[0]
        _, indices, indptr, shape = csm_properties(x)
        return [CSM(x.format)(g_data, indices, indptr, shape)]


class CSM(_SparseOp):
    """(data, indices, indptr, shape) -> a ``format`` matrix: ``CSR(...)`` / ``CSC(...)`` (Theano's ``CSM``)."""

    __props__ = ("format",)

    def __init__(self, format):
        if format not in FORMATS:
            raise ValueError(f"CSM format {format!r}: 'csr' or 'csc'")
        self.format = format

    def make_node(self, data, indices, indptr, shape):
        data = as_tensor_variable(data)
        indices, indptr, shape = (as_tensor_variable(v) for v in (indices, indptr, shape))
        for what, v in (("data", data), ("indices", indices), ("indptr", indptr), ("shape", shape)):
            if v.type.ndim != 1:
                raise TypeError(f"{self.format.upper()}({what}=...): a vector, got {v.type}")
        if any(v.type.dtype[0] not in "iu" for v in (indices, indptr, shape)):
            raise TypeError(f"{self.format.upper()}: indices, indptr and shape must be integer vectors")
        return Apply(self, [data, indices, indptr, shape], [SparseType(self.format, data.type.dtype)()])

    def perform(self, node, inputs, out):
        data, indices, indptr, shape = inputs
        out[0][0] = FORMATS[self.format]((np.asarray(data).copy(), np.asarray(indices).copy(), np.asarray(indptr).copy()),
                                         shape=tuple(int(s) for s in shape))

    def grad(self, inputs, output_grads):
        data, indices, indptr, shape = inputs
        return [_ValuesAt(self.format)(output_grads[0], indices, indptr, shape), None, None, None]


class _ValuesAt(_SparseOp):
    """The entries of ``g`` (sparse or dense) at the positions a (indices, indptr) pattern stores: a vector."""

    __props__ = ("format",)

    def __init__(self, format):
        self.format = format

    def make_node(self, g, indices, indptr, shape):
        g = g if _is_sparse(g) else as_tensor_variable(g)
        return Apply(self, [g, indices, indptr, shape], [TensorType(g.type.dtype, (False,)).make_variable()])

    def perform(self, node, inputs, out):
        g, indices, indptr, _ = inputs
        dense = g.toarray() if sp.issparse(g) else np.asarray(g)
        major = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        rows, cols = (major, indices) if self.format == "csr" else (indices, major)
        out[0][0] = dense[rows, cols]


class DenseFromSparse(_SparseOp):
    """sparse -> dense matrix; its gradient is structured (restricted to the stored entries), as Theano's."""

    def make_node(self, x):
        x = as_sparse_variable(x)
        return Apply(self, [x], [_dense(x.dtype)])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0].toarray()

    def grad(self, inputs, output_grads):
        return [_MaskedLike()(inputs[0], output_grads[0])]


class _MaskedLike(_SparseOp):
    """(x sparse, g) -> g's entries at x's stored positions, as a matrix of x's format (a structured gradient)."""

    def make_node(self, x, g):
        g = g if _is_sparse(g) else as_tensor_variable(g)
        return Apply(self, [x, g], [SparseType(x.format, g.type.dtype)()])

    def perform(self, node, inputs, out):
        x, g = inputs
        dense = g.toarray() if sp.issparse(g) else np.asarray(g)
        coo = x.tocoo()
        values = dense[coo.row, coo.col].astype(node.outputs[0].type.dtype)
        out[0][0] = FORMATS[x.format]((values, (coo.row, coo.col)), shape=x.shape)


class SparseFromDense(_SparseOp):
    """dense matrix -> ``format`` (``csr_from_dense`` / ``csc_from_dense``); the zeros are not stored."""

    __props__ = ("format",)

    def __init__(self, format):
        self.format = format

    def make_node(self, x):
        x = as_tensor_variable(x)
        if x.type.ndim != 2:
            raise TypeError(f"{self.format}_from_dense: a matrix, got {x.type}")
        return Apply(self, [x], [SparseType(self.format, x.type.dtype)()])

    def perform(self, node, inputs, out):
        out[0][0] = FORMATS[self.format](np.asarray(inputs[0]))

    def grad(self, inputs, output_grads):
        g = output_grads[0]
        return [dense_from_sparse(g) if _is_sparse(g) else g]


class Transpose(_SparseOp):
    """x.T: a CSR matrix transposed is CSC (the same arrays), and the other way round."""

    def make_node(self, x):
        x = as_sparse_variable(x)
        return Apply(self, [x], [SparseType("csc" if x.format == "csr" else "csr", x.dtype)()])

    def perform(self, node, inputs, out):
        out[0][0] = inputs[0].transpose().asformat(node.outputs[0].type.format)

    def grad(self, inputs, output_grads):
        g = output_grads[0]
        return [transpose(g) if _is_sparse(g) else g.T]


class StructuredAdd(_SparseOp):
    """x + y on x's stored entries only (y a scalar); the zeros stay zeros."""

    def make_node(self, x, y):
        x, y = as_sparse_variable(x), as_tensor_variable(y)
        if y.type.ndim != 0:
            raise TypeError(f"structured_add(x, y): y must be a scalar, got {y.type} (add a dense matrix with x + y)")
        return Apply(self, [x, y], [SparseType(x.format, np.result_type(x.dtype, y.type.dtype).name)()])

    def perform(self, node, inputs, out):
        x, y = inputs
        result = x.astype(node.outputs[0].type.dtype, copy=True)
        result.data += y
        out[0][0] = result

    def grad(self, inputs, output_grads):
        x, y = inputs
        g = output_grads[0]
        return [_MaskedLike()(x, g), M.sum(csm_properties(_MaskedLike()(x, g))[0])]


class StructuredDot(_SparseOp):
    """sparse a @ dense b -> dense; the gradient for a is structured (a's stored entries only)."""

    def make_node(self, a, b):
        a, b = as_sparse_variable(a), as_tensor_variable(b)
        if b.type.ndim != 2:
            raise TypeError(f"structured_dot(a, b): b must be a dense matrix, got {b.type}")
        return Apply(self, [a, b], [_dense(np.result_type(a.dtype, b.type.dtype).name)])

    def perform(self, node, inputs, out):
        a, b = inputs
        out[0][0] = np.asarray(a @ np.asarray(b)).astype(node.outputs[0].type.dtype, copy=False)

    def grad(self, inputs, output_grads):
        a, b = inputs
        g = output_grads[0]
        return [_MaskedLike()(a, M.dot(g, b.T)), structured_dot(transpose(a), g)]


class Dot(_SparseOp):
    """The true product of a sparse and a dense matrix (either order); its gradients are dense, as Theano's."""

    def make_node(self, x, y):
        x = x if _is_sparse(x) else as_tensor_variable(x)
        y = y if _is_sparse(y) else as_tensor_variable(y)
        if not (_is_sparse(x) or _is_sparse(y)):
            raise TypeError("sparse.dot: one of the two arguments must be sparse (for two dense ones use T.dot)")
        if _is_sparse(x) and _is_sparse(y):
            raise TypeError("sparse.dot of two sparse matrices is not implemented here; densify one of them "
                            "(dense_from_sparse) or use structured_dot")
        return Apply(self, [x, y], [_dense(np.result_type(x.type.dtype, y.type.dtype).name)])

    def perform(self, node, inputs, out):
        x, y = inputs
        result = x @ np.asarray(y) if sp.issparse(x) else (y.T @ np.asarray(x).T).T
        out[0][0] = np.asarray(result).astype(node.outputs[0].type.dtype, copy=False)

    def grad(self, inputs, output_grads):
        x, y = inputs
        g = output_grads[0]
        gx = M.dot(g, y.T) if not _is_sparse(y) else dot(g, transpose(y))
        gy = M.dot(x.T, g) if not _is_sparse(x) else dot(transpose(x), g)
        return [gx, gy]


class _Elementwise(_SparseOp):
    """neg / add / mul with a sparse operand (SciPy's own arithmetic)."""

    __props__ = ("name",)

    def __init__(self, name):
        self.name = name

    def make_node(self, *args):
        args = [a if _is_sparse(a) else as_tensor_variable(a) for a in args]
        dtype = np.result_type(*[a.type.dtype for a in args]).name
        sparse_out = self.name == "neg" or (self.name == "add" and all(map(_is_sparse, args))) or self.name == "mul"
        fmt = next(a.format for a in args if _is_sparse(a))
        return Apply(self, args, [SparseType(fmt, dtype)() if sparse_out else _dense(dtype)])

    def perform(self, node, inputs, out):
        if self.name == "neg":
            result = -inputs[0]
        elif self.name == "add":
            result = inputs[0] + inputs[1]
        else:
            x, y = inputs if sp.issparse(inputs[0]) else inputs[::-1]
            result = x.multiply(np.asarray(y)) if sp.issparse(x) else x * y
        otype = node.outputs[0].type
        out[0][0] = (result.asformat(otype.format) if isinstance(otype, SparseType) else np.asarray(result)).astype(
            otype.dtype)

    def grad(self, inputs, output_grads):
        g = output_grads[0]
        if self.name == "neg":
            return [-g]
        if self.name == "add":
            return [_MaskedLike()(v, g) if _is_sparse(v) and not _is_sparse(g) else g for v in inputs]
        x, y = inputs
        return [mul(g, y) if _is_sparse(g) else _MaskedLike()(x, g * dense_from_sparse(y)) if _is_sparse(y) else
                mul(_MaskedLike()(x, g), y), dense_from_sparse(mul(g, x)) if not _is_sparse(y) else mul(g, x)]


csm_properties = CSMProperties()
CSR, CSC = CSM("csr"), CSM("csc")
dense_from_sparse = DenseFromSparse()
csr_from_dense, csc_from_dense = SparseFromDense("csr"), SparseFromDense("csc")
transpose = Transpose()
structured_add = StructuredAdd()
_structured_dot = StructuredDot()
_dot = Dot()
neg, add, mul = _Elementwise("neg"), _Elementwise("add"), _Elementwise("mul")


def csm_data(x):
    return csm_properties(x)[0]


def csm_indices(x):
    return csm_properties(x)[1]


def csm_indptr(x):
    return csm_properties(x)[2]


def csm_shape(x):
    return csm_properties(x)[3]


def structured_dot(a, b):
    """``a @ b`` for sparse ``a`` and dense ``b``; the gradient for ``a`` is structured (Theano's)."""
    return _structured_dot(a, b)


def dot(x, y):
    """The product of a sparse and a dense matrix, in either order (Theano's ``sparse.dot``)."""
    return _dot(x, y)


def sp_ones_like(x):
    """A sparse matrix of ``x``'s pattern holding ones."""
    x = as_sparse_variable(x)
    return structured_add(mul(x, 0), 1)
