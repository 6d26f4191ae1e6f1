"""``theano.tensor.nnet.abstract_conv``: Theano's convolution ops by their 0.9+ names.

Theano split a convolution into three "abstract" ops (forward, gradient of the inputs, gradient of the
weights) that its optimizer later replaced by a concrete implementation.  Libraries call the gradient
ops directly: Lasagne's transposed convolution *is* ``AbstractConv2d_gradInputs`` applied to the layer's
input, and its dilated convolution is ``AbstractConv2d_gradWeights``.  Here each one builds the
graph of coursekit's own convolution ops (:mod:`.conv` for 2-d, :mod:`.convnd` for 3-d), so gradients,
second derivatives and GPU twins come with them.
"""
from __future__ import annotations

from ..construct import zeros
from ..var import as_tensor_variable
from . import conv as _conv2d_ops
from . import convnd as _convnd

__all__ = ["conv2d", "conv3d", "AbstractConv2d", "AbstractConv2d_gradInputs", "AbstractConv2d_gradWeights",
           "AbstractConv3d", "AbstractConv3d_gradInputs", "AbstractConv3d_gradWeights", "conv2d_grad_wrt_inputs",
           "conv2d_grad_wrt_weights", "conv3d_grad_wrt_inputs", "conv3d_grad_wrt_weights",
           "get_conv_output_shape", "get_conv_shape_1axis"]

conv2d = _conv2d_ops.conv2d
conv3d = _convnd.conv3d
_OPS = {2: (_conv2d_ops.Conv2d, _conv2d_ops.Conv2dGradInput, _conv2d_ops.Conv2dGradWeights),
        3: (_convnd.Conv3d, _convnd.Conv3dGradInput, _convnd.Conv3dGradWeights)}


def get_conv_shape_1axis(image_shape, kernel_shape, border_mode, subsample, dilation=1):
    """The output length along one axis (``None`` where an input length is unknown)."""
    if image_shape is None or kernel_shape is None:
        return None
    covered = (kernel_shape - 1) * dilation + 1
    pad = {"valid": 0, "full": covered - 1, "half": covered // 2}.get(border_mode, border_mode)
    return (image_shape + 2 * pad - covered) // subsample + 1


def get_conv_output_shape(image_shape, kernel_shape, border_mode, subsample, filter_dilation=None):
    """The shape of ``conv(image, kernel)`` from the two shapes (entries may be ``None``)."""
    n = len(image_shape) - 2
    dilation = filter_dilation or (1,) * n
    modes = border_mode if isinstance(border_mode, tuple) else (border_mode,) * n
    spatial = tuple(get_conv_shape_1axis(image_shape[2 + i], kernel_shape[2 + i], modes[i], subsample[i],
                                         dilation[i]) for i in range(n))
    return (image_shape[0], kernel_shape[0]) + spatial


class _Abstract:
    """The options every abstract op shares; ``n`` is the number of spatial dimensions."""

    n = 2

    def __init__(self, imshp=None, kshp=None, border_mode="valid", subsample=None, filter_flip=True,
                 filter_dilation=None, num_groups=1, unshared=False):
        if num_groups != 1 or unshared:
            raise NotImplementedError(f"{type(self).__name__}: grouped (num_groups={num_groups}) and unshared "
                                      "convolutions are not implemented in coursekit; use num_groups=1")
        self.imshp, self.kshp, self.border_mode = imshp, kshp, border_mode
        self.subsample = _convnd.spatial(subsample or 1, self.n, "subsample")
        self.filter_dilation = _convnd.spatial(filter_dilation or 1, self.n, "filter_dilation")
        self.filter_flip = bool(filter_flip)

    def _params(self, kernel_var, kernel=None):
        kernel = kernel or _convnd.kernel_size(kernel_var, self.kshp, self.n)
        if kernel is None and self.border_mode in ("full", "half"):
            raise ValueError(f"{type(self).__name__}(border_mode={self.border_mode!r}) needs the filter size: "
                             "pass kshp=(n_filters, channels, ...)")
        pad = _convnd.padding(self.border_mode, kernel or (1,) * self.n, self.filter_dilation)
        return pad, self.subsample, self.filter_flip, self.filter_dilation


class AbstractConv2d(_Abstract):
    """``op(img, kern)``: the convolution itself."""

    def __call__(self, img, kern):
        kern = as_tensor_variable(kern)
        return _OPS[self.n][0](*self._params(kern))(img, kern)


class AbstractConv2d_gradInputs(_Abstract):  # noqa: N801 - Theano's name
    """``op(kern, topgrad, shape)``: the gradient of the convolution's input (``shape``: its spatial size),
    which is also the transposed convolution of ``topgrad``."""

    def __call__(self, kern, topgrad, shape):
        kern, topgrad = as_tensor_variable(kern), as_tensor_variable(topgrad)
        like = zeros((topgrad.shape[0], kern.shape[1], *(shape[i] for i in range(self.n))), dtype=topgrad.dtype)
        return _OPS[self.n][1](*self._params(kern))(topgrad, kern, like)


class AbstractConv2d_gradWeights(_Abstract):  # noqa: N801 - Theano's name
    """``op(img, topgrad, shape)``: the gradient of the filters (``shape``: their spatial size)."""

    def __call__(self, img, topgrad, shape):
        img, topgrad = as_tensor_variable(img), as_tensor_variable(topgrad)
        like = zeros((topgrad.shape[1], img.shape[1], *(shape[i] for i in range(self.n))), dtype=topgrad.dtype)
        known = tuple(int(s) for s in shape) if all(isinstance(s, int) for s in shape) else None
        return _OPS[self.n][2](*self._params(like, known))(topgrad, img, like)


class AbstractConv3d(AbstractConv2d):
    n = 3


class AbstractConv3d_gradInputs(AbstractConv2d_gradInputs):  # noqa: N801
    n = 3


class AbstractConv3d_gradWeights(AbstractConv2d_gradWeights):  # noqa: N801
    n = 3


def conv2d_grad_wrt_inputs(output_grad, filters, input_shape, filter_shape=None, border_mode="valid",
                           subsample=(1, 1), filter_flip=True, filter_dilation=(1, 1)):
    """The transposed convolution: the gradient of ``conv2d`` with respect to its input."""
    op = AbstractConv2d_gradInputs(input_shape, filter_shape, border_mode, subsample, filter_flip, filter_dilation)
    return op(filters, output_grad, input_shape[2:])


def conv2d_grad_wrt_weights(input, output_grad, filter_shape, input_shape=None, border_mode="valid",
                            subsample=(1, 1), filter_flip=True, filter_dilation=(1, 1)):
    op = AbstractConv2d_gradWeights(input_shape, filter_shape, border_mode, subsample, filter_flip, filter_dilation)
    return op(input, output_grad, filter_shape[2:])


def conv3d_grad_wrt_inputs(output_grad, filters, input_shape, filter_shape=None, border_mode="valid",
                           subsample=(1, 1, 1), filter_flip=True, filter_dilation=(1, 1, 1)):
    op = AbstractConv3d_gradInputs(input_shape, filter_shape, border_mode, subsample, filter_flip, filter_dilation)
    return op(filters, output_grad, input_shape[2:])


def conv3d_grad_wrt_weights(input, output_grad, filter_shape, input_shape=None, border_mode="valid",
                            subsample=(1, 1, 1), filter_flip=True, filter_dilation=(1, 1, 1)):
    op = AbstractConv3d_gradWeights(input_shape, filter_shape, border_mode, subsample, filter_flip, filter_dilation)
    return op(input, output_grad, filter_shape[2:])
