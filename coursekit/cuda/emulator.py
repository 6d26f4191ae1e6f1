"""The CPU emulator backend: load the compiled kernel library and launch it.

Device memory is the simulated GPU's :class:`~coursekit.devices.simarray.SimArray`
(a NumPy buffer only device code touches).  ``cuda.In/Out/InOut`` host arrays
get a device buffer of their own per launch, as PyCUDA does; an ``Out`` buffer is
filled with 0xFF bytes first (NaN for floats, -1 for ints) because a GPU's
fresh memory holds leftovers, never the host array's old values.

Check levels (``SourceModule(..., check=...)`` sets the default, a launch's
``check=`` keyword overrides it, env ``COURSEKIT_CUDA_CHECK`` sets it for all):

* ``False`` -- fast: threads of a block run in forward order only;
* ``"races"`` -- run forward and reverse thread (and block) order and compare
  every array: a missing ``__syncthreads()`` shows up as a difference;
* ``"memory"`` -- run in a subprocess built with AddressSanitizer: an
  out-of-bounds access becomes a Python exception naming the line instead of
  killing the notebook's kernel;
* ``True`` -- both, in the subprocess.

Divergent barriers, failed ``assert`` and ``__trap()`` are always detected.

What every mode guarantees (a kernel runs inside the notebook's own process
unless checked, so it must never take the session down; see
:mod:`coursekit.cuda.faults` and ``ck_faults.h`` for how):

* **stack overflow** -- each CUDA thread gets 512 KiB of stack, what a GPU
  allows as local memory (``COURSEKIT_CUDA_STACK_KB``), with a guard page below
  it: locals or recursion that do not fit raise :class:`StackOverflowError`
  naming the kernel and line, and no other memory is touched;
* **endless kernels** -- Ctrl-C / Jupyter's interrupt stops a launch on the
  main thread at once (``KeyboardInterrupt`` naming the kernel), and a
  watchdog stops any launch after ``COURSEKIT_CUDA_TIMEOUT`` seconds (default
  20, 0 = never; ``timeout=`` on a call) with :class:`KernelTimeoutError`; the
  session stays usable, the launch's output arrays are not copied back;
* **faults** -- integer division by zero, an access past the end of an
  argument, a wild pointer: a Python exception naming the real fault, the
  kernel's line, the CUDA thread and the Python line of the launch.

Unchecked (``False``/``"races"``): ``In``/``Out``/``InOut`` buffers and
``cuda.to_device/empty/zeros`` arrays end exactly at a guard page, so the
first element read or written past the end (``if (i <= n)``) is a
:class:`MemoryAccessError` naming the argument and index.  An access that
lands in other valid memory (far out of range, before an argument's start,
or inside a neighbouring array; arrays made elsewhere have no guard page) is
not seen and may corrupt data: that is what checked mode is for.

Checked (``"memory"``/``True``): AddressSanitizer sees every out-of-bounds
access of arguments, shared memory and local arrays, in a subprocess, so
nothing can reach the notebook's memory.  Under a virtual-memory limit
(``ulimit -v``) AddressSanitizer cannot start; checked launches then say so in
a warning and run in-process with the unchecked guarantees above.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

import numpy as np

from coursekit.devices.simarray import SimArray

from . import args as A
from . import faults, warp_counts
from .errors import KernelRuntimeError, RaceConditionError

LABEL = "emulator (CPU)"
_CHECK_LEVELS = {False: False, None: False, "": False, "0": False, "false": False, "off": False,
                 True: True, "1": True, "true": True, "all": True, "on": True,
                 "races": "races", "race": "races", "order": "races", "memory": "memory", "asan": "memory"}


def check_level(value):
    key = value.lower() if isinstance(value, str) else value
    if key not in _CHECK_LEVELS:
        raise ValueError(f"check={value!r}: use False, 'races', 'memory' or True (both)")
    return _CHECK_LEVELS[key]


def default_check():
    return check_level(os.environ.get("COURSEKIT_CUDA_CHECK", "0"))


MAX_EMULATED_THREADS = 2**27    # threads one launch may ask of the CPU emulator (~a minute of work)


def _check_emulated_size(name, grid, block):
    """Refuse a launch the emulator could never finish, saying what the limit is (not a timeout later)."""
    blocks = grid[0] * grid[1] * (grid[2] if len(grid) > 2 else 1)
    threads = blocks * block[0] * block[1] * block[2]
    if threads > MAX_EMULATED_THREADS:
        raise A.LaunchConfigError(
            f"kernel {name}: grid={tuple(grid)} x block={tuple(block)} asks for {blocks:,} blocks, {threads:,} "
            f"threads in all; the CPU emulator runs at most {MAX_EMULATED_THREADS:,} (2**27) threads per launch "
            f"(a GPU accepts grids up to (2**31-1, 65535, 65535) blocks). Launch fewer blocks, e.g. a grid-stride "
            f"loop over a grid of a few thousand blocks.")


class EmulatorTime(float):
    """Seconds measured around an emulated launch.  Not a GPU timing."""

    def __repr__(self):
        return f"{float(self):.6f} s (emulator wall time on the CPU — not a GPU timing)"


# One launch at a time in the whole process: each library's runtime is
# single-threaded, and the signal handlers a launch installs are process-wide.
_LAUNCH_LOCK = threading.Lock()

# Libraries whose fiber stacks are reserved, most recently launched last, with their CUDA thread count.
# Each thread's stack has a guard page, so a library holds about two memory mappings per thread, and
# Linux allows 65530 per process: a process that loads hundreds of modules (a test run, a long notebook)
# must give the idle ones' stacks back. Keeping the recent ones keeps a loop of launches from paying
# the reservation (fresh pages: about 1 ms for 256 threads) every time.
STACKS_KEPT, THREADS_KEPT = 32, 8192      # at most about 16,000 mappings
_HOLDING: dict = {}


def _holds_stacks(lib, threads):
    """Note that ``lib`` just launched ``threads`` per block; give back the least recently launched
    libraries' stacks beyond STACKS_KEPT libraries or THREADS_KEPT threads (``lib``'s own are kept)."""
    _HOLDING.pop(id(lib), None)
    _HOLDING[id(lib)] = (lib, max(64, threads))       # the runtime reserves at least 64 stacks
    while len(_HOLDING) > 1 and (len(_HOLDING) > STACKS_KEPT
                                 or sum(n for _, n in _HOLDING.values()) > THREADS_KEPT):
        idle, _ = _HOLDING.pop(next(iter(_HOLDING)))
        idle.lib.ck_release_fibers()


class EmulatorLibrary:
    """One compiled module (a .so); launches are serialised (the runtime is single-threaded)."""

    def __init__(self, path):
        self.path = str(path)
        self.lib = ctypes.CDLL(self.path)      # ctypes releases the GIL during a launch
        self.lock = _LAUNCH_LOCK
        f = self.lib.ck_launch
        f.restype = ctypes.c_int
        u = ctypes.c_uint
        f.argtypes = [ctypes.c_void_p, ctypes.c_char_p, u, u, u, u, u, u, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_char_p, ctypes.c_int, ctypes.c_double]
        self.launch = f
        self.lib.ck_fault_info.restype = ctypes.c_longlong
        self.lib.ck_fault_info.argtypes = [ctypes.c_int]
        self.lib.ck_set_stack_kib.argtypes = [ctypes.c_size_t]
        self.stack_kib = None
        self.lib.ck_last_error.restype = ctypes.c_char_p
        self.lib.ck_printf_output.restype = ctypes.c_char_p
        self.lib.ck_static_shared_bytes.restype = ctypes.c_size_t
        self.lib.ck_switch_kind.restype = ctypes.c_char_p
        self.static_shared = int(self.lib.ck_static_shared_bytes())
        self.counts_reads = hasattr(self.lib, "ck_count_watch")     # built with count_reads=True

    def entry(self, index):
        return ctypes.cast(getattr(self.lib, f"__ck_entry_{index}"), ctypes.c_void_p).value


class EmulatorKernel:
    """A kernel of a SourceModule, launched on the CPU emulator."""

    backend = LABEL

    def __init__(self, module, signature, index):
        self.module = module
        self.signature = signature
        self.name = signature.name
        self._index = index
        self._entry = None
        self._name_b = signature.name.encode()
        self._static = None
        self.last_timeout = faults.DEFAULT_TIMEOUT_S     # watchdog of the latest launch (for its message)
        self._pool = {}                                  # guarded In/Out buffers for reuse (see _scratch)
        self.bytes_read = None       # count_reads modules: {argument name: bytes loaded} of the latest launch
        self.counts = None           # counts=True modules: the latest launch's warp_counts.WarpCounts

    def __repr__(self):
        return f"<coursekit.cuda kernel {self.signature} on the {LABEL}; results are emulated>"

    # -- the two call styles -------------------------------------------------
    def __call__(self, *args, block=None, grid=(1, 1), shared=0, shared_mem=None, stream=None,
                 time_kernel=False, check=None, order="forward", timeout=None):
        grid, block, args, shared = A.call_style(self.name, args, block, grid, shared, shared_mem)
        if self._static is None:
            self._static = self.module.static_shared_bytes(self.name)
        if (block[0] * block[1] * block[2] > 1024 or shared or self._static or block[2] > 64
                or grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535):
            A.check_launch(self.name, grid, block, shared, self._static)
        _check_emulated_size(self.name, grid, block)
        pooled = []                                      # (key, buffer) to give back to self._pool
        slots, arrays, copy_back = self._marshal(args, pooled)
        level = self.module.check if check is None else check_level(check)
        if level in (True, "memory") and self.module.count_reads and check is None:
            # the default (COURSEKIT_CUDA_CHECK, which the grader sets to "memory") cannot apply to a
            # module that counts loads in this process: it keeps the race check only
            level = "races" if level is True else False
        if level in (True, "memory") and self.module.count_reads:
            flag = "counts" if self.module.warp_counts else "count_reads"
            raise ValueError(f"kernel {self.name}: a module built with {flag}=True counts loads in this "
                             f"process; launch it with check=False or check='races' (check={check!r} asked for the "
                             f"AddressSanitizer subprocess), and check bounds with a module built without it")
        self.last_timeout = faults.timeout_s() if timeout is None else float(timeout)
        start = time.perf_counter()
        try:
            if level in (True, "memory"):
                from .checked import run_checked
                run_checked(self, slots, arrays, grid, block, shared, races=level is True)
            elif level == "races":
                self._run_both_orders(slots, arrays, grid, block, shared)
            else:
                self._launch(slots, grid, block, shared, order == "reverse", arrays)
        except BaseException:
            self._pool.update(pooled)
            raise
        finally:
            elapsed = time.perf_counter() - start
        for host, dev in copy_back:
            host[...] = dev.reshape(host.shape)
        self._pool.update(pooled)
        if time_kernel:
            return EmulatorTime(elapsed)
        return None

    # -- arguments -------------------------------------------------------------
    def _marshal(self, args, pooled):
        """8-byte parameter slots, the device buffers involved, and the Out copies to do."""
        sig = self.signature
        if len(args) != len(sig.params):
            A.check_count(sig, args)
        parts, arrays, copy_back = [], [], []
        for i, (p, a) in enumerate(zip(sig.params, args)):
            if type(a) is SimArray:
                buf = a._buf
                if not p.is_pointer:
                    raise A.KernelArgumentError(
                        f"argument {i + 1} ('{p.name}') of kernel {sig.name} is a device array, but the parameter "
                        f"is `{p.decl()}`, a value: pass a NumPy scalar.")
                if p.allowed is not None and buf.dtype not in p.allowed:
                    A.check_array(sig, i, p, buf)
                if not buf.flags.c_contiguous:
                    raise A.KernelArgumentError(
                        f"argument {i + 1} ('{p.name}') of kernel {sig.name} is a non-contiguous device array; "
                        f"a kernel indexes memory linearly. Make a contiguous copy first.")
                parts.append(_address(buf))
                arrays.append((p.name, buf, i))
            elif isinstance(a, A._HostArg):
                if not p.is_pointer:
                    raise A.KernelArgumentError(
                        f"argument {i + 1} ('{p.name}') of kernel {sig.name} is {A.describe(a)}, but the parameter "
                        f"is `{p.decl()}`, a value, not a pointer.")
                host = a.array
                A.check_array(sig, i, p, host)
                dev = self._scratch(i, host, pooled)
                if a.copy_in:
                    dev[...] = host                                 # also makes strided input contiguous
                else:
                    dev.reshape(-1).view(np.uint8).fill(0xFF)       # fresh device memory is garbage
                if a.copy_out:
                    copy_back.append((host, dev))
                parts.append(_address(dev))
                arrays.append((p.name, dev, i))
            else:
                b = A.scalar_bytes(sig, i, p, a)
                if b is None:
                    raise A.pointer_error(sig, i, p, a, "is not memory of the simulated device (the emulator "
                                          "runs this module)")
                parts.append(b)
        return b"".join(parts) or b"\0" * 8, arrays, copy_back

    def _scratch(self, i, host, pooled):
        """A guarded device buffer for the In/Out argument ``i``: the last launch's when it fits.

        A fresh guard-paged buffer costs an mmap, an mprotect and a munmap
        (tens of microseconds), so one buffer of up to 1 MiB is kept per
        argument position and handed out again for the same shape and dtype.
        It is out of the pool while a launch uses it, so two threads never
        share one.
        """
        kept = self._pool.pop(i, None)
        if kept is not None and kept.shape == host.shape and kept.dtype == host.dtype:
            dev = kept
        else:
            dev = faults.guarded_empty(host.shape, host.dtype)
        if dev.nbytes <= _POOLED_BYTES:
            pooled.append((i, dev))
        return dev

    # -- running -----------------------------------------------------------------

    def _launch(self, slots, grid, block, dyn, reverse, arrays=()):
        lib = self.module.library
        if self._entry is None:
            self._entry = lib.entry(self._index)
        on_main = threading.current_thread() is threading.main_thread()   # only there is Ctrl-C ours
        with lib.lock:
            kib = faults.stack_kib()
            if kib != lib.stack_kib:
                lib.lib.ck_set_stack_kib(kib)
                lib.stack_kib = kib
            if lib.counts_reads:
                _watch(lib, arrays)
                if self.module.warp_counts:
                    warp_counts.begin(lib, dyn)
            rc = lib.launch(self._entry, slots, *grid, *block, dyn, 1 if reverse else 0, self._name_b,
                            1 if on_main else 0, self.last_timeout)
            _holds_stacks(lib, block[0] * block[1] * block[2])
            if lib.counts_reads:
                self.bytes_read = _counted(lib, arrays)
                if self.module.warp_counts:
                    self.counts = warp_counts.end(lib, [name for name, _, _ in arrays], self.name)
            out = lib.lib.ck_printf_output() if rc else None
            err = lib.lib.ck_last_error() if rc < 0 else None
            truncated = rc and lib.lib.ck_printf_truncated()
            failure = faults.launch_error(self, rc, lib, arrays, err.decode(errors="replace"), LABEL) \
                if rc < -1 else None
        if out:
            sys.stdout.write(out.decode(errors="replace"))
        if truncated:
            sys.stdout.write("[printf output truncated at 1 MiB, as CUDA's printf buffer would]\n")
        if failure is not None:
            raise failure
        if rc < 0:
            raise KernelRuntimeError(err.decode(errors="replace") + faults.caller_line() + f"\n[{LABEL}]")

    def _run_both_orders(self, slots, arrays, grid, block, dyn):
        before = [buf.copy() for _, buf, _ in arrays]
        self._launch(slots, grid, block, dyn, False, arrays)
        forward = [buf.copy() for _, buf, _ in arrays]
        for (_, buf, _), saved in zip(arrays, before):
            buf[...] = saved
        self._launch(slots, grid, block, dyn, True, arrays)
        reverse = [buf.copy() for _, buf, _ in arrays]
        compare_orders(self.name, [n for n, _, _ in arrays], forward, reverse)
        for (_, buf, _), f in zip(arrays, forward):
            buf[...] = f


_POOLED_BYTES = 1 << 20


def _address(buf) -> bytes:
    """The data pointer of a NumPy buffer as an 8-byte slot (3x faster than .ctypes.data)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(buf)).to_bytes(8, "little")
    except (TypeError, ValueError):     # read-only or empty buffer
        return buf.ctypes.data.to_bytes(8, "little")


