"""``T.nnet.neighbours``: ``images2neibs`` cuts images into patches, ``neibs2images`` puts them back.

``images2neibs(x, (h, w), step)`` of a (batch, channels, rows, cols) input gives one row of ``h*w`` pixels
per patch, patches of each (batch, channel) image in row-major order, as Theano ordered them.  The two
ops are each other's adjoint (``neibs2images`` adds every patch back where it was cut), which makes each
the other's gradient; for patches that do not overlap it is also the inverse.
"""
from __future__ import annotations

import itertools

from ...graph import Apply
from ..math import cast, stack
from ..type import TensorType
from ..var import as_tensor_variable
from ..xpop import XpOp


def _grid(size, neib, step, mode, axis):
    if mode == "valid":
        if (size - neib) % step or size < neib:
            raise ValueError(f"images2neibs(mode='valid'): axis {axis} has {size} pixels, which patches of {neib} "
                             f"with step {step} do not cover exactly; use mode='ignore_borders' to drop the rest")
    return max((size - neib) // step + 1, 0)


class Images2Neibs(XpOp):
    """(batch, channels, rows, cols) -> (patches, h * w)."""

    __props__ = ("neib_shape", "neib_step", "mode")
    gpu_name = "GpuImages2Neibs"

    def __init__(self, neib_shape, neib_step=None, mode="valid"):
        if mode not in ("valid", "ignore_borders"):
            raise NotImplementedError(f"images2neibs(mode={mode!r}): coursekit implements 'valid' and "
                                      "'ignore_borders'; pad the input yourself for the other modes")
        self.neib_shape = tuple(int(s) for s in neib_shape)
        self.neib_step = tuple(int(s) for s in (neib_step or neib_shape))
        self.mode = mode

    def make_node(self, x):
        x = as_tensor_variable(x)
        if x.type.ndim != 4:
            raise TypeError(f"images2neibs takes a 4-d input (batch, channels, rows, cols), got {x.type}")
        return Apply(self, [x], [TensorType(x.type.dtype, (False, False)).make_variable()])

    def run(self, xp, inputs, output_storage):
        (x,) = inputs
        (nh, nw), (sh, sw) = self.neib_shape, self.neib_step
        gh, gw = (_grid(x.shape[2 + i], self.neib_shape[i], self.neib_step[i], self.mode, 2 + i) for i in (0, 1))
        flat = xp.ascontiguousarray(x).reshape(-1, x.shape[2], x.shape[3])
        s = flat.strides
        view = xp.lib.stride_tricks.as_strided(flat, (flat.shape[0], gh, gw, nh, nw),
                                               (s[0], s[1] * sh, s[2] * sw, s[1], s[2]))
        output_storage[0][0] = xp.ascontiguousarray(view).reshape(-1, nh * nw)

    def L_op(self, inputs, outputs, output_grads):
        (x,) = inputs
        return [Neibs2Images(self.neib_shape, self.neib_step, self.mode)(output_grads[0], x.shape)]


class Neibs2Images(XpOp):
    """(patches, h * w) -> (batch, channels, rows, cols): every patch added back where it was cut."""

    __props__ = ("neib_shape", "neib_step", "mode")
    gpu_name = "GpuNeibs2Images"
    host_inputs = (1,)

    def __init__(self, neib_shape, neib_step=None, mode="valid"):
        self.neib_shape = tuple(int(s) for s in neib_shape)
        self.neib_step = tuple(int(s) for s in (neib_step or neib_shape))
        self.mode = mode

    def make_node(self, neibs, shape):
        neibs, shape = as_tensor_variable(neibs), as_tensor_variable(shape)
        return Apply(self, [neibs, shape], [TensorType(neibs.type.dtype, (False,) * 4).make_variable()])

    def run(self, xp, inputs, output_storage):
        neibs, shape = inputs
        b, c, h, w = (int(s) for s in shape)
        (nh, nw), (sh, sw) = self.neib_shape, self.neib_step
        gh, gw = (_grid(int(shape[2 + i]), self.neib_shape[i], self.neib_step[i], self.mode, 2 + i) for i in (0, 1))
        patches = neibs.reshape(b * c, gh, gw, nh, nw)
        out = xp.zeros((b * c, h, w), dtype=neibs.dtype)
        for i, j in itertools.product(range(nh), range(nw)):
            out[:, i:i + sh * gh:sh, j:j + sw * gw:sw] += patches[:, :, :, i, j]
        output_storage[0][0] = out.reshape(b, c, h, w)

    def L_op(self, inputs, outputs, output_grads):
        return [Images2Neibs(self.neib_shape, self.neib_step, self.mode)(output_grads[0]), None]


def images2neibs(ten4, neib_shape, neib_step=None, mode="valid"):
    """Theano's ``images2neibs``: one row per patch (see the module docstring)."""
    return Images2Neibs(neib_shape, neib_step, mode)(ten4)


def neibs2images(neibs, neib_shape, original_shape, mode="valid"):
    """Theano's ``neibs2images``: patches of :func:`images2neibs` back into images of ``original_shape``."""
    if isinstance(original_shape, (tuple, list)):
        original_shape = stack([cast(as_tensor_variable(s), "int64") for s in original_shape])
    return Neibs2Images(neib_shape, None, mode)(neibs, original_shape)
