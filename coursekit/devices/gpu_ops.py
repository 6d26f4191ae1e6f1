"""GPU versions of the ops, written once for both backends.

Each op runs its "kernel" through the backend's array module: NumPy on the
simulated GPU's buffers, CuPy on a real GPU.  Elementwise ops (including a
fused ``Composite``) become ONE generated CUDA kernel on a real GPU.  None
of these classes derives from its CPU twin, so the tutorial's test
``isinstance(node.op, T.Elemwise)`` is False for ``GpuElemwise``.
"""
from __future__ import annotations

import numpy as np

from ..graph import Apply, Constant, Op
from ..tensor.elemwise import DimShuffle, _broadcast_checker, fits_buffer
from ..tensor.reduction import _REDUCERS
from ..tensor.subtensor import _decode, _describe, _output_bcast
from ..tensor.blas import Dot, Gemm
from ..tensor.elemwise import Elemwise
from ..tensor.reduction import CAReduce
from .types import GpuArrayType


def _dev_type(target, dtype, bcast):
    return GpuArrayType(dtype, bcast, target).make_variable()


class GpuOp(Op):
    """Shared plumbing: ``backend`` is an attribute, its name a prop."""

    device = "gpu"

    def __str__(self):
        """The class name and the props that matter, never the backend (so graphs print alike on sim and cuda)."""
        props = [str(getattr(self, p)) for p in self.__props__ if p != "device_name"]
        return type(self).__name__ + (f"{{{', '.join(props)}}}" if props else "")

    def _init_target(self, target):
        self.target, self.device_name = target, target.name

    def _arg(self, value):
        """A device array -> the backend's xp array; host scalars pass through."""
        if isinstance(value, np.ndarray):
            return value.reshape(()).item() if value.size == 1 and not self.target.simulated else value
        return self.target.unwrap(value)


class GpuElemwise(GpuOp):
    __props__ = ("scalar_op", "device_name")

    def __init__(self, scalar_op, target):
        self.scalar_op, self.nin = scalar_op, scalar_op.nin
        self._init_target(target)

    def __str__(self):
        return f"GpuElemwise{{{self.scalar_op}}}"

    work = Elemwise.work  # same scalar op, same inputs: the same work

    def make_node(self, *inputs):
        for i in inputs:
            if not isinstance(i.type, GpuArrayType) and not (isinstance(i, Constant) and i.data.size == 1):
                raise TypeError(f"{self}: input {i} is not on the device; insert GpuFromHost first")
        ndim = max(i.type.ndim for i in inputs)
        bcast = tuple(all(i.type.broadcastable[d] for i in inputs if i.type.ndim == ndim) for d in range(ndim))
        dtype = self.scalar_op.output_dtype(*[i.type.dtype for i in inputs])
        return Apply(self, list(inputs), [_dev_type(self.target, dtype, bcast)])

    def make_thunk(self, node, storage_map):
        kernel = self.target.elementwise(self.scalar_op, [i.type.dtype for i in node.inputs],
                                          node.outputs[0].type.dtype)
        cells = [storage_map[v] for v in node.inputs]
        out_cell = storage_map[node.outputs[0]]
        arg, wrap, unwrap = self._arg, self.target.wrap, self.target.unwrap
        array_type = self.target.array_type
        on_device = [isinstance(v.type, GpuArrayType) for v in node.inputs]
        check = _broadcast_checker(node)

        def thunk():
            args = [arg(c[0]) for c in cells]
            out = out_cell[0]
            if type(out) is array_type and fits_buffer(out.shape, [a for a, d in zip(args, on_device) if d],
                                                       lambda values, shape: check(args, shape)):
                kernel(*args, out=unwrap(out))
            else:
                result = out_cell[0] = wrap(kernel(*args))
                if any(a.shape != result.shape for a, d in zip(args, on_device) if d):
                    check(args, result.shape)

        return thunk

    def perform(self, node, inputs, output_storage):
        kernel = self.target.elementwise(self.scalar_op, [i.type.dtype for i in node.inputs],
                                          node.outputs[0].type.dtype)
        output_storage[0][0] = self.target.wrap(kernel(*[self._arg(v) for v in inputs]))


