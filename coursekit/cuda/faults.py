"""Safety of unchecked emulator launches: guarded buffers, stack/stop settings, fault messages.

An unchecked launch runs the student's kernel inside the notebook's own
process, so the runtime (``ck_faults.h``) turns every way a kernel can hurt
that process into a record, and this module turns the record into an error
that names the real fault, the kernel, the student's line and the Python
line of the launch:

* each CUDA thread's stack has a guard page below it: an overflow is a
  :class:`StackOverflowError`, never a write into the user's arrays;
* ``In``/``Out``/``InOut`` buffers and ``cuda.to_device/empty/zeros`` arrays
  end exactly where a PROT_NONE page begins (:func:`guarded_empty`): the first
  access past the end faults and becomes a :class:`MemoryAccessError` naming
  the argument and the index;
* integer division by zero (SIGFPE) is reported as such;
* Ctrl-C (Jupyter's interrupt) stops a launch on the main thread at once,
  and a watchdog stops any launch after ``COURSEKIT_CUDA_TIMEOUT`` seconds.

What it cannot see: an access that lands in other valid memory (far past
an unguarded array, or inside a neighbouring one).  ``check="memory"``
(AddressSanitizer in a subprocess) sees those.
"""
from __future__ import annotations

import ctypes
import functools
import linecache
import mmap
import os
import shutil
import signal
import subprocess
import sys

import numpy as np

from .errors import IntegerDivisionError, KernelTimeoutError, MemoryAccessError, StackOverflowError
from .source import SOURCE_NAME, source_line

DEFAULT_STACK_KIB = 512        # a GPU allows up to 512 KiB of local memory per thread
DEFAULT_TIMEOUT_S = 20.0
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # .../coursekit
_PAGE = mmap.PAGESIZE
_NEAR = 1 << 20                # an address this close to an argument is blamed on it

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.mprotect.restype = ctypes.c_int


def stack_kib() -> int:
    """Stack per emulated CUDA thread in KiB (``COURSEKIT_CUDA_STACK_KB``, default 512)."""
    return _env_number("COURSEKIT_CUDA_STACK_KB", DEFAULT_STACK_KIB, int)


def timeout_s() -> float:
    """Watchdog for one launch in seconds (``COURSEKIT_CUDA_TIMEOUT``, default 20; 0 = none)."""
    return _env_number("COURSEKIT_CUDA_TIMEOUT", DEFAULT_TIMEOUT_S, float)


def _env_number(name, default, kind):
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not a number") from None
    if value < 0:
        raise ValueError(f"environment variable {name}={raw!r} must not be negative")
    return value


