"""coursekit.cuda: real CUDA C kernels give NumPy's answers (on the CPU emulator here)."""
import numpy as np
import pytest

from coursekit import cuda

EMU = "emulator"


def kernel(src, name, **kw):
    return cuda.SourceModule(src, backend=EMU, **kw).get_function(name)


MULTIPLY = """
__global__ void multiply_them(float *dest, float *a, float *b)
{
  const int i = threadIdx.x;
  dest[i] = a[i] * b[i];
}
"""


def test_multiply_them_pycuda_style():
    f = kernel(MULTIPLY, "multiply_them")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(400).astype(np.float32)
    b = rng.standard_normal(400).astype(np.float32)
    dest = np.zeros_like(a)
    f(cuda.Out(dest), cuda.In(a), cuda.In(b), block=(400, 1, 1), grid=(1, 1))
    np.testing.assert_array_equal(dest, a * b)


def test_multiply_them_matrix_20x10():
    src = """
    __global__ void multiply_them(float *dest, const float *a, const float *b, int rows, int cols)
    {
        int c = threadIdx.x, r = threadIdx.y;
        if (r < rows && c < cols) dest[r * cols + c] = a[r * cols + c] * b[r * cols + c];
    }
    """
    f = kernel(src, "multiply_them")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((20, 10)).astype(np.float32)
    b = rng.standard_normal((20, 10)).astype(np.float32)
    dest = np.zeros_like(a)
    f(cuda.Out(dest), cuda.In(a), cuda.In(b), np.int32(20), np.int32(10), block=(10, 20, 1), grid=(1, 1))
    np.testing.assert_array_equal(dest, a * b)


def test_in_does_not_write_back_and_out_is_poisoned():
    src = """
    __global__ void touch(float *out, float *in, int n)
    {
        int i = threadIdx.x;
        in[i] = -1.0f;                  /* writes device memory only */
        if (i < n) out[i] = 1.0f;       /* leaves out[n:] unwritten */
    }
    """
    f = kernel(src, "touch")
    a = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    f(cuda.Out(out), cuda.In(a), np.int32(4), block=(8, 1, 1))
    np.testing.assert_array_equal(a, np.arange(8))
    assert (out[:4] == 1).all() and np.isnan(out[4:]).all()   # fresh device memory is garbage, not zeros


def test_cupy_style_on_sim_arrays_double_op():
    src = """
    __global__ void my_fct(float *i0, float *o0, int size) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < size) o0[i] = i0[i] * 2;
    }
    """
    f = kernel(src, "my_fct")
    x = np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32)
    d_x = cuda.to_device(x, backend=EMU)
    d_y = cuda.empty(x.shape, np.float32, backend=EMU)
    assert type(d_x).__name__ == "SimArray"
    n_blocks = (x.size + 511) // 512
    f((n_blocks, 1), (512, 1, 1), (d_x, d_y, np.int32(x.size)))
    np.testing.assert_array_equal(d_y.get(), x * 2)


def test_in_accepts_strided_host_arrays():
    f = kernel(MULTIPLY, "multiply_them")
    a = np.arange(64, dtype=np.float32).reshape(8, 8)[:, ::2]
    b = np.ones((8, 4), np.float32)
    dest = np.zeros((8, 8), np.float32)[::1, 1::2]      # non-contiguous output too
    f(cuda.Out(dest), cuda.In(a), cuda.In(b), block=(32, 1, 1))
    np.testing.assert_array_equal(dest, a)


REDUCE = """
__global__ void block_sum(const float *in, float *out, int n)
{
    __shared__ float partial[128];
    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + t;
    partial[t] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (t < half) partial[t] += partial[t + half];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = partial[0];
}
"""


@pytest.mark.parametrize("check", [False, "races"])
def test_shared_memory_tree_reduction(check):
    f = kernel(REDUCE, "block_sum")
    n = 128 * 37 - 5
    x = np.random.default_rng(3).random(n).astype(np.float32)
    out = np.zeros(37, np.float32)
    f(cuda.In(x), cuda.Out(out), np.int32(n), block=(128, 1, 1), grid=(37, 1), check=check)
    np.testing.assert_allclose(out.sum(), x.sum(), rtol=1e-5)
    np.testing.assert_allclose(out[0], x[:128].sum(), rtol=1e-5)


