"""Reductions: sum, max, min, prod over some axes (``CAReduce``).

A reduction removes the reduced axes; ``keepdims=True`` is a ``DimShuffle``
that puts them back as broadcastable axes, so the op itself stays simple.
"""
from __future__ import annotations

import functools

import math

import numpy as np

from ..graph import Apply, Op
from ..work import reduction_work
from .. import tensor as _tensor  # this package: modules that build on this one are reached through it when code runs
from .type import TensorType
from .var import as_tensor_variable
from .xpop import XpOp

_REDUCERS = {"add": np.sum, "maximum": np.max, "minimum": np.min, "mul": np.prod}
_XP_NAMES = {"add": "sum", "maximum": "max", "minimum": "min", "mul": "prod"}  # the same, in any array module
# the ufuncs' own reduce skips np.sum's Python wrapper (2-3x faster on small arrays), same results
_UFUNC_REDUCE = {"add": np.add.reduce, "maximum": np.maximum.reduce, "minimum": np.minimum.reduce,
                 "mul": np.multiply.reduce}


def normalize_axis(axis, ndim, what="reduction"):
    """``None`` -> all axes; ints (negative allowed) -> a sorted tuple, checked."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    result = []
    for a in axes:
        if not isinstance(a, (int, np.integer)):
            raise TypeError(f"{what}: axis must be an int or a tuple of ints, got {a!r}")
        if not -ndim <= a < ndim:
            raise ValueError(f"{what}: axis {a} is out of range for a {ndim}-d tensor")
        result.append(int(a) % ndim if ndim else 0)
    if len(set(result)) != len(result):
        raise ValueError(f"{what}: axis {axis} repeats an axis")
    return tuple(sorted(result))


@functools.lru_cache(maxsize=None)
def _reduced_dtype(scalar_name, dtype):
    """The dtype NumPy's reduction gives for ``dtype``: learnt once per pair, not by building an array per call."""
    return _REDUCERS[scalar_name](np.ones((1,), dtype=dtype)).dtype


class CAReduce(XpOp):
    """Reduce with a commutative, associative scalar op along ``axis``."""
    verified_outputs = True

    __props__ = ("scalar_name", "axis")
    gpu_name = "GpuCAReduce"  # Sum, Max, ... too: on the GPU they are all one reduction kernel

    def __init__(self, scalar_name, axis):
        self.scalar_name = scalar_name
        self.axis = tuple(axis)
        self.reducer = _REDUCERS[scalar_name]

    def __str__(self):
        return f"{type(self).__name__}{{{self.scalar_name}, axis={list(self.axis)}}}"

    def make_node(self, x):
        x = as_tensor_variable(x)
        for a in self.axis:
            if a >= x.type.ndim:
                raise ValueError(f"{self}: axis {a} does not exist in {x.type}")
        bcast = tuple(b for i, b in enumerate(x.type.broadcastable) if i not in self.axis)
        dtype = _reduced_dtype(self.scalar_name, np.dtype(x.type.dtype)).name
        if self.scalar_name in ("maximum", "minimum"):
            dtype = x.type.dtype
        return Apply(self, [x], [TensorType(dtype, bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        x = inputs[0]
        if x.ndim and self.scalar_name in ("maximum", "minimum") and any(x.shape[a] == 0 for a in self.axis):
            raise ValueError(f"{self}: cannot take the {self.scalar_name} of an empty axis (shape {x.shape})")
        reduce = getattr(xp, _XP_NAMES[self.scalar_name])
        out = output_storage[0][0]
        if (xp is not np and isinstance(out, xp.ndarray) and out.dtype == _reduced_dtype(self.scalar_name, x.dtype)
                and out.shape == tuple(n for k, n in enumerate(x.shape) if k not in self.axis)):
            reduce(x, axis=self.axis, out=out)   # on a GPU: into the previous buffer, no allocation per call
            return
        output_storage[0][0] = xp.asarray(reduce(x, axis=self.axis))  # a full reduction gives a scalar

    def work(self, node, shapes, dtypes):
        return reduction_work(shapes[0], dtypes[0], node.outputs[0].type.dtype, self.axis)

    def make_thunk(self, node, storage_map):
        if self.scalar_name != "add":
            return super().make_thunk(node, storage_map)
        reducer, axis, asarray = _UFUNC_REDUCE[self.scalar_name], self.axis, np.asarray
        src, cell = storage_map[node.inputs[0]], storage_map[node.outputs[0]]

        def thunk():
            cell[0] = asarray(reducer(src[0], axis=axis))

        return thunk

    def _expand(self, var, ndim):
        """Put the reduced axes back as broadcastable ones."""
        pattern, it = [], iter(range(var.type.ndim))
        for i in range(ndim):
            pattern.append("x" if i in self.axis else next(it))
        return var.dimshuffle(*pattern)

    def L_op(self, inputs, outputs, output_grads):
        M = _tensor.math
        (x,), (z,), (gz,) = inputs, outputs, output_grads
        gz_full = self._expand(gz, x.type.ndim)
        if self.scalar_name == "add":
            g = M.second(x, gz_full)
        elif self.scalar_name in ("maximum", "minimum"):
            g = M.mul(gz_full, M.eq(x, self._expand(z, x.type.ndim)))
        else:  # prod: d/dx_i prod = prod / x_i (undefined at zeros, as in Theano's simple version)
            g = M.mul(gz_full, M.true_div(self._expand(z, x.type.ndim), x))
        return [M.cast(g, x.type.dtype) if g.type.dtype != x.type.dtype else g]


class Sum(CAReduce):
    verified_outputs = True
    def __init__(self, axis):
        super().__init__("add", axis)

    __props__ = ("axis",)


class Max(CAReduce):
    verified_outputs = True
    def __init__(self, axis):
        super().__init__("maximum", axis)

    __props__ = ("axis",)


class Min(CAReduce):
    verified_outputs = True
    def __init__(self, axis):
        super().__init__("minimum", axis)

    __props__ = ("axis",)


class Prod(CAReduce):
    verified_outputs = True
    def __init__(self, axis):
        super().__init__("mul", axis)

    __props__ = ("axis",)


class NumElements(Op):
    """How many elements a reduction over ``axis`` combines, as a ``dtype`` scalar.

    Used by ``mean``: ``sum(x) / NumElements(x)``.  Its value depends on the
    shape of x only, so it has no gradient with respect to x's values.
    """
    verified_outputs = True

    __props__ = ("axis", "dtype")
    shape_only = True  # reads only the shape: works on device arrays without a transfer

    def __init__(self, axis, dtype):
        self.axis, self.dtype = tuple(axis), dtype

    def make_node(self, x):
        return Apply(self, [x], [TensorType(self.dtype, ()).make_variable()])

    def perform(self, node, inputs, output_storage):
        shape = inputs[0].shape
        output_storage[0][0] = np.asarray(math.prod([shape[a] for a in self.axis]), dtype=self.dtype)

    def L_op(self, inputs, outputs, output_grads):
        return [None]
