"""Theano's other activations (``T.nnet.softsign``, ``hard_sigmoid`` ...), each an elementwise graph.

Written from elementwise ops, so each has its gradient, fuses with its neighbours and runs on a GPU
device like any other elementwise chain.
"""
from __future__ import annotations

from ..math import abs as tabs, clip, exp, sigmoid, softplus, switch
from ..var import as_tensor_variable


def softsign(x):
    """x / (1 + |x|)."""
    x = as_tensor_variable(x)
    return x / (1 + tabs(x))


def hard_sigmoid(x):
    """Theano's piecewise-linear sigmoid: clip(0.2 x + 0.5, 0, 1)."""
    x = as_tensor_variable(x)
    return clip(x * 0.2 + 0.5, 0, 1)


def ultra_fast_sigmoid(x):
    """Theano's fast approximation of the sigmoid; here the exact sigmoid (the porting report says so)."""
    return sigmoid(x)


def elu(x, alpha=1):
    """x for x > 0, alpha (exp(x) - 1) otherwise."""
    x = as_tensor_variable(x)
    return switch(x > 0, x, alpha * (exp(x) - 1))


def selu(x):
    """Scaled ELU with the self-normalising constants (Klambauer et al., 2017)."""
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def sigmoid_binary_crossentropy(output, target):
    """Binary cross-entropy of sigmoid(output) against target, from the logits (no log(0))."""
    output, target = as_tensor_variable(output), as_tensor_variable(target)
    return target * softplus(-output) + (1 - target) * softplus(output)


__all__ = ["softsign", "hard_sigmoid", "ultra_fast_sigmoid", "elu", "selu", "sigmoid_binary_crossentropy"]
