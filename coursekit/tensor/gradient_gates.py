"""Identity ops whose gradient is not the identity: clip, scale, zero or cut what flows back.

``grad_clip``, ``grad_scale``, ``zero_grad``/``consider_constant`` and ``disconnected_grad`` are the input
itself in the forward pass (a view: nothing is computed or copied); their ``L_op`` changes the gradient
on its way back: clipped to ``[lower, upper]``, multiplied, zero, or nothing at all (disconnected).  Each
is an op of its own so that rewrites, printing and GPU placement see it like any other op
(``gpu_name``: its twin on a GPU device).  ``coursekit.gradient`` offers them beside ``grad``.
"""
from __future__ import annotations

from ..graph import Apply
from .math import clip, zeros_like
from .type import host_like
from .var import as_tensor_variable
from .xpop import XpOp

__all__ = ["GradClip", "GradScale", "ZeroGrad", "DisconnectedGrad", "grad_clip", "grad_scale", "zero_grad",
           "consider_constant", "disconnected_grad"]


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
