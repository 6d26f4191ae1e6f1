"""Compiling kernels: the host C++ build for the emulator, nvcc's verdict, the disk cache.

Why a disk cache: a notebook is re-run top to bottom many times, and a g++
build of a kernel costs a few tenths of a second, nvcc half a second more.
Every artefact is named by a SHA-256 of everything that shapes it (source,
options, the emulator's own prelude/runtime files, the compiler's version),
so a stale artefact can never be picked up; it lives in
``$COURSEKIT_CACHE_DIR/cuda`` (default ``~/.cache/coursekit/cuda``), never
in the repository.

Why nvcc at all on a machine without a GPU: g++ accepts things a GPU
compiler rejects (calling a host function from a kernel, a 100 KiB
``__shared__`` array...).  When ``nvcc`` is on the PATH we ask it first, so a
student's kernel that passes here also compiles on the real GPU.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from .errors import BackendUnavailableError, CompileError
from .source import SOURCE_NAME, emulator_translation_unit, source_line

PKG_DIR = Path(__file__).resolve().parent
RUNTIME_FILES = ("ck_prelude.h", "ck_runtime.cpp", "ck_switch.h", "ck_faults.h", "ck_driver.cpp", "ck_count.cpp",
                 "ck_warp.h", "ck_half.h", "cuda_fp16.h", "cuda_bf16.h")
NVCC_ARCH = os.environ.get("COURSEKIT_NVCC_ARCH", "sm_80")
# -fstack-clash-protection: a frame bigger than a page touches each page on the
# way down, so a kernel with huge locals hits its fiber's guard page instead of
# jumping over it.  -g1: line tables only, so a fault names the student's line.
# -fno-finite-loops: C++ lets g++ delete a loop without side effects (a
# spin-wait on a flag); on a GPU it hangs, so here it must too (and meet the watchdog).
CXXFLAGS = ["-std=c++17", "-fPIC", "-w", "-fno-strict-aliasing", "-fstack-clash-protection", "-fno-finite-loops",
            "-I", str(PKG_DIR)]
FAST_FLAGS = ["-O2", "-g1"]
LIBS = ["-ldl", "-lrt", "-lpthread"]   # dladdr, timer_create, pthread_kill (part of libc on glibc >= 2.34)
ASAN_FLAGS = ["-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"]
# count_reads: the student's code gets ThreadSanitizer's load hooks, served by ck_count.cpp (not libtsan)
COUNT_FLAGS = ["-fsanitize=thread", "--param=tsan-instrument-func-entry-exit=0", "-DCK_COUNTING_BUILD"]

#: how many times each tool really ran in this process (the cache tests read it)
stats = {"gxx": 0, "nvcc": 0, "asan": 0}


def cache_dir() -> Path:
    root = os.environ.get("COURSEKIT_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "coursekit"
    path = base / "cuda"
    path.mkdir(parents=True, exist_ok=True)
    return path


def shared_artefact(name: str) -> Path | None:
    """An artefact of that name in the read-only cache the grader builds and shares with every run
    (``COURSEKIT_CUDA_SHARED_CACHE``, see coursekit/course/grading/kernel_cache.py), or None. Names are
    content hashes, so a shared artefact is the one this process would build."""
    root = os.environ.get("COURSEKIT_CUDA_SHARED_CACHE")
    path = Path(root) / name if root else None
    return path if path is not None and path.is_file() else None


def cxx() -> str:
    return os.environ.get("CXX", "g++")


@functools.lru_cache(maxsize=None)
def _tool_version(tool: str) -> str:
    try:
        return subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout
    except OSError:
        return ""


@functools.lru_cache(maxsize=None)
def _runtime_digest() -> str:
    h = hashlib.sha256()
    for name in RUNTIME_FILES:
        p = PKG_DIR / name
        if p.exists():
            h.update(p.read_bytes())
    return h.hexdigest()


def _key(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def nvcc_path():
    """The nvcc executable, or None (then the GPU compile check is skipped)."""
    if os.environ.get("COURSEKIT_NO_NVCC"):
        return None
    found = shutil.which("nvcc")
    if found:
        return found
    for cand in ("/usr/local/cuda/bin/nvcc", "/usr/local/bin/nvcc"):
        if os.access(cand, os.X_OK):
            return cand
    return None


def host_options(options) -> list:
    """The nvcc options that mean something to g++ (-D, -U, -I); the rest are GPU-only."""
    out, it = [], iter(options)
    for opt in it:
        if opt in ("-D", "-U", "-I"):
            out += [opt, next(it, "")]
        elif opt.startswith(("-D", "-U", "-I")):
            out.append(opt)
    return out


# -- error reporting ----------------------------------------------------------
def compile_error(tool: str, log: str, src: str) -> CompileError:
    """Turn a compiler log into an error that points at the student's lines."""
    pattern = re.compile(re.escape(SOURCE_NAME) + r"(?::(\d+)|\((\d+)\))")
    lines = [ln for ln in log.splitlines() if ln.strip()]
    first_line = None
    for ln in lines:
        m = pattern.search(ln)
        if m and ("error" in ln.lower()):
            first_line = int(m.group(1) or m.group(2))
            break
    if first_line is None:
        for ln in lines:
            m = pattern.search(ln)
            if m:
                first_line = int(m.group(1) or m.group(2))
                break
    shown = [ln for ln in lines if "error" in ln.lower() or SOURCE_NAME in ln] or lines
    body = "\n".join("  " + ln for ln in shown[:25])
    if len(shown) > 25:
        body += f"\n  ... ({len(shown) - 25} more lines; see the .log attribute)"
    head = f"the CUDA source does not compile ({tool})"
    if first_line:
        head += f"; first error on line {first_line} of your source:\n    {source_line(src, first_line)}"
    return CompileError(f"{head}\n{body}", log=log, line=first_line, compiler=tool)


