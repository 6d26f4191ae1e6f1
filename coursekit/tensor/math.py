"""The functions students call: ``T.exp``, ``T.dot``, ``T.sum``, ``T.switch`` ...

Each builds a node of the graph; nothing is computed until a function is
compiled and called.  Names follow Theano (and NumPy where Theano did).
"""
from __future__ import annotations

import sys

import numpy as np

from .. import tensor as _tensor  # this package: modules that build on this one are reached through it when code runs
from ..scalar import ops as scalar_ops
from .blas import Dot
from .elemwise import DimShuffle, Elemwise
from .reduction import Max, Min, NumElements, Prod, Sum, normalize_axis
from .shape import Join, MakeVector, Reshape, Shape
from .subtensor import make_subtensor
from .var import as_tensor_variable, constant, get_vector_length, weak_constants

_ELEMWISE_CACHE: dict = {}


def elemwise_op(name) -> Elemwise:
    """The (shared, cached) Elemwise op for a scalar op name."""
    op = _ELEMWISE_CACHE.get(name)
    if op is None:
        op = _ELEMWISE_CACHE[name] = Elemwise(scalar_ops.get(name))
    return op


def _elemwise(name):
    def fn(*args):
        op = elemwise_op(name)
        return op(*weak_constants(args, op.scalar_op))

    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (NumPy broadcasting, NumPy 2 dtype rules)."
    return fn


add, sub, mul, true_div, int_div, mod, pow = map(_elemwise, ["add", "sub", "mul", "true_div", "int_div",  # noqa: A001  (Theano's T.pow)
                                                               "mod", "pow"])
neg, exp, log, log1p, expm1, tanh, sqrt, sqr, sgn = map(_elemwise, ["neg", "exp", "log", "log1p", "expm1",
                                                                    "tanh", "sqrt", "sqr", "sgn"])
sin, cos, floor, ceil, sigmoid, softplus, relu = map(_elemwise, ["sin", "cos", "floor", "ceil", "sigmoid",
                                                                 "softplus", "relu"])
maximum, minimum, switch, second, identity = map(_elemwise, ["maximum", "minimum", "switch", "second", "identity"])
gt, lt, ge, le, eq, neq = map(_elemwise, ["gt", "lt", "ge", "le", "eq", "neq"])
and_, or_, invert = map(_elemwise, ["and_", "or_", "invert"])
abs = _elemwise("abs")  # noqa: A001 - Theano's name
divide = true_div
square = sqr
where = switch


def cast(x, dtype):
    """Convert ``x`` to ``dtype`` (a no-op when it already has it)."""
    x = as_tensor_variable(x)
    dtype = np.dtype(dtype).name
    if x.type.dtype == dtype:
        return x
    return Elemwise(scalar_ops.Cast(dtype))(x)


def clip(x, lo, hi):
    return minimum(maximum(x, lo), hi)


def zeros_like(x, dtype=None):
    x = as_tensor_variable(x)
    return second(x, constant(0, dtype=dtype or x.type.dtype))


def ones_like(x, dtype=None):
    x = as_tensor_variable(x)
    return second(x, constant(1, dtype=dtype or x.type.dtype))


# ---------------------------------------------------------------- reductions
def _reduce(op_class, x, axis, keepdims):
    x = as_tensor_variable(x)
    axes = normalize_axis(axis, x.type.ndim, op_class.__name__.lower())
    op = op_class(axes)
    out = op(x)
    return op._expand(out, x.type.ndim) if keepdims else out


def sum(x, axis=None, keepdims=False, dtype=None):  # noqa: A001
    out = _reduce(Sum, x, axis, keepdims)
    return cast(out, dtype) if dtype else out


