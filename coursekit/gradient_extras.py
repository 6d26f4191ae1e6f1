"""Theano's gradient helpers beyond ``grad``: clipping and scaling a gradient, cutting one, Jacobians, Hessians.

``grad_clip``, ``grad_scale``, ``zero_grad``/``consider_constant`` and ``disconnected_grad`` are identity ops in the
forward pass (the output is the input, a view) whose ``L_op`` changes what flows back: clipped to
``[lower, upper]``, multiplied, zero, or nothing at all (disconnected).  ``jacobian`` differentiates each
element of an expression in a ``scan`` over its indices, as Theano did; ``hessian`` is the Jacobian of
the gradient.  ``theano.gradient`` under the alias offers these next to :mod:`coursekit.gradient`.
"""
from __future__ import annotations

from .graph import Apply
from .gradient import grad
from .scan_module import scan
from .tensor.construct import arange
from .tensor.math import clip, zeros_like
from .tensor.type import host_like
from .tensor.var import as_tensor_variable
from .tensor.xpop import XpOp


class _GradientGate(XpOp):
    """The identity, forward; subclasses say what the gradient becomes on its way back."""

    view_map = {0: [0]}

    def make_node(self, x):
        x = as_tensor_variable(x)
        return Apply(self, [x], [host_like(x)])

    def run(self, xp, inputs, output_storage):
        output_storage[0][0] = inputs[0]


class GradClip(_GradientGate):
    __props__ = ("lower", "upper")
    gpu_name = "GpuGradClip"

    def __init__(self, lower, upper):
        if lower > upper:
            raise ValueError(f"grad_clip: lower bound {lower} is above the upper bound {upper}")
        self.lower, self.upper = lower, upper

    def L_op(self, inputs, outputs, output_grads):
        return [clip(output_grads[0], self.lower, self.upper)]


class GradScale(_GradientGate):
    __props__ = ("multiplier",)
    gpu_name = "GpuGradScale"

    def __init__(self, multiplier):
        self.multiplier = multiplier

    def L_op(self, inputs, outputs, output_grads):
        return [output_grads[0] * self.multiplier]


class ZeroGrad(_GradientGate):
    gpu_name = "GpuZeroGrad"

    def L_op(self, inputs, outputs, output_grads):
        return [zeros_like(inputs[0])]


class DisconnectedGrad(_GradientGate):
    gpu_name = "GpuDisconnectedGrad"

    def L_op(self, inputs, outputs, output_grads):
        return [None]


def grad_clip(x, lower_bound, upper_bound):
    """``x`` itself, whose gradient is clipped to ``[lower_bound, upper_bound]`` on the way back."""
    return GradClip(lower_bound, upper_bound)(x)


def grad_scale(x, multiplier):
    """``x`` itself, whose gradient is multiplied by ``multiplier`` on the way back."""
    return GradScale(multiplier)(x)


def zero_grad(x):
    """``x`` itself, with a zero gradient (``x`` acts as a constant for ``grad``)."""
    return ZeroGrad()(x)


consider_constant = zero_grad


def disconnected_grad(x):
    """``x`` itself, through which no gradient flows: ``grad`` sees no path from the cost to ``x``'s inputs."""
    return DisconnectedGrad()(x)


def jacobian(expression, wrt, consider_constant=None, disconnected_inputs="raise"):
    """d expression[i] / d wrt for every element i: shape ``expression.shape + wrt.shape`` (a list for a list)."""
    expression = as_tensor_variable(expression)
    single = not isinstance(wrt, (list, tuple))
    wrt = [wrt] if single else list(wrt)
    if expression.type.ndim == 0:
        result = grad(expression, wrt, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs)
        return result[0] if single else result
    flat = expression.flatten()

    def row(i):
        return grad(flat[i], wrt, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs)

    rows, _ = scan(row, sequences=arange(flat.shape[0]))
    rows = rows if isinstance(rows, list) else [rows]
    shaped = [r if expression.type.ndim == 1 else
              r.reshape(tuple(expression.shape[i] for i in range(expression.type.ndim))
                        + tuple(w.shape[i] for i in range(w.type.ndim)))
              for r, w in zip(rows, wrt)]
    return shaped[0] if single else shaped


def hessian(cost, wrt, consider_constant=None, disconnected_inputs="raise"):
    """The matrix of second derivatives of the scalar ``cost`` with respect to each vector in ``wrt``."""
    cost = as_tensor_variable(cost)
    if cost.type.ndim != 0:
        raise TypeError(f"hessian: the cost must be a scalar, got {cost.type}")
    single = not isinstance(wrt, (list, tuple))
    wrt = [wrt] if single else list(wrt)
    result = []
    for w in wrt:
        if w.type.ndim != 1:
            raise TypeError(f"hessian: {w} is {w.type}; Theano's hessian takes vectors (flatten the variable first)")
        g = grad(cost, w, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs)
        result.append(jacobian(g, w, consider_constant=consider_constant, disconnected_inputs=disconnected_inputs))
    return result[0] if single else result
