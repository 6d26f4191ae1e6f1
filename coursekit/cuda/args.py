"""Kernel arguments and launch sizes: PyCUDA's In/Out/InOut, and the checks a GPU never makes.

A real GPU launch copies raw bytes into the kernel's parameter slots, so a
value must have a fixed C type: PyCUDA refuses a Python ``int`` with a
``TypeError`` ("invalid type on parameter"), and a launcher that packed it as
8 bytes would hand an ``int`` parameter garbage; pass a float64 array for
``float*`` and the kernel reads halves of doubles.  Nothing crashes, the numbers are just
wrong.  Here every argument is checked against the parameter list parsed
from the source, and a mistake is an error that says how to fix it.  The same
checks run before a real-GPU launch, so the lesson is the same everywhere.
"""
from __future__ import annotations

import numpy as np

from .errors import KernelArgumentError, LaunchConfigError

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2**31 - 1, 65535, 65535)
MAX_SHARED_PER_BLOCK = 48 * 1024


class _HostArg:
    """A host NumPy array with a transfer direction (PyCUDA's driver.In/Out/InOut)."""

    __slots__ = ("array",)
    copy_in = copy_out = False

    def __init__(self, array):
        if not isinstance(array, np.ndarray):
            raise TypeError(f"{type(self).__name__}() wraps a host numpy.ndarray, got {type(array).__name__}")
        self.array = array

    def __repr__(self):
        return f"{type(self).__name__}(<{self.array.dtype} array {self.array.shape}>)"


class In(_HostArg):
    """Copy this host array to the device before the launch (the kernel reads it)."""
    copy_in = True


class Out(_HostArg):
    """Allocate device memory for this array and copy it back to the host after the launch."""
    copy_out = True


class InOut(_HostArg):
    """Copy in before and back out after the launch."""
    copy_in = copy_out = True


def describe(value) -> str:
    if isinstance(value, bool):
        return "a Python bool"
    if isinstance(value, int):
        return "a Python int"
    if isinstance(value, float):
        return "a Python float"
    if isinstance(value, np.generic):
        return f"a numpy.{value.dtype.name} scalar"
    if isinstance(value, np.ndarray):
        return f"a host numpy.ndarray ({value.dtype}, shape {value.shape})"
    if isinstance(value, _HostArg):
        return f"cuda.{type(value).__name__}({value.array.dtype} array, shape {value.array.shape})"
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return f"a {type(value).__module__.split('.')[0]}.{type(value).__name__} ({value.dtype}, shape {value.shape})"
    return f"a {type(value).__name__}"


def _where(kernel, i, p):
    return f"argument {i + 1} ('{p.name}') of kernel {kernel.name}"


def check_count(kernel, args):
    if len(args) != len(kernel.params):
        raise KernelArgumentError(
            f"kernel {kernel.name} takes {len(kernel.params)} argument(s) but got {len(args)}.\n"
            f"  expected: {kernel}\n"
            f"  got:      ({', '.join(describe(a) for a in args)})")


def check_array(kernel, i, p, array):
    """The element type of an array must be what the pointer parameter points to."""
    if p.allowed is not None and array.dtype not in p.allowed:
        want = p.dtypes[0]
        raise KernelArgumentError(
            f"{_where(kernel, i, p)} is a {array.dtype} array, but the parameter is `{p.decl()}`, "
            f"which reads {want} elements; the kernel would misread the bytes. "
            f"Convert it first: a.astype(numpy.{want}).")


def scalar_bytes(kernel, i, p, value) -> bytes:
    """The 8-byte parameter slot for a by-value argument."""
    if isinstance(value, np.generic) and not isinstance(value, np.ndarray):
        if p.dtypes is None:
            if value.dtype.itemsize > 8:
                raise KernelArgumentError(f"{_where(kernel, i, p)}: {describe(value)} is wider than 8 bytes")
            return value.tobytes().ljust(8, b"\0")
        if value.dtype in p.allowed:
            return value.tobytes().ljust(8, b"\0")
        raise KernelArgumentError(
            f"{_where(kernel, i, p)} is {describe(value)}, but the parameter is `{p.decl()}` "
            f"({p.dtypes[0]}); its bytes would be misread. Pass numpy.{p.dtypes[0]}({p.name}).")
    if p.is_pointer:
        return None
    want = p.dtypes[0] if p.dtypes else None
    hint = f"pass numpy.{want}({p.name})" if want else "pass a NumPy scalar of the parameter's exact C type"
    if isinstance(value, (bool, int, float)):
        raise KernelArgumentError(
            f"{_where(kernel, i, p)} is {describe(value)}, but the parameter is `{p.decl()}`. A kernel "
            f"receives raw bytes and a Python number has no fixed C type (PyCUDA refuses it with a TypeError): "
            f"{hint}.")
    raise KernelArgumentError(f"{_where(kernel, i, p)} is {describe(value)}, but the parameter is "
                              f"`{p.decl()}`, a value: {hint}.")