def test_tiled_transpose_with_shared_tile():
    src = """
    #define TILE 32
    #define ROWS 8
    __global__ void transpose(float *out, const float *in, int width, int height)
    {
        __shared__ float tile[TILE][TILE + 1];
        int x = blockIdx.x * TILE + threadIdx.x;
        int y = blockIdx.y * TILE + threadIdx.y;
        for (int j = 0; j < TILE; j += ROWS)
            if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
        __syncthreads();
        x = blockIdx.y * TILE + threadIdx.x;
        y = blockIdx.x * TILE + threadIdx.y;
        for (int j = 0; j < TILE; j += ROWS)
            if (x < height && y + j < width) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
    }
    """
    f = kernel(src, "transpose")
    h, w = 45, 70
    a = np.random.default_rng(4).random((h, w)).astype(np.float32)
    out = np.zeros((w, h), np.float32)
    f(cuda.Out(out), cuda.In(a), np.int32(w), np.int32(h), block=(32, 8, 1), grid=((w + 31) // 32, (h + 31) // 32),
      check="races")
    np.testing.assert_array_equal(out, a.T)


def test_atomic_histogram_and_float_sum():
    src = """
    __global__ void histogram(const int *values, unsigned int *bins, float *total, int n, int nbins)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
            atomicAdd(&bins[values[i] % nbins], 1u);
            atomicAdd(total, (float)values[i]);
        }
    }
    """
    f = kernel(src, "histogram")
    v = np.random.default_rng(5).integers(0, 1000, 3001).astype(np.int32)
    bins = cuda.to_device(np.zeros(16, np.uint32), backend=EMU)
    total = cuda.to_device(np.zeros(1, np.float32), backend=EMU)
    f(cuda.In(v), bins, total, np.int32(v.size), np.int32(16), block=(256, 1, 1), grid=((v.size + 255) // 256, 1))
    np.testing.assert_array_equal(bins.get(), np.bincount(v % 16, minlength=16))
    np.testing.assert_allclose(total.get()[0], v.sum(), rtol=1e-6)


def test_atomic_cas_min_max_exch():
    src = """
    __global__ void ops(int *mn, int *mx, int *cas, int *ex, const int *v)
    {
        int i = threadIdx.x;
        atomicMin(mn, v[i]);
        atomicMax(mx, v[i]);
        atomicCAS(cas, 0, i + 100);     /* only the first thread to arrive wins */
        atomicExch(ex, 7);
    }
    """
    f = kernel(src, "ops")
    v = np.random.default_rng(6).integers(-50, 50, 64).astype(np.int32)
    mn, mx = np.array([1000], np.int32), np.array([-1000], np.int32)
    cas, ex = np.zeros(1, np.int32), np.zeros(1, np.int32)
    f(cuda.InOut(mn), cuda.InOut(mx), cuda.InOut(cas), cuda.InOut(ex), cuda.In(v), block=(64, 1, 1))
    assert (mn[0], mx[0], ex[0]) == (v.min(), v.max(), 7)
    assert 100 <= cas[0] < 164


def test_warp_shuffle_reduction_and_ballot():
    src = """
    __global__ void warp_sum(const float *in, float *out, unsigned int *votes, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        float v = (i < n) ? in[i] : 0.0f;
        for (int offset = warpSize / 2; offset > 0; offset /= 2)
            v += __shfl_down_sync(0xffffffff, v, offset);
        unsigned int ballot = __ballot_sync(0xffffffff, i < n && in[i] > 0.5f);
        float all = __shfl_sync(0xffffffff, v, 0);            /* broadcast lane 0's sum */
        float x = __shfl_xor_sync(0xffffffff, all, 1);
        if ((threadIdx.x & 31) == 0) {
            out[i / 32] = x;
            votes[i / 32] = ballot;
        }
    }
    """
    f = kernel(src, "warp_sum")
    n = 250
    x = np.random.default_rng(7).random(n).astype(np.float32)
    out, votes = np.zeros(8, np.float32), np.zeros(8, np.uint32)
    f(cuda.In(x), cuda.Out(out), cuda.Out(votes), np.int32(n), block=(128, 1, 1), grid=(2, 1), check="races")
    padded = np.zeros(256, np.float32)
    padded[:n] = x
    np.testing.assert_allclose(out, padded.reshape(8, 32).sum(1), rtol=1e-5)
    expect = [sum(1 << k for k in range(32) if padded[w * 32 + k] > 0.5) for w in range(8)]
    np.testing.assert_array_equal(votes, expect)


def test_dynamic_extern_shared_memory():
    src = """
    __global__ void reverse_block(float *data)
    {
        extern __shared__ float buffer[];
        int t = threadIdx.x, n = blockDim.x, base = blockIdx.x * n;
        buffer[t] = data[base + t];
        __syncthreads();
        data[base + t] = buffer[n - 1 - t];
    }
    """
    f = kernel(src, "reverse_block")
    x = np.arange(3 * 96, dtype=np.float32)
    y = x.copy()
    f(cuda.InOut(y), block=(96, 1, 1), grid=(3, 1), shared=96 * 4)
    np.testing.assert_array_equal(y, x.reshape(3, 96)[:, ::-1].reshape(-1))
    d = cuda.to_device(x, backend=EMU)                      # CuPy style: shared_mem=
    f((3,), (96,), (d,), shared_mem=96 * 4)
    np.testing.assert_array_equal(d.get(), y)


def test_shared_memory_is_poisoned_at_block_start():
    src = """
    __global__ void leak(float *out)
    {
        __shared__ float s[32];
        out[blockIdx.x * 32 + threadIdx.x] = s[threadIdx.x];   /* read before any write */
        __syncthreads();
        s[threadIdx.x] = 1.0f;
    }
    """
    f = kernel(src, "leak")
    out = np.zeros(64, np.float32)
    f(cuda.Out(out), block=(32, 1, 1), grid=(2, 1))
    assert np.isnan(out).all()          # the second block does not see the first block's 1.0s


def test_syncthreads_count_math_and_printf(capsys):
    src = """
    __global__ void misc(int *count, float *m)
    {
        int c = __syncthreads_count(threadIdx.x % 3 == 0);
        if (threadIdx.x == 0) {
            *count = c;
            m[0] = __expf(0.0f) + rsqrtf(4.0f) + fminf(2.0f, 3.0f) + max(1, 2) + sqrtf(9.0f);
            printf("hello from block %d, count %d\\n", blockIdx.x, c);
        }
    }
    """
    f = kernel(src, "misc")
    count, m = np.zeros(1, np.int32), np.zeros(1, np.float32)
    f(cuda.Out(count), cuda.Out(m), block=(64, 1, 1))
    assert count[0] == 22
    assert m[0] == pytest.approx(1 + 0.5 + 2 + 2 + 3)
    assert "hello from block 0, count 22" in capsys.readouterr().out


def test_labels_say_emulated():
    f = kernel(MULTIPLY, "multiply_them")
    assert f.backend == "emulator (CPU)"
    assert "emulator (CPU)" in repr(f) and "multiply_them(float* dest" in repr(f)
    a = np.ones(4, np.float32)
    t = f(cuda.Out(a.copy()), cuda.In(a), cuda.In(a), block=(4, 1, 1), time_kernel=True)
    assert isinstance(t, float) and "not a GPU timing" in repr(t)


def test_helpers_and_compile_check():
    info = cuda.compile_check(MULTIPLY)
    assert info["ok"] and "multiply_them" in info["kernels"]
    z = cuda.zeros((2, 3), np.float32, backend=EMU)
    assert z.get().sum() == 0 and z.shape == (2, 3)


def test_template_kernel_through_name_expressions():
    src = """
    template <typename T, int FACTOR>
    __global__ void scale(T *x, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] = x[i] * FACTOR;
    }
    """
    mod = cuda.SourceModule(src, backend=EMU, name_expressions=["scale<float, 3>", "scale<double, 2>"])
    f32, f64 = mod.get_function("scale<float, 3>"), mod.get_function("scale<double, 2>")
    x = np.arange(5, dtype=np.float32)
    f32(cuda.InOut(x), np.int32(5), block=(8, 1, 1))
    np.testing.assert_array_equal(x, 3 * np.arange(5))
    y = np.arange(5, dtype=np.float64)
    f64(cuda.InOut(y), np.int32(5), block=(8, 1, 1))
    np.testing.assert_array_equal(y, 2 * np.arange(5))
    with pytest.raises(cuda.KernelArgumentError, match="float32"):
        f32(cuda.InOut(y), np.int32(5), block=(8, 1, 1))
    with pytest.raises(cuda.CudaError, match="name_expressions"):
        mod.get_function("scale")


def test_warp_votes_scan_and_partial_last_warp():
    src = """
    __global__ void votes(const int *flag, int *out)
    {
        int t = threadIdx.x, lane = t & 31;
        int f = flag[t];
        int any = __any_sync(__activemask(), f);
        int all = __all_sync(__activemask(), f);
        int scan = f;                                   /* inclusive prefix sum in the warp */
        for (int d = 1; d < 32; d *= 2) {
            int up = __shfl_up_sync(0xffffffff, scan, d);
            if (lane >= d) scan += up;
        }
        __syncwarp();
        out[3 * t] = any; out[3 * t + 1] = all; out[3 * t + 2] = scan;
    }
    """
    f = kernel(src, "votes")
    n = 40                                               # the second warp has only 8 lanes
    flag = np.zeros(n, np.int32)
    flag[[3, 5, 6]] = 1
    flag[32:] = 1
    out = np.zeros(3 * n, np.int32)
    f(cuda.In(flag), cuda.Out(out), block=(n, 1, 1), check="races")
    out = out.reshape(n, 3)
    assert (out[:32, 0] == 1).all() and (out[:32, 1] == 0).all()
    assert (out[32:, 0] == 1).all() and (out[32:, 1] == 1).all()
    np.testing.assert_array_equal(out[:32, 2], np.cumsum(flag[:32]))
    np.testing.assert_array_equal(out[32:, 2], np.arange(1, 9))
