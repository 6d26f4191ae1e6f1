"""Shape-related ops: ``x.shape``, ``reshape``, building small vectors, joining."""
from __future__ import annotations

import numpy as np

from ..graph import Apply, Constant, Op
from ..scalar.ops import Cast
from .. import tensor as _tensor  # this package: modules that build on this one are reached through it when code runs
from .elemwise import Elemwise
from .type import TensorType
from .var import as_tensor_variable, vector_length_from
from .xpop import XpOp

lvector = TensorType("int64", (False,))


class Shape(Op):
    """``x.shape`` as a symbolic int64 vector."""
    verified_outputs = True

    shape_only = True  # reads only the shape: works on device arrays without a transfer

    def make_node(self, x):
        x = as_tensor_variable(x)
        return Apply(self, [x], [TensorType("int64", (x.type.ndim == 1,)).make_variable()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.asarray(inputs[0].shape, dtype="int64")

    def L_op(self, inputs, outputs, output_grads):
        return [None]


@vector_length_from.register(Shape)
def _shape_length(op, var):
    return var.owner.inputs[0].type.ndim   # x.shape has one entry per dimension of x


class ShapeI(Op):
    """``x.shape[i]`` as an int64 scalar, read from the shape alone.

    ``Subtensor{i}(Shape(x))`` computes the same, but its Subtensor is an ordinary op that placement
    may move to a GPU device; a value the host needs (a loop's number of steps) would then go to the
    device and back on every call.  This op has no GPU twin and reads device arrays in place.
    """
    verified_outputs = True

    __props__ = ("i",)
    shape_only = True

    def __init__(self, i):
        self.i = i

    def __str__(self):
        return f"Shape_i{{{self.i}}}"

    def make_node(self, x):
        x = as_tensor_variable(x)
        if not 0 <= self.i < x.type.ndim:
            raise ValueError(f"Shape_i{{{self.i}}}: {x} has {x.type.ndim} dimension(s)")
        return Apply(self, [x], [TensorType("int64", ()).make_variable()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.asarray(inputs[0].shape[self.i], dtype="int64")

    def L_op(self, inputs, outputs, output_grads):
        return [None]


class MakeVector(XpOp):
    """Stack scalars into a vector (``T.stack([a, b])`` of scalars).

    It runs where its scalars live (``follows_inputs``): on the device when one of them is a device value
    (a sum computed there), so two scalars do not each cross to the host; on the host for shape work.
    """
    verified_outputs = True

    __props__ = ("dtype",)
    gpu_name = "GpuMakeVector"
    follows_inputs = True   # placement lifts it only when an input already lives on the device

    def __init__(self, dtype):
        self.dtype = dtype

    def make_node(self, *scalars):
        return Apply(self, list(scalars), [TensorType(self.dtype, (len(scalars) == 1,)).make_variable()])

    def run(self, xp, inputs, output_storage):
        output_storage[0][0] = xp.stack([xp.asarray(x, dtype=self.dtype) for x in inputs])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.array(inputs, dtype=self.dtype)

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        return [gz[i] if x.type.dtype[0] in "fc" else None for i, x in enumerate(inputs)]


@vector_length_from.register(MakeVector)
def _stacked_length(op, var):
    return len(var.owner.inputs)            # one entry per stacked scalar


def _is_constant_one(var):
    """Whether ``var`` is the constant 1, also through the casts ``reshape`` puts around each entry."""
    while var.owner is not None and isinstance(var.owner.op, Elemwise) and isinstance(var.owner.op.scalar_op, Cast):
        var = var.owner.inputs[0]
    return isinstance(var, Constant) and np.ndim(var.data) == 0 and var.data == 1


class Reshape(XpOp):
    """Reshape to a shape given as an int64 vector (a view when NumPy can make one)."""
    verified_outputs = True

    __props__ = ("ndim",)
    view_map = {0: [0]}
    gpu_name = "GpuReshape"
    host_inputs = (1,)  # the shape: a small host vector

    def __init__(self, ndim):
        self.ndim = ndim

    def make_node(self, x, shape):
        bcast = (False,) * self.ndim
        if isinstance(shape, Constant):
            bcast = tuple(int(s) == 1 for s in shape.data)
        elif shape.owner is not None and isinstance(shape.owner.op, MakeVector):
            # (1, x.shape[0]): an entry that is the constant 1 makes a broadcastable axis, as in Theano (a step
            # of a scan builds its shapes this way; a later dot or addbroadcast relies on the pattern)
            bcast = tuple(_is_constant_one(s) for s in shape.owner.inputs)
        return Apply(self, [x, shape], [TensorType(x.type.dtype, bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        x, shape = inputs
        try:
            output_storage[0][0] = x.reshape(tuple(int(s) for s in shape))
        except ValueError as exc:
            raise ValueError(f"cannot reshape an array of shape {x.shape} into {tuple(shape)}: {exc}") from None

    def grad(self, inputs, output_grads):
        x, _ = inputs
        return [_tensor.math.reshape(output_grads[0], x.shape, ndim=x.type.ndim), None]


class Join(XpOp):
    """Concatenate tensors along an axis (``T.concatenate``)."""
    verified_outputs = True

    __props__ = ("axis",)
    gpu_name = "GpuJoin"

    def __init__(self, axis):
        self.axis = axis

    def make_node(self, *tensors):
        ndim = tensors[0].type.ndim
        if any(t.type.ndim != ndim for t in tensors):
            raise TypeError(f"concatenate needs tensors of equal rank, got {[str(t.type) for t in tensors]}")
        dtype = np.result_type(*[t.type.dtype for t in tensors]).name
        bcast = tuple(False if i == self.axis else all(t.type.broadcastable[i] for t in tensors)
                      for i in range(ndim))
        return Apply(self, list(tensors), [TensorType(dtype, bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        output_storage[0][0] = xp.concatenate(inputs, axis=self.axis)

    def grad(self, inputs, output_grads):
        M = _tensor.math
        (gz,) = output_grads
        grads, start = [], 0
        sizes = [M.shape(t)[self.axis] for t in inputs]
        for t, size in zip(inputs, sizes):
            index = [slice(None)] * self.axis + [slice(start, start + size)]
            grads.append(gz[tuple(index)])
            start = start + size
        return grads


class Contiguous(XpOp):
    """``x`` in C-contiguous memory: the input itself when it already is, else a contiguous copy.

    Hand-written kernels index their arrays linearly; Theano's ``gpu_contiguous``
    (this op's GPU twin, ``GpuContiguous``) is how a user's op asked for such an input.
    """
    verified_outputs = True

    __props__ = ()
    view_map = {0: [0]}  # the input itself when it is already contiguous
    gpu_name = "GpuContiguous"

    def make_node(self, x):
        return Apply(self, [x], [TensorType(x.type.dtype, x.type.broadcastable).make_variable()])

    def run(self, xp, inputs, output_storage):
        output_storage[0][0] = xp.ascontiguousarray(inputs[0])

    def grad(self, inputs, output_grads):
        return [output_grads[0]]
