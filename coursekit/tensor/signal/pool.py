"""2-d pooling over the last two axes (``pool_2d``): max, sum and two kinds of average, with gradients.

Windows of ``ws`` rows x cols move by ``stride`` (default: ``ws``, no
overlap) over the (zero-padded by ``pad``) input.  With
``ignore_border=False`` (Theano's old default) a partial window at the
bottom/right edge still produces an output; with ``True`` it is dropped.
Averages divide by the window's element count: ``average_inc_pad`` counts
padding, ``average_exc_pad`` only real input elements.  The max's gradient
goes to every element equal to its window's maximum, as in Theano.
"""
from __future__ import annotations

import numpy as np

from ...graph import Apply, Variable
from ..math import zeros_like
from ..type import TensorType, host_like
from ..var import as_tensor_variable
from ..xpop import XpOp

MODES = ("max", "sum", "average_inc_pad", "average_exc_pad")


def _out_len(size, window, stride, pad, ignore_border):
    size = size + 2 * pad
    if ignore_border:
        return max(0, (size - window) // stride + 1)
    if stride >= window:
        return (size - 1) // stride + 1
    return max(0, (size - 1 - window + stride) // stride) + 1


class Pool(XpOp):
    """Pooling of the last two axes of a tensor (any leading axes)."""
    verified_outputs = True

    gpu_name = "GpuPool"
    __props__ = ("ws", "stride", "pad", "ignore_border", "mode")

    def __init__(self, ws, stride, pad, ignore_border, mode):
        self.ws, self.stride, self.pad = tuple(ws), tuple(stride), tuple(pad)
        self.ignore_border, self.mode = bool(ignore_border), mode

    def make_node(self, x):
        x = as_tensor_variable(x)
        if x.type.ndim < 2:
            raise TypeError(f"pool_2d pools the last two axes; got {x.type}")
        return Apply(self, [x], [TensorType(x.type.dtype, x.type.broadcastable[:-2] + (False, False)).make_variable()])

    def geometry(self, shape):
        """(output rows, output cols, padded input with room for partial windows)."""
        rows = _out_len(shape[-2], self.ws[0], self.stride[0], self.pad[0], self.ignore_border)
        cols = _out_len(shape[-1], self.ws[1], self.stride[1], self.pad[1], self.ignore_border)
        need_r = (rows - 1) * self.stride[0] + self.ws[0]
        need_c = (cols - 1) * self.stride[1] + self.ws[1]
        return rows, cols, (need_r, need_c)

    def _padded(self, xp, x, fill):
        rows, cols, (need_r, need_c) = self.geometry(x.shape)
        full = xp.full(x.shape[:-2] + (max(need_r, x.shape[-2] + 2 * self.pad[0]),
                                       max(need_c, x.shape[-1] + 2 * self.pad[1])), fill, dtype=x.dtype)
        full[..., self.pad[0]:self.pad[0] + x.shape[-2], self.pad[1]:self.pad[1] + x.shape[-1]] = x
        return full, rows, cols

    def _counts(self, shape, dtype):
        """How many elements each window averages over."""
        ones = np.ones(shape[-2:], dtype=dtype)
        if self.mode == "average_inc_pad":  # padding counts: pool a padded block of ones without extra padding
            ones = np.pad(ones, ((self.pad[0], self.pad[0]), (self.pad[1], self.pad[1])), constant_values=1)
            return Pool(self.ws, self.stride, (0, 0), self.ignore_border, "sum")._pool(np, ones)
        return Pool(self.ws, self.stride, self.pad, self.ignore_border, "sum")._pool(np, ones)

    def _pool(self, xp, x):
        fill = -np.inf if self.mode == "max" and x.dtype.kind == "f" else (
            np.iinfo(x.dtype).min if self.mode == "max" else 0)
        padded, rows, cols = self._padded(xp, x, fill)
        out = None
        for i in range(self.ws[0]):
            for j in range(self.ws[1]):
                part = padded[..., i:i + self.stride[0] * rows:self.stride[0], j:j + self.stride[1] * cols:self.stride[1]]
                if out is None:
                    out = part.copy()
                elif self.mode == "max":
                    xp.maximum(out, part, out=out)
                else:
                    out += part
        return out

    def run(self, xp, inputs, output_storage):
        x = inputs[0]
        out = self._pool(xp, x)
        if self.mode.startswith("average"):
            out = (out / xp.asarray(self._counts(x.shape, x.dtype))).astype(x.dtype, copy=False)
        output_storage[0][0] = out

    def L_op(self, inputs, outputs, output_grads):
        return [PoolGrad(self)(inputs[0], outputs[0], output_grads[0])]


class PoolGrad(XpOp):
    """The gradient of a pooling, spread back over each window."""
    verified_outputs = True

    gpu_name = "GpuPoolGrad"
    __props__ = ("pool",)

    def __init__(self, pool):
        self.pool = pool

    def make_node(self, x, out, gz):
        return Apply(self, [x, out, gz], [host_like(x)])

    def run(self, xp, inputs, output_storage):
        x, out, gz = inputs
        p = self.pool
        padded, rows, cols = p._padded(xp, x, -np.inf if x.dtype.kind == "f" else 0)
        grad = xp.zeros(padded.shape, dtype=x.dtype)
        if p.mode.startswith("average"):
            gz = gz / xp.asarray(p._counts(x.shape, x.dtype))
        for i in range(p.ws[0]):
            for j in range(p.ws[1]):
                rs = slice(i, i + p.stride[0] * rows, p.stride[0])
                cs = slice(j, j + p.stride[1] * cols, p.stride[1])
                if p.mode == "max":
                    grad[..., rs, cs] += gz * (padded[..., rs, cs] == out)
                else:
                    grad[..., rs, cs] += gz
        output_storage[0][0] = grad[..., p.pad[0]:p.pad[0] + x.shape[-2], p.pad[1]:p.pad[1] + x.shape[-1]].copy()

    def L_op(self, inputs, outputs, output_grads):
        """Linear in ``gz``: an average (or sum) pooling's gradient is that pooling of ``g``; a max pooling's
        picks ``g`` where each window's maximum was.  Almost everywhere ``x`` and ``out`` change nothing."""
        x, out, _ = inputs
        (g,) = output_grads
        gz_grad = MaxPoolGradGrad(self.pool)(x, out, g) if self.pool.mode == "max" else self.pool(g)
        return [zeros_like(x), zeros_like(out), gz_grad]


class MaxPoolGradGrad(XpOp):
    """For each window of a max pooling, ``g`` summed where ``x`` held the window's maximum."""
    verified_outputs = True

    gpu_name = "GpuMaxPoolGradGrad"
    __props__ = ("pool",)

    def __init__(self, pool):
        self.pool = pool

    def make_node(self, x, out, g):
        return Apply(self, [x, out, g], [host_like(out)])

    def run(self, xp, inputs, output_storage):
        x, out, g = inputs
        p = self.pool
        padded, rows, cols = p._padded(xp, x, -np.inf if x.dtype.kind == "f" else 0)
        g_padded = p._padded(xp, g, 0)[0]
        result = xp.zeros(out.shape, dtype=g.dtype)
        for i in range(p.ws[0]):
            for j in range(p.ws[1]):
                rs = slice(i, i + p.stride[0] * rows, p.stride[0])
                cs = slice(j, j + p.stride[1] * cols, p.stride[1])
                result += g_padded[..., rs, cs] * (padded[..., rs, cs] == out)
        output_storage[0][0] = result

    def L_op(self, inputs, outputs, output_grads):
        x, out, _ = inputs
        return [zeros_like(x), zeros_like(out), PoolGrad(self.pool)(x, out, output_grads[0])]


def pool_2d(input, ws=None, ignore_border=None, stride=None, pad=(0, 0), mode="max", ds=None, st=None,
            padding=None):
    """Theano's ``pool_2d``: ``ws`` the window (rows, cols); ``ds``/``st``/``padding`` are its older names."""
    ws = ws if ws is not None else ds
    if ws is None:
        raise TypeError("pool_2d: give the window size ws=(rows, cols)")
    stride = stride if stride is not None else (st if st is not None else ws)
    pad = padding if padding is not None else (pad if pad is not None else (0, 0))
    if any(isinstance(v, Variable) for v in (ws, stride, pad)):
        raise ValueError("pool_2d: symbolic window sizes, strides or padding (a tensor variable) are not supported "
                         "by coursekit; give them as ints (Theano 0.9's pool_2d took only ints as well)")
    if mode == "average":
        mode = "average_inc_pad"
    if mode not in MODES:
        raise ValueError(f"pool_2d: mode={mode!r}; use one of {MODES}")
    if ignore_border is None:
        ignore_border = False  # Theano's old default
    if tuple(pad) != (0, 0) and not ignore_border:
        raise ValueError("pool_2d: padding needs ignore_border=True (as in Theano)")
    if any(p >= w for p, w in zip(pad, ws)):
        raise ValueError(f"pool_2d: pad {tuple(pad)} must be smaller than the window {tuple(ws)}")
    return Pool(tuple(ws), tuple(stride), tuple(pad), ignore_border, mode)(input)


def pool_3d(input, ws=None, ignore_border=None, stride=None, pad=(0, 0, 0), mode="max", ds=None, st=None,
            padding=None):
    """Theano's ``pool_3d`` over the last three axes, as two 2-d poolings.

    Every mode is separable over a box window: the max of a box is the max over depth of the maxima of its
    (rows, cols) slices, and the sums and the element counts the averages divide by are products over the
    axes.  So the (rows, cols) pass pools first, then a pass with window ``(depth, 1)`` pools the depth axis
    (swapped next to the last); gradients and GPU twins are the 2-d pooling's."""
    ws = ws if ws is not None else ds
    if ws is None or len(ws) != 3:
        raise TypeError(f"pool_3d: give the window size ws=(depth, rows, cols), got {ws!r}")
    stride = stride if stride is not None else (st if st is not None else ws)
    pad = padding if padding is not None else (pad if pad is not None else (0, 0, 0))
    if any(isinstance(v, Variable) for v in (*ws, *stride, *pad)):
        raise ValueError("pool_3d: symbolic window sizes, strides or padding are not supported; give ints")
    x = as_tensor_variable(input)
    if x.type.ndim < 3:
        raise TypeError(f"pool_3d pools the last three axes; got {x.type}")
    planes = pool_2d(x, ws[1:], ignore_border, stride[1:], pad[1:], mode)
    lead = list(range(x.type.ndim - 3))
    swapped = planes.dimshuffle(*lead, x.type.ndim - 2, x.type.ndim - 3, x.type.ndim - 1)
    deep = pool_2d(swapped, (ws[0], 1), ignore_border, (stride[0], 1), (pad[0], 0), mode)
    return deep.dimshuffle(*lead, x.type.ndim - 2, x.type.ndim - 3, x.type.ndim - 1)
