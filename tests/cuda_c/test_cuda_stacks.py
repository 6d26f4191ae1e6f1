"""The emulator gives idle modules' thread stacks back, so a process may load any number of modules.

Each CUDA thread's stack has a guard page, which splits the reservation into two memory mappings per
thread; Linux allows 65,530 mappings per process. Before, every module kept its stacks for the life of
the process, and a full test run (a few hundred modules) made every later launch fail with "could not
reserve ... address space". Counts of mappings, never times.
"""
import numpy as np
import pytest

from coursekit import cuda
from coursekit.cuda import emulator


def _mappings():
    with open("/proc/self/maps") as maps:
        return sum(1 for _ in maps)


def _kernel(i):
    src = f"__global__ void add_{i}(float *x) {{ x[threadIdx.x] += {i}; }}"
    return cuda.SourceModule(src, backend="emulator").get_function(f"add_{i}")


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/maps"), reason="needs Linux's /proc/self/maps")
def test_idle_modules_give_their_stacks_back_and_launch_again(monkeypatch):
    monkeypatch.setattr(emulator, "STACKS_KEPT", 2)
    kernels = [_kernel(i) for i in range(4)]
    x = np.zeros(256, np.float32)
    kernels[0](cuda.InOut(x), block=(256, 1, 1))
    one_module = _mappings()
    for k in kernels[1:]:
        k(cuda.InOut(x), block=(256, 1, 1))
    # four modules launched, two hold stacks: about 2 x 256 x 2 mappings, not 4 x
    assert _mappings() - one_module < 2 * 256 * 2 + 100
    kernels[0](cuda.InOut(x), block=(256, 1, 1))      # its stacks were given back: reserved again
    assert np.all(x == 0 + 1 + 2 + 3 + 0)


def test_the_threads_kept_are_bounded_too(monkeypatch):
    monkeypatch.setattr(emulator, "THREADS_KEPT", 512)
    before = _mappings()
    x = np.zeros(512, np.float32)
    for i in range(3):
        _kernel(10 + i)(cuda.InOut(x), block=(512, 1, 1))
    assert _mappings() - before < 512 * 2 + 100       # one module's 512 stacks at a time
    assert np.all(x == 10 + 11 + 12)
