"""Checked launches: the kernel runs in a subprocess built with AddressSanitizer.

A kernel that writes past the end of an array corrupts memory silently on a
GPU, and in the emulator it would corrupt (or kill) the Python process, i.e.
the student's Jupyter kernel.  In checked mode the launch runs in a separate
program (ck_driver.cpp + the student's source + the runtime, built with
``-fsanitize=address``); an invalid access stops that program only, and its
report is translated here: which kernel, which line of the student's source,
which array and how far past its end, which CUDA thread.
"""
from __future__ import annotations

import os
import re
import resource
import signal
import struct
import subprocess
import sys
import tempfile
import warnings

import numpy as np

from . import compiler, faults
from .errors import KernelRuntimeError, MemoryAccessError
from .source import SOURCE_NAME

ASAN_OPTIONS = ("detect_leaks=0:halt_on_error=1:abort_on_error=0:symbolize=1:print_summary=1:"
                "detect_stack_use_after_return=0:allocator_may_return_null=1:exitcode=86")
# What AddressSanitizer prints when it cannot reserve its shadow memory (ulimit -v).
_SIGNALS = {int(s) for s in signal.Signals}
_NO_SHADOW = ("ReserveShadowMemoryRange failed", "AddressSanitizer failed to allocate",
              "Shadow memory range interleaves")


def address_space_limit():
    """The process's virtual-memory limit in bytes (``ulimit -v``), or None when there is none.

    AddressSanitizer reserves terabytes of address space for its shadow memory
    (cheap, as nothing is touched), so any such limit stops it from starting.
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def _fallback(kernel, slots, arrays, grid, block, dyn, races, limit):
    """No AddressSanitizer here: say so once, then run in-process with the guard pages' checks."""
    global _warned
    if not _warned:
        _warned = True
        shown = f": {limit / 2**20:.0f} MiB" if limit else ""
        warnings.warn(
            f"check=\"memory\" cannot start AddressSanitizer in this process: it has a virtual-memory limit "
            f"(ulimit -v{shown}), and AddressSanitizer needs to reserve terabytes of address space. Kernels run "
            f"in-process instead, where guard pages still catch an access just past the end of an argument, a "
            f"stack overflow and a division by zero, but not every invalid access. For the full check, raise the "
            f"limit (`ulimit -v unlimited`) before starting Python/Jupyter.", RuntimeWarning, stacklevel=4)
    if races:
        kernel._run_both_orders(slots, arrays, grid, block, dyn)
    else:
        kernel._launch(slots, grid, block, dyn, False, arrays)


_warned = False


