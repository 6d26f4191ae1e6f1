"""One ``Device`` object per place where work can run: ``cpu``, ``sim``, ``cuda:N``.

Everything that differs between devices is answered here, and only here:

==========================  =====================================================
memory                      ``empty zeros to_device to_host is_device_array``,
                            ``wrap``/``unwrap`` (device array <-> ``xp`` array),
                            ``output_handle``/``handle`` (what a function hands
                            its caller: see :mod:`.handles`)
array module                ``xp``: NumPy (``cpu``, ``sim``) or CuPy (``cuda:N``)
kernels                     ``elementwise(scalar_op, in_dtypes, out_dtype)``: NumPy
                            ufuncs, or ONE generated CUDA kernel on a real GPU;
                            ``raw_kernels``: which compiler ``coursekit.cuda``
                            uses for hand-written CUDA C ("nvrtc" or "emulator")
synchronisation and timing  ``synchronize()``, ``stopwatch()`` (CUDA events on a
                            real GPU, ``perf_counter`` elsewhere)
what it is                  ``name``, ``label``, ``is_gpu`` (a separate memory
                            space that GPU ops run in), ``simulated``
cost model                  ``model``: ``None`` here.  A cost model (what a GPU
                            *would* take) is attached per device object, e.g.
                            ``devices.get("sim").model = preset``; ops and the
                            profiler read ``device.model`` and never need to know
                            which device class they talk to.
==========================  =====================================================

Graph ops, ``coursekit.cuda``, the linker and the profiler ask the device;
nothing decides "GPU or not" or "simulated or not" from a class name, a
module name or a label string.  CuPy is imported by :class:`CudaDevice` only.
"""
from __future__ import annotations

import importlib
import time

import numpy as np

from ..config import config
from ..graph import warn_at_user_line
from .handles import handing_out, handle_class
from .simarray import DEVICE_LABEL, SimArray


class DeviceError(RuntimeError):
    """The requested device cannot be used here."""

    user_facing = True


class Float64Error(TypeError):
    """float64 data on a GPU device with ``warn_float64='raise'``."""

    user_facing = True


def float64_on_gpu(what):
    """Apply ``config.warn_float64`` to something float64 that cannot live on the GPU."""
    message = (f"{what}: GPUs are fast in float32, so coursekit keeps float64 on the host. Cast to float32 "
               "(floatX=float32, .astype('float32')) to use the GPU, or set warn_float64='ignore'.")
    if config.warn_float64 == "raise":
        raise Float64Error(message)
    if config.warn_float64 == "warn":
        warn_at_user_line(message)


def _codegen():
    """(elementwise_kernel_parts, reduction_kernel_parts) of :mod:`coursekit.scalar.cuda_codegen`, loaded when
    a kernel is first built."""
    from ..scalar.cuda_codegen import elementwise_kernel_parts, reduction_kernel_parts  # coursekit.cuda never needs it
    return elementwise_kernel_parts, reduction_kernel_parts


def fits(buffer, like, array_type):
    """Can ``buffer`` (the previous output, maybe None) take a copy of ``like``?  Same type, shape, dtype."""
    return type(buffer) is array_type and buffer.shape == like.shape and buffer.dtype == like.dtype


class Stopwatch:
    """``with device.stopwatch() as sw: ...`` then ``sw.seconds``: host wall time, after synchronising."""

    clock = "CPU wall clock (time.perf_counter)"

    def __init__(self, device):
        self.device, self.seconds = device, None

    def __enter__(self):
        self.device.synchronize()
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.device.synchronize()
        self.seconds = time.perf_counter() - self._start