def pointer_error(kernel, i, p, value, device_hint):
    if isinstance(value, np.ndarray):
        return KernelArgumentError(
            f"{_where(kernel, i, p)} is {describe(value)} in host memory, but `{p.decl()}` must point to "
            f"device memory. Wrap it so it is copied: cuda.In(a) (copied to the device), cuda.Out(a) "
            f"(copied back after the launch), cuda.InOut(a) (both), or copy it once with cuda.to_device(a).")
    if isinstance(value, (int, float, np.generic)):
        return KernelArgumentError(
            f"{_where(kernel, i, p)} is {describe(value)}, but the parameter `{p.decl()}` is a pointer: "
            f"pass a device array or cuda.In/Out/InOut(host_array).")
    return KernelArgumentError(f"{_where(kernel, i, p)} is {describe(value)}, which {device_hint}; "
                               f"the parameter `{p.decl()}` needs a device array or cuda.In/Out/InOut.")


# -- launch sizes ---------------------------------------------------------------
def dims(value, what) -> tuple:
    if type(value) is tuple and len(value) == 3 and all(type(v) is int and v > 0 for v in value):
        return value
    if isinstance(value, (int, np.integer)):
        value = (int(value),)
    try:
        vals = tuple(int(v) for v in value)
        if not all(isinstance(v, (int, np.integer)) for v in value):
            raise TypeError
    except (TypeError, ValueError):
        raise LaunchConfigError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}") from None
    if not 1 <= len(vals) <= 3:
        raise LaunchConfigError(f"{what}={value!r} must have 1 to 3 dimensions")
    vals = vals + (1,) * (3 - len(vals))
    if min(vals) < 1:
        raise LaunchConfigError(f"{what}={vals} has a dimension < 1; a launch needs at least one thread/block "
                                "in every dimension")
    return vals


def check_launch(kernel_name, grid, block, dyn_shared, static_shared=0):
    """Refuse what a GPU refuses (CUDA's limits for compute capability ≥ 3.0)."""
    n = block[0] * block[1] * block[2]
    if n > MAX_THREADS_PER_BLOCK:
        raise LaunchConfigError(
            f"kernel {kernel_name}: block={block} has {n} threads, but a block holds at most "
            f"{MAX_THREADS_PER_BLOCK} threads (maxThreadsPerBlock). Use smaller blocks and more of them, "
            f"e.g. block=(256,1,1), grid=((n + 255) // 256, 1).")
    for axis, (v, lim) in enumerate(zip(block, MAX_BLOCK_DIM)):
        if v > lim:
            raise LaunchConfigError(f"kernel {kernel_name}: block dimension {'xyz'[axis]} = {v} exceeds the "
                                    f"limit {lim} (maxThreadsDim = {MAX_BLOCK_DIM}).")
    for axis, (v, lim) in enumerate(zip(grid, MAX_GRID_DIM)):
        if v > lim:
            raise LaunchConfigError(f"kernel {kernel_name}: grid dimension {'xyz'[axis]} = {v} exceeds the "
                                    f"limit {lim} (maxGridSize = {MAX_GRID_DIM}).")
    if dyn_shared < 0:
        raise LaunchConfigError(f"kernel {kernel_name}: shared memory size {dyn_shared} is negative")
    if dyn_shared + static_shared > MAX_SHARED_PER_BLOCK:
        raise LaunchConfigError(
            f"kernel {kernel_name}: {static_shared} bytes of static __shared__ memory + {dyn_shared} bytes of "
            f"dynamic (extern __shared__) memory = {static_shared + dyn_shared} bytes per block, more than the "
            f"{MAX_SHARED_PER_BLOCK} bytes (48 KiB) a block may use by default (sharedMemPerBlock).")
    return n


def call_style(kernel_name, args, block, grid, shared, shared_mem):
    """(grid, block, kernel args, dynamic shared bytes) from either call style.

    PyCUDA: ``f(*args, block=(x,y,z), grid=(x,y), shared=bytes)``;
    CuPy:   ``f(grid, block, args, shared_mem=bytes)``.
    """
    if block is None:
        if len(args) == 3 and isinstance(args[2], (tuple, list)):
            grid, block, args = args[0], args[1], tuple(args[2])
        else:
            raise LaunchConfigError(
                f"kernel {kernel_name}: say how many threads to run, PyCUDA style "
                f"f(*args, block=(256,1,1), grid=(n_blocks,1)) or CuPy style f(grid, block, args).")
    if shared_mem is not None:
        shared = shared_mem
    return dims(grid, "grid"), dims(block, "block"), args, int(shared)
