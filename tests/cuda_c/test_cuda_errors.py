"""coursekit.cuda: student mistakes become clear Python errors, never hangs or dead kernels."""
import os
import subprocess
import sys

import numpy as np
import pytest

from coursekit import cuda
from coursekit.cuda import compiler

EMU = "emulator"

MULTIPLY_N = """
__global__ void multiply_them(float *dest, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dest[i] = a[i] * b[i];
}
"""


@pytest.fixture(scope="module")
def mult():
    return cuda.SourceModule(MULTIPLY_N, backend=EMU).get_function("multiply_them")


@pytest.fixture
def arrays():
    a = np.arange(10, dtype=np.float32)
    return np.zeros_like(a), a, a + 1


# -- arguments -------------------------------------------------------------------
def test_python_int_for_int_parameter(mult, arrays):
    d, a, b = arrays
    with pytest.raises(cuda.KernelArgumentError, match=r"numpy\.int32\(n\)") as e:
        mult(cuda.Out(d), cuda.In(a), cuda.In(b), 10, block=(16, 1, 1))
    assert "argument 4 ('n')" in str(e.value) and "Python int" in str(e.value)


def test_int64_scalar_for_int_parameter(mult, arrays):
    d, a, b = arrays
    with pytest.raises(cuda.KernelArgumentError, match=r"numpy\.int64 scalar.*numpy\.int32\(n\)"):
        mult(cuda.Out(d), cuda.In(a), cuda.In(b), np.int64(10), block=(16, 1, 1))


def test_float64_array_for_float_pointer(mult, arrays):
    d, a, b = arrays
    with pytest.raises(cuda.KernelArgumentError, match=r"astype\(numpy\.float32\)") as e:
        mult(cuda.Out(d), cuda.In(a.astype(np.float64)), cuda.In(b), np.int32(10), block=(16, 1, 1))
    assert "'a'" in str(e.value) and "float64" in str(e.value)
    with pytest.raises(cuda.KernelArgumentError, match="float64"):
        mult(cuda.Out(d), cuda.to_device(a.astype(np.float64), backend=EMU), cuda.In(b), np.int32(10),
             block=(16, 1, 1))


def test_wrong_argument_count_lists_signature(mult, arrays):
    d, a, b = arrays
    with pytest.raises(cuda.KernelArgumentError, match="takes 4 argument") as e:
        mult(cuda.Out(d), cuda.In(a), cuda.In(b), block=(16, 1, 1))
    assert "multiply_them(float* dest, const float* a, const float* b, int n)" in str(e.value)


def test_plain_ndarray_needs_in_out(mult, arrays):
    d, a, b = arrays
    with pytest.raises(cuda.KernelArgumentError, match=r"cuda\.In\(a\)") as e:
        mult(d, cuda.In(a), cuda.In(b), np.int32(10), block=(16, 1, 1))
    assert "host memory" in str(e.value) and "'dest'" in str(e.value)


def test_python_float_for_float_parameter():
    f = cuda.SourceModule("__global__ void scale(float *x, float s) { x[threadIdx.x] *= s; }",
                          backend=EMU).get_function("scale")
    x = np.ones(4, np.float32)
    with pytest.raises(cuda.KernelArgumentError, match=r"numpy\.float32\(s\)"):
        f(cuda.InOut(x), 2.0, block=(4, 1, 1))
    f(cuda.InOut(x), np.float32(2.0), block=(4, 1, 1))
    assert (x == 2).all()


def test_missing_block_size(mult, arrays):
    d, a, b = arrays
    with pytest.raises(cuda.LaunchConfigError, match="block="):
        mult(cuda.Out(d), cuda.In(a), cuda.In(b), np.int32(10))


# -- launch limits ------------------------------------------------------------------
@pytest.mark.parametrize("kw, message", [
    (dict(block=(1025, 1, 1)), "at most 1024 threads"),
    (dict(block=(1, 1, 65)), "block dimension z = 65"),
    (dict(block=(32, 1, 1), grid=(1, 70000)), "grid dimension y = 70000"),
    (dict(block=(32, 1, 1), shared=48 * 1024 + 4), "48 KiB"),
    (dict(block=(0, 1, 1)), "dimension < 1"),
])
def test_launch_limits(mult, arrays, kw, message):
    d, a, b = arrays
    with pytest.raises(cuda.LaunchConfigError, match=message):
        mult(cuda.Out(d), cuda.In(a), cuda.In(b), np.int32(10), **kw)


def test_static_plus_dynamic_shared_limit():
    src = """
    __global__ void big(float *x)
    {
        __shared__ float s[10000];             /* 40000 bytes, fine alone */
        extern __shared__ float more[];
        s[threadIdx.x] = x[threadIdx.x];
        __syncthreads();
        x[threadIdx.x] = s[threadIdx.x] + more[0] * 0.0f;
    }
    """
    f = cuda.SourceModule(src, backend=EMU).get_function("big")
    x = np.ones(4, np.float32)
    f(cuda.InOut(x), block=(4, 1, 1), shared=4)
    with pytest.raises(cuda.LaunchConfigError, match="40000 bytes of static"):
        f(cuda.InOut(x), block=(4, 1, 1), shared=10000)


