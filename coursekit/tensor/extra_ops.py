"""More of Theano's tensor surface: ``round``, ``xor``, ``tile``, ``repeat``, ``join``/``stack``,
``flatten(outdim=)``, ``tensordot``, ``batched_dot`` and ``dot`` of any ranks.

Where an operation can be written with existing ops (``tensordot`` is a
transpose, a reshape and one ``dot``), it is: it then gets GEMM, GPU
placement and gradients for free.  ``tile``, ``repeat`` and ``batched_dot``
are ops of their own, with NumPy implementations and explicit gradients.
"""
from __future__ import annotations

import numpy as np

from ..graph import Apply, Constant
from ..scalar.ops import ScalarOp, register, zero_grads
from . import math as M
from .elemwise import Elemwise, reduce_to_broadcast
from .type import TensorType, host_like
from .var import as_tensor_variable, weak_constants
from .xpop import XpOp, add_at


# -------------------------------------------------------------- elementwise
def _round_half_away(x, out=None):
    """Round to nearest, halves away from zero (C's ``round``; Theano's default)."""
    result = np.floor(np.abs(x) + 0.5) * np.sign(x)
    if out is not None:
        out[...] = result
        return out
    return result


def _round_half_even(x, out=None):
    return np.round(x, out=out) if out is not None else np.round(x)


ROUND_HALF_AWAY = Elemwise(register(ScalarOp("round_half_away_from_zero", 1, _round_half_away, zero_grads,
                                             "round({0})")))
ROUND_HALF_EVEN = Elemwise(register(ScalarOp("round_half_to_even", 1, _round_half_even, zero_grads, "rint({0})")))
XOR = Elemwise(register(ScalarOp("xor", 2, np.bitwise_xor, zero_grads, "({0} ^ {1})")))


def round(a, mode=None):  # noqa: A001 - Theano's name
    """Round to the nearest integer; ``mode='half_away_from_zero'`` (default, as Theano) or ``'half_to_even'``."""
    mode = mode or "half_away_from_zero"
    if mode == "half_away_from_zero":
        return ROUND_HALF_AWAY(as_tensor_variable(a))
    if mode == "half_to_even":
        return ROUND_HALF_EVEN(as_tensor_variable(a))
    raise ValueError(f"round: mode={mode!r}; use 'half_away_from_zero' or 'half_to_even'")


def xor(a, b):
    """Elementwise exclusive or (bitwise on integers, logical on booleans)."""
    return XOR(*weak_constants([a, b], XOR.scalar_op))


bitwise_xor = xor


# --------------------------------------------------------------- tile, repeat
def _constant_ints(value, what):
    if isinstance(value, Constant):
        value = value.data
    if hasattr(value, "type"):
        raise TypeError(f"{what} must be known when the graph is built (Python ints); got the symbolic {value}")
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers, got {value!r}")
    return tuple(int(v) for v in arr.reshape(-1))


class Tile(XpOp):
    """``numpy.tile`` with constant repetitions."""
    verified_outputs = True

    __props__ = ("reps",)
    gpu_name = "GpuTile"

    def __init__(self, reps):
        self.reps = tuple(reps)

    def make_node(self, x):
        x = as_tensor_variable(x)
        ndim = max(x.type.ndim, len(self.reps))
        bcast = (True,) * (ndim - x.type.ndim) + x.type.broadcastable
        reps = (1,) * (ndim - len(self.reps)) + self.reps
        return Apply(self, [x], [TensorType(x.type.dtype, tuple(b and r == 1 for b, r in zip(bcast, reps)))
                                 .make_variable()])

    def run(self, xp, inputs, output_storage):
        output_storage[0][0] = xp.tile(inputs[0], self.reps)

    def L_op(self, inputs, outputs, output_grads):
        return [reduce_to_broadcast(TileGrad(self.reps)(inputs[0], output_grads[0]), inputs[0])]


class TileGrad(XpOp):
    """Sum the tiles of ``gz`` back onto one copy of ``x``'s shape."""
    verified_outputs = True

    __props__ = ("reps",)
    gpu_name = "GpuTileGrad"

    def __init__(self, reps):
        self.reps = tuple(reps)

    def make_node(self, x, gz):
        return Apply(self, [x, gz], [TensorType(gz.type.dtype, x.type.broadcastable).make_variable()])

    def run(self, xp, inputs, output_storage):
        x, gz = inputs
        ndim = gz.ndim
        shape = (1,) * (ndim - x.ndim) + x.shape
        reps = (1,) * (ndim - len(self.reps)) + self.reps
        split = [v for pair in zip(reps, shape) for v in pair]
        summed = gz.reshape(split).sum(axis=tuple(range(0, 2 * ndim, 2)))
        output_storage[0][0] = summed.reshape(x.shape).astype(gz.dtype, copy=False)

    def L_op(self, inputs, outputs, output_grads):
        """Summing the tiles is linear in ``gz``: its gradient tiles ``g`` again (``x`` gives only the shape)."""
        x, _ = inputs
        return [M.zeros_like(x), Tile(self.reps)(output_grads[0])]