def guarded_empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array whose last byte is followed by a PROT_NONE page.

    The array is placed at the end of its own anonymous mapping, so index ``n``
    of an ``n``-element array is already in the guard page: an off-by-one
    (``i <= n``) faults at once instead of landing in slack.  (The start is
    then aligned to the element size, and to 16 bytes whenever the size in
    bytes is a multiple of 16.)  Falls back to ``np.empty`` if ``mprotect``
    is refused.
    """
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    nbytes = count * dtype.itemsize
    if nbytes == 0:
        return np.empty(shape, dtype)
    data_pages = -(-nbytes // _PAGE)
    mm = mmap.mmap(-1, (data_pages + 1) * _PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    if _libc.mprotect(base + data_pages * _PAGE, _PAGE, 0) != 0:
        return np.empty(shape, dtype)
    start = data_pages * _PAGE - nbytes
    return np.frombuffer(mm, np.uint8, nbytes, start).view(dtype).reshape(shape)


# -- turning a runtime record into an error ---------------------------------------
SIGFPE_INTDIV, SIGFPE_INTOVF = 1, 2


def launch_error(kernel, rc, lib, arrays, where, label):
    """The exception for ck_launch's rc -2 (SIGINT), -3 (watchdog) or -4 (fault)."""
    name = kernel.name
    called = caller_line()
    if rc == -2:
        return KeyboardInterrupt(f"kernel `{name}` was interrupted (Ctrl-C / the notebook's interrupt) while "
                                 f"running {where}; the launch was abandoned and its output arrays hold partial "
                                 f"results.{called}\n[{label}]")
    if rc == -3:
        return KernelTimeoutError(
            f"kernel `{name}` was stopped by the emulator's watchdog after {kernel.last_timeout:g} s, while "
            f"running {where}: an endless loop (a spin-wait on a flag another thread never sets, a loop "
            f"variable that never reaches its bound)? A GPU would hang here too. If the launch is just "
            f"slow, raise the limit with COURSEKIT_CUDA_TIMEOUT=seconds (0 = none) or timeout=... on the "
            f"call.{called}\n[{label}]")
    info = lib.lib.ck_fault_info
    sig, code, addr, pc_off, write, guard = (info(k) for k in range(6))
    line = kernel_line(lib.path, pc_off)
    access = {1: "write", 0: "read"}.get(write, "access")
    if guard >= 0:
        return stack_overflow(kernel, where, line, info(6) // 1024, label)
    if sig == signal.SIGFPE:
        return division_fault(kernel, where, line, code, label)
    return bad_access(kernel, where, line, access, addr, blame(addr, arrays, kernel), label,
                      "Launch again with check=\"memory\" for AddressSanitizer's view.")


# -- messages shared by the unchecked runtime and checked mode (checked.py) --------------
def _at(kernel, line):
    return f" on line {line} of your source:\n    {source_line(kernel.module.source, line)}" if line else ""


def stack_overflow(kernel, where, line, kib, label):
    line = _header_line(kernel.module.source, line)
    return StackOverflowError(
        f"kernel `{kernel.name}`: stack overflow in {where}{_at(kernel, line)}\n  a CUDA thread used more than its "
        f"{kib} KiB of stack: local arrays too large, or recursion too deep. A GPU allows at most 512 KiB of local "
        f"memory per thread. Keep big arrays in global memory (a buffer you pass in) or __shared__ memory, and turn "
        f"deep recursion into a loop (the emulator's limit is COURSEKIT_CUDA_STACK_KB). The overflow hit a guard "
        f"page: none of your arrays was touched.{caller_line()}\n[{label}]", line=line)


def _header_line(source, line):
    """The function's header for a fault in its prologue, which debug info files under the line of its ``{``."""
    lines = source.splitlines()
    if line and 1 < line <= len(lines) and lines[line - 1].strip() == "{":
        line -= 1
        while line > 1 and not lines[line - 1].strip():
            line -= 1
    return line


def division_fault(kernel, where, line, code, label):
    what = ("integer overflow in a division (INT_MIN / -1)" if code == SIGFPE_INTOVF
            else "integer division (or %) by zero" if code == SIGFPE_INTDIV
            else "integer division (or %) by zero, or INT_MIN / -1")
    return IntegerDivisionError(
        f"kernel `{kernel.name}`: {what} in {where}{_at(kernel, line)}\n  On a GPU this gives a meaningless value "
        f"without any error. Check the divisor first (e.g. `if (d != 0)`).{caller_line()}\n[{label}]", line=line)


def bad_access(kernel, where, line, access, addr, blamed, label, wild_hint, report=""):
    """An out-of-bounds access on a named argument (``blamed`` from :func:`blame`) or a wild one."""
    called = caller_line()
    if blamed:
        pname, index, count, itemsize, ctype = blamed
        side = "past the end" if index >= count else "before the start"
        return MemoryAccessError(
            f"kernel `{kernel.name}`: out-of-bounds {access} on argument `{pname}` at index {index}, {side} (it has "
            f"{count} elements of {itemsize}-byte {ctype}), in {where}{_at(kernel, line)}\n  On a GPU this would "
            f"silently corrupt memory or fail later. Guard the access, e.g. `if (i < n)`, and check the grid covers "
            f"exactly n elements.{called}\n[{label}]", line=line, report=report)
    return MemoryAccessError(
        f"kernel `{kernel.name}`: invalid memory {access} at address {addr:#x} in {where}{_at(kernel, line)}\n  The "
        f"address is not inside or next to any argument: a wild or uninitialised pointer, or an index far out of "
        f"range. On a GPU this is an \"illegal memory access\". {wild_hint}{called}\n[{label}]",
        line=line, report=report)


def blame(addr, arrays, kernel):
    """(param name, element index, element count, itemsize, C type) of the argument next to ``addr``, or None.

    ``arrays``: (param name, base address or ndarray, param index[, nbytes]) per argument; a
    param index of None is a byte buffer that is not a parameter (dynamic shared memory).
    """
    best = None
    for entry in arrays:
        pname, buf, i = entry[:3]
        param = kernel.signature.params[i] if i is not None else None
        dtype = buf.dtype if isinstance(buf, np.ndarray) else (param and param.dtype) or np.dtype(np.uint8)
        base = buf.__array_interface__["data"][0] if isinstance(buf, np.ndarray) else buf
        nbytes = buf.nbytes if isinstance(buf, np.ndarray) else entry[3]
        itemsize = max(dtype.itemsize, 1)
        end = base + nbytes
        if base - _NEAR <= addr < end + _NEAR and not base <= addr < end:
            distance = addr - end if addr >= end else base - addr
            if best is None or distance < best[0]:
                ctype = param.base if param is not None and param.base else str(dtype)
                best = (distance, (pname, (addr - base) // itemsize, nbytes // itemsize, itemsize, ctype))
    return best[1] if best else None


@functools.lru_cache(maxsize=256)
def kernel_line(library_path, offset):
    """Line of the student's source for an instruction offset in the kernel library (addr2line), or None."""
    tool = shutil.which("addr2line")
    if offset is None or offset < 0 or tool is None:
        return None
    try:
        out = subprocess.run([tool, "-e", library_path, "-i", hex(offset)], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for entry in out.splitlines():            # innermost inlined frame first
        file, _, line = entry.rpartition(":")
        # g++ files a function's prologue (where a stack overflow faults) under the
        # translation unit's own name, with the line numbers of `#line 1 "kernel.cu"`
        if file.endswith((SOURCE_NAME, ".cpp")) and line.split()[0].isdigit():
            return int(line.split()[0]) or None
    return None


def caller_line() -> str:
    """'\\n  launched from FILE, line N: CODE' for the first frame outside coursekit ('' if none)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_ROOT + os.sep):
        frame = frame.f_back
    if frame is None:
        return ""
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    code = linecache.getline(filename, lineno).strip()
    return f"\n  launched from {filename}, line {lineno}" + (f": {code}" if code else "")