# -- runtime errors -------------------------------------------------------------------
def test_divergent_barrier_is_an_error_not_a_hang():
    src = """
    __global__ void early_exit(float *x)
    {
        if (threadIdx.x >= 16) return;
        x[threadIdx.x] = 1.0f;
        __syncthreads();
        x[threadIdx.x] += 1.0f;
    }
    """
    f = cuda.SourceModule(src, backend=EMU).get_function("early_exit")
    with pytest.raises(cuda.KernelRuntimeError, match=r"kernel 'early_exit': divergent __syncthreads\(\)") as e:
        f(cuda.InOut(np.zeros(32, np.float32)), block=(32, 1, 1))
    assert "line 6" in str(e.value)


def test_barriers_on_different_lines_are_divergent():
    src = """
    __global__ void two_paths(float *x)
    {
        if (threadIdx.x % 2) { x[threadIdx.x] = 1; __syncthreads(); }
        else { __syncthreads(); x[threadIdx.x] = 2; }
    }
    """
    f = cuda.SourceModule(src, backend=EMU).get_function("two_paths")
    with pytest.raises(cuda.KernelRuntimeError, match="line 4.*line 5|line 5.*line 4"):
        f(cuda.InOut(np.zeros(8, np.float32)), block=(8, 1, 1))


def test_missing_barrier_caught_by_thread_order_check():
    src = """
    __global__ void racy_sum(const float *in, float *out)
    {
        __shared__ float s[64];
        unsigned int t = threadIdx.x;
        s[t] = in[blockIdx.x * 64 + t];
        __syncthreads();
        for (unsigned int half = 32; half > 0; half >>= 1) {
            if (t < half) s[t] += s[t + half];
            /* missing __syncthreads() here */
        }
        if (t == 0) out[blockIdx.x] = s[0];
    }
    """
    f = cuda.SourceModule(src, backend=EMU).get_function("racy_sum")
    x = np.random.default_rng(0).random(128).astype(np.float32)
    out = np.zeros(2, np.float32)
    with pytest.raises(cuda.RaceConditionError, match=r"differ between thread orders: missing __syncthreads\(\)"):
        f(cuda.In(x), cuda.Out(out), block=(64, 1, 1), grid=(2, 1), check="races")
    # the module-wide default works as well
    g = cuda.SourceModule(src, backend=EMU, check="races").get_function("racy_sum")
    with pytest.raises(cuda.RaceConditionError, match="'out'"):
        g(cuda.In(x), cuda.Out(out), block=(64, 1, 1), grid=(2, 1))


def test_assert_and_trap_are_errors():
    src = """
    __global__ void checks(const int *x)
    {
        assert(x[threadIdx.x] >= 0);
    }
    """
    f = cuda.SourceModule(src, backend=EMU).get_function("checks")
    f(cuda.In(np.zeros(4, np.int32)), block=(4, 1, 1))
    with pytest.raises(cuda.KernelRuntimeError, match=r"assertion failed: x\[threadIdx.x\] >= 0.*line 4.*thread \(2,0,0\)"):
        f(cuda.In(np.array([0, 1, -1, 2], np.int32)), block=(4, 1, 1))


def test_out_of_bounds_write_in_checked_mode_names_the_line():
    src = """
    __global__ void no_guard(float *dest, const float *a, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        dest[i] = 2.0f * a[i % n];
    }
    """
    f = cuda.SourceModule(src, backend=EMU, check="memory").get_function("no_guard")
    a = np.arange(100, dtype=np.float32)
    d = np.zeros(100, np.float32)
    f(cuda.Out(d), cuda.In(a), np.int32(100), block=(100, 1, 1))      # exact fit: fine
    np.testing.assert_array_equal(d, 2 * a)
    with pytest.raises(cuda.MemoryAccessError) as e:
        f(cuda.Out(d), cuda.In(a), np.int32(100), block=(128, 1, 1))
    msg = str(e.value)
    assert "out-of-bounds write" in msg and "line 5" in msg and "dest[i] = 2.0f * a[i % n];" in msg
    assert "argument `dest` at index 100" in msg and "thread (100,0,0)" in msg
    assert e.value.line == 5
    # the process (the notebook's kernel) is still alive and can keep launching
    f(cuda.Out(d), cuda.In(a), np.int32(100), block=(100, 1, 1), check=False)
    # check=True runs both memory and thread-order checks in one subprocess
    f(cuda.Out(d), cuda.In(a), np.int32(100), block=(50, 1, 1), grid=(2, 1), check=True)
    np.testing.assert_array_equal(d, 2 * a)


