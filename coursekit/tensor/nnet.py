"""Neural-network helpers (``T.nnet.sigmoid`` and friends, as in Theano)."""
from __future__ import annotations

import numpy as np

from ..graph import Apply, Op
from .math import log, mean, relu, sigmoid, softplus, sum as tsum  # noqa: F401  (re-exported)
from .var import as_tensor_variable


class Softmax(Op):
    """Softmax over the last axis, computed stably (subtract the max first)."""

    def make_node(self, x):
        x = as_tensor_variable(x)
        if x.type.ndim not in (1, 2):
            raise TypeError(f"softmax takes a vector or a matrix, got {x.type}")
        return Apply(self, [x], [x.type.make_variable()])

    def perform(self, node, inputs, output_storage):
        x = inputs[0]
        e = np.exp(x - x.max(axis=-1, keepdims=True))
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
    """-sum(true * log(coding), axis=-1) for one-hot (or soft) targets."""
    return -tsum(true_dist * log(coding_dist), axis=-1)


def ultra_fast_sigmoid(x):
    return sigmoid(x)
