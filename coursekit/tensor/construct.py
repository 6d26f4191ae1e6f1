"""Tensors made from shapes: ``arange``, ``alloc``, ``zeros``/``ones``, ``eye``, ``fill``; ``specify_shape``.

``T.arange(n)`` is what ``p[T.arange(n), y]`` needs; ``T.alloc(0., n, m)``
is how Theano code makes a zero state for a loop.  Sizes may be Python ints
or symbolic integer scalars (``x.shape[0]``).
"""
from __future__ import annotations

import numpy as np

from ..config import config
from ..graph import Apply, Constant
from .elemwise import reduce_to_broadcast
from .math import cast, second
from .math import sum as tsum
from .type import TensorType
from .var import as_tensor_variable, constant, get_vector_length
from .xpop import XpOp


def _int_scalar(value, what):
    """An int64 scalar variable for a size argument, or a clear TypeError."""
    var = as_tensor_variable(value)
    if var.type.ndim != 0 or var.type.dtype[0] not in "iu":
        raise TypeError(f"{what} must be an integer scalar (a Python int or e.g. x.shape[0]), got {var} "
                        f"of type {var.type}")
    return cast(var, "int64")


class ARange(XpOp):
    """``arange(start, stop, step)`` as a vector of ``dtype``."""
    verified_outputs = True

    __props__ = ("dtype",)
    gpu_name = "GpuARange"
    host_inputs = (0, 1, 2)  # the bounds are host scalars; the vector is made where the op runs

    def __init__(self, dtype):
        self.dtype = dtype

    def make_node(self, start, stop, step):
        return Apply(self, [start, stop, step], [TensorType(self.dtype, (False,)).make_variable()])

    def run(self, xp, inputs, output_storage):
        start, stop, step = (v.item() for v in inputs)
        if step == 0:
            raise ValueError("arange: step is 0; it must be a nonzero number")
        output_storage[0][0] = xp.arange(start, stop, step, dtype=self.dtype)

    def L_op(self, inputs, outputs, output_grads):
        return [None, None, None]


def arange(start, stop=None, step=1, dtype=None):
    """Evenly spaced values, as ``numpy.arange``; ``T.arange(n)`` gives 0, 1, ..., n-1 (int64)."""
    if stop is None:
        start, stop = 0, start
    args = [as_tensor_variable(v) for v in (start, stop, step)]
    for name, v in zip(("start", "stop", "step"), args):
        if v.type.ndim != 0:
            raise TypeError(f"arange: {name} must be a scalar, got {v} of type {v.type}")
    if dtype is None:
        dtype = np.result_type(*[a.type.dtype for a in args]).name
        if dtype[0] == "f":
            dtype = np.result_type(dtype, config.floatX).name
    dtype = np.dtype(dtype).name
    return ARange(dtype)(*args)