def run_checked(kernel, slots, arrays, grid, block, dyn, races):
    """Run one launch under AddressSanitizer; copy results into ``arrays``' buffers."""
    from .emulator import LABEL, compare_orders
    limit = address_space_limit()
    if limit is not None:
        return _fallback(kernel, slots, arrays, grid, block, dyn, races, limit)
    module = kernel.module
    exe = _executable(module)
    nparams = len(kernel.signature.params)
    slot_values = struct.unpack(f"<{nparams}Q", slots[:8 * nparams]) if nparams else ()
    name = kernel.name.encode()
    req = [struct.pack("<7IQI", kernel._index, *grid, *block, dyn, 3 if races else 1),
           struct.pack("<I", len(name)), name, struct.pack("<I", nparams),
           struct.pack(f"<{nparams}Q", *slot_values), struct.pack("<I", len(arrays))]
    for _, buf, index in arrays:
        req += [struct.pack("<IQ", index, buf.nbytes), buf.tobytes()]
    with tempfile.TemporaryDirectory(prefix="ck-check-") as tmp:
        rq, rs = os.path.join(tmp, "request"), os.path.join(tmp, "response")
        with open(rq, "wb") as f:
            f.write(b"".join(req))
        env = dict(os.environ, ASAN_OPTIONS=ASAN_OPTIONS, COURSEKIT_CUDA_STACK_KB=str(faults.stack_kib()))
        timeout = kernel.last_timeout or None
        try:       # Ctrl-C: subprocess.run kills the child and re-raises KeyboardInterrupt
            proc = subprocess.run([str(exe), rq, rs], capture_output=True, text=True, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise faults.launch_error(kernel, -3, None, arrays, "the checked subprocess",
                                      f"{LABEL}, checked mode") from None
        except KeyboardInterrupt:      # the child is already killed; say which launch stopped
            raise faults.launch_error(kernel, -2, None, arrays, "the checked subprocess",
                                      f"{LABEL}, checked mode") from None
        data = open(rs, "rb").read() if os.path.exists(rs) else b""
    runs, pos = [], 0
    try:
        while pos < len(data):
            rc, = struct.unpack_from("<i", data, pos); pos += 4
            n, = struct.unpack_from("<I", data, pos); pos += 4
            err = data[pos:pos + n].decode(errors="replace"); pos += n
            n, = struct.unpack_from("<I", data, pos); pos += 4
            out = data[pos:pos + n].decode(errors="replace"); pos += n
            results = []
            for _, buf, _ in arrays:
                results.append(np.frombuffer(data[pos:pos + buf.nbytes], dtype=buf.dtype).reshape(buf.shape))
                pos += buf.nbytes
            runs.append((rc, err, out, results))
    except struct.error:
        pass
    if runs and runs[0][2]:
        sys.stdout.write(runs[0][2])
    if proc.returncode != 0 and any(text in proc.stderr for text in _NO_SHADOW):
        return _fallback(kernel, slots, arrays, grid, block, dyn, races, address_space_limit())
    if proc.returncode == -signal.SIGINT:      # Jupyter interrupts the whole process group: the child first
        raise faults.launch_error(kernel, -2, None, arrays, "the checked subprocess", f"{LABEL}, checked mode")
    if proc.returncode != 0:
        raise memory_error(kernel, proc.stderr, proc.returncode)
    for rc, err, _, _ in runs:
        if rc < 0:
            raise KernelRuntimeError(err + faults.caller_line() + f"\n[{LABEL}, checked mode]")
    if races and len(runs) == 2:
        compare_orders(kernel.name, [n for n, _, _ in arrays], runs[0][3], runs[1][3])
    for (_, buf, _), result in zip(arrays, runs[0][3]):
        buf[...] = result


def _executable(module):
    exe = getattr(module, "_asan_exe", None)
    if exe is None:
        exe, _ = compiler.build(module.source, module.options, [e for _, e in module._entries], asan=True,
                                check_nvcc=False)
        module._asan_exe = exe
    return exe


def memory_error(kernel, report, returncode):
    """An AddressSanitizer report, retold in the kernel's own terms (never its raw text)."""
    from .emulator import LABEL
    label = f"{LABEL}, checked mode: AddressSanitizer in a subprocess; the full report is in .report"
    kind = re.search(r"ERROR: AddressSanitizer: ([\w-]+)(?: on (?:unknown )?address (0x[0-9a-f]+))?", report)
    where_m = re.findall(r"CK_WHERE (.*)", report)
    where = where_m[-1] if where_m else "the kernel"
    line = None
    for m in re.finditer(re.escape(SOURCE_NAME) + r":(\d+)", report):
        line = int(m.group(1))
        break
    if not kind:       # never AddressSanitizer's raw text in the message: it goes to .report
        how = (f"signal {signal.Signals(-returncode).name}" if returncode < 0 and -returncode in _SIGNALS
               else f"exit status {returncode}")
        error = KernelRuntimeError(
            f"kernel `{kernel.name}`: the checked launch (AddressSanitizer, in a subprocess) stopped with {how} "
            f"and left no report that names a fault. What it printed is in the error's .report attribute. Launch "
            f"once with check=False, where guard pages catch a stack overflow, a division by zero and an access "
            f"just past an argument's end.{faults.caller_line()}\n[{LABEL}, checked mode]")
        error.report = report
        return error
    what, addr = kind.group(1), int(kind.group(2) or "0", 16)
    if what == "stack-overflow":
        return faults.stack_overflow(kernel, where, line, faults.stack_kib(), label)
    if what == "FPE":
        return faults.division_fault(kernel, where, line, 0, label)
    access = re.search(r"\b(READ|WRITE) (?:of size \d+|memory access)", report)
    access = access.group(1).lower() if access else "access"
    arrays = [(kernel.signature.params[int(m.group(1))].name, int(m.group(2), 16), int(m.group(1)), int(m.group(3)))
              for m in re.finditer(r"CK_ARRAY (\d+) (0x[0-9a-f]+) (\d+)", report)]
    shared = re.findall(r"CK_SHARED (0x[0-9a-f]+) (\d+)", report)
    if shared and int(shared[-1][1]):
        arrays.append(("extern __shared__ memory", int(shared[-1][0], 16), None, int(shared[-1][1])))
    blamed = faults.blame(addr, arrays, kernel) if addr else None
    glob = re.search(r"(\d+) bytes (?:to the right|to the left|after|before) of global variable '(\w+)'.*of size "
                     r"(\d+)", report)
    local = re.search(r"'(\w+)' \(line (\d+)\) <== Memory access at offset \d+ (overflows|underflows)", report)
    if blamed is None and (glob or local):
        name, size = (glob.group(2), f"{glob.group(3)} bytes") if glob else (local.group(1), "a local array")
        kind_of = "__shared__/global array" if glob else "local array"
        return MemoryAccessError(
            f"kernel `{kernel.name}`: out-of-bounds {access} on the {kind_of} `{name}` ({size}) in {where}"
            f"{faults._at(kernel, line)}\n  Check the index against the array's size.{faults.caller_line()}"
            f"\n[{label}]", line=line, report=report)
    return faults.bad_access(kernel, where, line, access, addr, blamed, label,
                             "AddressSanitizer's report is in the error's .report attribute.", report=report)
