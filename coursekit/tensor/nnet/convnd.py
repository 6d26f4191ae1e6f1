"""3-d convolution (``T.nnet.conv3d``) and its gradients, as im2col + one GEMM in any number of dimensions.

The same construction as the 2-d :mod:`.conv` (read that first): a strided view of every window, copied
once into a matrix and multiplied by the filters; the input's gradient scatters ``dout @ W`` back
window by window.  Inputs are ``(batch, channels, depth, rows, cols)``, filters ``(n_filters, channels,
depth, rows, cols)``; ``flip`` makes it a true convolution (Theano's ``filter_flip=True``).
"""
from __future__ import annotations

import itertools

import numpy as np

from ...graph import Apply
from ..math import zeros_like
from ..type import TensorType, host_like
from ..var import as_tensor_variable
from ..xpop import XpOp


def spatial(value, n, what):
    """``value`` as an ``n``-tuple of ints (an int means the same in every spatial dimension)."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError(f"conv{n}d: {what} must be an int or {n} ints, got {value!r}")
    return value


def padding(border_mode, kernel, dilation):
    """Zero padding per spatial dimension for Theano's border modes ('valid', 'full', 'half', ints)."""
    covered = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
    if border_mode == "valid":
        return (0,) * len(kernel)
    if border_mode == "full":
        return tuple(c - 1 for c in covered)
    if border_mode == "half":
        return tuple(c // 2 for c in covered)
    if isinstance(border_mode, str):
        raise ValueError(f"conv{len(kernel)}d: border_mode={border_mode!r}; use 'valid', 'full', 'half' or ints")
    return spatial(border_mode, len(kernel), "border_mode")


def _windows(xp, x, kernel, stride, dilation):
    n = len(kernel)
    sizes = [(s - (k - 1) * d - 1) // st + 1 for s, k, d, st in zip(x.shape[2:], kernel, dilation, stride)]
    strides = x.strides
    shape = x.shape[:2] + tuple(max(s, 0) for s in sizes) + tuple(kernel)
    steps = strides[:2] + tuple(strides[2 + i] * stride[i] for i in range(n)) \
        + tuple(strides[2 + i] * dilation[i] for i in range(n))
    return xp.lib.stride_tricks.as_strided(x, shape, steps)


def _flipped(w, flip):
    return w[(slice(None), slice(None)) + (slice(None, None, -1),) * (w.ndim - 2)] if flip else w


def forward(xp, x, w, pad, stride, flip, dilation):
    """(out, cols): the convolution and the im2col matrix it multiplied."""
    n = w.ndim - 2
    if x.ndim != n + 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"conv{n}d: input of shape {x.shape} and filters of shape {w.shape} do not fit: both "
                         f"must be {n + 2}-d with the same channel count on axis 1")
    x = xp.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in pad)) if any(pad) else x
    view = _windows(xp, x, w.shape[2:], stride, dilation)
    b, out_sizes = view.shape[0], view.shape[2:2 + n]
    if min(out_sizes, default=1) <= 0:
        raise ValueError(f"conv{n}d: the filters {w.shape[2:]} (dilation {dilation}) are larger than the padded "
                         f"input {x.shape[2:]}")
    order = (0,) + tuple(range(2, 2 + n)) + (1,) + tuple(range(2 + n, 2 + 2 * n))
    cols = xp.ascontiguousarray(view.transpose(order)).reshape(b * int(np.prod(out_sizes)), -1)
    out = cols @ _flipped(w, flip).reshape(w.shape[0], -1).T
    return out.reshape((b,) + tuple(out_sizes) + (w.shape[0],)).transpose((0, n + 1) + tuple(range(1, n + 1))), cols


def grad_input(xp, gz, w, x_shape, pad, stride, flip, dilation):
    """The input's gradient: each window's share of ``dout @ W`` added back where the window read."""
    n, f = w.ndim - 2, w.shape[0]
    b, out_sizes, kernel = gz.shape[0], gz.shape[2:], w.shape[2:]
    order = (0,) + tuple(range(2, 2 + n)) + (1,)
    dcols = (gz.transpose(order).reshape(-1, f) @ _flipped(w, flip).reshape(f, -1))
    dcols = dcols.reshape((b,) + tuple(out_sizes) + (w.shape[1],) + tuple(kernel))
    padded = xp.zeros((b, w.shape[1]) + tuple(s + 2 * p for s, p in zip(x_shape[2:], pad)), dtype=gz.dtype)
    back = (0, n + 1) + tuple(range(1, n + 1))
    for offset in itertools.product(*(range(k) for k in kernel)):
        target = (slice(None), slice(None)) + tuple(
            slice(o * d, o * d + st * size, st) for o, d, st, size in zip(offset, dilation, stride, out_sizes))
        padded[target] += dcols[(Ellipsis,) + offset].transpose(back)
    inner = (slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(pad, x_shape[2:]))
    return padded[inner]


