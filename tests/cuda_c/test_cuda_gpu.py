"""coursekit.cuda through CuPy's RawModule: on a real GPU where CuPy sees one (marked gpu), else on the CuPy
stand-in, which compiles the same wrapped source (NVRTC's macros, extern "C", #line) with the emulator."""
import numpy as np
import pytest

import cupy_standin
from coursekit import cuda

pytestmark = [pytest.mark.gpu] if cupy_standin.real_gpu() else []


@pytest.fixture(autouse=True)
def cupy_path():
    with cupy_standin.on("cuda"):
        yield

SRC = """
__global__ void multiply_them(float *dest, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dest[i] = a[i] * b[i];
}
__global__ void block_sum(const float *in, float *out, int n)
{
    extern __shared__ float partial[];
    unsigned int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    partial[t] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (t < half) partial[t] += partial[t + half];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = partial[0];
}
"""


def test_same_kernels_on_the_gpu_and_the_emulator():
    import cupy
    gpu = cuda.SourceModule(SRC, backend="cupy")
    emu = cuda.SourceModule(SRC, backend="emulator")
    assert "GPU" in gpu.backend and gpu.get_function("multiply_them").backend.startswith("GPU")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1000).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    for mod in (gpu, emu):
        d = np.zeros_like(a)
        mod.get_function("multiply_them")(cuda.Out(d), cuda.In(a), cuda.In(b), np.int32(1000),
                                          block=(256, 1, 1), grid=(4, 1))
        np.testing.assert_allclose(d, a * b, rtol=1e-6)
    d_a = cuda.to_device(a, backend="cupy")
    assert isinstance(d_a, cupy.ndarray)
    out = cuda.empty(4, np.float32, backend="cupy")
    gpu.get_function("block_sum")((4,), (256,), (d_a, out, np.int32(1000)), shared_mem=256 * 4)
    np.testing.assert_allclose(out.get().sum(), a.sum(), rtol=1e-4, atol=1e-4)


def test_argument_checks_on_the_gpu():
    f = cuda.SourceModule(SRC, backend="cupy").get_function("multiply_them")
    a = np.ones(8, np.float32)
    with pytest.raises(cuda.KernelArgumentError, match=r"numpy\.int32\(n\)"):
        f(cuda.Out(a.copy()), cuda.In(a), cuda.In(a), 8, block=(8, 1, 1))
    with pytest.raises(cuda.KernelArgumentError, match="astype"):
        f(cuda.Out(a.copy()), cuda.In(a.astype(np.float64)), cuda.In(a), np.int32(8), block=(8, 1, 1))
    with pytest.raises(cuda.KernelArgumentError, match="simulated|GPU memory"):
        f(cuda.to_device(a, backend="emulator"), cuda.In(a), cuda.In(a), np.int32(8), block=(8, 1, 1))
    t = f(cuda.Out(a.copy()), cuda.In(a), cuda.In(a), np.int32(8), block=(8, 1, 1), time_kernel=True)
    assert t >= 0


def test_gpu_compile_error_shows_line():
    with pytest.raises(cuda.CompileError) as e:
        cuda.SourceModule("__global__ void k(float *x)\n{\n    x[0] = nope;\n}\n", backend="cupy")
    assert e.value.line == 3


def test_math_macros_of_the_emulator_compile_on_the_gpu():
    """INFINITY and NAN come from <math.h> on the emulator; NVRTC has no such header, so coursekit defines them."""
    src = """__global__ void pad(float *out, const float *in, int n)
{
    int i = threadIdx.x;
    out[i] = (i < n) ? in[i] : -INFINITY;
    if (i == 0) out[blockDim.x] = NAN;
}
"""
    x = np.arange(3, dtype=np.float32)
    for backend in ("cupy", "emulator"):
        out = np.zeros(5, np.float32)
        cuda.SourceModule(src, backend=backend).get_function("pad")(cuda.Out(out), cuda.In(x), np.int32(3),
                                                                    block=(4, 1, 1), grid=(1, 1))
        np.testing.assert_array_equal(out[:4], [0, 1, 2, -np.inf])
        assert np.isnan(out[4])
    with pytest.raises(cuda.CompileError) as e:      # error lines still count from the student's first line
        cuda.SourceModule("__global__ void k(float *x)\n{\n    x[0] = INFINITY + nope;\n}\n", backend="cupy")
    assert e.value.line == 3