def tile(x, reps, ndim=None):
    """``x`` repeated ``reps`` times along each axis (as ``numpy.tile``)."""
    reps = _constant_ints(reps, "tile: reps")
    if ndim is not None and ndim < len(reps):
        raise ValueError(f"tile: ndim={ndim} is smaller than len(reps)={len(reps)}")
    if ndim is not None:
        reps = (1,) * (ndim - len(reps)) + reps
    return Tile(reps)(x)


class Repeat(XpOp):
    """``numpy.repeat(x, repeats, axis)``; ``repeats`` is an int scalar or int vector input."""
    verified_outputs = True

    __props__ = ("axis",)
    gpu_name = "GpuRepeat"
    host_inputs = (1,)  # the counts: CuPy's repeat takes them as Python ints

    def __init__(self, axis):
        self.axis = axis

    def make_node(self, x, repeats):
        if repeats.type.dtype[0] not in "iu" or repeats.type.ndim > 1:
            raise TypeError(f"repeat: repeats must be an int or an int vector, got {repeats.type}")
        if self.axis is None:
            bcast = (False,)
        else:
            bcast = tuple(False if i == self.axis else b for i, b in enumerate(x.type.broadcastable))
        return Apply(self, [x, repeats], [TensorType(x.type.dtype, bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        x, repeats = inputs
        try:
            output_storage[0][0] = xp.repeat(x, _counts(xp, repeats), axis=self.axis)
        except ValueError as exc:
            raise ValueError(f"repeat: {exc} (x has shape {x.shape}, repeats {np.shape(repeats)})") from None

    def L_op(self, inputs, outputs, output_grads):
        x, repeats = inputs
        return [RepeatGrad(self.axis)(x, output_grads[0], repeats), None]


class RepeatGrad(XpOp):
    """Add up the copies that ``repeat`` made of each element."""
    verified_outputs = True

    __props__ = ("axis",)
    gpu_name = "GpuRepeatGrad"
    host_inputs = (2,)

    def __init__(self, axis):
        self.axis = axis

    def make_node(self, x, gz, repeats):
        return Apply(self, [x, gz, repeats], [host_like(x)])

    def run(self, xp, inputs, output_storage):
        x, gz, repeats = inputs
        axis = 0 if self.axis is None else self.axis
        n = x.size if self.axis is None else x.shape[axis]
        owner = xp.repeat(xp.arange(n), _counts(xp, repeats))  # the element each entry of gz is a copy of
        moved = gz if self.axis is None else xp.moveaxis(gz, axis, 0)
        out = xp.zeros((n,) + (() if self.axis is None else moved.shape[1:]), dtype=x.dtype)
        add_at(xp, out, owner, moved)
        output_storage[0][0] = out.reshape(x.shape) if self.axis is None else xp.moveaxis(out, 0, axis)

    def L_op(self, inputs, outputs, output_grads):
        """Adding up the copies is linear in ``gz``: its gradient repeats ``g`` again."""
        x, _, repeats = inputs
        return [M.zeros_like(x), Repeat(self.axis)(output_grads[0], repeats), None]


def _counts(xp, repeats):
    """``repeat``'s counts as ``xp.repeat`` takes them: NumPy takes arrays, CuPy a Python int or list."""
    return repeats if xp is np else (repeats.tolist() if repeats.ndim else int(repeats))


def repeat(x, repeats, axis=None):
    """Repeat each element ``repeats`` times (as ``numpy.repeat``; ``axis=None`` flattens first)."""
    x = as_tensor_variable(x)
    if axis is not None:
        if not -x.type.ndim <= axis < x.type.ndim:
            raise ValueError(f"repeat: axis {axis} is out of range for {x.type}")
        axis = int(axis) % x.type.ndim
    return Repeat(axis)(x, M.cast(as_tensor_variable(repeats), "int64"))


# ------------------------------------------------------------ join and stack
def join(axis, *tensors):
    """Concatenate ``tensors`` along ``axis`` (Theano's argument order: the axis first)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise ValueError("join: give at least one tensor")
    return M.concatenate(list(tensors), axis=axis)


def stack(*tensors, axis=0):
    """Stack tensors along a new axis: ``T.stack([a, b])``, or Theano's older ``T.stack(a, b)``."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise ValueError("stack: give at least one tensor")
    ndim = max(as_tensor_variable(t).type.ndim for t in tensors)
    if not -ndim - 1 <= axis <= ndim:
        raise ValueError(f"stack: axis {axis} is out of range for {ndim}-d tensors")
    return M.stack(list(tensors), axis=axis % (ndim + 1))


def flatten(x, ndim=None, outdim=None):
    """Keep the first ``ndim - 1`` axes and merge the rest into one (``outdim``: Theano's old name)."""
    ndim = ndim if ndim is not None else (outdim if outdim is not None else 1)
    x = as_tensor_variable(x)
    if not 1 <= ndim <= max(x.type.ndim, 1):
        raise ValueError(f"flatten: ndim={ndim} must be between 1 and {x.type.ndim} for {x.type}")
    return M.flatten(x, ndim)


# ----------------------------------------------------------------- products
def tensordot(a, b, axes=2):
    """Sum products over the given axes (as ``numpy.tensordot``), built from one ``dot``."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if isinstance(axes, (int, np.integer)):
        a_axes, b_axes = list(range(a.type.ndim - axes, a.type.ndim)), list(range(int(axes)))
    else:
        a_axes, b_axes = ([ax] if isinstance(ax, (int, np.integer)) else list(ax) for ax in axes)
    if len(a_axes) != len(b_axes):
        raise ValueError(f"tensordot: {len(a_axes)} axes of a but {len(b_axes)} axes of b; they are summed in pairs")
    a_axes = [ax % a.type.ndim for ax in a_axes]
    b_axes = [ax % b.type.ndim for ax in b_axes]
    a_free = [i for i in range(a.type.ndim) if i not in a_axes]
    b_free = [i for i in range(b.type.ndim) if i not in b_axes]
    a_t = a.transpose(*(a_free + a_axes)) if a.type.ndim else a
    b_t = b.transpose(*(b_axes + b_free)) if b.type.ndim else b
    a_free_shape = [a.shape[i] for i in a_free]
    b_free_shape = [b.shape[i] for i in b_free]
    summed = M.prod(M.stack([a.shape[i] for i in a_axes])) if a_axes else 1
    a2 = M.reshape(a_t, [M.prod(M.stack(a_free_shape)) if a_free else 1, summed])
    b2 = M.reshape(b_t, [summed, M.prod(M.stack(b_free_shape)) if b_free else 1])
    out = M.dot(a2, b2)
    if not a_free and not b_free:
        return M.reshape(out, ())
    return M.reshape(out, a_free_shape + b_free_shape)


def nd_dot(a, b):
    """Theano's ``dot`` for ranks above 2: sum over the last axis of ``a`` and the
    second-to-last of ``b`` (the last, if ``b`` is a vector), as ``numpy.dot``."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    return tensordot(a, b, [[a.type.ndim - 1], [max(0, b.type.ndim - 2)]])


class BatchedDot(XpOp):
    """``matmul`` of stacks of matrices: (B, n, m) x (B, m, p) -> (B, n, p)."""
    verified_outputs = True

    gpu_name = "GpuBatchedDot"

    def make_node(self, x, y):
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        if x.type.ndim != 3 or y.type.ndim != 3:
            raise TypeError(f"BatchedDot takes two 3-d tensors, got {x.type} and {y.type}")
        dtype = np.result_type(x.type.dtype, y.type.dtype).name
        bcast = (x.type.broadcastable[0] and y.type.broadcastable[0], x.type.broadcastable[1], y.type.broadcastable[2])
        return Apply(self, [x, y], [TensorType(dtype, bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        x, y = inputs
        if x.shape[0] != y.shape[0] or x.shape[2] != y.shape[1]:
            raise ValueError(f"batched_dot: shapes {x.shape} and {y.shape} do not match "
                             "(need (B, n, m) and (B, m, p))")
        output_storage[0][0] = xp.matmul(x, y)

    def L_op(self, inputs, outputs, output_grads):
        x, y = inputs
        (gz,) = output_grads
        return [reduce_to_broadcast(BatchedDot()(gz, y.dimshuffle(0, 2, 1)), x),
                reduce_to_broadcast(BatchedDot()(x.dimshuffle(0, 2, 1), gz), y)]


def batched_dot(a, b):
    """One ``dot`` per leading index: ``batched_dot(a, b)[i] == dot(a[i], b[i])``."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if a.type.ndim not in (2, 3) or b.type.ndim not in (2, 3):
        raise TypeError(f"batched_dot takes 2-d or 3-d tensors (a batch of vectors or matrices), got "
                        f"{a.type} and {b.type}")
    a3 = a.dimshuffle(0, "x", 1) if a.type.ndim == 2 else a
    b3 = b.dimshuffle(0, 1, "x") if b.type.ndim == 2 else b
    out = BatchedDot()(a3, b3)
    if a.type.ndim == 2 and b.type.ndim == 2:
        return out.dimshuffle(0)
    if a.type.ndim == 2:
        return out.dimshuffle(0, 2)
    if b.type.ndim == 2:
        return out.dimshuffle(0, 1)
    return out


# Theano's other extra_ops names, kept in their own modules
from .cumulative import CumOp, cumprod, cumsum, to_one_hot  # noqa: E402,F401
from .more_ops import squeeze  # noqa: E402,F401