def _run(cmd, cwd=None):
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError:
        raise BackendUnavailableError(
            f"the C++ compiler {cmd[0]!r} is not installed, and the CUDA emulator needs one to compile kernels on "
            "a machine without a GPU. Install g++ (Debian/Ubuntu: apt-get install g++; Fedora: dnf install gcc-c++; "
            "conda: conda install -c conda-forge gxx; macOS: xcode-select --install), or point the CXX "
            "environment variable at the C++ compiler you have.") from None


# -- nvcc: would a GPU compiler accept it? -------------------------------------
def _nvcc_start(src: str, options):
    """Start nvcc in the background (or return a cached verdict) -> (key, proc_or_verdict, tmpdir)."""
    nvcc = nvcc_path()
    if nvcc is None:
        return None
    key = _key("nvcc-v2", src, tuple(options), NVCC_ARCH, _tool_version(nvcc))
    cached = cache_dir() / f"{key}.nvcc.json"
    if cached.exists():
        try:
            return key, json.loads(cached.read_text()), None
        except ValueError:
            pass
    tmp = tempfile.mkdtemp(prefix="ck-nvcc-")
    Path(tmp, SOURCE_NAME).write_text(src)
    arch = [] if any(o.startswith(("-arch", "--gpu-architecture", "-gencode")) for o in options) else [f"-arch={NVCC_ARCH}"]
    cmd = [nvcc, "-x", "cu", "-cubin", *arch, "--resource-usage", *options, "-o", os.devnull, SOURCE_NAME]
    stats["nvcc"] += 1
    proc = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return key, proc, tmp


def _nvcc_finish(started):
    if started is None:
        return None
    key, proc, tmp = started
    if tmp is None:
        return proc
    log, _ = proc.communicate()
    shutil.rmtree(tmp, ignore_errors=True)
    smem, current = {}, None
    for ln in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", ln)
        if m:
            current = demangle(m.group(1))
            smem.setdefault(current, 0)
        m = re.search(r"(\d+) bytes smem", ln)
        if m and current:
            smem[current] = int(m.group(1))
    verdict = {"ok": proc.returncode == 0, "log": log, "smem": smem,
               "tool": f"nvcc -arch={NVCC_ARCH}"}
    tmpfile = cache_dir() / f"{key}.nvcc.json.{os.getpid()}"
    tmpfile.write_text(json.dumps(verdict))
    os.replace(tmpfile, cache_dir() / f"{key}.nvcc.json")
    return verdict


def demangle(symbol: str) -> str:
    """Kernel name from an Itanium-mangled symbol (``_Z1kPf`` -> ``k``); enough for smem tables."""
    m = re.match(r"_Z(\d+)", symbol)
    if not m:
        return symbol
    n = int(m.group(1))
    return symbol[m.end():m.end() + n]


def nvcc_check(src: str, options=()):
    """nvcc's verdict on ``src`` as a dict (ok, log, smem per kernel), or None without nvcc."""
    return _nvcc_finish(_nvcc_start(src, list(options)))


# -- g++ builds of the emulator ------------------------------------------------
def _build_object(name: str, flags: list) -> Path:
    """Compile one of the runtime's own .cpp files once per flag set (cached)."""
    key = _key("obj", name, tuple(flags), _runtime_digest(), _tool_version(cxx()))
    out = cache_dir() / f"{Path(name).stem}-{key}.o"
    out = shared_artefact(out.name) or out
    if not out.exists():
        tmp = out.with_suffix(f".o.{os.getpid()}")
        r = _run([cxx(), *CXXFLAGS, *flags, "-c", str(PKG_DIR / name), "-o", str(tmp)])
        if r.returncode != 0:
            raise CompileError(f"coursekit's emulator runtime {name} does not compile with {cxx()}:\n{r.stderr}",
                               log=r.stderr, compiler=cxx())
        os.replace(tmp, out)
    return out


