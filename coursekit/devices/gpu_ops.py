"""GPU twins: the device versions of ops, made from the CPU op by ONE mechanism.

An op written once (:class:`~coursekit.tensor.xpop.XpOp`) declares ``gpu_name``.
:func:`gpu_twin` turns its class into a twin class of that name (``GpuElemwise``,
``GpuGemm``, ``GpuCAReduce``...), made once and cached.  A twin instance wraps
the CPU op (``op.cpu_op``) and the :class:`~coursekit.devices.device.Device` it
runs on (``op.target``); its thunk unwraps device arrays to the device's
``xp`` arrays, calls the CPU op's ``run`` (or the kernel the op asks the
device for), and wraps the results.  Nothing here is written per op.

Twins never derive from their CPU class, so the tutorial's test
``isinstance(node.op, T.Elemwise)`` is False for ``GpuElemwise``; they mirror
the CPU hierarchy among themselves (``GpuGemv`` is a ``GpuGemm``), and their
printed form is the CPU op's with the twin's class name (``GpuGemm{no_inplace}``).

A user's op that brings its own GPU code (``gpu_perform`` or ``make_gpu_thunk``:
lesson 7) becomes a :class:`GpuCustomOp` instead.
"""
from __future__ import annotations

from operator import itemgetter

from ..config import config
from ..graph import Apply, Op
from ..tensor.blas import Dot, Gemm, Gemv
from ..tensor.elemwise import DimShuffle, Elemwise
from ..tensor.reduction import CAReduce
from ..tensor.shape import Reshape
from ..tensor.subtensor import Subtensor
from ..tensor.xpop import XpOp
from .types import GpuArrayType


class GpuOp(Op):
    """What every op on a GPU device shares: the CPU op it was made from, and its device."""
    verified_outputs = True

    __props__ = ("cpu_op", "device_name")
    device = "gpu"

    def __init__(self, cpu_op, target):
        self.cpu_op, self.target, self.device_name = cpu_op, target, target.name
        self.view_map, self.destroy_map = cpu_op.view_map, cpu_op.destroy_map

    def __str__(self):
        """The CPU op's text under the twin's class name, never the device (graphs print alike on sim and cuda)."""
        text, cpu_name = str(self.cpu_op), type(self.cpu_op).__name__
        return type(self).__name__ + text[len(cpu_name):] if text.startswith(cpu_name) else f"Gpu{text}"

    def __getattr__(self, name):
        """The CPU op's attributes read through: ``op.scalar_op``, ``op.inplace``, ``op.axis`` ..."""
        if name.startswith("__") or name == "cpu_op":
            raise AttributeError(name)
        return getattr(self.cpu_op, name)

    def host_input(self, position, var):
        """Does input ``position`` stay in host memory?  As the CPU op declares."""
        return self.cpu_op.host_input(position, var)

    def _scalar_argument(self, var):
        """A one-element host value (0-d, or every axis broadcastable) that this op's kernels take as a scalar argument (placement's host_scalars rule)."""
        return getattr(self.cpu_op, "scalar_arguments", False) and all(var.type.broadcastable)

    def grad(self, inputs, output_grads):
        """The CPU op's gradient (a twin built by user code, e.g. ``gpu_contiguous``, is differentiated before
        placement; placement then moves the gradient's nodes like any others)."""
        return self.cpu_op.grad(inputs, output_grads)

    def L_op(self, inputs, outputs, output_grads):
        return self.cpu_op.L_op(inputs, outputs, output_grads)

    def make_node(self, *inputs):
        """The CPU op's output types, in this device's memory; device inputs must already be on the device."""
        for k, var in enumerate(inputs):
            if not isinstance(var.type, GpuArrayType) and not self.host_input(k, var) and not self._scalar_argument(var):
                raise TypeError(f"{self}: input {k} ({var}) is not on the device; insert GpuFromHost first")
        stand_ins = [v.type.host_type().make_variable() if isinstance(v.type, GpuArrayType) else v for v in inputs]
        cpu_node = self.cpu_op.make_node(*stand_ins)
        outputs = [GpuArrayType(o.type.dtype, o.type.broadcastable, self.target).make_variable()
                   for o in cpu_node.outputs]
        return Apply(self, list(inputs), outputs)

    def make_thunk(self, node, storage_map):
        return self._thunk(node, [storage_map[v] for v in node.inputs], [storage_map[v] for v in node.outputs])

    def perform(self, node, inputs, output_storage):
        self._thunk(node, [[v] for v in inputs], output_storage)()

    def _thunk(self, node, in_cells, out_cells):
        """The one marshalling of a twin's arguments, as a thunk over storage cells.

        Device inputs are unwrapped to ``xp`` arrays, host inputs pass as they
        are; the previous output buffers are handed to the kernel (it reuses
        them when they fit) and a new result is wrapped as a device array.
        """
        device = self.target
        kernel = self.cpu_op.device_kernel(device, node)
        if not device.wraps_arrays:
            # the device's arrays ARE the xp arrays (CuPy's): the kernel reads the cells' values and stores its
            # results in the cells themselves, finding the previous buffers there -- no per-call wrapping
            in_cells, out_cells = tuple(in_cells), list(out_cells)
            first = itemgetter(0)   # map(first, cells): the input values, read in C (no Python frame per call)

            def direct():
                kernel(list(map(first, in_cells)), out_cells)

            return direct
        cells = [(c, isinstance(v.type, GpuArrayType)) for c, v in zip(in_cells, node.inputs)]
        unwrap, wrap, is_mine = device.unwrap, device.wrap, device.is_device_array

        def thunk():
            args = [unwrap(c[0]) if on_device else c[0] for c, on_device in cells]
            previous = [unwrap(c[0]) if is_mine(c[0]) else None for c in out_cells]
            results = [[p] for p in previous]
            kernel(args, results)
            for cell, old, (new,) in zip(out_cells, previous, results):
                if new is not old:
                    cell[0] = wrap(new)

        return thunk