class Device:
    """What every device answers; subclasses fill in memory, kernels and timing."""

    name = "?"
    label = "?"
    is_gpu = False          # a separate memory space that GPU ops run in
    simulated = False       # True: results are exact, timings are CPU timings (say so wherever shown)
    xp = np                 # the array module kernels are written against
    array_type = np.ndarray  # what this device's memory looks like from Python
    raw_kernels = "emulator"  # how coursekit.cuda runs hand-written CUDA C for this device
    model = None            # a cost model attached to this device object (see the module docstring)
    blas = None             # a BLAS module shaped like cupy.cublas (gemm, gemv into given buffers), or None
    wraps_arrays = False    # True where device arrays wrap the xp arrays kernels compute on (wrap/unwrap do work)
    fast_input_type = None  # a class whose instances (that exact type) are surely this device's memory, or None

    # -- memory ---------------------------------------------------------------
    def is_device_array(self, value) -> bool:
        return False

    def wrap(self, array):
        """An ``xp`` array (a kernel's result) -> this device's array."""
        return array

    def unwrap(self, value):
        """This device's array -> the ``xp`` array a kernel computes on."""
        return value

    def output_handle(self, borrowed):
        """How a compiled function turns this device's output buffers into what it returns: ``None`` when it
        returns them as they are (everywhere but a real GPU), else a callable (``borrowed``: Out(borrow=True))."""
        return None

    def handle(self, array):
        """A device array as the caller gets it (``get_value(return_internal_type=True)``)."""
        return array

    def empty(self, shape, dtype):
        return self.wrap(self.xp.empty(shape, dtype))

    def zeros(self, shape, dtype):
        return self.wrap(self.xp.zeros(shape, dtype))

    # -- kernels --------------------------------------------------------------
    def elementwise(self, scalar_op, input_dtypes, output_dtype):
        """A callable ``f(*xp_arrays, out=None)`` computing the scalar op (or fused Composite) elementwise."""
        return scalar_op.impl

    def forget_kernels(self, scalar_op):
        """Drop what this device compiled for ``scalar_op`` (nothing: it runs the op's own impl)."""

    # -- synchronisation and timing ---------------------------------------------
    def synchronize(self):
        """Wait until queued work is done (nothing is ever queued on the CPU or the simulated GPU)."""

    def stopwatch(self):
        return Stopwatch(self)

    # -- placement ------------------------------------------------------------
    def initial_shared(self, host_value, ttype):
        """(storage value, type) for a new shared variable: host memory, unless a GPU device takes it."""
        return host_value, ttype

    def __repr__(self):
        return f"<device {self.name}: {self.label}>"

    def __str__(self):
        """The label, for messages and tables (decisions read the attributes, never this text)."""
        return self.label


class CPUDevice(Device):
    """Host memory, NumPy kernels."""

    name = "cpu"
    label = "CPU (NumPy)"

    def to_device(self, host, out=None):
        return np.array(host, copy=True)

    def to_host(self, value, out=None):
        return value


class GPUDevice(Device):
    """A device with its own memory space: float32 shared values live there, GPU ops run there."""

    is_gpu = True

    def initial_shared(self, host_value, ttype):
        """float32 values move to the device; float64 stays on the host (with a warning)."""
        if ttype.dtype == "float32":
            from .types import GpuArrayType  # a tensor type: coursekit.cuda uses devices without tensors

            return self.to_device(host_value), GpuArrayType(ttype.dtype, ttype.broadcastable, self)
        if ttype.dtype == "float64":
            float64_on_gpu(f"a float64 shared variable of shape {host_value.shape} stays in host memory")
        return host_value, ttype


class SimDevice(GPUDevice):
    """The *simulated* GPU: a separate memory space of :class:`SimArray` s, NumPy kernels on their buffers.

    It keeps the lessons' graphs, transfers and host/device mix-ups exactly as
    on a GPU; it is never faster than NumPy, and its timings are CPU timings.
    """

    name = "sim"
    label = DEVICE_LABEL
    simulated = True
    array_type = SimArray
    wraps_arrays = True
    fast_input_type = SimArray
    timeline = None  # an asynchronous timeline (costmodel.timeline.Timeline.attached) that synchronize() waits on

    def synchronize(self):
        """Nothing is queued on the simulated GPU itself; an attached modelled timeline is synchronised."""
        if self.timeline is not None:
            self.timeline.synchronize()

    def is_device_array(self, value):
        return type(value) is SimArray

    def wrap(self, array):
        return SimArray(array if type(array) is np.ndarray else np.asarray(array))

    def unwrap(self, value):
        return value._buf  # this device owns SimArray's memory: the one place outside SimArray that reads it

    def empty(self, shape, dtype):
        """Uninitialised device memory: filled with 0xFF bytes (NaN, -1), as fresh GPU memory holds garbage."""
        array = SimArray.empty(shape, dtype)
        self.unwrap(array).reshape(-1).view(np.uint8).fill(0xFF)
        return array

    def to_device(self, host, out=None):
        """Host -> device copy; into ``out`` (the previous device buffer) when it fits."""
        if type(host) is SimArray:  # numpy.asarray would copy it home and back: a mix-up, not a transfer
            raise TypeError("to_device: the value is already in the simulated GPU's memory; use it as it is, "
                            "or .copy() it")
        host = np.asarray(host)
        if fits(out, host, SimArray):
            out._buf[...] = host
            return out
        return SimArray.from_host(host)

    def to_host(self, value, out=None):
        """Device -> host copy; into ``out`` (the previous host buffer) when it fits."""
        if fits(out, value, np.ndarray):
            np.copyto(out, value._buf)
            return out
        return value.get()


