"""``T.extra_ops.cumsum`` / ``cumprod`` (running sums and products) and ``to_one_hot``.

The gradient of a running sum is the running sum of the output gradient taken from the other end; the
gradient of a running product divides that (weighted by the products) by the input, as Theano's did, so
it is undefined where an input is exactly 0.
"""
from __future__ import annotations

from ..graph import Apply
from .advanced import set_subtensor
from .construct import arange, zeros
from .type import TensorType, host_like
from .var import as_tensor_variable
from .xpop import XpOp


class CumOp(XpOp):
    """``cumsum`` or ``cumprod`` along one axis (``axis=None``: of the flattened input)."""

    __props__ = ("axis", "mode")
    gpu_name = "GpuCumOp"

    def __init__(self, axis=None, mode="add"):
        if mode not in ("add", "mul"):
            raise ValueError(f"CumOp: mode {mode!r}; use 'add' (cumsum) or 'mul' (cumprod)")
        self.axis, self.mode = axis, mode

    def make_node(self, x):
        x = as_tensor_variable(x)
        if self.axis is None:
            out = TensorType(x.type.dtype, (False,)).make_variable()
        else:
            if not -x.type.ndim <= self.axis < x.type.ndim:
                raise ValueError(f"cum{'sum' if self.mode == 'add' else 'prod'}: axis {self.axis} is out of range "
                                 f"for {x.type}")
            out = host_like(x)
        return Apply(self, [x], [out])

    def run(self, xp, inputs, output_storage):
        fn = xp.cumsum if self.mode == "add" else xp.cumprod
        output_storage[0][0] = fn(inputs[0], axis=self.axis)

    def L_op(self, inputs, outputs, output_grads):
        (x,), (gz,) = inputs, output_grads
        if self.axis is None:
            flat = x.flatten()
            return [CumOp(0, self.mode).L_op([flat], [outputs[0]], [gz])[0].reshape(x.shape, ndim=x.type.ndim)]
        axis = self.axis % x.type.ndim
        flip = tuple(slice(None, None, -1) if a == axis else slice(None) for a in range(x.type.ndim))
        if self.mode == "add":
            return [CumOp(axis, "add")(gz[flip])[flip]]
        return [CumOp(axis, "add")((gz * outputs[0])[flip])[flip] / x]


def cumsum(x, axis=None):
    return CumOp(axis, "add")(x)


def cumprod(x, axis=None):
    return CumOp(axis, "mul")(x)


def to_one_hot(y, nb_class, dtype=None):
    """A (n, nb_class) matrix with a 1 in column ``y[i]`` of row ``i`` (``dtype`` defaults to floatX)."""
    y = as_tensor_variable(y)
    ret = zeros((y.shape[0], nb_class), dtype=dtype)
    return set_subtensor(ret[arange(y.shape[0]), y], 1)
