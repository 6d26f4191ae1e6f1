"""More of the tensor surface: broadcast patterns, padding and squeezing axes, masks, and more elementwise math.

``T.addbroadcast``, ``T.shape_padleft``, ``T.squeeze``, ``T.isnan``, ``T.any``, ``T.inv``, ``T.nonzero``... are
what libraries built on the tensor surface (Lasagne, Keras 1.x) call beyond the lessons' ops.  Each is built
here from coursekit's own ops, so it has a gradient and a GPU twin wherever the op it is made of has one.  The elementwise functions are new
scalar ops (a NumPy ufunc, a gradient, a CUDA C expression), registered like the built-in ones.
"""
from __future__ import annotations

import numpy as np

from ..graph import Apply, Variable  # noqa: F401  (T.Variable: Theano's tensor namespace re-exported it)
from ..scalar.ops import ScalarOp, register
from .math import _elemwise, cast, stack, max as tmax, min as tmin, neq, pow, int_div, sgn, sqr  # noqa: A004  (Theano's T.pow)
from .math import abs as _abs, exp, log, sqrt, zeros_like  # noqa: F401
from .type import TensorType
from .var import as_tensor_variable
from .xpop import XpOp


def _scalar_grad(fn):
    def grad(inputs, output, gz):
        return fn(inputs, output, gz)
    return grad


def _no_grad(inputs, output, gz):
    return [zeros_like(i) if i.type.dtype[0] in "fc" else None for i in inputs]


def _erf(x, out=None):
    from scipy import special  # SciPy is a dependency only of these two functions

    return special.erf(x, out=out) if out is not None else special.erf(x)


def _erfc(x, out=None):
    from scipy import special

    return special.erfc(x, out=out) if out is not None else special.erfc(x)


_TWO_OVER_SQRT_PI = 2 / np.sqrt(np.pi)
_NEW = [
    # through double: CUDA has no integer isnan/isinf (nvcc rejects isinf(int) in a kernel); exact for floats
    ("isnan", 1, np.isnan, _no_grad, "isnan((double)({0}))", False),
    ("isinf", 1, np.isinf, _no_grad, "isinf((double)({0}))", False),
    ("reciprocal", 1, np.reciprocal, lambda i, z, g: [-g * z * z], "(1 / {0})", True),
    ("log2", 1, np.log2, lambda i, z, g: [g / (i[0] * np.log(2.0))], "log2({0})", False),
    ("log10", 1, np.log10, lambda i, z, g: [g / (i[0] * np.log(10.0))], "log10({0})", False),
    ("exp2", 1, np.exp2, lambda i, z, g: [g * z * np.log(2.0)], "exp2({0})", True),
    ("tan", 1, np.tan, lambda i, z, g: [g * (1 + z * z)], "tan({0})", True),
    ("arcsin", 1, np.arcsin, lambda i, z, g: [g / sqrt(1 - sqr(i[0]))], "asin({0})", False),
    ("arccos", 1, np.arccos, lambda i, z, g: [-g / sqrt(1 - sqr(i[0]))], "acos({0})", False),
    ("arctan", 1, np.arctan, lambda i, z, g: [g / (1 + sqr(i[0]))], "atan({0})", False),
    ("sinh", 1, np.sinh, lambda i, z, g: [g * _elemwise("cosh")(i[0])], "sinh({0})", False),
    ("cosh", 1, np.cosh, lambda i, z, g: [g * _elemwise("sinh")(i[0])], "cosh({0})", False),
    ("arctan2", 2, np.arctan2, lambda i, z, g: [g * i[1] / (sqr(i[0]) + sqr(i[1])),
                                                -g * i[0] / (sqr(i[0]) + sqr(i[1]))], "atan2({0}, {1})", False),
    ("trunc", 1, np.trunc, _no_grad, "trunc({0})", False),
    ("erf", 1, _erf, lambda i, z, g: [g * _TWO_OVER_SQRT_PI * exp(-sqr(i[0]))], "erf({0})", False),
    ("erfc", 1, _erfc, lambda i, z, g: [-g * _TWO_OVER_SQRT_PI * exp(-sqr(i[0]))], "erfc({0})", False),
]
for _name, _nin, _impl, _grad, _c, _uses_out in _NEW:
    register(ScalarOp(_name, _nin, _impl, _scalar_grad(_grad), _c, _uses_out))

isnan, isinf, reciprocal, log2, log10, exp2 = map(_elemwise, ["isnan", "isinf", "reciprocal", "log2", "log10",
                                                              "exp2"])
tan, arcsin, arccos, arctan, sinh, cosh, arctan2, trunc, erf, erfc = map(
    _elemwise, ["tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arctan2", "trunc", "erf", "erfc"])
inv = reciprocal
abs_ = _abs
power = pow
floor_div = int_div
sign = sgn


def any(x, axis=None, keepdims=False):  # noqa: A001 - Theano's name
    """Whether any element (along ``axis``) is non-zero (bool)."""
    return cast(tmax(cast(neq(x, 0), "int8"), axis, keepdims), "bool")


def all(x, axis=None, keepdims=False):  # noqa: A001 - Theano's name
    """Whether every element (along ``axis``) is non-zero (bool)."""
    return cast(tmin(cast(neq(x, 0), "int8"), axis, keepdims), "bool")


