"""Elementwise ops over tensors (``DimShuffle`` lives in :mod:`coursekit.tensor.dimshuffle`).

``Elemwise(scalar_op)`` lifts a :class:`~coursekit.scalar.ops.ScalarOp`
to whole arrays with NumPy broadcasting.  Inputs of lower rank are padded on
the left with broadcastable axes (a ``DimShuffle``), exactly as NumPy does
implicitly; making it explicit keeps every input the same rank, which the
gradient (sum over broadcast axes) and the GPU code generator rely on.
"""
from __future__ import annotations

import numpy as np

from ..graph import Apply, Constant
from ..scalar.cpu import fast_thunk, pattern_of
from ..scalar.ops import SCALAR_OPERATORS
from ..work import elementwise_work
from .dimshuffle import DimShuffle, pad_left, reduce_to_broadcast  # noqa: F401 (DimShuffle: Theano's path)
from .type import TensorType
from .var import as_tensor_variable
from .xpop import XpOp


class Elemwise(XpOp):
    """Apply a scalar op element by element (CPU, NumPy); on a GPU, one generated kernel (``GpuElemwise``)."""

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
        scalars = [k for k, v in enumerate(node.inputs) if self.host_input(k, v) or type(v.type) is TensorType
                   and v.type.ndim == 0] if device.xp is not np else ()   # host values: scalar arguments
        return elementwise_runner(kernel, node, device.xp, scalars)

    def perform(self, node, inputs, output_storage):
        elementwise_runner(self.scalar_op.impl, node)(inputs, output_storage)

    def work(self, node, shapes, dtypes):
        """One pass over memory: see :func:`coursekit.work.elementwise_work`."""
        return elementwise_work(self.scalar_op, shapes, dtypes, node.outputs[0].type.dtype)

    def make_thunk(self, node, storage_map):
        # Specialised closures: this is the hot path of every compiled function.
        asarray = np.asarray
        ins = [_squeezed_constant_cell(v, node) or storage_map[v] for v in node.inputs]
        cell = storage_map[node.outputs[0]]
        operator_fn = _scalar_operator(node)
        scalar_fn = getattr(self.scalar_op, "scalar_impl", None) if node.outputs[0].type.ndim == 0 else None
        loop = getattr(self.scalar_op, "loop_impl", None)
        if loop is not None:  # a numba loop kernel (fused Composite); NumPy when it cannot loop
            return _loop_thunk(loop, ins, cell, self._generic_thunk(ins, cell, node, self.scalar_op.numpy_impl))
        if operator_fn is not None and len(ins) == 2:
            a, b = ins

            def thunk():  # 0-d: NumPy's scalar arithmetic (the same result, without a ufunc call)
                cell[0] = asarray(operator_fn(a[0][()], b[0][()]))
        elif operator_fn is not None:
            (a,) = ins

            def thunk():
                cell[0] = asarray(operator_fn(a[0][()]))
        elif scalar_fn is not None:  # a fused 0-d chain (Composite.scalar_impl)
            def thunk():
                cell[0] = asarray(scalar_fn(*[c[0][()] for c in ins]))
        else:
            thunk = self._generic_thunk(ins, cell, node, self.scalar_op.impl)
            kinds = pattern_of(node, ins) if len(ins) > 1 else None
            if kinds is not None:  # the types sort the inputs out: one shape comparison, narrow ones 0-d
                thunk = fast_thunk(kinds, self.scalar_op.impl, ins, cell, thunk)
        return thunk

    @staticmethod
    def _generic_thunk(ins, cell, node, impl):
        """Any rank, NumPy broadcasting (checked against the types), the old buffer reused when it fits."""
        ndarray, asarray = np.ndarray, np.asarray
        check = _broadcast_checker(node)
        fits = fits_buffer
        if len(ins) == 1:
            (a,) = ins

            def thunk():
                x = a[0]
                out = cell[0]
                if type(out) is ndarray and out.shape == x.shape:
                    cell[0] = impl(x, out=out)  # (see perform)
                else:
                    r = impl(x)
                    cell[0] = r if type(r) is ndarray else asarray(r)  # a ufunc gives 0-d inputs a scalar
        elif len(ins) == 2:
            a, b = ins

            def thunk():
                x, y = a[0], b[0]
                out = cell[0]
                if type(out) is ndarray and (getattr(x, "shape", ()) == out.shape == getattr(y, "shape", ())
                                             or fits(out.shape, (x, y), check)):
                    cell[0] = impl(x, y, out=out)
                else:
                    r = impl(x, y)
                    cell[0] = r if type(r) is ndarray else asarray(r)
                    if getattr(x, "shape", ()) != r.shape or getattr(y, "shape", ()) != r.shape:
                        check((x, y), r.shape)
        elif len(ins) == 3:  # a fused chain of two binary ops (an RNN step's tanh(a + b + c))
            a, b, c = ins

            def thunk():
                x, y, z = a[0], b[0], c[0]
                out = cell[0]
                if type(out) is ndarray and (getattr(x, "shape", ()) == out.shape == getattr(y, "shape", ())
                                             == getattr(z, "shape", ()) or fits(out.shape, (x, y, z), check)):
                    cell[0] = impl(x, y, z, out=out)
                else:
                    r = impl(x, y, z)
                    if type(r) is not ndarray:
                        r = asarray(r)
                    cell[0] = r
                    if not getattr(x, "shape", ()) == getattr(y, "shape", ()) == getattr(z, "shape", ()) == r.shape:
                        check((x, y, z), r.shape)
        else:
            def thunk():
                values = [c[0] for c in ins]
                out = cell[0]
                if type(out) is ndarray and fits(out.shape, values, check):
                    cell[0] = impl(*values, out=out)
                    return
                r = impl(*values)
                if type(r) is not ndarray:
                    r = asarray(r)
                cell[0] = r
                shape = r.shape
                for v in values:
                    if getattr(v, "shape", ()) != shape:
                        check(values, shape)
                        break
        return thunk

    def L_op(self, inputs, outputs, output_grads):
        (gz,) = output_grads
        grads = self.scalar_op.grad(inputs, outputs[0], gz)
        return [None if g is None else reduce_to_broadcast(g, x) for g, x in zip(grads, inputs)]