def _watch(lib, arrays):
    """Tell a count_reads library the address range of each array argument, its counts at zero."""
    ranges = []
    for _, buf, _ in arrays:
        start = int.from_bytes(_address(buf), "little")
        ranges += [start, start + buf.nbytes]
    if lib.lib.ck_count_watch(len(arrays), (ctypes.c_uint64 * len(ranges))(*ranges)) != 0:
        raise ValueError(f"count_reads: at most 64 array arguments can be watched, this launch has {len(arrays)}")


def _counted(lib, arrays) -> dict:
    """{argument name: bytes the launch loaded from it}, from a count_reads library."""
    counts = (ctypes.c_ulonglong * max(len(arrays), 1))()
    lib.lib.ck_count_bytes(counts)
    return {name: int(n) for (name, _, _), n in zip(arrays, counts)}


def compare_orders(kernel, names, forward, reverse):
    """Raise RaceConditionError if the two thread orders left different data."""
    for name, f, r in zip(names, forward, reverse):
        f1, r1 = f.reshape(-1), r.reshape(-1)
        if f.dtype.kind in "fc":
            same = np.isclose(f1, r1, rtol=1e-4, atol=1e-6, equal_nan=True)
        else:
            same = f1 == r1
        if not same.all():
            bad = np.flatnonzero(~same)
            i = int(bad[0])
            raise RaceConditionError(
                f"kernel {kernel}: results differ between thread orders: missing __syncthreads()? "
                f"Running the threads of each block first-to-last and last-to-first left different values in "
                f"'{name}' ({bad.size} of {f1.size} elements differ; first at index {i}: {f1[i]!r} vs {r1[i]!r}). "
                f"A correct kernel cannot depend on the order in which threads run: a thread read shared "
                f"data before the thread that writes it reached a barrier.\n[{LABEL}]")
