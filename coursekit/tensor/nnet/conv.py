"""2-d convolution for conv nets (``T.nnet.conv2d``), as im2col + one GEMM.

The forward pass gathers every (channel, kh, kw) window of the (padded)
input into the rows of a matrix ("im2col": a strided *view*, copied once
into a contiguous matrix) and multiplies it by the filters reshaped to a
matrix: one big GEMM, which is what both a CPU BLAS and a GPU are good at.
The gradients are GEMMs too: the weights' gradient is ``dout^T @ cols``,
the input's is ``dout @ W`` scattered back window by window ("col2im").

Conventions are Theano's: input ``(batch, channels, rows, cols)``, filters
``(n_filters, channels, rows, cols)``; ``filter_flip=True`` (the default)
is a true convolution (the kernel is flipped), ``False`` a correlation;
``border_mode`` is ``'valid'``, ``'full'``, ``'half'``, an int or a pair of
ints (zero padding); ``subsample`` is the stride; ``filter_dilation`` spreads
the filter's taps apart (a 3x3 filter dilated by 2 covers 5x5 pixels, every
other one).  The helpers take ``xp`` (NumPy or CuPy), so the same code serves
both devices.

The two gradient ops are linear in the output gradient and in the filters
(or the input), and their own gradients are again these three ops, so a
second derivative (a Hessian-vector product, a gradient penalty) costs three
more GEMMs, not a new kind of op.
"""
from __future__ import annotations

import numpy as np

from ...graph import Apply
from ..math import zeros_like
from ..type import TensorType, host_like
from ..var import as_tensor_variable
from ..xpop import XpOp


def _pair(value, what):
    if isinstance(value, (int, np.integer)):
        return (int(value), int(value))
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise ValueError(f"conv2d: {what} must be an int or a pair of ints, got {value!r}")
    return value


def _padding(border_mode, kernel, dilation=(1, 1)):
    kernel = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilation))  # the pixels a dilated filter covers
    if border_mode == "valid":
        return (0, 0)
    if border_mode == "full":
        return (kernel[0] - 1, kernel[1] - 1)
    if border_mode == "half":
        return (kernel[0] // 2, kernel[1] // 2)
    if isinstance(border_mode, str):
        raise ValueError(f"conv2d: border_mode={border_mode!r}; use 'valid', 'full', 'half', an int or (rows, cols)")
    return _pair(border_mode, "border_mode")


def windows(xp, x, kernel, stride, dilation=(1, 1)):
    """A strided view (B, C, Ho, Wo, kh, kw) of every window of the 4-d array ``x``."""
    b, c, h, w = x.shape
    kh, kw = kernel
    (sh, sw), (dh, dw) = stride, dilation
    ho, wo = (h - (kh - 1) * dh - 1) // sh + 1, (w - (kw - 1) * dw - 1) // sw + 1
    s = x.strides
    return xp.lib.stride_tricks.as_strided(x, (b, c, max(ho, 0), max(wo, 0), kh, kw),
                                           (s[0], s[1], s[2] * sh, s[3] * sw, s[2] * dh, s[3] * dw))


def _pad(xp, x, pad):
    if pad == (0, 0):
        return x
    return xp.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))


def _check(x, w, what):
    if x.ndim != 4 or w.ndim != 4:
        raise ValueError(f"{what}: input and filters must be 4-d, got shapes {x.shape} and {w.shape}")
    if x.shape[1] != w.shape[1]:
        raise ValueError(f"{what}: the input has {x.shape[1]} channels (shape {x.shape}, axis 1) but the filters "
                         f"expect {w.shape[1]} (shape {w.shape}, axis 1); the channel counts must match")


