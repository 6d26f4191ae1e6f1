"""``SourceModule(..., count_reads=True)``: the bytes a kernel loads from each array argument, counted.

Exercise 9's grader uses it to tell a tiled matrix multiply from one that fills its tiles and then reads
global memory anyway, so the counts must be exact for the textbook kernels (the formulas of lesson 9),
must follow loads however they are written (a copied pointer, a helper function), and must leave out
loads from shared memory and locals.
"""
from __future__ import annotations

import numpy as np
import pytest

from coursekit import cuda

SOURCE = r'''
#define TILE 16
__device__ float at(const float *p, int i) { return p[i]; }

__global__ void naive(float *C, const float *A, const float *B, int M, int N, int K)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        const float *a_row = A + row * K;             // a copied pointer: its loads are A's
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += a_row[k] * at(B, k * N + col);     // and so are a helper's
        C[row * N + col] = acc;
    }
}

__global__ void tiled(float *C, const float *A, const float *B, int M, int N, int K)
{
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        As[ty][tx] = (row < M && t * TILE + tx < K) ? A[row * K + t * TILE + tx] : 0.0f;
        Bs[ty][tx] = (t * TILE + ty < K && col < N) ? B[(t * TILE + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];             // shared memory: not counted
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
'''
M, K, N = 45, 37, 29


@pytest.fixture(scope="module")
def counting():
    return cuda.SourceModule(SOURCE, backend="emulator", count_reads=True, nvcc_check=False)


def launch(kernel, check=False):
    rng = np.random.default_rng(5)
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    C = np.empty((M, N), np.float32)
    kernel(cuda.Out(C), cuda.In(A), cuda.In(B), np.int32(M), np.int32(N), np.int32(K),
           block=(16, 16, 1), grid=(-(-N // 16), -(-M // 16)), check=check)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-4)    # the instrumented build still computes


def test_the_naive_kernel_reads_every_element_of_a_n_times_and_of_b_m_times(counting):
    kernel = counting.get_function("naive")
    launch(kernel)
    assert kernel.bytes_read == {"C": 0, "A": 4 * M * N * K, "B": 4 * M * N * K}


def test_the_tiled_kernel_reads_each_element_once_per_block_row_or_column(counting):
    kernel = counting.get_function("tiled")
    launch(kernel, check="races")              # both thread orders read the same
    assert kernel.bytes_read == {"C": 0, "A": 4 * M * K * -(-N // 16), "B": 4 * K * N * -(-M // 16)}


def test_a_counting_module_refuses_checked_launches_and_an_ordinary_one_counts_nothing(counting):
    with pytest.raises(ValueError, match="count_reads=True counts loads in this process; launch it with check=False"):
        launch(counting.get_function("naive"), check=True)
    plain = cuda.SourceModule(SOURCE, backend="emulator", nvcc_check=False).get_function("naive")
    launch(plain)
    assert plain.bytes_read is None
