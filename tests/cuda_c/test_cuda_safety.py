"""The CUDA emulator cannot hurt the student's Python session (issue 13), in every check mode.

Each test is a kernel that used to corrupt, crash or hang the process: it must
now be a Python exception that names the kernel, the real fault and the
student's line, and the process must keep working afterwards.  The kernels
share one module (one g++ build for the file).
"""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from coursekit import cuda
from coursekit.cuda.emulator import _LAUNCH_LOCK

EMU = "emulator"
HERE = os.path.basename(__file__)

SOURCE = r"""
__device__ int depth(int k)
{
    volatile int pad[64];
    pad[k % 64] = k;
    return k == 0 ? pad[0] : depth(k - 1) + pad[k % 64];
}
__global__ void big_locals(float *out, int words)
{
    float scratch[30000];                          /* 120 KB: fine on a GPU */
    for (int k = 0; k < 30000; ++k) scratch[k] = k + threadIdx.x;
    float s = 0.0f;
    for (int k = 0; k < words; ++k) s += scratch[(k * 7919) % 30000];
    out[threadIdx.x] = s;
}
__global__ void huge_locals(float *out)
{
    float scratch[300000];                         /* 1.2 MB: more than a GPU allows */
    for (int k = 0; k < 300000; ++k) scratch[k] = k;
    out[threadIdx.x] = scratch[threadIdx.x * 1000];
}
__global__ void recurse(int *out, int n) { out[threadIdx.x] = depth(n); }
__global__ void spin(const int *flag) { while (flag[0] == 0) { } }
__global__ void spin_math(float *x) { float v = x[0]; while (v >= 0.0f) v = sinf(v) + 1.0f; x[0] = v; }
__global__ void spin_print(const int *flag) { while (flag[0] == 0) printf("waiting\n"); }
__global__ void spin_barrier(const int *flag) { while (flag[0] == 0) __syncthreads(); }
__global__ void divide(int *x, int d)
{
    x[threadIdx.x] = 100 / (d - (int)threadIdx.x);
}
__global__ void off_by_one(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) x[i] = 1.0f;
}
__global__ void read_past(const float *x, float *y, int n)
{
    int i = threadIdx.x;
    if (i <= n) y[i % n] = x[i];
}
__global__ void stride(float *x, int n, int s)
{
    int i = threadIdx.x;
    if (i < n) x[i * s] = 1.0f;
}
__global__ void libm_edges(float *x, double *y)
{
    int i = threadIdx.x;
    x[i] = sqrtf(x[i]) + fmodf(1.0f, 0.0f);
    y[i] = sqrt(y[i]) + fmod(1.0, 0.0);
}
"""


@pytest.fixture(scope="module")
def mod():
    return cuda.SourceModule(SOURCE, backend=EMU)


def check_alive(mod):
    """The session still launches kernels correctly."""
    x = np.arange(8, dtype=np.float32)
    mod.get_function("libm_edges")(cuda.InOut(x), cuda.InOut(np.ones(8)), block=(8, 1, 1))
    np.testing.assert_allclose(x[1:], np.sqrt(np.arange(1, 8)) + np.nan, equal_nan=True)


# -- stacks ------------------------------------------------------------------------
def test_kernel_with_120_kb_of_locals_runs_and_touches_nothing_else(mod):
    f = mod.get_function("big_locals")
    out = np.zeros(64, np.float32)
    f(cuda.Out(out), np.int32(0), block=(64, 1, 1))                 # places the fiber stacks
    bystanders = [np.zeros(50_000, np.float32) for _ in range(8)]    # mapped next to them
    f(cuda.Out(out), np.int32(3), block=(64, 1, 1))
    expected = [sum(float((k * 7919) % 30000 + t) for k in range(3)) for t in range(64)]
    np.testing.assert_allclose(out, expected)
    assert all(not b.any() for b in bystanders)


@pytest.mark.parametrize("kernel,args,lines", [
    ("huge_locals", lambda: (cuda.Out(np.zeros(32, np.float32)),), range(16, 22)),
    ("recurse", lambda: (cuda.Out(np.zeros(32, np.int32)), np.int32(1_000_000)), range(2, 8)),
])
def test_stack_overflow_is_a_clear_error_and_touches_nothing_else(mod, kernel, args, lines):
    """Where in the function the overflow faults is up to g++; the line must be inside it."""
    bystanders = [np.zeros(50_000, np.float32) for _ in range(8)]
    with pytest.raises(cuda.StackOverflowError) as e:
        mod.get_function(kernel)(*args(), block=(32, 1, 1))
    msg = str(e.value)
    assert f"kernel `{kernel}`: stack overflow" in msg and "512 KiB" in msg and "recursion" in msg
    assert e.value.line in lines and f"line {e.value.line} of your source" in msg
    assert HERE in msg                                          # the Python line of the launch
    assert all(not b.any() for b in bystanders)
    check_alive(mod)


