"""coursekit.cuda -- write real CUDA C kernels; run them on a GPU or on a CPU emulator.

    from coursekit import cuda
    mod = cuda.SourceModule(source)                     # compiled once, cached on disk
    f = mod.get_function("multiply_them")
    f(cuda.Out(dest), cuda.In(a), cuda.In(b), block=(400, 1, 1), grid=(1, 1))   # PyCUDA style
    f((n_blocks,), (256,), (d_out, d_in, numpy.int32(n)))                        # CuPy style

With a GPU that CuPy sees (and coursekit's device setting not ``sim``/``cpu``),
kernels are compiled by NVRTC and run on it.  Otherwise they run on the CPU
emulator: each CUDA thread is a fiber, each block runs to its barriers, and
everything it reports is labelled "emulator (CPU)".  See
:mod:`coursekit.cuda.emulator` for its check modes (missing barriers,
out-of-bounds accesses) and :mod:`coursekit.cuda.compiler` for the cache.

Environment: ``COURSEKIT_CACHE_DIR`` (compiled kernels go to its ``cuda/``
folder; default ``~/.cache/coursekit/cuda``), ``COURSEKIT_CUDA_CHECK``
(default check level: ``races``, ``memory`` or ``1`` for both),
``COURSEKIT_CUDA_TIMEOUT`` (watchdog per launch in seconds, default 20, 0 =
none), ``COURSEKIT_CUDA_STACK_KB`` (stack per emulated thread, default 512),
``COURSEKIT_NO_NVCC=1`` (skip the nvcc compile check), ``COURSEKIT_NVCC_ARCH``
(default ``sm_80``), ``CXX`` (host compiler, default ``g++``).

``SourceModule(..., backend="emulator", counts=True)`` also counts what each
launch's 32-thread warps ask of memory (sectors, bank conflicts, atomics on
one address): see :mod:`coursekit.cuda.warp_counts`.

``__half``/``__half2`` (``cuda_fp16.h``) and ``__nv_bfloat16`` (``cuda_bf16.h``)
round each operation as a GPU does (``ck_half.h``).

Not emulated: ``__constant__`` memory set from the host, textures, tensor-core
(wmma) instructions, cooperative groups, streams/events (launches are synchronous).
An endless loop would hang a GPU; here Ctrl-C (Jupyter's interrupt) or the
watchdog stops it with an error that names the kernel.
"""
import numpy as np

from .args import In, InOut, Out
from .errors import (BackendUnavailableError, CompileError, CudaError, IntegerDivisionError,
                     KernelArgumentError, KernelRuntimeError, KernelTimeoutError, LaunchConfigError,
                     MemoryAccessError, RaceConditionError, StackOverflowError)
from . import compiler
from .faults import guarded_empty
from .module import SourceModule, gpu_available, kernel_device


def to_device(host_array, backend="auto"):
    """Copy a host array to the memory of the device SourceModule would pick (see ``kernel_device``).

    On the emulator the array ends at a guard page (``faults.guarded_empty``),
    so a kernel that runs off its end gets a clear error.
    """
    host = np.ascontiguousarray(host_array)
    device = kernel_device(backend)
    if device.raw_kernels != "emulator":
        return device.to_device(host)
    buf = guarded_empty(host.shape, host.dtype)
    buf[...] = host
    return device.wrap(buf)


def empty(shape, dtype, backend="auto"):
    """Uninitialised device memory (on the emulator it is filled with 0xFF bytes, as garbage)."""
    return _filled(shape, dtype, backend, 0xFF, "empty")


def zeros(shape, dtype, backend="auto"):
    """Device memory filled with zeros."""
    return _filled(shape, dtype, backend, 0, "zeros")


def _filled(shape, dtype, backend, byte, how):
    device = kernel_device(backend)
    if device.raw_kernels != "emulator":
        return getattr(device, how)(shape, dtype)
    buf = guarded_empty(shape, dtype)
    buf.reshape(-1).view(np.uint8).fill(byte)
    return device.wrap(buf)


def compile_check(source, options=()):
    """Prove that CUDA source compiles; return what was checked, raise CompileError if not.

    Uses nvcc when it is installed (the verdict a GPU toolchain gives, cached)
    and always builds the CPU emulator's library too, so the kernels can run here.
    """
    mod = SourceModule(source, options, backend="emulator")
    checked = ["g++ (CPU emulator)"]
    if mod.nvcc_verdict is not None:
        checked.insert(0, mod.nvcc_verdict["tool"])
    return {"ok": True, "kernels": {k: str(s) for k, s in mod.kernels.items()}, "checked_by": checked,
            "shared_bytes": dict(mod.nvcc_verdict["smem"]) if mod.nvcc_verdict else {},
            "nvcc": compiler.nvcc_path()}


__all__ = ["SourceModule", "In", "Out", "InOut", "to_device", "empty", "zeros", "compile_check",
           "gpu_available", "CudaError", "CompileError", "KernelArgumentError", "LaunchConfigError",
           "KernelRuntimeError", "RaceConditionError", "MemoryAccessError", "StackOverflowError",
           "IntegerDivisionError", "KernelTimeoutError", "BackendUnavailableError"]