def prod(x, axis=None, keepdims=False):
    return _reduce(Prod, x, axis, keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001
    return _reduce(Max, x, axis, keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    return _reduce(Min, x, axis, keepdims)


def mean(x, axis=None, keepdims=False, dtype=None, acc_dtype=None, op=False):
    """Sum divided by the number of elements (float32 stays float32, ints give float64).

    ``dtype`` (Theano's argument): the dtype of the result, e.g. ``T.mean(int_vector, dtype=floatX)``;
    ``acc_dtype``: the dtype the sum accumulates in."""
    x = as_tensor_variable(x)
    total = sum(x, axis, keepdims, dtype=acc_dtype or (dtype if dtype and np.dtype(dtype).kind == "f" else None))
    out_dtype = "float64" if total.type.dtype[0] not in "fc" else total.type.dtype
    out_dtype = np.dtype(dtype).name if dtype is not None else out_dtype
    count = NumElements(normalize_axis(axis, x.type.ndim, "mean"), out_dtype)(x)
    return true_div(cast(total, out_dtype), count)


def var(x, axis=None, keepdims=False):
    centred = x - mean(x, axis, keepdims=True)
    return mean(centred * centred, axis, keepdims)


def std(x, axis=None, keepdims=False):
    """sqrt(var): where the variance is exactly 0 (a length-1 axis, equal values) the gradient is 0.

    sqrt's derivative is infinite at 0, and inf * 0 is NaN, so the plain form gave
    NaN gradients there.  0 is a valid subgradient (std is a norm of the centred
    values); the square root is taken of 1 instead of 0 so that even the unused
    branch has a finite derivative.  A NaN variance still gives NaN.
    """
    v = var(x, axis, keepdims)
    zero = eq(v, 0)
    return switch(zero, 0, sqrt(switch(zero, 1, v)))


# ---------------------------------------------------------------- products
_DOT = Dot()


def dot(x, y):
    """Product as in ``numpy.dot`` (ranks above 2 as Theano: over the last axis of x and the
    second-to-last of y)."""
    x, y = as_tensor_variable(x), as_tensor_variable(y)
    if x.type.ndim == 0 or y.type.ndim == 0:
        return mul(x, y)
    if x.type.ndim > 2 or y.type.ndim > 2:
        return _tensor.extra_ops.nd_dot(x, y)  # built from tensordot, which uses this function
    return _DOT(x, y)


def outer(x, y):
    return dot(as_tensor_variable(x).dimshuffle(0, "x"), as_tensor_variable(y).dimshuffle("x", 0))


# ---------------------------------------------------------------- shapes
def shape(x):
    return Shape()(as_tensor_variable(x))


def getitem(x, index):
    if isinstance(index, list) and any(isinstance(i, slice) or i is None or i is Ellipsis for i in index):
        index = tuple(index)  # Theano (and NumPy before 1.23) read a list holding slices as a tuple index
    return make_subtensor(x, index)


def stack(tensors, axis=0):
    tensors = [as_tensor_variable(t) for t in tensors]
    if all(t.type.ndim == 0 for t in tensors) and axis == 0:
        dtype = np.result_type(*[t.type.dtype for t in tensors]).name
        return MakeVector(dtype)(*[cast(t, dtype) for t in tensors])
    expanded = []
    for t in tensors:
        pattern = list(range(t.type.ndim))
        pattern.insert(axis, "x")
        expanded.append(t.dimshuffle(*pattern))
    return concatenate(expanded, axis)


def concatenate(tensors, axis=0):
    tensors = [as_tensor_variable(t) for t in tensors]
    return Join(normalize_axis(axis, tensors[0].type.ndim, "concatenate")[0])(*tensors)


def reshape(x, newshape, ndim=None):
    """Reshape; ``newshape`` is a tuple of ints / integer scalars, or an int vector."""
    x = as_tensor_variable(x)
    if isinstance(newshape, (tuple, list)):
        if all(isinstance(s, (int, np.integer)) for s in newshape):
            shape_var = constant(np.asarray(newshape, dtype="int64"))
        else:
            shape_var = stack([cast(as_tensor_variable(s), "int64") for s in newshape])
        ndim = len(newshape)
    else:
        shape_var = as_tensor_variable(newshape)
        if ndim is None:
            try:
                ndim = get_vector_length(shape_var)  # x.reshape(y.shape): the graph knows the length
            except (ValueError, TypeError):
                raise ValueError("reshape with a symbolic shape vector needs ndim=... (the length of that "
                                 "vector)") from None
    return Reshape(ndim)(x, shape_var)


def flatten(x, ndim=1):
    x = as_tensor_variable(x)
    if ndim == 1:
        return reshape(x, (-1,))
    return reshape(x, [x.shape[i] for i in range(ndim - 1)] + [-1])


def transpose(x, axes=None):
    x = as_tensor_variable(x)
    return x.transpose(*(axes or ()))


def dimshuffle(x, *pattern):
    return as_tensor_variable(x).dimshuffle(*pattern)


def softmax(x):
    """Softmax over the last axis, keeping the input's rank (``T.nnet.softmax`` makes a vector a row)."""
    return _tensor.nnet.Softmax()(x)


__all__ = [n for n in dir() if not n.startswith("_")] + ["DimShuffle"]


scalar_ops.use_tensor_math(sys.modules[__name__])  # the scalar table writes its derivatives with this module