def test_stack_size_is_configurable(mod, monkeypatch):
    monkeypatch.setenv("COURSEKIT_CUDA_STACK_KB", "64")
    with pytest.raises(cuda.StackOverflowError, match="64 KiB"):
        mod.get_function("big_locals")(cuda.Out(np.zeros(4, np.float32)), np.int32(1), block=(4, 1, 1))
    monkeypatch.delenv("COURSEKIT_CUDA_STACK_KB")
    mod.get_function("big_locals")(cuda.Out(np.zeros(4, np.float32)), np.int32(1), block=(4, 1, 1))


# -- endless kernels -----------------------------------------------------------------
@pytest.mark.parametrize("kernel", ["spin", "spin_barrier"])
def test_watchdog_stops_an_endless_kernel(mod, kernel):
    with pytest.raises(cuda.KernelTimeoutError, match=rf"kernel `{kernel}` was stopped by the emulator's watchdog "
                                                      r"after 0.3 s(?s:.*)COURSEKIT_CUDA_TIMEOUT"):
        mod.get_function(kernel)(cuda.In(np.zeros(1, np.int32)), block=(64, 1, 1), grid=(2, 1), timeout=0.3)
    check_alive(mod)


def test_watchdog_default_comes_from_the_environment(mod, monkeypatch):
    monkeypatch.setenv("COURSEKIT_CUDA_TIMEOUT", "0.2")
    with pytest.raises(cuda.KernelTimeoutError, match="after 0.2 s"):
        mod.get_function("spin")(cuda.In(np.zeros(1, np.int32)), block=(1, 1, 1))


def interrupt_when_launched():
    """Send SIGINT to this process once a launch is under way (it holds the emulator's launch lock)."""
    for _ in range(6000):
        if _LAUNCH_LOCK.locked():
            time.sleep(0.1)
            break
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.usefixtures("sigint_reaches_python")
@pytest.mark.parametrize("kernel,arg", [("spin", np.zeros(1, np.int32)), ("spin_math", np.zeros(1, np.float32)),
                                        ("spin_print", np.zeros(1, np.int32))])
def test_ctrl_c_stops_an_endless_kernel(mod, kernel, arg, capsys):
    """SIGINT (Jupyter's interrupt) stops the launch; a 60 s watchdog would say KernelTimeoutError instead."""
    timer = threading.Thread(target=interrupt_when_launched)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt, match=rf"kernel `{kernel}` was interrupted"):
            mod.get_function(kernel)(cuda.In(arg), block=(32, 1, 1), timeout=60)
    finally:
        timer.join()
    check_alive(mod)
    if kernel == "spin_print":
        assert "waiting" in capsys.readouterr().out


@pytest.mark.usefixtures("sigint_reaches_python")
def test_ctrl_c_after_a_launch_still_reaches_python(mod):
    check_alive(mod)
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):      # the signal is handled between bytecodes
            pass


# -- faults ----------------------------------------------------------------------------
def test_off_by_one_write_names_the_argument_and_index(mod):
    x = np.zeros(100, np.float32)
    with pytest.raises(cuda.MemoryAccessError) as e:
        mod.get_function("off_by_one")(cuda.Out(x), np.int32(100), block=(128, 1, 1))
    msg = str(e.value)
    assert "kernel `off_by_one`: out-of-bounds write on argument `x` at index 100" in msg
    assert "it has 100 elements of 4-byte float" in msg and "thread (100,0,0)" in msg
    assert e.value.line == 34 and "if (i <= n) x[i] = 1.0f;" in msg and HERE in msg
    assert not x.any()                    # an Out array is copied back only after a clean launch
    check_alive(mod)


def test_read_past_the_end_of_a_device_array(mod):
    x = cuda.to_device(np.arange(10, dtype=np.float32), backend=EMU)
    y = cuda.zeros(10, np.float32, backend=EMU)
    with pytest.raises(cuda.MemoryAccessError, match=r"out-of-bounds read on argument `x` at index 10\b"):
        mod.get_function("read_past")(x, y, np.int32(10), block=(16, 1, 1))
    mod.get_function("read_past")(x, y, np.int32(10), block=(10, 1, 1))
    np.testing.assert_array_equal(y.get(), np.arange(10))