class Alloc(XpOp):
    """``value`` broadcast to a shape (a new array): ``T.alloc(0., n, m)``."""
    verified_outputs = True

    __props__ = ()
    gpu_name = "GpuAlloc"

    def host_input(self, position, var):
        return position > 0  # the sizes are host scalars; the value is copied where the op runs

    def make_node(self, value, *shape):
        value = as_tensor_variable(value)
        if len(shape) < value.type.ndim:
            raise TypeError(f"alloc: the value {value} has {value.type.ndim} dimensions but only {len(shape)} "
                            "sizes were given; give at least one size per dimension of the value")
        bcast = tuple(isinstance(s, Constant) and int(s.data) == 1 for s in shape)
        return Apply(self, [value, *shape], [TensorType(value.type.dtype, bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        value, *shape = inputs
        shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ValueError(f"alloc: negative size in shape {shape}")
        out = xp.empty(shape, dtype=value.dtype)
        try:
            out[...] = value
        except ValueError:
            raise ValueError(f"alloc: a value of shape {value.shape} cannot be broadcast to {shape}") from None
        output_storage[0][0] = out

    def L_op(self, inputs, outputs, output_grads):
        value, *shape = inputs
        (gz,) = output_grads
        extra = gz.type.ndim - value.type.ndim
        g = tsum(gz, axis=tuple(range(extra))) if extra else gz
        return [reduce_to_broadcast(g, value)] + [None] * len(shape)


def alloc(value, *shape):
    """``value`` (a scalar or a smaller tensor) broadcast to ``shape``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    value = as_tensor_variable(value)
    sizes = [_int_scalar(s, f"alloc: size {k}") for k, s in enumerate(shape)]
    return Alloc()(value, *sizes)


def _shape_args(shape):
    if isinstance(shape, (int, np.integer)) or (hasattr(shape, "type") and shape.type.ndim == 0):
        return (shape,)
    if hasattr(shape, "type"):  # a symbolic shape vector
        return tuple(shape[i] for i in range(_vector_length(shape)))
    return tuple(shape)


def _vector_length(var):
    try:
        return get_vector_length(var)
    except ValueError:
        raise TypeError(f"the length of the shape vector {var} is not known when the graph is built; "
                        "pass a tuple of sizes instead") from None


def zeros(shape, dtype=None):
    """A new tensor of zeros (``shape``: a tuple of ints / int scalars, or x.shape)."""
    return alloc(constant(0, dtype=dtype or config.floatX), *_shape_args(shape))


def ones(shape, dtype=None):
    """A new tensor of ones."""
    return alloc(constant(1, dtype=dtype or config.floatX), *_shape_args(shape))


def fill(model, value):
    """A tensor shaped like ``model`` filled with ``value`` (Theano's ``T.fill``)."""
    return second(model, value)


class Eye(XpOp):
    """An ``n`` x ``m`` matrix with ones on diagonal ``k``."""
    verified_outputs = True

    __props__ = ("dtype",)
    gpu_name = "GpuEye"
    host_inputs = (0, 1, 2)

    def __init__(self, dtype):
        self.dtype = dtype

    def make_node(self, n, m, k):
        return Apply(self, [n, m, k], [TensorType(self.dtype, (False, False)).make_variable()])

    def run(self, xp, inputs, output_storage):
        n, m, k = (int(v) for v in inputs)
        output_storage[0][0] = xp.eye(n, m, k, dtype=self.dtype)

    def L_op(self, inputs, outputs, output_grads):
        return [None, None, None]


def eye(n, m=None, k=0, dtype=None):
    """The identity matrix (``m`` columns, ones on diagonal ``k``), as ``numpy.eye``."""
    m = n if m is None else m
    return Eye(np.dtype(dtype or config.floatX).name)(_int_scalar(n, "eye: n"), _int_scalar(m, "eye: m"),
                                                      _int_scalar(k, "eye: k"))


def identity_like(x):
    x = as_tensor_variable(x)
    return eye(x.shape[0], x.shape[1], 0, dtype=x.type.dtype)


class SpecifyShape(XpOp):
    """Asserts at run time that ``x`` has the given shape; the output is ``x`` itself (a view)."""
    verified_outputs = True

    view_map = {0: [0]}
    gpu_name = "GpuSpecifyShape"

    def host_input(self, position, var):
        return position > 0  # the sizes are host integers

    def make_node(self, x, *shape):
        x = as_tensor_variable(x)
        if len(shape) != x.type.ndim:
            raise ValueError(f"specify_shape: {x} has {x.type.ndim} dimensions but {len(shape)} sizes were given")
        bcast = tuple(b or (isinstance(s, Constant) and int(s.data) == 1) for b, s in zip(x.type.broadcastable, shape))
        return Apply(self, [x, *shape], [TensorType(x.type.dtype, bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        x, *shape = inputs
        expected = tuple(int(s) for s in shape)
        if tuple(x.shape) != expected:
            raise AssertionError(f"specify_shape: the value has shape {tuple(x.shape)}, but the graph says it "
                                 f"has shape {expected}")
        output_storage[0][0] = x

    def L_op(self, inputs, outputs, output_grads):
        return [output_grads[0]] + [None] * (len(inputs) - 1)


def specify_shape(x, shape):
    """``x``, checked at run time to have ``shape`` (a tuple of ints / int scalars)."""
    sizes = [_int_scalar(s, f"specify_shape: size {k}") for k, s in enumerate(_shape_args(shape))]
    return SpecifyShape()(x, *sizes)
