"""Elementwise ops over tensors, and DimShuffle (transpose / add / drop axes).

``Elemwise(scalar_op)`` lifts a :class:`~coursekit.tensor.scalar.ScalarOp`
to whole arrays with NumPy broadcasting.  Inputs of lower rank are padded on
the left with broadcastable axes (a ``DimShuffle``), exactly as NumPy does
implicitly; making it explicit keeps every input the same rank, which the
gradient (sum over broadcast axes) and the GPU code generator rely on.
"""
from __future__ import annotations

import operator

import numpy as np

from ..graph import Apply, Constant
from ..work import elementwise_work
from .type import TensorType
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
        from .var import as_tensor_variable

        if len(inputs) != self.nin:
            raise TypeError(f"{self} takes {self.nin} inputs, got {len(inputs)}")
        inputs = [as_tensor_variable(i) for i in inputs]
        ndim = max(i.type.ndim for i in inputs)
        inputs = [pad_left(i, ndim) for i in inputs]
        bcast = tuple(all(bs) for bs in zip(*[i.type.broadcastable for i in inputs])) if ndim else ()
        dtype = self.scalar_op.output_dtype(*[i.type.dtype for i in inputs])
        return Apply(self, inputs, [TensorType(dtype, bcast).make_variable()])

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
        scalars = [k for k, v in enumerate(node.inputs) if self.host_input(k, v)] if device.xp is not np else ()
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
    """A numba loop kernel's thunk (``rewriting/numba_kernels.py``): it checks the lengths
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


# Ops whose Python operator on NumPy scalars gives exactly the ufunc's result (same dtype rules,
# same IEEE arithmetic and warnings), at a tenth of a ufunc call's cost on 0-d values (W2).
SCALAR_OPERATORS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "true_div": operator.truediv,
              "neg": operator.neg}


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


def reduce_to_broadcast(grad, var):
    """Sum ``grad`` over the axes where ``var`` was broadcast, and cast it back.

    If ``x`` (shape (1, n)) was added to ``y`` (shape (m, n)), each element
    of x was used m times, so its gradient is the sum over axis 0.
    """
    from .math import cast, sum as tsum

    axes = [ax for ax, (b_var, b_grad) in enumerate(zip(var.type.broadcastable, grad.type.broadcastable))
            if b_var and not b_grad]
    if axes:
        grad = tsum(grad, axis=axes, keepdims=True)
    if grad.type.dtype != var.type.dtype and var.type.dtype[0] in "fc":
        grad = cast(grad, var.type.dtype)
    return grad


def pad_left(var, ndim):
    """``var`` with broadcastable axes added on the left until it has ``ndim``."""
    missing = ndim - var.type.ndim
    if missing <= 0:
        return var
    if isinstance(var, Constant):  # reshape the data instead of adding a node
        from .var import constant

        return constant(var.data.reshape((1,) * missing + var.data.shape), name=var.name)
    return DimShuffle(var.type.broadcastable, ("x",) * missing + tuple(range(var.type.ndim)))(var)


class DimShuffle(XpOp):
    """Reorder axes, insert broadcastable axes ('x') and drop length-1 axes.

    ``new_order`` lists, for each output axis, an input axis or 'x'.  Input
    axes missing from it are dropped (they must be broadcastable).  The
    output is a *view* of the input, so no data moves.
    """

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
        from .var import as_tensor_variable

        x = as_tensor_variable(x)
        if x.type.broadcastable != self.input_broadcastable:
            if len(x.type.broadcastable) != len(self.input_broadcastable):
                raise TypeError(f"{self} expects a {len(self.input_broadcastable)}-d input, got {x.type}")
        bcast = tuple(True if d == "x" else x.type.broadcastable[d] for d in self.new_order)
        return Apply(self, [x], [TensorType(x.type.dtype, bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        output_storage[0][0] = self.apply_to(inputs[0])

    def make_thunk(self, node, storage_map):
        src, cell = storage_map[node.inputs[0]], storage_map[node.outputs[0]]
        if self.is_transpose_only:
            perm = self.perm

            def thunk():
                cell[0] = src[0].transpose(perm)
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
    from .math import sum as tsum

    axes = [i for i, d in enumerate(new_order) if d == "x"]
    return tsum(gz, axis=axes)
