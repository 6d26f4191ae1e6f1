"""The CUDA emulator cannot take the notebook down (issue 22's table).

A kernel runs inside the notebook's own process on the emulator, so ``abort()``, ``exit()``,
``raise(SIGKILL)`` or ``kill()`` in a student's kernel used to end the notebook's Jupyter kernel (on
a machine without nvcc too). Each is now an error of the launch naming the kernel, the line and the
thread; a stack overflow already was. A grid the emulator could never finish (2^31 blocks) is refused
with the limit, not reported by the watchdog as an endless loop.
"""

from __future__ import annotations

import numpy as np
import pytest

from coursekit import cuda
from coursekit.cuda.emulator import MAX_EMULATED_THREADS

CASES = {
    "abort": ("__global__ void k(float *x) {\n    if (threadIdx.x == 3)\n        abort();\n    x[threadIdx.x] = 1;\n}",
              "abort() called", 3),
    "exit": ("__global__ void k(float *x) {\n    exit(1);\n}", "exit() called", 2),
    "std_exit": ("#include <cstdlib>\n#include <vector>\n__global__ void k(float *x) {\n    std::exit(2);\n}",
                 "exit() called", 4),
    "raise_sigkill": ("#include <signal.h>\n__global__ void k(float *x) {\n    raise(SIGKILL);\n}", "raise() called", 3),
    "kill": ("#include <csignal>\n__global__ void k(float *x) {\n    kill(0, SIGKILL);\n}", "kill() called", 3),
    "stack_overflow": ("__device__ int deep(int n) { volatile int pad[256]; pad[0] = n; return n ? deep(n - 1) + pad[0] : 0; }\n"
                       "__global__ void k(float *x) {\n    x[0] = deep(1 << 20);\n}", "stack overflow", None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_kernel_that_would_end_the_process_raises_an_error_naming_kernel_and_line(name):
    source, what, line = CASES[name]
    kernel = cuda.SourceModule(source, backend="emulator", nvcc_check=False).get_function("k")
    with pytest.raises(cuda.StackOverflowError if name == "stack_overflow" else cuda.KernelRuntimeError) as caught:
        kernel(cuda.InOut(np.zeros(32, np.float32)), block=(32, 1, 1), grid=(1, 1), check=False)
    message = str(caught.value)
    assert "k" in message and what in message, message
    if line:
        assert f"line {line}" in message, message
    # the process goes on: the next launch of an ordinary kernel works
    ok = cuda.SourceModule("__global__ void k(float *x) { x[threadIdx.x] = 2; }", backend="emulator",
                           nvcc_check=False).get_function("k")
    out = np.zeros(32, np.float32)
    ok(cuda.InOut(out), block=(32, 1, 1), grid=(1, 1))
    assert (out == 2).all()


def test_a_grid_the_emulator_could_never_finish_is_refused_with_the_limit():
    kernel = cuda.SourceModule("__global__ void k(float *x) { }", backend="emulator", nvcc_check=False).get_function("k")
    with pytest.raises(cuda.LaunchConfigError, match=r"2,147,483,648 blocks.*at most 134,217,728 \(2\*\*27\) threads"):
        kernel(cuda.InOut(np.zeros(1, np.float32)), block=(1, 1, 1), grid=(65536, 32768))
    assert MAX_EMULATED_THREADS == 2**27