class GpuCAReduce(GpuOp):
    """Sum / max / min / prod over axes, on the device."""

    __props__ = ("scalar_name", "axis", "device_name")

    def __init__(self, scalar_name, axis, target):
        self.scalar_name, self.axis = scalar_name, tuple(axis)
        self._init_target(target)

    def __str__(self):
        return f"GpuCAReduce{{{self.scalar_name}, axis={list(self.axis)}}}"

    work = CAReduce.work

    def make_node(self, x):
        bcast = tuple(b for i, b in enumerate(x.type.broadcastable) if i not in self.axis)
        dtype = _REDUCERS[self.scalar_name](np.ones((1,), dtype=x.type.dtype)).dtype.name
        if self.scalar_name in ("maximum", "minimum"):
            dtype = x.type.dtype
        return Apply(self, [x], [_dev_type(self.target, dtype, bcast)])

    def perform(self, node, inputs, output_storage):
        xp = self.target.xp
        fn = {"add": xp.sum, "maximum": xp.max, "minimum": xp.min, "mul": xp.prod}[self.scalar_name]
        output_storage[0][0] = self.target.wrap(fn(self.target.unwrap(inputs[0]), axis=self.axis))


class GpuDot(GpuOp):
    __props__ = ("device_name",)
    work = Dot.work

    def __init__(self, target):
        self._init_target(target)

    def make_node(self, x, y):
        bx, by = x.type.broadcastable, y.type.broadcastable
        bcast = (bx[:-1] if x.type.ndim == 2 else ()) + (by[1:] if y.type.ndim == 2 else ())
        dtype = np.result_type(x.type.dtype, y.type.dtype).name
        return Apply(self, [x, y], [_dev_type(self.target, dtype, bcast)])

    def perform(self, node, inputs, output_storage):
        x, y = (self.target.unwrap(v) for v in inputs)
        output_storage[0][0] = self.target.wrap(self.target.xp.dot(x, y))


class GpuGemm(GpuOp):
    """``beta * z + alpha * dot(x, y)`` on the device (cuBLAS on a real GPU)."""

    __props__ = ("inplace", "device_name")

    def __init__(self, target, inplace=False):
        self.inplace = inplace
        self.destroy_map = {0: [0]} if inplace else {}
        self._init_target(target)

    work = Gemm.work

    def __str__(self):
        return f"{type(self).__name__}{{{'inplace' if self.inplace else 'no_inplace'}}}"

    def make_node(self, z, alpha, x, y, beta):
        dot_out = GpuDot(self.target).make_node(x, y).outputs[0].type
        return Apply(self, [z, alpha, x, y, beta], [_dev_type(self.target, dot_out.dtype, dot_out.broadcastable)])

    def perform(self, node, inputs, output_storage):
        unwrap, xp = self.target.unwrap, self.target.xp
        z, alpha, x, y, beta = inputs
        alpha, beta = float(np.asarray(alpha)), float(np.asarray(beta))
        prod = xp.dot(unwrap(x), unwrap(y))
        if alpha != 1.0:
            prod *= alpha
        if beta != 0.0:
            zz = unwrap(z)
            if self.inplace and zz.shape == prod.shape:
                if beta != 1.0:
                    zz *= beta
                zz += prod
                output_storage[0][0] = z
                return
            prod += zz if beta == 1.0 else beta * zz
        output_storage[0][0] = self.target.wrap(prod)


class GpuGemv(GpuGemm):
    """``beta * z + alpha * dot(A, x)`` with a vector x, on the device."""


class GpuDimShuffle(GpuOp):
    __props__ = ("input_broadcastable", "new_order", "device_name")
    view_map = {0: [0]}

    def __init__(self, cpu_op, target):
        self.cpu_op = cpu_op
        self.input_broadcastable, self.new_order = cpu_op.input_broadcastable, cpu_op.new_order
        self._init_target(target)

    def __str__(self):
        return "GpuDimShuffle{" + ",".join(map(str, self.new_order)) + "}"

    def make_node(self, x):
        out = DimShuffle.make_node(self.cpu_op, x).outputs[0].type
        return Apply(self, [x], [_dev_type(self.target, out.dtype, out.broadcastable)])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = self.target.wrap(self.cpu_op.apply_to(self.target.unwrap(inputs[0])))


