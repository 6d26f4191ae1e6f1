"""Positions and orderings: ``argmax``, ``argmin``, ``max_and_argmax``, ``sort``, ``argsort``.

Theano scripts call ``T.argmax(p_y_given_x, axis=1)`` to turn class
probabilities into predictions.  Index outputs are int64 and have no gradient
(an index does not move when the values move a little); ``sort`` does have
one: each input element's gradient is the output gradient at the position it
was sorted to.

The implementations are written against ``xp`` (NumPy here, CuPy's functions
of the same names on a GPU).
"""
from __future__ import annotations

import numpy as np

from ..graph import Apply
from .math import max as tmax
from .math import zeros_like
from .type import TensorType, host_like
from .var import as_tensor_variable
from .xpop import XpOp


def _axis(axis, ndim, what):
    """A normalised int axis, or None for "the flattened array"."""
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        if len(axis) != 1:
            raise ValueError(f"{what}: give one axis (an int) or None, got {axis!r}; for several axes "
                             "reshape first (x.reshape(...)) so they become one")
        axis = axis[0]
    if not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{what}: axis must be an int or None, got {axis!r}")
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"{what}: axis {axis} is out of range for a {ndim}-d tensor")
    return int(axis) % ndim if ndim else None


class ArgReduce(XpOp):
    """Index of the largest (``argmax``) or smallest (``argmin``) element along ``axis``."""
    verified_outputs = True

    __props__ = ("which", "axis", "keepdims")
    gpu_name = "GpuArgReduce"

    def __init__(self, which, axis, keepdims=False):
        if which not in ("max", "min"):
            raise ValueError(f"ArgReduce: which must be 'max' or 'min', got {which!r}")
        self.which, self.axis, self.keepdims = which, axis, keepdims

    def __str__(self):
        return f"Arg{self.which}{{axis={self.axis}}}"

    def make_node(self, x):
        x = as_tensor_variable(x)
        if self.axis is None:
            bcast = (True,) * x.type.ndim if self.keepdims else ()
        elif self.keepdims:
            bcast = tuple(True if i == self.axis else b for i, b in enumerate(x.type.broadcastable))
        else:
            bcast = tuple(b for i, b in enumerate(x.type.broadcastable) if i != self.axis)
        return Apply(self, [x], [TensorType("int64", bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        x = inputs[0]
        if x.size == 0:
            raise ValueError(f"{self}: the input is empty (shape {x.shape}); there is no arg{self.which}")
        fn = xp.argmax if self.which == "max" else xp.argmin
        result = fn(x, axis=self.axis, keepdims=self.keepdims)
        output_storage[0][0] = xp.asarray(result, dtype="int64")

    def L_op(self, inputs, outputs, output_grads):
        return [None]  # an index does not depend smoothly on the values


def argmax(x, axis=None, keepdims=False):
    """Index of the largest element (of the flattened tensor when ``axis`` is None)."""
    x = as_tensor_variable(x)
    return ArgReduce("max", _axis(axis, x.type.ndim, "argmax"), keepdims)(x)


def argmin(x, axis=None, keepdims=False):
    """Index of the smallest element (of the flattened tensor when ``axis`` is None)."""
    x = as_tensor_variable(x)
    return ArgReduce("min", _axis(axis, x.type.ndim, "argmin"), keepdims)(x)


def max_and_argmax(x, axis=None, keepdims=False):
    """``(max, argmax)`` along ``axis`` (Theano's ``T.max_and_argmax``)."""
    return tmax(x, axis=axis, keepdims=keepdims), argmax(x, axis=axis, keepdims=keepdims)


class _AlongAxis(XpOp):
    """What Sort and ArgSort share: an axis (``None``: the flattened tensor), a kind, one output."""
    verified_outputs = True

    __props__ = ("axis", "kind")

    def __init__(self, axis=-1, kind="quicksort"):
        self.axis, self.kind = axis, kind

    def output_dtype(self, x):
        raise NotImplementedError

    def make_node(self, x):
        x = as_tensor_variable(x)
        bcast = (False,) if self.axis is None else x.type.broadcastable
        return Apply(self, [x], [TensorType(self.output_dtype(x), bcast).make_variable()])

    def order(self, xp, x, kind=None):
        """``argsort`` along the axis.  CuPy takes no ``kind`` (its sort is stable); NumPy gets the one asked for."""
        kind = kind or self.kind
        return np.argsort(x, axis=self.axis, kind=kind) if xp is np else xp.argsort(x, axis=self.axis)


class Sort(_AlongAxis):
    """Sorted copy along ``axis`` (``None``: the flattened tensor)."""
    verified_outputs = True

    gpu_name = "GpuSort"

    def output_dtype(self, x):
        return x.type.dtype

    def run(self, xp, inputs, output_storage):
        x = inputs[0]
        output_storage[0][0] = np.sort(x, axis=self.axis, kind=self.kind) if xp is np else xp.sort(x, axis=self.axis)

    def L_op(self, inputs, outputs, output_grads):
        (x,), (gz,) = inputs, output_grads
        return [UnsortGrad(self.axis)(x, gz)]


class ArgSort(_AlongAxis):
    """Indices that sort the tensor along ``axis`` (int64, no gradient)."""
    verified_outputs = True

    gpu_name = "GpuArgSort"

    def output_dtype(self, x):
        return "int64"

    def run(self, xp, inputs, output_storage):
        output_storage[0][0] = self.order(xp, inputs[0]).astype("int64")

    def L_op(self, inputs, outputs, output_grads):
        return [None]


class _Permutation(_AlongAxis):
    """What the two linear maps of sort's gradient share: ``x`` fixes a permutation (its stable ``argsort``),
    ``g`` is moved by it.  Each is the other's gradient with respect to ``g``, so ``sort`` has gradients of
    every order; with respect to ``x`` they are zero (a small change of ``x`` does not change its order)."""
    verified_outputs = True

    def __init__(self, axis):
        super().__init__(axis, "stable")

    def output_dtype(self, x):
        return x.type.dtype

    def make_node(self, x, g):
        return Apply(self, [x, g], [host_like(x)])

    def moved(self, xp, x, g, order):
        raise NotImplementedError

    def run(self, xp, inputs, output_storage):
        x, g = inputs
        order = self.order(xp, x, "stable")
        if self.axis is None:
            output_storage[0][0] = self.moved(xp, x.reshape(-1), g.reshape(-1), order).reshape(x.shape)
        else:
            output_storage[0][0] = self.moved(xp, x, g, order)


class UnsortGrad(_Permutation):
    """The gradient of ``sort``: ``gz`` scattered back to where each element came from."""
    verified_outputs = True

    gpu_name = "GpuUnsortGrad"

    def moved(self, xp, x, g, order):
        inverse = self.order(xp, order, "stable")  # where each element went
        return xp.take_along_axis(g, inverse, axis=-1 if self.axis is None else self.axis)

    def L_op(self, inputs, outputs, output_grads):
        x, _ = inputs
        return [zeros_like(x), SortLike(self.axis)(x, output_grads[0])]


class SortLike(_Permutation):
    """``g`` gathered in the order that sorts ``x``: the gradient of :class:`UnsortGrad` (a gather of a scatter)."""
    verified_outputs = True

    gpu_name = "GpuSortLike"

    def make_node(self, x, g):
        bcast = (False,) if self.axis is None else x.type.broadcastable
        return Apply(self, [x, g], [TensorType(g.type.dtype, bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        x, g = inputs
        if self.axis is None:
            output_storage[0][0] = g.reshape(-1)[self.order(xp, x.reshape(-1), "stable")]
        else:
            output_storage[0][0] = xp.take_along_axis(g, self.order(xp, x, "stable"), axis=self.axis)

    def L_op(self, inputs, outputs, output_grads):
        x, _ = inputs
        return [zeros_like(x), UnsortGrad(self.axis)(x, output_grads[0])]


def sort(a, axis=-1, kind="quicksort", order=None):
    """A sorted copy of ``a`` along ``axis`` (as ``numpy.sort``; ``order`` is not supported)."""
    if order is not None:
        raise NotImplementedError("sort(order=...) sorts record arrays, which coursekit does not have")
    a = as_tensor_variable(a)
    return Sort(_axis(axis, a.type.ndim, "sort"), kind)(a)


def argsort(a, axis=-1, kind="quicksort", order=None):
    """Indices that sort ``a`` along ``axis`` (as ``numpy.argsort``)."""
    if order is not None:
        raise NotImplementedError("argsort(order=...) sorts record arrays, which coursekit does not have")
    a = as_tensor_variable(a)
    return ArgSort(_axis(axis, a.type.ndim, "argsort"), kind)(a)
