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
import struct
import subprocess
import sys
import tempfile

import numpy as np

from . import compiler
from .errors import KernelRuntimeError, MemoryAccessError
from .source import SOURCE_NAME, source_line

ASAN_OPTIONS = ("detect_leaks=0:halt_on_error=1:abort_on_error=0:symbolize=1:print_summary=1:"
                "detect_stack_use_after_return=0:allocator_may_return_null=1:exitcode=86")
TIMEOUT_S = float(os.environ.get("COURSEKIT_CUDA_CHECK_TIMEOUT", "300"))


def run_checked(kernel, slots, arrays, grid, block, dyn, races):
    """Run one launch under AddressSanitizer; copy results into ``arrays``' buffers."""
    from .emulator import LABEL, compare_orders
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
        env = dict(os.environ, ASAN_OPTIONS=ASAN_OPTIONS)
        try:
            proc = subprocess.run([str(exe), rq, rs], capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise KernelRuntimeError(f"kernel {kernel.name}: the checked launch did not finish in {TIMEOUT_S:.0f} s "
                                     f"(an endless loop?) and was stopped.\n[{LABEL}, checked mode]") from None
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
    if proc.returncode != 0:
        raise memory_error(kernel, proc.stderr, proc.returncode)
    for rc, err, _, _ in runs:
        if rc < 0:
            raise KernelRuntimeError(err + f"\n[{LABEL}, checked mode]")
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
    """An AddressSanitizer report, retold in the kernel's own terms."""
    from .emulator import LABEL
    src = kernel.module.source
    kind = re.search(r"ERROR: AddressSanitizer: ([\w-]+)", report)
    access = re.search(r"\b(READ|WRITE) of size (\d+)", report)
    line = None
    for m in re.finditer(re.escape(SOURCE_NAME) + r":(\d+)", report):
        line = int(m.group(1))
        break
    where = re.search(r"CK_WHERE (.*)", report)
    arrays = {}
    for m in re.finditer(r"CK_ARRAY (\d+) (0x[0-9a-f]+) (\d+)", report):
        arrays[int(m.group(2), 16)] = (int(m.group(1)), int(m.group(3)))
    region = re.search(r"(\d+) bytes (to the right|to the left|inside) of (\d+)-byte region \[(0x[0-9a-f]+),", report)
    if not kind:
        tail = "\n".join(report.strip().splitlines()[-15:])
        return KernelRuntimeError(f"kernel {kernel.name}: the checked launch crashed (exit status {returncode}).\n"
                                  f"{tail}\n[{LABEL}, checked mode]")
    what = f"{access.group(1).lower()} of {access.group(2)} bytes" if access else "invalid memory access"
    msg = f"kernel {kernel.name}: out-of-bounds {what}" if kind.group(1) == "heap-buffer-overflow" \
        else f"kernel {kernel.name}: {kind.group(1)} ({what})"
    if line:
        msg += f" on line {line} of your source:\n    {source_line(src, line)}"
    if region:
        base = int(region.group(4), 16)
        if base in arrays:
            param, size = arrays[base]
            p = kernel.signature.params[param]
            itemsize = max(np.dtype(p.dtypes[0]).itemsize if p.dtypes else 1, 1)
            off = int(region.group(1))
            side = {"to the right": "past the end", "to the left": "before the start"}.get(region.group(2), "inside")
            msg += (f"\n  the access is {off} bytes {side} of argument '{p.name}' "
                    f"({size} bytes = {size // itemsize} elements of {p.base})")
        else:
            msg += f"\n  the access is {region.group(1)} bytes {region.group(2)} of a {region.group(3)}-byte buffer"
    if where:
        msg += f"\n  by {where.group(1)}"
    msg += ("\n  On a GPU this would silently corrupt memory or fail later. Guard the access, "
            "e.g. `if (i < n)`, and check the grid covers exactly n elements."
            f"\n[{LABEL}, checked mode: AddressSanitizer in a subprocess; the full report is in .report]")
    return MemoryAccessError(msg, line=line, report=report)