def grad_weights(xp, gz, x, w_shape, pad, stride, flip, dilation):
    """The filters' gradient: ``dout^T @ cols``."""
    n, f = len(w_shape) - 2, gz.shape[1]
    _, cols = forward(xp, x, xp.zeros((1,) + tuple(w_shape[1:]), dtype=x.dtype), pad, stride, False, dilation)
    gw = (gz.transpose((1, 0) + tuple(range(2, 2 + n))).reshape(f, -1) @ cols).reshape(w_shape)
    return _flipped(gw, flip)


class _ConvNd(XpOp):
    __props__ = ("pad", "stride", "flip", "dilation")

    def __init__(self, pad, stride, flip, dilation):
        self.pad, self.stride, self.flip, self.dilation = tuple(pad), tuple(stride), bool(flip), tuple(dilation)

    @property
    def params(self):
        return self.pad, self.stride, self.flip, self.dilation


class Conv3d(_ConvNd):
    """``conv3d(input, filters)`` forward."""

    gpu_name = "GpuConv3d"

    def make_node(self, x, w):
        x, w = as_tensor_variable(x), as_tensor_variable(w)
        if x.type.ndim != 5 or w.type.ndim != 5:
            raise TypeError(f"conv3d takes a 5-d input (batch, channels, depth, rows, cols) and 5-d filters; "
                            f"got {x.type} and {w.type}")
        dtype = np.result_type(x.type.dtype, w.type.dtype).name
        bcast = (x.type.broadcastable[0], w.type.broadcastable[0], False, False, False)
        return Apply(self, [x, w], [TensorType(dtype, bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        x, w = inputs
        output_storage[0][0] = xp.ascontiguousarray(forward(xp, x, w, *self.params)[0])

    def L_op(self, inputs, outputs, output_grads):
        x, w = inputs
        (gz,) = output_grads
        return [Conv3dGradInput(*self.params)(gz, w, x), Conv3dGradWeights(*self.params)(gz, x, w)]


class Conv3dGradInput(_ConvNd):
    """The input's gradient of a 3-d convolution (``x`` gives only the shape)."""

    gpu_name = "GpuConv3dGradInput"

    def make_node(self, gz, w, x):
        return Apply(self, [gz, w, x], [host_like(x)])

    def run(self, xp, inputs, output_storage):
        gz, w, x = inputs
        output_storage[0][0] = xp.ascontiguousarray(grad_input(xp, gz, w, x.shape, *self.params).astype(x.dtype))

    def L_op(self, inputs, outputs, output_grads):
        gz, w, x = inputs
        (g,) = output_grads
        return [Conv3d(*self.params)(g, w), Conv3dGradWeights(*self.params)(gz, g, w), zeros_like(x)]


class Conv3dGradWeights(_ConvNd):
    """The filters' gradient of a 3-d convolution (``w`` gives only the shape)."""

    gpu_name = "GpuConv3dGradWeights"

    def make_node(self, gz, x, w):
        return Apply(self, [gz, x, w], [host_like(w)])

    def run(self, xp, inputs, output_storage):
        gz, x, w = inputs
        output_storage[0][0] = xp.ascontiguousarray(grad_weights(xp, gz, x, w.shape, *self.params).astype(w.dtype))

    def L_op(self, inputs, outputs, output_grads):
        gz, x, w = inputs
        (g,) = output_grads
        return [Conv3d(*self.params)(x, g), Conv3dGradInput(*self.params)(gz, g, x), zeros_like(w)]


def kernel_size(filters, filter_shape, n):
    """The filters' spatial size, from ``filter_shape`` or a shared/constant value (``None`` if unknown)."""
    if filter_shape is not None and all(s is not None for s in filter_shape[2:]):
        return tuple(int(s) for s in filter_shape[2:])
    if hasattr(filters, "get_value"):
        return filters.get_value(borrow=True).shape[2:]
    if getattr(filters, "data", None) is not None:
        return filters.data.shape[2:]
    return None


def conv3d(input, filters, input_shape=None, filter_shape=None, border_mode="valid", subsample=(1, 1, 1),
           filter_flip=True, filter_dilation=(1, 1, 1)):
    """Theano's ``T.nnet.conv3d``: a batch of volumes convolved with a bank of 3-d filters."""
    filters = as_tensor_variable(filters)
    dilation = spatial(filter_dilation, 3, "filter_dilation")
    kernel = kernel_size(filters, filter_shape, 3)
    if kernel is None and border_mode in ("full", "half"):
        raise ValueError(f"conv3d(border_mode={border_mode!r}) needs the filter size: pass filter_shape")
    pad = padding(border_mode, kernel or (1, 1, 1), dilation)
    return Conv3d(pad, spatial(subsample, 3, "subsample"), filter_flip, dilation)(input, filters)
