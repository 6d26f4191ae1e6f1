"""A read-only, content-addressed cache of compiled CUDA-emulator code, shared by every grading run.

Each sandboxed run has a private ``/tmp``, so its compiled-kernel cache starts empty and exercise 7
compiled the emulator's own runtime afresh in every run, once for the plain build and once for the
checked (AddressSanitizer) build: about 8 s per notebook isolated against 4 s without isolation.
The runtime objects (``ck_runtime``, ``ck_driver``, ``ck_count``) are the same for every student, and
so is the prelude every kernel's source starts with, which the grader precompiles (a ``.gch`` per
flag set): a kernel then compiles in 0.05 s instead of 0.19 s.

So the grader builds them once, itself, from coursekit's own files only (nothing a student wrote),
into ``$COURSEKIT_CACHE_DIR/grader-shared/cuda`` (default under ``~/.cache/coursekit``), makes the
files read-only and hands the folder to each run (``COURSEKIT_CUDA_SHARED_CACHE``), which bubblewrap
mounts read-only (:mod:`coursekit.course.grading.sandbox`). The compiler (:mod:`coursekit.cuda.compiler`)
takes an artefact from there when one has the name it would build: names are SHA-256 hashes of
everything that shapes the artefact (sources, flags, the compiler's version), so a shared artefact is
exactly what the run would have built. A run still compiles its own kernels into its private cache:
a student's kernel is never shared with another student, because an artefact built inside one run
could carry anything that run put in it.
"""

from __future__ import annotations

import compileall
import os
import shutil
import stat
import threading
from functools import lru_cache
from pathlib import Path

from ...cuda import compiler   # the emulator's compiler: the grader builds its runtime objects once

ENV = "COURSEKIT_CUDA_SHARED_CACHE"
_LOCK = threading.Lock()


def shared_root() -> Path:
    root = os.environ.get("COURSEKIT_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "coursekit") / "grader-shared"


def grading_env() -> dict[str, str]:
    """``{COURSEKIT_CUDA_SHARED_CACHE: folder}`` once the shared runtime objects are built (the first
    call builds them; later calls are free), or ``{}`` where they cannot be (no C++ compiler)."""
    with _LOCK:
        _compile_library()
        folder = _prepare()
    return {ENV: str(folder)} if folder else {}


@lru_cache(maxsize=1)
def _compile_library() -> bool:
    """Write the bytecode of every coursekit module (``__pycache__``), once per grading process.

    Runs see the coursekit package read-only, so a module whose bytecode was never written (any module
    the grader's own process has not imported: the tensor layer, the emulator's Python side, the
    lesson helpers) was compiled from its source again by every kernel that imported it: 3.5 s of
    the 27 s of CPU that grading the 11 reference notebooks took (cpuacct). Modules whose bytecode
    is up to date are only checked. Where the package is not writable (a system install), nothing
    is written and runs compile as before.
    """
    return compileall.compile_dir(str(compiler.PKG_DIR.parent), quiet=2, workers=1)


@lru_cache(maxsize=1)
def _prepare() -> Path | None:
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        return None
    base = shared_root()
    folder = base / "cuda"
    if folder.is_dir():
        folder.chmod(0o755)                              # writable while the grader builds
    saved = os.environ.get("COURSEKIT_CACHE_DIR")
    os.environ["COURSEKIT_CACHE_DIR"] = str(base)       # compiler.cache_dir() is base/cuda while we build
    previous_shared = os.environ.pop(ENV, None)        # build here, never take from another shared cache
    try:
        builds = [("ck_runtime.cpp", compiler.FAST_FLAGS), ("ck_runtime.cpp", compiler.ASAN_FLAGS),
                  ("ck_driver.cpp", compiler.ASAN_FLAGS), ("ck_count.cpp", compiler.FAST_FLAGS)]
        built = [compiler._build_object(name, flags) for name, flags in builds]
        for flags in (compiler.FAST_FLAGS, compiler.ASAN_FLAGS, [*compiler.FAST_FLAGS, *compiler.COUNT_FLAGS]):
            include = compiler._prelude_pch(flags)      # the prelude, precompiled: ["-I", folder] or []
            built += [Path(include[1]) / "ck_prelude.h.gch"] if include else []
    except Exception:  # noqa: BLE001 -- no working compiler: runs compile the runtime themselves, as before
        return None
    finally:
        if saved is None:
            os.environ.pop("COURSEKIT_CACHE_DIR", None)
        else:
            os.environ["COURSEKIT_CACHE_DIR"] = saved
        if previous_shared is not None:
            os.environ[ENV] = previous_shared
    for path in built:
        path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        if path.parent != folder:
            path.parent.chmod(0o555)
    folder.chmod(0o555)
    return folder
