"""DimShuffle (transpose, add and drop axes as a view) and the broadcasting helpers built on it.

Elementwise ops pad lower-rank inputs on the left with broadcastable axes
(:func:`pad_left`), and a gradient flowing back to a broadcast input is summed
over the axes it was broadcast along (:func:`reduce_to_broadcast`).  Theano kept
``DimShuffle`` in ``tensor.elemwise``; it is importable from there too.
"""
from __future__ import annotations

from ..graph import Apply, Constant
from .. import tensor as _tensor  # this package: modules that build on this one are reached through it when code runs
from .type import TensorType
from .var import as_tensor_variable, constant
from .xpop import XpOp


def reduce_to_broadcast(grad, var):
    """Sum ``grad`` over the axes where ``var`` was broadcast, and cast it back.

    If ``x`` (shape (1, n)) was added to ``y`` (shape (m, n)), each element
    of x was used m times, so its gradient is the sum over axis 0.
    """
    M = _tensor.math
    axes = [ax for ax, (b_var, b_grad) in enumerate(zip(var.type.broadcastable, grad.type.broadcastable))
            if b_var and not b_grad]
    if axes:
        grad = M.sum(grad, axis=axes, keepdims=True)
    if grad.type.dtype != var.type.dtype and var.type.dtype[0] in "fc":
        grad = M.cast(grad, var.type.dtype)
    return grad


def pad_left(var, ndim):
    """``var`` with broadcastable axes added on the left until it has ``ndim``."""
    missing = ndim - var.type.ndim
    if missing <= 0:
        return var
    if isinstance(var, Constant):  # reshape the data instead of adding a node

        return constant(var.data.reshape((1,) * missing + var.data.shape), name=var.name)
    return DimShuffle(var.type.broadcastable, ("x",) * missing + tuple(range(var.type.ndim)))(var)


class DimShuffle(XpOp):
    """Reorder axes, insert broadcastable axes ('x') and drop length-1 axes.

    ``new_order`` lists, for each output axis, an input axis or 'x'.  Input
    axes missing from it are dropped (they must be broadcastable).  The
    output is a *view* of the input, so no data moves.
    """
    verified_outputs = True

    __props__ = ("input_broadcastable", "new_order")
    view_map = {0: [0]}
    gpu_name = "GpuDimShuffle"

    def __init__(self, input_broadcastable, new_order):
        self.input_broadcastable = tuple(input_broadcastable)
        self.new_order = tuple(new_order)
        kept = [d for d in self.new_order if d != "x"]
        if len(set(kept)) != len(kept):
            raise ValueError(f"dimshuffle{self.new_order}: an axis appears twice")
        for d in kept:
            if not 0 <= d < len(self.input_broadcastable):
                raise ValueError(f"dimshuffle{self.new_order}: axis {d} does not exist in a "
                                 f"{len(self.input_broadcastable)}-d input")
        self.drop = [i for i in range(len(self.input_broadcastable)) if i not in kept]
        for d in self.drop:
            if not self.input_broadcastable[d]:
                raise ValueError(
                    f"dimshuffle{self.new_order} drops axis {d}, which is not broadcastable (its length is not "
                    "known to be 1). Keep it in new_order, or sum over it first.")
        # transpose the kept axes into order, then reshape to insert 'x' axes
        self.perm = tuple(kept)
        self.is_transpose_only = "x" not in self.new_order and not self.drop

    def __str__(self):
        return "DimShuffle{" + ",".join(str(d) for d in self.new_order) + "}"

    def make_node(self, x):
        x = as_tensor_variable(x)
        if x.type.broadcastable != self.input_broadcastable:
            if len(x.type.broadcastable) != len(self.input_broadcastable):
                raise TypeError(f"{self} expects a {len(self.input_broadcastable)}-d input, got {x.type}")
        bcast = tuple(True if d == "x" else x.type.broadcastable[d] for d in self.new_order)
        return Apply(self, [x], [TensorType(x.type.dtype, bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        output_storage[0][0] = self.apply_to(inputs[0])

    def device_kernel(self, device, node):
        """The view on a device's arrays, in one step per call for the common cases (a transpose, a 0-d value
        given axes): a training step takes ``X.T`` and a broadcast bias on every call."""
        if self.is_transpose_only:
            perm = self.perm

            def transpose(inputs, output_storage):
                output_storage[0][0] = inputs[0].transpose(perm)
            return transpose
        if not self.input_broadcastable:
            ones = (1,) * len(self.new_order)

            def expand(inputs, output_storage):
                output_storage[0][0] = inputs[0].reshape(ones)
            return expand
        return super().device_kernel(device, node)

    def make_thunk(self, node, storage_map):
        src, cell = storage_map[node.inputs[0]], storage_map[node.outputs[0]]
        if self.is_transpose_only:
            perm = self.perm

            def thunk():
                cell[0] = src[0].transpose(perm)
        elif not self.input_broadcastable:  # a 0-d value given axes: its shape is all ones
            ones = (1,) * len(self.new_order)

            def thunk():
                cell[0] = src[0].reshape(ones)
        elif not self.drop and self.perm == tuple(range(len(self.perm))):
            # only inserting broadcastable axes: one reshape
            order = self.new_order

            def thunk():
                x = src[0]
                it = iter(x.shape)
                cell[0] = x.reshape([1 if d == "x" else next(it) for d in order])
        else:
            apply_to = self.apply_to

            def thunk():
                cell[0] = apply_to(src[0])
        return thunk

    def apply_to(self, x):
        """Apply to an array-like with .transpose/.reshape (NumPy, CuPy, SimArray buffers)."""
        if self.drop:
            x = x.reshape([s for i, s in enumerate(x.shape) if i not in self.drop])
            remap = {old: new for new, old in enumerate(i for i in range(len(self.input_broadcastable))
                                                        if i not in self.drop)}
            perm = tuple(remap[d] for d in self.perm)
        else:
            perm = self.perm
        if perm != tuple(range(len(perm))):
            x = x.transpose(perm)
        if "x" in self.new_order:
            it = iter(x.shape)
            x = x.reshape([1 if d == "x" else next(it) for d in self.new_order])
        return x

    def L_op(self, inputs, outputs, output_grads):
        (gz,) = output_grads
        (x,) = inputs
        # undo: sum away the 'x' axes, then invert the permutation, then re-add dropped axes
        keep_axes = [i for i, d in enumerate(self.new_order) if d != "x"]
        gz_b = gz.type.broadcastable
        if len(keep_axes) != len(self.new_order):
            gz = DimShuffle(gz_b, tuple(keep_axes))(gz) if all(
                gz_b[i] for i, d in enumerate(self.new_order) if d == "x") else _sum_x_axes(gz, self.new_order)
        # input axis i comes back from position perm.index(i); dropped axes come back as 'x'
        order = tuple("x" if i in self.drop else self.perm.index(i) for i in range(len(self.input_broadcastable)))
        g = DimShuffle(gz.type.broadcastable, order)(gz)
        return [reduce_to_broadcast(g, x)]


def _sum_x_axes(gz, new_order):
    axes = [i for i, d in enumerate(new_order) if d == "x"]
    return _tensor.math.sum(gz, axis=axes)