class Rebroadcast(XpOp):
    """The same array with another broadcastable pattern (``T.addbroadcast`` / ``T.unbroadcast``).

    Marking an axis broadcastable is a promise that its length is 1; the op checks the promise when it
    runs, so a wrong one stops with the axis and the actual length instead of broadcasting wrongly."""

    __props__ = ("axes",)
    view_map = {0: [0]}
    gpu_name = "GpuRebroadcast"

    def __init__(self, *axes):
        self.axes = tuple(sorted((int(a), bool(b)) for a, b in axes))

    def make_node(self, x):
        x = as_tensor_variable(x)
        bcast = list(x.type.broadcastable)
        for axis, value in self.axes:
            if not 0 <= axis < len(bcast):
                raise ValueError(f"Rebroadcast: axis {axis} does not exist in {x.type}")
            bcast[axis] = value
        return Apply(self, [x], [TensorType(x.type.dtype, tuple(bcast)).make_variable()])

    def run(self, xp, inputs, output_storage):
        (x,) = inputs
        for axis, value in self.axes:
            if value and x.shape[axis] != 1:
                raise ValueError(f"addbroadcast/patternbroadcast: axis {axis} was declared broadcastable (length "
                                 f"1) but has length {x.shape[axis]} (an array of shape {x.shape})")
        output_storage[0][0] = x

    def L_op(self, inputs, outputs, output_grads):
        (x,) = inputs
        back = [(axis, x.type.broadcastable[axis]) for axis, _ in self.axes]
        return [Rebroadcast(*back)(output_grads[0])]


def addbroadcast(x, *axes):
    """``x`` with ``axes`` marked broadcastable (their length must be 1)."""
    x = as_tensor_variable(x)
    return Rebroadcast(*[(a, True) for a in axes])(x) if axes else x


def unbroadcast(x, *axes):
    """``x`` with ``axes`` no longer marked broadcastable."""
    x = as_tensor_variable(x)
    return Rebroadcast(*[(a, False) for a in axes])(x) if axes else x


def patternbroadcast(x, broadcastable):
    """``x`` with exactly this broadcastable pattern."""
    x = as_tensor_variable(x)
    changes = [(i, b) for i, b in enumerate(broadcastable) if x.type.broadcastable[i] != b]
    return Rebroadcast(*changes)(x) if changes else x


def shape_padleft(t, n_ones=1):
    """``t`` with ``n_ones`` broadcastable axes in front."""
    t = as_tensor_variable(t)
    return t.dimshuffle(*(["x"] * n_ones + list(range(t.type.ndim))))


def shape_padright(t, n_ones=1):
    """``t`` with ``n_ones`` broadcastable axes at the end."""
    t = as_tensor_variable(t)
    return t.dimshuffle(*(list(range(t.type.ndim)) + ["x"] * n_ones))


def shape_padaxis(t, axis):
    """``t`` with a broadcastable axis inserted at ``axis`` (negative counts from the end, as NumPy)."""
    t = as_tensor_variable(t)
    ndim = t.type.ndim + 1
    if not -ndim <= axis < ndim:
        raise IndexError(f"shape_padaxis: axis {axis} is out of range for a result of {ndim} dimensions")
    axis %= ndim
    order = list(range(t.type.ndim))
    return t.dimshuffle(*(order[:axis] + ["x"] + order[axis:]))


def squeeze(x, axis=None):
    """``x`` without its broadcastable axes (Theano's ``T.squeeze``: the axes known to have length 1), or
    without the given ``axis`` (an int or a tuple), whose length is checked to be 1 when the function runs."""
    x = as_tensor_variable(x)
    if axis is None:
        return x.dimshuffle(*[i for i, b in enumerate(x.type.broadcastable) if not b])
    axes = {a % x.type.ndim for a in ((axis,) if isinstance(axis, int) else axis)}
    x = addbroadcast(x, *sorted(axes))
    return x.dimshuffle(*[i for i in range(x.type.ndim) if i not in axes])


class Nonzero(XpOp):
    """The indices of the non-zero elements: one int64 vector per axis (``numpy.nonzero``)."""

    gpu_name = "GpuNonzero"

    def make_node(self, x):
        x = as_tensor_variable(x)
        if x.type.ndim == 0:
            raise ValueError("nonzero of a scalar is not defined (as in NumPy 2); make it a vector first")
        return Apply(self, [x], [TensorType("int64", (False,)).make_variable() for _ in range(x.type.ndim)])

    def run(self, xp, inputs, output_storage):
        for storage, idx in zip(output_storage, xp.nonzero(inputs[0])):
            storage[0] = idx.astype("int64", copy=False)

    def L_op(self, inputs, outputs, output_grads):
        return [None]


def nonzero(a, return_matrix=False):
    """Theano's ``nonzero``: a tuple of index vectors (or, with ``return_matrix``, one (ndim, n) matrix)."""
    idx = Nonzero()(a)
    idx = list(idx) if isinstance(idx, (list, tuple)) else [idx]
    if return_matrix:
        return stack(idx)
    return tuple(idx)


def flatnonzero(a):
    """The indices of the non-zero elements of the flattened ``a``."""
    return nonzero(as_tensor_variable(a).flatten())[0]
