"""Neural-network helpers (``T.nnet.sigmoid`` and friends, as in Theano).

A package, as Theano's was, so that ``import theano.tensor.nnet.conv`` and ``from theano.tensor.nnet import
abstract_conv, conv3d2d, neighbours, bn`` find their modules.  ``softmax`` of a vector returns a (1, n) row,
as Theano's did (programs index ``p[0]`` or take ``argmax(p, axis=1)``); ``T.softmax`` keeps the vector.
"""
from __future__ import annotations

import numpy as np

from ...graph import Apply, Variable
from ..construct import arange
from ..math import exp, log, mean, relu, sigmoid, softplus, sum as tsum  # noqa: F401  (re-exported)
from ..type import host_like
from ..xpop import XpOp
from ..var import as_tensor_variable
from . import conv  # noqa: E402,F401  (Theano's T.nnet.conv.conv2d)
from .conv import conv2d  # noqa: E402,F401
from . import abstract_conv, bn, conv3d2d, neighbours  # noqa: E402,F401
from .activations import (elu, hard_sigmoid, selu, sigmoid_binary_crossentropy, softsign,  # noqa: E402,F401
                          ultra_fast_sigmoid)
from .convnd import conv3d  # noqa: E402,F401
from .neighbours import images2neibs, neibs2images  # noqa: E402,F401


class Softmax(XpOp):
    """Softmax over the last axis, computed stably (subtract the max first).

    Written against ``xp`` with a GPU twin (``GpuSoftmax``), as Theano had: a classifier's output layer
    on a GPU device otherwise leaves the device, and its training step pays a download and an upload
    of the whole score matrix on every call.
    """
    verified_outputs = True

    gpu_name = "GpuSoftmax"

    def make_node(self, x):
        x = as_tensor_variable(x)
        if x.type.ndim not in (1, 2):
            raise TypeError(f"softmax takes a vector or a matrix, got {x.type}")
        return Apply(self, [x], [host_like(x)])

    def run(self, xp, inputs, output_storage):
        x = inputs[0]
        e = xp.exp(x - x.max(axis=-1, keepdims=True))
        e /= e.sum(axis=-1, keepdims=True)
        output_storage[0][0] = e

    def L_op(self, inputs, outputs, output_grads):
        (sm,), (gz,) = outputs, output_grads
        return [(gz - tsum(gz * sm, axis=-1, keepdims=True)) * sm]


def softmax(x, axis=-1):
    """Theano's ``T.nnet.softmax``: over the last axis; a vector gives a (1, n) row, as in Theano."""
    x = as_tensor_variable(x)
    if axis not in (-1, x.type.ndim - 1):
        raise ValueError(f"softmax(axis={axis}): only the last axis is supported; transpose first")
    return Softmax()(x.dimshuffle("x", 0) if x.type.ndim == 1 else x)


def binary_crossentropy(output, target):
    """-target*log(output) - (1-target)*log(1-output), elementwise."""
    return -(target * log(output) + (1 - target) * log(1 - output))


def categorical_crossentropy(coding_dist, true_dist):
    """-sum(true * log(coding), axis=-1) for one-hot (or soft) targets; for an integer vector of class
    indices (as in Theano) ``-log(coding_dist[arange(n), true_dist])``."""
    true_dist = as_tensor_variable(true_dist)
    if true_dist.type.dtype[0] in "iu":
        coding_dist = as_tensor_variable(coding_dist)
        if true_dist.type.ndim != 1 or coding_dist.type.ndim != 2:
            raise TypeError(f"categorical_crossentropy: integer targets must be a vector of class indices for a "
                            f"matrix of probabilities; got {true_dist.type} and {coding_dist.type}")
        return -log(coding_dist[arange(true_dist.shape[0]), true_dist])
    return -tsum(true_dist * log(coding_dist), axis=-1)


class LogSoftmax(XpOp):
    """log(softmax(x)) over the last axis, computed as x - max - log(sum(exp(x - max))): no log(0)."""
    verified_outputs = True

    gpu_name = "GpuLogSoftmax"

    def make_node(self, x):
        x = as_tensor_variable(x)
        if x.type.ndim not in (1, 2):
            raise TypeError(f"log_softmax takes a vector or a matrix, got {x.type}")
        return Apply(self, [x], [host_like(x)])

    def run(self, xp, inputs, output_storage):
        x = inputs[0]
        shifted = x - x.max(axis=-1, keepdims=True)
        output_storage[0][0] = shifted - xp.log(xp.exp(shifted).sum(axis=-1, keepdims=True))

    def L_op(self, inputs, outputs, output_grads):
        (out,), (gz,) = outputs, output_grads
        return [gz - tsum(gz, axis=-1, keepdims=True) * exp(out)]


def log_softmax(x):
    """log(softmax(x)), stably; a vector gives a (1, n) row, as Theano's ``logsoftmax`` did."""
    x = as_tensor_variable(x)
    return LogSoftmax()(x.dimshuffle("x", 0) if x.type.ndim == 1 else x)


logsoftmax = log_softmax


def relu(x, alpha=0):  # noqa: F811 - Theano's signature (leaky when alpha != 0)
    """max(x, 0), or the leaky ``x if x > 0 else alpha * x`` when ``alpha`` is given.

    A NumPy array (or number) in, a NumPy array out, as Theano's formula-based relu gave (programs and
    Lasagne's tests compute reference values with it)."""
    from ..math import relu as _relu, switch

    if not isinstance(x, Variable) and not isinstance(alpha, Variable):
        x = np.asarray(x)
        if alpha == 0:
            return np.maximum(x, 0)
        return np.where(x > 0, x, x * np.asarray(alpha, dtype=x.dtype) if x.dtype.kind == "f" else alpha * x)
    if isinstance(alpha, (int, float)) and alpha == 0:
        return _relu(x)
    x = as_tensor_variable(x)
    return switch(x > 0, x, alpha * x)