def _loop_thunk(loop, ins, cell, generic):
    """A numba loop kernel's thunk (``scalar/numba_kernels.py``): it checks the lengths
    itself; inputs it cannot loop over (broadcasting, errors) take the ``generic`` path."""
    if len(ins) == 1:
        (a,) = ins

        def thunk():
            try:
                cell[0] = loop(a[0], cell[0])
            except ValueError:
                generic()
    else:
        def thunk():
            try:
                cell[0] = loop(*[c[0] for c in ins], cell[0])
            except ValueError:
                generic()
    return thunk


def elementwise_runner(kernel, node, xp=np, scalar_positions=()):
    """``run(inputs, output_storage)`` for an elementwise ``kernel(*arrays, out=None)`` of ``node``.

    The one place (besides the CPU thunk's specialised closures) that decides
    whether the previous output buffer can take the result: when it fits
    (:func:`fits_buffer`) the kernel writes into it, else it allocates.
    ``scalar_positions``: one-element host constants that the kernel takes as
    Python numbers (a GPU kernel's scalar arguments).
    """
    check = _broadcast_checker(node)
    ndarray, asarray = xp.ndarray, xp.asarray
    if scalar_positions:
        array_kernel = kernel

        def kernel(*args, out=None):
            args = list(args)
            for k in scalar_positions:
                args[k] = args[k].reshape(()).item()
            return array_kernel(*args) if out is None else array_kernel(*args, out=out)

    def run(inputs, output_storage):
        cell = output_storage[0]
        out = cell[0]
        if out is not None and fits_buffer(out.shape, inputs, check):
            cell[0] = kernel(*inputs, out=out)  # keep what it returns: a fused Composite may use its own buffer
            return
        result = kernel(*inputs)
        cell[0] = result = result if type(result) is ndarray else asarray(result)  # 0-d: ufuncs give scalars
        for value in inputs:
            if getattr(value, "shape", ()) != result.shape:
                check(inputs, result.shape)
                break

    return run