class GpuReshape(GpuOp):
    __props__ = ("ndim", "device_name")
    view_map = {0: [0]}

    def __init__(self, ndim, target):
        self.ndim = ndim
        self._init_target(target)

    def make_node(self, x, shape):
        bcast = tuple(int(s) == 1 for s in shape.data) if isinstance(shape, Constant) else (False,) * self.ndim
        return Apply(self, [x, shape], [_dev_type(self.target, x.type.dtype, bcast)])

    def perform(self, node, inputs, output_storage):
        x, shape = inputs
        output_storage[0][0] = self.target.wrap(self.target.unwrap(x).reshape(tuple(int(s) for s in shape)))


class GpuSubtensor(GpuOp):
    __props__ = ("idx_list", "device_name")
    view_map = {0: [0]}

    def __init__(self, idx_list, target):
        self.idx_list = idx_list
        self._init_target(target)

    def __str__(self):
        return "GpuSubtensor{" + ", ".join(_describe(e) for e in self.idx_list) + "}"

    def make_node(self, x, *index_vars):
        bcast = _output_bcast(self.idx_list, x.type.broadcastable)
        return Apply(self, [x, *index_vars], [_dev_type(self.target, x.type.dtype, bcast)])

    def perform(self, node, inputs, output_storage):
        x, *values = inputs
        result = self.target.unwrap(x)[_decode(self.idx_list, values)]
        output_storage[0][0] = self.target.wrap(result)


class GpuCustomOp(GpuOp):
    """The device version of a user's Op that brings its own GPU code.

    A custom op keeps its NumPy ``perform`` (the reference, used on the CPU
    and by DebugMode) and adds one of:

    * ``gpu_perform(node, inputs, output_storage)`` -- inputs are C-contiguous
      device arrays (a transposed or sliced input is copied first: kernels
      index memory linearly);
      store device arrays in ``output_storage[i][0]`` (allocate them with
      ``coursekit.cuda.empty``), typically after launching a kernel from
      ``coursekit.cuda.SourceModule``;
    * ``make_gpu_thunk(node, storage_map)`` -- Theano's storage-cell style.

    Placement wraps such an op in this class when its data is float32 and the
    function runs on a GPU device.
    """

    __props__ = ("cpu_op", "device_name")

    def __init__(self, cpu_op, target):
        self.cpu_op = cpu_op
        self.destroy_map = getattr(cpu_op, "destroy_map", {})
        self._init_target(target)

    def __str__(self):
        return f"Gpu{self.cpu_op}"

    def make_node(self, *inputs):
        host_inputs = [i.type.host_type().make_variable() if isinstance(i.type, GpuArrayType) else i for i in inputs]
        cpu_node = self.cpu_op.make_node(*host_inputs)
        outputs = [_dev_type(self.target, o.type.dtype, o.type.broadcastable) for o in cpu_node.outputs]
        return Apply(self, list(inputs), outputs)

    def make_thunk(self, node, storage_map):
        if hasattr(self.cpu_op, "make_gpu_thunk"):
            from ..config import config

            with config.change(device=self.target.name):
                thunk = self.cpu_op.make_gpu_thunk(node, storage_map)
            out_cells = [storage_map[o] for o in node.outputs]
            device = self.target.name

            def checked():
                with config.change(device=device):
                    thunk()
                self._check_outputs([c[0] for c in out_cells])

            return checked
        return super().make_thunk(node, storage_map)

    def perform(self, node, inputs, output_storage):
        from ..config import config

        inputs = [self._contiguous(v, self.target.xp) for v in inputs]
        # the op's kernels and cuda.empty() must use this op's device, whatever config says at call time
        with config.change(device=self.target.name):
            self.cpu_op.gpu_perform(node, inputs, output_storage)
        self._check_outputs([c[0] for c in output_storage])

    def _contiguous(self, value, xp):
        if not self.target.is_device_array(value):
            return value
        buf = self.target.unwrap(value)
        if buf.flags["C_CONTIGUOUS"]:
            return value
        return self.target.wrap(xp.ascontiguousarray(buf))

    def _check_outputs(self, values):
        for k, value in enumerate(values):
            if not self.target.is_device_array(value):
                raise TypeError(
                    f"{self.cpu_op}.gpu_perform stored a {type(value).__name__} in output {k}; a GPU op must store "
                    f"device arrays ({self.target.label}). Allocate them with coursekit.cuda.empty(shape, dtype).")