def conv_forward(xp, x, w, pad, stride, flip, dilation=(1, 1)):
    """(out, cols) for input x and filters w (cols is kept for the weights' gradient)."""
    kh, kw = w.shape[2:]
    view = windows(xp, _pad(xp, x, pad), (kh, kw), stride, dilation)
    b, c, ho, wo = view.shape[:4]
    if ho <= 0 or wo <= 0:
        raise ValueError(f"conv2d: the filters ({kh}x{kw}, dilation {tuple(dilation)}) are larger than the padded "
                         f"input {x.shape[2:]} (padding {tuple(pad)})")
    cols = xp.ascontiguousarray(view.transpose(0, 2, 3, 1, 4, 5)).reshape(b * ho * wo, c * kh * kw)
    wmat = (w[:, :, ::-1, ::-1] if flip else w).reshape(w.shape[0], -1)
    out = cols @ wmat.T  # the GEMM
    return out.reshape(b, ho, wo, w.shape[0]).transpose(0, 3, 1, 2), cols


def conv_grad_input(xp, gz, w, x_shape, pad, stride, flip, dilation=(1, 1)):
    """col2im: the gradient of the input, window by window."""
    b, f, ho, wo = gz.shape
    c, kh, kw = w.shape[1:]
    wmat = (w[:, :, ::-1, ::-1] if flip else w).reshape(f, -1)
    dcols = (gz.transpose(0, 2, 3, 1).reshape(-1, f) @ wmat).reshape(b, ho, wo, c, kh, kw)
    padded = xp.zeros((b, c, x_shape[2] + 2 * pad[0], x_shape[3] + 2 * pad[1]), dtype=gz.dtype)
    (sh, sw), (dh, dw) = stride, dilation
    for i in range(kh):
        for j in range(kw):
            r, c0 = i * dh, j * dw
            padded[:, :, r:r + sh * ho:sh, c0:c0 + sw * wo:sw] += dcols[:, :, :, :, i, j].transpose(0, 3, 1, 2)
    return padded[:, :, pad[0]:pad[0] + x_shape[2], pad[1]:pad[1] + x_shape[3]]


def conv_grad_weights(xp, gz, x, w_shape, pad, stride, flip, dilation=(1, 1)):
    """dout^T @ cols: the gradient of the filters."""
    f = gz.shape[1]
    _, cols = conv_forward(xp, x, xp.zeros((1,) + tuple(w_shape[1:]), dtype=x.dtype), pad, stride, False, dilation)
    gw = (gz.transpose(1, 0, 2, 3).reshape(f, -1) @ cols).reshape(w_shape)
    return gw[:, :, ::-1, ::-1] if flip else gw


class _ConvBase(XpOp):
    verified_outputs = True
    __props__ = ("pad", "stride", "flip", "dilation")

    def __init__(self, pad, stride, flip, dilation=(1, 1)):
        self.pad, self.stride, self.flip, self.dilation = tuple(pad), tuple(stride), bool(flip), tuple(dilation)

    @property
    def params(self):
        """What every op of one convolution shares: padding, stride, flip, dilation."""
        return self.pad, self.stride, self.flip, self.dilation


