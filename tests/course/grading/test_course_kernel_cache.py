"""The grader's shared, read-only cache of the CUDA emulator's runtime (issue 29).

Every sandboxed run used to compile the emulator's runtime objects afresh in its private /tmp (plain
and checked builds: seconds per exercise-7 notebook). The grader now builds them once from coursekit's
own files and mounts them read-only into each run; a run still compiles its own kernels privately.
"""
from __future__ import annotations

import importlib.util
import os

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from coursekit.course.grading import kernel_cache
from coursekit.course.grading.grader import GRADING_ENV
from coursekit.course.grading.runner import protection, run_notebook
from coursekit.cuda import compiler

pytestmark = pytest.mark.skipif(kernel_cache.grading_env() == {}, reason="no C++ compiler for the CUDA emulator")


def test_shared_runtime_objects_are_read_only_and_taken_by_the_compiler(tmp_path, monkeypatch):
    shared = kernel_cache.grading_env()[kernel_cache.ENV]
    monkeypatch.setenv("COURSEKIT_CACHE_DIR", str(tmp_path))           # a run's empty private cache
    monkeypatch.setenv(kernel_cache.ENV, shared)
    for name, flags in [("ck_runtime.cpp", compiler.FAST_FLAGS), ("ck_runtime.cpp", compiler.ASAN_FLAGS),
                        ("ck_driver.cpp", compiler.ASAN_FLAGS), ("ck_count.cpp", compiler.FAST_FLAGS)]:
        path = compiler._build_object(name, flags)
        assert str(path).startswith(shared), f"{name} {flags[0]} was not taken from the shared cache"
        assert not path.stat().st_mode & 0o222, f"{path} is writable"
    assert not any((tmp_path / "cuda").iterdir()), "the run's private cache got a runtime object"


KERNEL_RUN = r'''
import os
import numpy as np
from coursekit import cuda
mod = cuda.SourceModule("""
__global__ void twice(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }
""")
x = np.arange(37, dtype=np.float32)
mod.get_function("twice")(cuda.InOut(x), np.int32(37), block=(32, 1, 1), grid=(2, 1))   # checked: grading
assert (x == 2 * np.arange(37)).all()
private = os.listdir(os.path.join(os.environ["COURSEKIT_CACHE_DIR"], "cuda"))
assert not [n for n in private if n.startswith("ck_")], f"runtime compiled in the run: {private}"
assert [n for n in private if n.endswith(".asan")], f"the kernel's checked build is private: {private}"
'''
WRITE_SHARED = r'''
import os
shared = os.environ["COURSEKIT_CUDA_SHARED_CACHE"]
target = os.path.join(shared, sorted(os.listdir(shared))[0])
try:
    os.unlink(target)
    planted = True
except OSError:
    planted = False
assert not planted, "a run replaced an artefact of the shared cache"
'''


@pytest.mark.slow
def test_a_sandboxed_run_uses_the_shared_runtime_and_cannot_change_it(tmp_path):
    if not protection().bubblewrap:
        pytest.skip("without bubblewrap a run can write whatever the grader's user can (docs/teaching.md)")
    nbformat.write(new_notebook(cells=[new_code_cell(KERNEL_RUN), new_code_cell(WRITE_SHARED)]), tmp_path / "k.ipynb")
    run = run_notebook(tmp_path / "k.ipynb", cell_timeout=300, notebook_timeout=600,
                       env=dict(GRADING_ENV, **kernel_cache.grading_env()))
    assert run.outcome(0).passed, run.outcome(0).reason
    assert run.outcome(1).passed, run.outcome(1).reason


def test_the_shared_prelude_is_precompiled_and_taken_by_the_compiler(tmp_path, monkeypatch):
    shared = kernel_cache.grading_env()[kernel_cache.ENV]
    monkeypatch.setenv("COURSEKIT_CACHE_DIR", str(tmp_path))           # a run's empty private cache
    monkeypatch.setenv(kernel_cache.ENV, shared)
    for flags in (compiler.FAST_FLAGS, compiler.ASAN_FLAGS, [*compiler.FAST_FLAGS, *compiler.COUNT_FLAGS]):
        include = compiler._prelude_pch(flags)
        assert include and include[1].startswith(shared), f"the prelude for {flags} was not taken from the shared cache"
    assert not (tmp_path / "cuda").exists() or not any((tmp_path / "cuda").iterdir())


def test_grading_writes_the_bytecode_of_every_coursekit_module_the_runs_read_only():
    kernel_cache.grading_env()
    package = compiler.PKG_DIR.parent
    missing = [str(path.relative_to(package)) for path in package.rglob("*.py")
               if not os.path.exists(importlib.util.cache_from_source(str(path)))]
    assert missing == []