def _scalar_operator(node):
    """The operator for a 0-d float node whose inputs all have its output's dtype, else None."""
    out = node.outputs[0].type
    if out.ndim or out.dtype not in ("float32", "float64") or node.op.scalar_op.name not in SCALAR_OPERATORS:
        return None
    if any(v.type.dtype != out.dtype for v in node.inputs):
        return None
    return SCALAR_OPERATORS[node.op.scalar_op.name]


def _squeezed_constant_cell(var, node):
    """A private cell holding a one-element constant as a 0-d array, or None.

    Constants are padded to the op's rank as (1, ..., 1) arrays; NumPy runs
    about twice as fast when such an operand is 0-d, and the result's shape is
    the same as long as another input has the full rank (Elemwise pads every
    non-constant input to it).
    """
    if not isinstance(var, Constant) or var.data.size != 1 or var.data.ndim == 0:
        return None
    if all(isinstance(v, Constant) for v in node.inputs):
        return None
    return [var.data.reshape(())]


def fits_buffer(out_shape, values, check):
    """Can the result of broadcasting ``values`` be written into a buffer of ``out_shape``?

    Yes when every input has the buffer's rank, each of its lengths is 1 or the
    buffer's, and every buffer length is reached by some input (otherwise NumPy
    would broadcast the inputs *up to* the buffer: a wrong, larger result).
    Shapes that broadcast are checked against the declared pattern first.
    """
    shapes = [getattr(v, "shape", ()) for v in values]
    if all(s == out_shape for s in shapes):
        return True
    shapes = [s for s in shapes if s != ()]  # 0-d operands (one-element constants) broadcast to anything
    if not shapes or any(len(s) != len(out_shape) for s in shapes):
        return False
    for axis, size in enumerate(out_shape):
        lengths = [s[axis] for s in shapes]
        if size not in lengths and size != 1 or any(n != size and n != 1 for n in lengths):
            return False
    check(values, out_shape)
    return True


def _broadcast_checker(node):
    """A check run only when an input's shape differs from the output's.

    NumPy would broadcast any length-1 dimension.  coursekit, like Theano,
    broadcasts only along dimensions the *type* says may broadcast (``T.row``,
    ``T.col``, constants, ``broadcastable=`` on shared variables, ``'x'`` in a
    dimshuffle).  Otherwise the gradient of the smaller input would come back
    with the larger shape, and an update would silently reshape a parameter.
    """
    # only inputs with a dimension that may not broadcast need looking at
    watched = [(k, v.type.broadcastable) for k, v in enumerate(node.inputs) if not all(v.type.broadcastable)]

    def check(values, out_shape):
        for k, bcast in watched:
            shape = np.shape(values[k])
            if shape == out_shape:
                continue
            for axis, (size, out_size, may_broadcast) in enumerate(zip(shape, out_shape, bcast)):
                if size == 1 and out_size != 1 and not may_broadcast:
                    raise ValueError(
                        f"input {k} ({node.inputs[k]}) has length 1 in dimension {axis} and would be broadcast to "
                        f"{out_size}, but its type {node.inputs[k].type} does not declare that dimension "
                        "broadcastable. Declare it: T.row/T.col (or T.tensor(dtype, broadcastable=...)), "
                        "shared(value, broadcastable=(True, False)), or x.dimshuffle('x', ...). coursekit, like "
                        "Theano, needs this so that gradients come back with the input's shape.")

    return check