class Conv2d(_ConvBase):
    """``conv2d(input, filters)`` forward (im2col + GEMM)."""
    verified_outputs = True

    gpu_name = "GpuConv2d"

    def make_node(self, x, w):
        x, w = as_tensor_variable(x), as_tensor_variable(w)
        if x.type.ndim != 4 or w.type.ndim != 4:
            raise TypeError(f"conv2d takes a 4-d input (batch, channels, rows, cols) and 4-d filters (n_filters, "
                            f"channels, rows, cols); got {x.type} and {w.type}")
        dtype = np.result_type(x.type.dtype, w.type.dtype).name
        bcast = (x.type.broadcastable[0], w.type.broadcastable[0], False, False)
        return Apply(self, [x, w], [TensorType(dtype, bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        x, w = inputs
        _check(x, w, "conv2d")
        output_storage[0][0] = xp.ascontiguousarray(conv_forward(xp, x, w, *self.params)[0])

    def L_op(self, inputs, outputs, output_grads):
        x, w = inputs
        (gz,) = output_grads
        return [Conv2dGradInput(*self.params)(gz, w, x), Conv2dGradWeights(*self.params)(gz, x, w)]


class Conv2dGradInput(_ConvBase):
    """The input's gradient of a convolution (col2im of ``dout @ W``)."""
    verified_outputs = True

    gpu_name = "GpuConv2dGradInput"

    def make_node(self, gz, w, x):
        return Apply(self, [gz, w, x], [host_like(x)])

    def run(self, xp, inputs, output_storage):
        gz, w, x = inputs
        output_storage[0][0] = xp.ascontiguousarray(conv_grad_input(xp, gz, w, x.shape, *self.params)
                                                    .astype(x.dtype, copy=False))

    def L_op(self, inputs, outputs, output_grads):
        """``gx = A_w^T gz`` (A_w: the convolution by ``w``), so d<gx, G>/d gz = A_w G and d/dw is the
        filters' gradient at input G; ``x`` gives only the shape."""
        gz, w, x = inputs
        (g,) = output_grads
        return [Conv2d(*self.params)(g, w), Conv2dGradWeights(*self.params)(gz, g, w), zeros_like(x)]


class Conv2dGradWeights(_ConvBase):
    """The filters' gradient of a convolution (``dout^T @ cols``)."""
    verified_outputs = True

    gpu_name = "GpuConv2dGradWeights"

    def make_node(self, gz, x, w):
        return Apply(self, [gz, x, w], [host_like(w)])

    def run(self, xp, inputs, output_storage):
        gz, x, w = inputs
        output_storage[0][0] = xp.ascontiguousarray(conv_grad_weights(xp, gz, x, w.shape, *self.params)
                                                    .astype(w.dtype, copy=False))

    def L_op(self, inputs, outputs, output_grads):
        """<gw, G> = <gz, conv(x, G)>: d/d gz is the convolution of x by G, d/dx the input's gradient by G;
        ``w`` gives only the shape."""
        gz, x, w = inputs
        (g,) = output_grads
        return [Conv2d(*self.params)(x, g), Conv2dGradInput(*self.params)(gz, g, x), zeros_like(w)]


def conv2d(input, filters, input_shape=None, filter_shape=None, border_mode="valid", subsample=(1, 1),
           filter_flip=True, image_shape=None, filter_dilation=(1, 1), **kwargs):
    """Theano's ``T.nnet.conv2d``: a batch of images convolved with a bank of filters."""
    dilation = _pair(filter_dilation, "filter_dilation")
    if min(dilation) < 1:
        raise ValueError(f"conv2d: filter_dilation {dilation} must be at least 1 in both directions")
    input_shape = input_shape or image_shape
    if input_shape is not None and filter_shape is not None and input_shape[1] is not None \
            and filter_shape[1] is not None and input_shape[1] != filter_shape[1]:
        raise ValueError(f"conv2d: input_shape {tuple(input_shape)} has {input_shape[1]} channels but filter_shape "
                         f"{tuple(filter_shape)} expects {filter_shape[1]}; the channel counts (axis 1) must match")
    filters = as_tensor_variable(filters)
    if filter_shape is not None:
        kernel = tuple(filter_shape[2:])
    elif hasattr(filters, "get_value"):
        kernel = filters.get_value(borrow=True).shape[2:]
    elif getattr(filters, "data", None) is not None:
        kernel = filters.data.shape[2:]
    else:
        kernel = None
    if kernel is None and border_mode in ("full", "half"):
        raise ValueError(f"conv2d(border_mode={border_mode!r}) needs the filter size: pass filter_shape=(n_filters, "
                         "channels, rows, cols)")
    pad = _padding(border_mode, kernel if kernel is not None else (1, 1), dilation)
    return Conv2d(pad, _pair(subsample, "subsample"), filter_flip, dilation)(input, filters)
