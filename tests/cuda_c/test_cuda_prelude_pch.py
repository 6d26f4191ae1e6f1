"""The emulator's prelude, precompiled (coursekit/cuda/compiler.py: _prelude_pch).

g++ must really use the ``.gch`` for a kernel's translation unit (else the 0.14 s of header parsing
per kernel comes back), and a compile the ``.gch`` does not fit (a student's ``-D``) must still be
right: g++ then reads the header itself.
"""

import shutil
import subprocess

import numpy as np
import pytest

from coursekit import cuda
from coursekit.cuda import compiler
from coursekit.cuda.source import emulator_translation_unit

pytestmark = pytest.mark.skipif(shutil.which(compiler.cxx()) is None, reason="needs a C++ compiler")

SCALE = r'''
__global__ void scale(float *out, const float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = SCALE * a[i];
}
'''


def test_a_kernel_compile_reads_the_precompiled_prelude(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSEKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("COURSEKIT_CUDA_SHARED_CACHE", raising=False)
    include = compiler._prelude_pch(compiler.FAST_FLAGS)
    assert include and include[0] == "-I" and (tmp_path / "cuda").as_posix() in include[1]
    source = tmp_path / "tu.cpp"
    source.write_text(emulator_translation_unit(SCALE.replace("SCALE", "2.0f"), ["scale"]))
    shown = subprocess.run([compiler.cxx(), *include, *compiler.CXXFLAGS, *compiler.FAST_FLAGS, "-H", "-c",
                            str(source), "-o", str(tmp_path / "tu.o")], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr.splitlines()[0].startswith("! ") and "ck_prelude.h.gch" in shown.stderr.splitlines()[0]
    assert compiler._prelude_pch(compiler.FAST_FLAGS) == include          # built once, then found


@pytest.mark.parametrize("check", [False, True])
def test_a_define_the_precompiled_prelude_lacks_still_compiles_right(tmp_path, monkeypatch, check):
    monkeypatch.setenv("COURSEKIT_CACHE_DIR", str(tmp_path))
    a = np.arange(37, dtype=np.float32)
    out = np.zeros_like(a)
    kernel = cuda.SourceModule(SCALE, backend="emulator", options=["-DSCALE=3.0f"]).get_function("scale")
    kernel(cuda.Out(out), cuda.In(a), np.int32(a.size), block=(32, 1, 1), grid=(2, 1), check=check)
    np.testing.assert_array_equal(out, 3 * a)