def _prelude_pch(flags: list) -> list:
    """``["-I", folder]`` of a folder holding ``ck_prelude.h.gch``, the emulator's prelude
    precompiled with these flags (built once, cached like the runtime objects), or ``[]``.

    Every kernel's translation unit starts with ``#include "ck_prelude.h"``, and parsing it (and the
    C++ headers under it) was 0.14 of the 0.19 s g++ took for a small kernel; with the precompiled
    header the same compile takes 0.05 s and writes the same object. The folder goes first among
    the include folders, so g++ finds the ``.gch`` before the header; where the ``.gch`` does not
    fit a compile (a student's ``-D`` option), g++ ignores it and reads the header as before.
    """
    key = _key("pch", tuple(flags), _runtime_digest(), _tool_version(cxx()))
    name = f"pch-{key}/ck_prelude.h.gch"
    out = shared_artefact(name) or cache_dir() / name
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f"ck_prelude.h.gch.{os.getpid()}.tmp")
        r = _run([cxx(), *CXXFLAGS, *flags, "-x", "c++-header", str(PKG_DIR / "ck_prelude.h"), "-o", str(tmp)])
        if r.returncode != 0:        # the compiles below will say what is wrong with the prelude
            tmp.unlink(missing_ok=True)
            return []
        os.replace(tmp, out)
    return ["-I", str(out.parent)]


def build(src: str, options, entries, *, asan=False, check_nvcc=True, count_reads=False):
    """Build the emulator library (or, with asan, the checked-mode executable).

    ``count_reads``: a library whose kernels count the bytes they load from each
    array argument (see ck_count.cpp): the translation unit is compiled with
    g++'s ThreadSanitizer hooks, then linked with ck_count.cpp instead of libtsan.

    Returns ``(path, nvcc_verdict)``.  nvcc (if present) runs concurrently with
    g++; its rejection is reported first because it is what a GPU would say.
    """
    options = list(options)
    tu = emulator_translation_unit(src, entries)
    flags = ASAN_FLAGS if asan else FAST_FLAGS
    hopts = host_options(options)
    flavour = "asan" if asan else "count" if count_reads else "so"
    key = _key(flavour, tu, tuple(hopts), tuple(flags), _runtime_digest(), _tool_version(cxx()))
    out = cache_dir() / (f"{key}.asan" if asan else f"{key}.so")
    out = shared_artefact(out.name) or out
    started = _nvcc_start(src, options) if check_nvcc else None
    log, ok = "", True
    if not out.exists():
        runtime = _build_object("ck_runtime.cpp", flags)
        cpp = cache_dir() / f"{key}.{os.getpid()}.cpp"   # per process: parallel builds must not collide
        cpp.write_text(tu)
        tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
        if asan:
            driver = _build_object("ck_driver.cpp", flags)
            cmd = [cxx(), *_prelude_pch(flags), *CXXFLAGS, *flags, *hopts, str(cpp), str(runtime), str(driver),
                   "-o", str(tmp), *LIBS]
            stats["asan"] += 1
        elif count_reads:
            counted = cpp.with_suffix(".o")
            cmd = [cxx(), *_prelude_pch([*flags, *COUNT_FLAGS]), *CXXFLAGS, *flags, *hopts, *COUNT_FLAGS, "-c",
                   str(cpp), "-o", str(counted)]
            link = [cxx(), *CXXFLAGS, *flags, "-shared", "-Wl,-Bsymbolic", str(counted), str(runtime),
                    str(_build_object("ck_count.cpp", flags)), "-o", str(tmp), *LIBS]
            stats["gxx"] += 1
        else:
            cmd = [cxx(), *_prelude_pch(flags), *CXXFLAGS, *flags, *hopts, "-shared", "-Wl,-Bsymbolic", str(cpp),
                   str(runtime), "-o", str(tmp), *LIBS]
            stats["gxx"] += 1
        r = _run(cmd)
        if count_reads and r.returncode == 0:
            r = _run(link)
        ok, log = r.returncode == 0, r.stderr
        if ok:
            os.replace(tmp, out)
        cpp.unlink(missing_ok=True)
        cpp.with_suffix(".o").unlink(missing_ok=True)
    verdict = _nvcc_finish(started)
    if verdict is not None and not verdict["ok"]:
        raise compile_error(f"nvcc -arch={NVCC_ARCH}, the CUDA compiler a GPU would use", verdict["log"], src)
    if not ok:
        raise compile_error(f"{cxx()}, compiling it for the CPU emulator", log, src)
    return out, verdict