# -- compiling --------------------------------------------------------------------
def test_compile_error_shows_student_line_number():
    src = """
    __global__ void broken(float *x)
    {
        x[threadIdx.x] = undefined_name * 2.0f;
    }
    """
    with pytest.raises(cuda.CompileError, match="line 4") as e:
        cuda.SourceModule(src, backend=EMU)
    assert e.value.line == 4 and "undefined_name" in str(e.value)


def test_emulator_compile_error_without_nvcc(monkeypatch):
    monkeypatch.setenv("COURSEKIT_NO_NVCC", "1")
    src = "__global__ void k(float *x)\n{\n    x[0] = 1.0f\n}\n"
    with pytest.raises(cuda.CompileError, match="emulator") as e:
        cuda.SourceModule(src, backend=EMU)
    assert e.value.line in (3, 4)


needs_nvcc = pytest.mark.skipif(compiler.nvcc_path() is None, reason="nvcc not installed")


@needs_nvcc
def test_nvcc_rejects_what_only_a_gpu_compiler_rejects():
    src = """
    int host_only(int v) { return v + 1; }
    __global__ void calls_host(int *x)
    {
        x[threadIdx.x] = host_only(x[threadIdx.x]);
    }
    """
    with pytest.raises(cuda.CompileError, match="nvcc") as e:
        cuda.SourceModule(src, backend=EMU)
    assert e.value.line == 5 and "host" in str(e.value)
    with pytest.raises(cuda.CompileError):
        cuda.compile_check(src)


@needs_nvcc
def test_nvcc_rejects_too_much_static_shared_memory():
    src = "__global__ void k(float *x) { __shared__ float s[20000]; s[threadIdx.x] = 1; x[0] = s[1]; }"
    with pytest.raises(cuda.CompileError, match="shared"):
        cuda.SourceModule(src, backend=EMU)


def test_second_module_reuses_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSEKIT_CACHE_DIR", str(tmp_path))
    src = MULTIPLY_N + "\n// cache test\n"
    before = dict(compiler.stats)
    cuda.SourceModule(src, backend=EMU)
    assert compiler.stats["gxx"] == before["gxx"] + 1
    assert list((tmp_path / "cuda").glob("*.so"))
    again = dict(compiler.stats)
    f = cuda.SourceModule(src, backend=EMU).get_function("multiply_them")
    assert compiler.stats == again                       # nothing recompiled, nvcc verdict cached too
    a = np.ones(3, np.float32)
    d = np.zeros(3, np.float32)
    f(cuda.Out(d), cuda.In(a), cuda.In(a), np.int32(3), block=(3, 1, 1))
    assert (d == 1).all()
    # a fresh process (a notebook re-run) reuses the .so on disk as well
    code = ("import sys; from coursekit import cuda; from coursekit.cuda import compiler; "
            f"cuda.SourceModule({src!r}, backend='emulator'); print(compiler.stats)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, COURSEKIT_CACHE_DIR=str(tmp_path)), check=True).stdout
    assert "'gxx': 0" in out and "'nvcc': 0" in out


def test_importing_coursekit_cuda_does_not_import_cupy():
    code = "import sys, coursekit.cuda; print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_unknown_kernel_name():
    mod = cuda.SourceModule(MULTIPLY_N, backend=EMU)
    with pytest.raises(cuda.CudaError, match="kernels: multiply_them"):
        mod.get_function("multiply")


def test_wild_pointer_is_an_error_not_a_dead_process():
    src = """
    __global__ void wild(float *x, int offset)
    {
        x[threadIdx.x + offset] = 1.0f;
    }
    """
    f = cuda.SourceModule(src, backend=EMU).get_function("wild")
    x = np.zeros(4, np.float32)
    with pytest.raises(cuda.MemoryAccessError, match=r"(?s)invalid memory write.*line 4.*check=\"memory\""):
        f(cuda.InOut(x), np.int32(1 << 30), block=(4, 1, 1))
    f(cuda.InOut(x), np.int32(0), block=(4, 1, 1))          # still alive, still correct
    assert (x == 1).all()
    with pytest.raises(cuda.MemoryAccessError, match="line 4"):
        f(cuda.InOut(x), np.int32(1 << 30), block=(4, 1, 1), check="memory")


def test_shuffle_with_missing_lanes_is_an_error():
    src = """
    __global__ void half_warp(float *x)
    {
        float v = x[threadIdx.x];
        if (threadIdx.x < 16)
            v += __shfl_down_sync(0xffffffff, v, 1);   /* mask names lanes that never arrive */
        x[threadIdx.x] = v;
    }
    """
    f = cuda.SourceModule(src, backend=EMU).get_function("half_warp")
    with pytest.raises(cuda.KernelRuntimeError, match=r"__shfl_down_sync on line 6.*exited"):
        f(cuda.InOut(np.ones(32, np.float32)), block=(32, 1, 1))