_TWINS: dict = {}


def gpu_twin(cpu_class):
    """The GPU twin class of ``cpu_class``: named by its ``gpu_name``, made on first use, then cached.

    The class that *declares* ``gpu_name`` owns the twin, so ``Sum`` (a
    ``CAReduce``) runs as ``GpuCAReduce``; a subclass that declares its own
    name (``Gemv`` of ``Gemm``) gets a twin deriving from its parent's twin.
    """
    owner = next((c for c in cpu_class.__mro__ if c.__dict__.get("gpu_name")), None)
    if owner is None:
        raise TypeError(f"{cpu_class.__name__} declares no gpu_name: it has no GPU twin")
    twin = _TWINS.get(owner)
    if twin is None:
        parent = next((c for c in owner.__mro__[1:] if c.__dict__.get("gpu_name")), None)
        base = gpu_twin(parent) if parent is not None else GpuOp
        doc = (f"{owner.__name__} on a GPU device (made by gpu_twin from {owner.__module__}.{owner.__name__}; "
               "it runs that class's code on the device's arrays).")
        twin = _TWINS[owner] = type(owner.gpu_name, (base,), {"__doc__": doc, "__module__": __name__,
                                                             "cpu_class": owner, "verified_outputs": True})
    return twin


def gpu_op_for(node, target):
    """The op that runs ``node`` on the GPU device ``target``, or None: read from the op's declarations."""
    op = node.op
    if isinstance(op, XpOp) and op.gpu_name:
        return gpu_twin(type(op))(op, target) if op.gpu_supported(node) else None
    if hasattr(op, "gpu_perform") or hasattr(op, "make_gpu_thunk"):
        return GpuCustomOp(op, target)
    return None


class GpuCustomOp(GpuOp):
    """The device version of a user's Op that brings its own GPU code.

    A custom op keeps its NumPy ``perform`` (the reference, used on the CPU
    and by DebugMode) and adds one of:

    * ``gpu_perform(node, inputs, output_storage)`` -- inputs are C-contiguous
      device arrays (a transposed or sliced input is copied first: kernels
      index memory linearly), except those whose positions the op lists in
      ``host_inputs``, which stay host values;
      store device arrays in ``output_storage[i][0]`` (allocate them with
      ``coursekit.cuda.empty``), typically after launching a kernel from
      ``coursekit.cuda.SourceModule``;
    * ``make_gpu_thunk(node, storage_map)`` -- Theano's storage-cell style.

    Placement wraps such an op in this class when its data is float32 and the
    function runs on a GPU device.  (An op written against ``xp`` needs none of
    this: see :mod:`coursekit.tensor.xpop`.)
    """
    verified_outputs = True

    def __str__(self):
        return f"Gpu{self.cpu_op}"

    def host_input(self, position, var):
        """Every input in device memory, unless the op lists the position in ``host_inputs`` (a loop's
        number of steps, say, which its Python driver reads: uploading it would only bring it back)."""
        return position in getattr(self.cpu_op, "host_inputs", ())

    def make_thunk(self, node, storage_map):
        if hasattr(self.cpu_op, "make_gpu_thunk"):
            with config.change(device=self.target.name):
                thunk = self.cpu_op.make_gpu_thunk(node, storage_map)
            out_cells = [storage_map[o] for o in node.outputs]
            device = self.target.name

            def checked():
                with config.change(device=device):
                    thunk()
                self._check_outputs([c[0] for c in out_cells])

            return checked
        return Op.make_thunk(self, node, storage_map)

    def perform(self, node, inputs, output_storage):
        inputs = [self._contiguous(v) for v in inputs]
        # the op's kernels and cuda.empty() must use this op's device, whatever config says at call time
        with config.change(device=self.target.name):
            self.cpu_op.gpu_perform(node, inputs, output_storage)
        self._check_outputs([c[0] for c in output_storage])

    def _contiguous(self, value):
        device = self.target
        if not device.is_device_array(value) or device.unwrap(value).flags["C_CONTIGUOUS"]:
            return value
        return device.wrap(device.xp.ascontiguousarray(device.unwrap(value)))

    def _check_outputs(self, values):
        for k, value in enumerate(values):
            if not self.target.is_device_array(value):
                raise TypeError(
                    f"{self.cpu_op}.gpu_perform stored a {type(value).__name__} in output {k}; a GPU op must store "
                    f"device arrays ({self.target.label}). Allocate them with coursekit.cuda.empty(shape, dtype).")


# The twins the course names (students look for them in toposort); any other op's twin is made on first use.

GpuElemwise, GpuDimShuffle, GpuCAReduce = gpu_twin(Elemwise), gpu_twin(DimShuffle), gpu_twin(CAReduce)
GpuDot, GpuGemm, GpuGemv = gpu_twin(Dot), gpu_twin(Gemm), gpu_twin(Gemv)
GpuReshape, GpuSubtensor = gpu_twin(Reshape), gpu_twin(Subtensor)
