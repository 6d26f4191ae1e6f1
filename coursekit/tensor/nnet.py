"""Neural-network helpers (``T.nnet.sigmoid`` and friends, as in Theano)."""
from __future__ import annotations

from ..graph import Apply
from .construct import arange
from .math import exp, log, mean, relu, sigmoid, softplus, sum as tsum  # noqa: F401  (re-exported)
from .type import host_like
from .xpop import XpOp
from .var import as_tensor_variable
from . import conv  # noqa: E402,F401  (Theano's T.nnet.conv.conv2d)
from .conv import conv2d  # noqa: E402,F401


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


def softmax(x):
    return Softmax()(x)


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
    return LogSoftmax()(x)


def relu(x, alpha=0):  # noqa: F811 - Theano's signature (leaky when alpha != 0)
    """max(x, 0), or the leaky ``x if x > 0 else alpha * x`` when ``alpha`` is given."""
    from .math import relu as _relu, switch

    if isinstance(alpha, (int, float)) and alpha == 0:
        return _relu(x)
    x = as_tensor_variable(x)
    return switch(x > 0, x, alpha * x)



def ultra_fast_sigmoid(x):
    return sigmoid(x)
