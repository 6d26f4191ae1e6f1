"""Timings of the CPU emulator (run: python -m coursekit.cuda._bench).

These are emulator wall times on the CPU -- not GPU timings.  They exist to
keep the emulator fast enough for a course: a 2000-block shared-memory
reduction should take well under 1.5 s, and a launch of a cached kernel
should cost tens of microseconds of Python.
"""
import time

import numpy as np

from coursekit import cuda

REDUCE = r"""
__global__ void block_sum(const float* in, float* out, int n)
{
    __shared__ float s[256];
    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
__global__ void nothing(float* x, int n) { if (n < 0) x[0] = 1.0f; }
"""


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    mod = cuda.SourceModule(REDUCE, backend="emulator")
    blocks, threads = 2000, 256
    x = np.random.rand(blocks * threads).astype(np.float32)
    d_in, d_out = cuda.to_device(x, backend="emulator"), cuda.empty(blocks, np.float32, backend="emulator")
    f = mod.get_function("block_sum")
    n = np.int32(x.size)
    t = best_of(lambda: f((blocks,), (threads,), (d_in, d_out, n)), 3)
    assert np.allclose(d_out.get(), x.reshape(blocks, threads).sum(1), rtol=1e-4)
    print(f"tree reduction {blocks} blocks x {threads} threads: {t * 1e3:.1f} ms "
          f"(emulator wall time on the CPU -- not a GPU timing; "
          f"context switch: {mod.library.lib.ck_switch_kind().decode()})")
    g = mod.get_function("nothing")
    one = cuda.empty(1, np.float32, backend="emulator")
    k = np.int32(1)
    reps = 2000
    t = best_of(lambda: [g((1,), (1,), (one, k)) for _ in range(reps)], 3) / reps
    t2 = best_of(lambda: [g(one, k, block=(1, 1, 1), grid=(1, 1)) for _ in range(reps)], 3) / reps
    print(f"launch of a cached 1-thread kernel: {t * 1e6:.1f} us CuPy style, {t2 * 1e6:.1f} us PyCUDA style "
          f"(Python overhead + emulator; not a GPU timing)")


if __name__ == "__main__":
    main()