class CudaDevice(GPUDevice):
    """A real NVIDIA GPU through CuPy: cuBLAS, generated ``ElementwiseKernel`` s, NVRTC, CUDA events."""

    raw_kernels = "nvrtc"

    def __init__(self, cupy, index=0):
        self.cupy = self.xp = cupy
        self.index = index
        self.name = f"cuda:{index}"
        props = cupy.cuda.runtime.getDeviceProperties(index)
        gpu_name = props["name"]
        self.card = gpu_name.decode() if isinstance(gpu_name, bytes) else str(gpu_name)  # a calibrated preset's key
        self.label = f"GPU {index}: {self.card} (CuPy)"
        self.array_type = cupy.ndarray
        self.handle_class = handle_class(cupy.ndarray)  # numpy.asarray(result) copies home, as in Theano
        self.blas = importlib.import_module(f"{cupy.__name__}.cublas")  # GEMM/GEMV: one cuBLAS call each
        # with one GPU a cupy.ndarray is surely its memory: a function's input check is then one type test
        self.fast_input_type = cupy.ndarray if cupy.cuda.runtime.getDeviceCount() == 1 else None
        self._kernels = {}

    def is_device_array(self, value):
        return isinstance(value, self.cupy.ndarray) and value.device.id == self.index

    def output_handle(self, borrowed):
        """Results leave a function as handles (:mod:`.handles`): ``numpy.asarray(r)`` is a host copy."""
        return handing_out(self.handle_class, borrowed)

    def handle(self, array):
        return array.view(self.handle_class)

    def empty(self, shape, dtype):
        with self.cupy.cuda.Device(self.index):
            return self.cupy.empty(shape, dtype)

    def zeros(self, shape, dtype):
        with self.cupy.cuda.Device(self.index):
            return self.cupy.zeros(shape, dtype)

    def to_device(self, host, out=None):
        if isinstance(host, self.cupy.ndarray):  # numpy.asarray of a handle would copy it home and back
            raise TypeError(f"to_device: the value is already in {self.label} memory; use it as it is, "
                            "or .copy() it")
        host = np.asarray(host)
        if fits(out, host, self.cupy.ndarray):
            out.set(host)
            return out
        with self.cupy.cuda.Device(self.index):
            return self.cupy.asarray(host)

    def to_host(self, value, out=None):
        if (type(out) is np.ndarray and out.shape == value.shape and out.dtype == value.dtype   # fits(), inlined:
                and out.flags.c_contiguous):                                                    # once per result
            value.get(out=out)
            return out
        return self.cupy.asnumpy(value)

    def synchronize(self):
        self.cupy.cuda.Device(self.index).synchronize()

    def stopwatch(self):
        return CudaStopwatch(self)

    def elementwise(self, scalar_op, input_dtypes, output_dtype):
        """ONE generated CUDA kernel (``cupy.ElementwiseKernel``) for the whole scalar expression."""
        key = (scalar_op, tuple(input_dtypes), output_dtype)
        kernel = self._kernels.get(key)
        if kernel is None:
            in_params, out_params, operation, name, preamble = _codegen()[0](
                scalar_op, input_dtypes, output_dtype)
            kernel = self.cupy.ElementwiseKernel(in_params, out_params, operation, name, preamble=preamble)
            self._kernels[key] = kernel

        def run(*arrays, out=None):
            return kernel(*arrays, out) if out is not None else kernel(*arrays)

        return run

    def map_reduce(self, map_op, map_dtypes, post_op, post_dtypes, on_host, out_dtype):
        """ONE generated ``cupy.ReductionKernel``: ``post(sum(map(arrays)), *tail)`` (a FusedSum), called
        ``kernel(*arrays, *tail, out=buffer)``."""
        key = ("sum", map_op, tuple(map_dtypes), post_op, tuple(post_dtypes), tuple(on_host), out_dtype)
        kernel = self._kernels.get(key)
        if kernel is None:
            in_p, out_p, map_expr, reduce_expr, post_expr, identity, name, preamble, reduce_type = \
                _codegen()[1](map_op, map_dtypes, post_op, post_dtypes, on_host, out_dtype)
            kernel = self._kernels[key] = self.cupy.ReductionKernel(
                in_p, out_p, map_expr, reduce_expr, post_expr, identity, name, reduce_type=reduce_type,
                preamble=preamble)
        return kernel

    def forget_kernels(self, scalar_op):
        """Drop the kernels generated for ``scalar_op`` and for every fused chain that contains it."""
        def uses(key):
            # an elementwise kernel's key starts with its scalar op; a map-reduce's holds its map and tail
            ops = (key[1], key[3]) if key[0] == "sum" else (key[0],)
            return any(op is not None and op.uses(scalar_op) for op in ops)

        for key in [key for key in self._kernels if uses(key)]:
            del self._kernels[key]


class CudaStopwatch(Stopwatch):
    """GPU time between two CUDA events (what the GPU spent, not what Python waited)."""

    clock = "CUDA events (GPU time)"

    def __enter__(self):
        cupy = self.device.cupy
        self._start, self._end = cupy.cuda.Event(), cupy.cuda.Event()
        self._start.record()
        return self

    def __exit__(self, *exc):
        self._end.record()
        self._end.synchronize()
        self.seconds = self.device.cupy.cuda.get_elapsed_time(self._start, self._end) / 1e3
