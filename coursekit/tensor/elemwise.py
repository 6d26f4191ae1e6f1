"""Elementwise ops over tensors (``DimShuffle`` lives in :mod:`coursekit.tensor.dimshuffle`).

``Elemwise(scalar_op)`` lifts a :class:`~coursekit.scalar.ops.ScalarOp`
to whole arrays with NumPy broadcasting.  Inputs of lower rank are padded on
the left with broadcastable axes (a ``DimShuffle``), exactly as NumPy does
implicitly; making it explicit keeps every input the same rank, which the
gradient (sum over broadcast axes) and the GPU code generator rely on.
"""
from __future__ import annotations

from operator import attrgetter

import numpy as np

from ..graph import Apply, Constant
from ..scalar.cpu import broadcast_checker, cpu_thunk, fits_buffer, squeezed_constant_cell
from ..work import elementwise_work
from .dimshuffle import DimShuffle, pad_left, reduce_to_broadcast  # noqa: F401 (DimShuffle: Theano's path)
from .type import TensorType
from .var import as_tensor_variable
from .xpop import XpOp


class Elemwise(XpOp):
    """Apply a scalar op element by element (CPU, NumPy); on a GPU, one generated kernel (``GpuElemwise``)."""
    verified_outputs = True

    __props__ = ("scalar_op",)
    gpu_name = "GpuElemwise"

    def __init__(self, scalar_op):
        self.scalar_op = scalar_op
        self.nin = scalar_op.nin

    def __str__(self):
        return f"Elemwise{{{self.scalar_op}}}"

    def make_node(self, *inputs):
        if len(inputs) != self.nin:
            raise TypeError(f"{self} takes {self.nin} inputs, got {len(inputs)}")
        inputs = [as_tensor_variable(i) for i in inputs]
        ndim = max(i.type.ndim for i in inputs)
        inputs = [pad_left(i, ndim) for i in inputs]
        bcast = tuple(all(bs) for bs in zip(*[i.type.broadcastable for i in inputs])) if ndim else ()
        dtype = self.scalar_op.output_dtype(*[i.type.dtype for i in inputs])
        return Apply(self, inputs, [TensorType(dtype, bcast).make_variable()])

    # a GPU kernel takes a 0-d host value as a scalar argument: placement (host_scalars) need not copy it over
    scalar_arguments = True

    def host_input(self, position, var):
        """One-element constants stay on the host: a GPU kernel takes them as scalar arguments."""
        return isinstance(var, Constant) and var.data.size == 1

    def gpu_supported(self, node):
        """A GPU runs elementwise code as generated C: only scalar ops with a C expression go there."""
        op, names = self.scalar_op, [f"i{k}" for k in range(self.nin)]
        dtypes = [i.type.dtype for i in node.inputs]
        try:
            if hasattr(op, "c_statements"):
                op.c_statements(names, dtypes)
            elif hasattr(op, "c_code"):
                op.c_code(names, dtypes)
            elif op.c_expr is None:
                return False
        except NotImplementedError:
            return False
        return True

    def device_kernel(self, device, node):
        """The device's generated kernel for the scalar op (ONE CUDA kernel on a GPU, NumPy ufuncs on sim)."""
        kernel = device.elementwise(self.scalar_op, [i.type.dtype for i in node.inputs], node.outputs[0].type.dtype)
        # one-element host values (0-d, or a host scalar broadcast to (1,): ``1/N`` in a gradient) are scalar arguments
        scalars = [k for k, v in enumerate(node.inputs) if self.host_input(k, v) or type(v.type) is TensorType
                   and all(v.type.broadcastable)] if device.xp is not np else ()
        return elementwise_runner(kernel, node, device.xp, scalars)

    def perform(self, node, inputs, output_storage):
        elementwise_runner(self.scalar_op.impl, node)(inputs, output_storage)

    def work(self, node, shapes, dtypes):
        """One pass over memory: see :func:`coursekit.work.elementwise_work`."""
        return elementwise_work(self.scalar_op, shapes, dtypes, node.outputs[0].type.dtype)

    def make_thunk(self, node, storage_map):
        """The CPU thunk: one path with its fast cases, written for this node (:mod:`coursekit.scalar.cpu`)."""
        cells = [squeezed_constant_cell(v, node) or storage_map[v] for v in node.inputs]
        return cpu_thunk(node, self.scalar_op, cells, storage_map[node.outputs[0]])

    def L_op(self, inputs, outputs, output_grads):
        (gz,) = output_grads
        grads = self.scalar_op.grad(inputs, outputs[0], gz)
        return [None if g is None else reduce_to_broadcast(g, x) for g, x in zip(grads, inputs)]


def elementwise_runner(kernel, node, xp=np, scalar_positions=()):
    """``run(inputs, output_storage)`` for an elementwise ``kernel(*arrays, out=None)`` of ``node``.

    The one place (besides the CPU thunk, :mod:`coursekit.scalar.cpu`) that decides
    whether the previous output buffer can take the result: when it fits
    (:func:`fits_buffer`) the kernel writes into it, else it allocates.
    ``scalar_positions``: one-element host constants that the kernel takes as
    Python numbers (a GPU kernel's scalar arguments).
    """
    check = broadcast_checker(node)
    ndarray, asarray = xp.ndarray, xp.asarray

    checked = [None]   # the input shapes and buffer shape last found to fit: a step's shapes repeat every call
    shape_of = attrgetter("shape")

    def run(inputs, output_storage):
        args = inputs
        if scalar_positions:                         # one-element host values, as Python numbers (in this frame)
            args = list(inputs)
            for k in scalar_positions:
                args[k] = args[k].reshape(()).item()
        cell = output_storage[0]
        out = cell[0]
        if out is not None:
            try:
                shapes = (out.shape, *map(shape_of, inputs))   # read in C: no Python frame per input
            except AttributeError:                              # a Python number among the inputs
                shapes = None
            if shapes == checked[0] is not None or fits_buffer(out.shape, inputs, check):
                checked[0] = shapes
                cell[0] = kernel(*args, out=out)  # keep what it returns: a fused Composite may use its own buffer
                return
        result = kernel(*args)
        cell[0] = result = result if type(result) is ndarray else asarray(result)  # 0-d: ufuncs give scalars
        for value in inputs:
            if getattr(value, "shape", ()) != result.shape:
                check(inputs, result.shape)
                break

    return run