def test_integer_division_by_zero_is_named(mod):
    with pytest.raises(cuda.KernelRuntimeError) as e:
        mod.get_function("divide")(cuda.Out(np.zeros(4, np.int32)), np.int32(2), block=(4, 1, 1))
    msg = str(e.value)
    assert "kernel `divide`: integer division (or %) by zero" in msg and "thread (2,0,0)" in msg
    assert "line 29" in msg and "memory" not in msg


def test_sqrt_of_negative_and_fmod_by_zero_give_nan_like_a_gpu(mod):
    x = -np.ones(4, np.float32)
    y = -np.ones(4)
    mod.get_function("libm_edges")(cuda.InOut(x), cuda.InOut(y), block=(4, 1, 1))
    assert np.isnan(x).all() and np.isnan(y).all()


def test_guarded_buffer_is_exactly_the_array():
    from coursekit.cuda.faults import guarded_empty
    for n in (1, 3, 1000, 1024, 4097):
        a = guarded_empty((n,), np.float32)
        a[...] = np.arange(n)
        assert a.flags.c_contiguous and a.flags.writeable and a.sum() == n * (n - 1) / 2
        assert (a.__array_interface__["data"][0] + a.nbytes) % os.sysconf("SC_PAGE_SIZE") == 0


# -- checked mode (AddressSanitizer in a subprocess) ------------------------------------
@pytest.fixture(scope="module")
def checked(mod):
    return cuda.SourceModule(SOURCE, backend=EMU, check="memory")


def test_checked_mode_names_division_by_zero(checked):
    with pytest.raises(cuda.KernelRuntimeError) as e:
        checked.get_function("divide")(cuda.Out(np.zeros(4, np.int32)), np.int32(2), block=(4, 1, 1))
    msg = str(e.value)
    assert "kernel `divide`: integer division (or %) by zero" in msg and "line 29" in msg and HERE in msg
    assert "memory access" not in msg and "if (i < n)" not in msg


def test_checked_mode_names_stack_overflow(checked):
    with pytest.raises(cuda.StackOverflowError, match=r"kernel `recurse`: stack overflow(?s:.*)recursion"):
        checked.get_function("recurse")(cuda.Out(np.zeros(4, np.int32)), np.int32(1_000_000), block=(4, 1, 1))


def test_checked_mode_names_the_argument_of_a_far_access(checked):
    """Index 45 of a 37-element array is past ASan's red zone, in another heap block: blame the argument."""
    with pytest.raises(cuda.MemoryAccessError) as e:
        checked.get_function("stride")(cuda.Out(np.zeros(37, np.float32)), np.int32(37), np.int32(9),
                                       block=(37, 1, 1))
    msg = str(e.value)
    assert "out-of-bounds write on argument `x` at index 45" in msg and "37 elements of 4-byte float" in msg
    assert "byte buffer" not in msg and "region" not in msg and e.value.line == 44


LIMITED = textwrap.dedent("""
    import resource, sys, warnings
    import numpy as np
    from coursekit import cuda
    from coursekit.cuda import checked
    sys.path.insert(0, {tests!r})
    from test_cuda_safety import SOURCE
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, resource.RLIM_INFINITY))
    if sys.argv[1] == "asan-tries":          # pretend we did not look first: ASan's own failure is recognised
        checked.address_space_limit = lambda: None
    f = cuda.SourceModule(SOURCE, backend="emulator", check="memory").get_function("off_by_one")
    x = np.zeros(100, np.float32)
    try:
        f(cuda.Out(x), np.int32(100), block=(128, 1, 1))
    except cuda.MemoryAccessError as e:
        print("ERROR", e)
    f(cuda.Out(x), np.int32(99), block=(128, 1, 1))
    print("SUM", x.sum())
""")


@pytest.mark.parametrize("how", ["looks-first", "asan-tries"])
def test_checked_mode_under_a_virtual_memory_limit_says_so_plainly(mod, how):
    script = LIMITED.format(tests=os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", script, how], capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "ulimit -v" in out and "cannot start AddressSanitizer" in out
    assert "out-of-bounds write on argument `x` at index 100" in out and "SUM 100.0" in out
    assert "==ERROR" not in out and "ReserveShadowMemoryRange" not in out
