"""``SourceModule(..., counts=True)``: what the warps of a launch ask of memory, against closed forms.

Lesson 11 and its exercise grade kernels by these counts, so each must equal the textbook formula for the
access patterns the lesson teaches (coalesced, strided, transposed; shared memory with and without bank
conflicts; atomics with and without contention) at more than one size, whatever order the emulator runs
the threads in.
"""
from __future__ import annotations

import numpy as np
import pytest

from coursekit import cuda
from coursekit.cuda.warp_counts import Atomics, SharedTraffic, Traffic

SOURCE = r'''
#define TILE 32
#define ROWS 8
__global__ void gather(float *dst, const float *src, int n, int stride)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[(long long)i * stride % n];
}

__global__ void transpose_naive(float *dst, const float *src, int n)
{
    const int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        dst[x * n + y + j] = src[(y + j) * n + x];
}

__device__ void transpose_through(float (*tile)[TILE + 1], int pad, float *dst, const float *src, int n)
{
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    float *t = &tile[0][0];
    const int pitch = TILE + pad;
    for (int j = 0; j < TILE; j += ROWS)
        t[(threadIdx.y + j) * pitch + threadIdx.x] = src[(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        dst[(y + j) * n + x] = t[threadIdx.x * pitch + threadIdx.y + j];
}

__global__ void transpose_tiled(float *dst, const float *src, int n)
{
    __shared__ float tile[TILE][TILE + 1];
    transpose_through(tile, 0, dst, src, n);
}

__global__ void transpose_padded(float *dst, const float *src, int n)
{
    __shared__ float tile[TILE][TILE + 1];
    transpose_through(tile, 1, dst, src, n);
}

__global__ void histogram(unsigned int *bins, const int *values, int n, int nbins)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[values[i] % nbins], 1u);
}

__global__ void shared_histogram(unsigned int *bins, const int *values, int n)
{
    extern __shared__ unsigned int local[];
    local[threadIdx.x] = 0;
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&local[values[i] % blockDim.x], 1u);
    __syncthreads();
    atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}
'''


@pytest.fixture(scope="module")
def module():
    return cuda.SourceModule(SOURCE, backend="emulator", counts=True, nvcc_check=False)


@pytest.mark.parametrize("n", [4096, 1000])
@pytest.mark.parametrize("stride", [1, 2, 8, 33])
def test_a_warp_touches_four_sectors_when_coalesced_and_one_per_lane_from_a_stride_of_eight(module, n, stride):
    kernel = module.get_function("gather")
    src = np.arange(n, dtype=np.float32)
    dst = np.empty_like(src)
    kernel(cuda.Out(dst), cuda.In(src), np.int32(n), np.int32(stride), block=(256, 1, 1), grid=(-(-n // 256), 1))
    assert np.array_equal(dst, src[np.arange(n) * stride % n])
    requests = -(-n // 32)
    stores = kernel.counts.stores["dst"]
    assert stores == Traffic(requests=requests, sectors=-(-n // 8), lines=-(-n // 32), bytes=4 * n)
    loads = kernel.counts.loads["src"]
    assert loads.requests == requests and loads.bytes == 4 * n
    if n % 32 == 0 and stride <= 8:      # every warp's span is sector-aligned: 4 * stride sectors each
        assert loads.sectors == requests * 4 * stride
    elif stride > 8:                     # lanes 132 bytes or more apart: a sector each (until indices wrap)
        lane_sectors = {(i * stride % n) // 8 for i in range(n)}
        assert loads.sectors == sum(len({(i * stride % n) // 8 for i in range(w, min(w + 32, n))})
                                    for w in range(0, n, 32))
        assert len(lane_sectors) <= loads.sectors
    assert kernel.counts.shared_loads == SharedTraffic() and kernel.counts.global_atomics == Atomics()


@pytest.mark.parametrize("n", [64, 96])
def test_transposes_naive_tiled_and_padded_match_their_closed_forms(module, n):
    src = np.arange(n * n, dtype=np.float32).reshape(n, n)
    whole = n * n // 32                           # warp requests to read (or write) the matrix once
    expected = {
        "transpose_naive": (Traffic(whole, n * n // 8, n * n // 32, 4 * n * n),
                            Traffic(whole, n * n, n * n, 4 * n * n), SharedTraffic(), SharedTraffic()),
        "transpose_tiled": (Traffic(whole, n * n // 8, n * n // 32, 4 * n * n),
                            Traffic(whole, n * n // 8, n * n // 32, 4 * n * n),
                            SharedTraffic(whole, whole * 32), SharedTraffic(whole, whole)),
        "transpose_padded": (Traffic(whole, n * n // 8, n * n // 32, 4 * n * n),
                             Traffic(whole, n * n // 8, n * n // 32, 4 * n * n),
                             SharedTraffic(whole, whole), SharedTraffic(whole, whole)),
    }
    for name, (loads, stores, shared_loads, shared_stores) in expected.items():
        kernel = module.get_function(name)
        dst = np.full_like(src, np.nan)
        kernel(cuda.Out(dst), cuda.In(src), np.int32(n), block=(32, 8, 1), grid=(n // 32, n // 32), check="races")
        assert np.array_equal(dst, src.T), name
        c = kernel.counts
        assert (c.loads["src"], c.stores["dst"], c.shared_loads, c.shared_stores) == (
            loads, stores, shared_loads, shared_stores), name
        assert c.bank_conflicts == (31 * whole if name == "transpose_tiled" else 0)


@pytest.mark.parametrize("n", [1024, 777])
@pytest.mark.parametrize("nbins", [32, 4, 1])
def test_same_address_atomics_of_a_warp_serialize(module, n, nbins):
    kernel = module.get_function("histogram")
    values = np.arange(n, dtype=np.int32)
    bins = np.zeros(nbins, np.uint32)
    kernel(cuda.InOut(bins), cuda.In(values), np.int32(n), np.int32(nbins), block=(128, 1, 1), grid=(-(-n // 128), 1))
    assert np.array_equal(bins, np.bincount(values % nbins, minlength=nbins))
    steps = sum(np.bincount(values[w:w + 32] % nbins).max() for w in range(0, n, 32))
    assert kernel.counts.atomics["bins"] == Atomics(requests=-(-n // 32), lanes=n, serialized=int(steps))
    if n % 32 == 0:
        assert steps == (n // 32) * (32 // nbins)       # 32 lanes over nbins consecutive bins


def test_shared_memory_atomics_and_dynamic_shared_memory_are_counted_as_shared(module):
    kernel = module.get_function("shared_histogram")
    n, threads = 1024, 64
    values = (np.arange(n) % 3).astype(np.int32)         # three bins: 11 lanes of a warp on one address
    bins = np.zeros(threads, np.uint32)
    kernel(cuda.InOut(bins), cuda.In(values), np.int32(n), block=(threads, 1, 1), grid=(n // threads, 1),
           shared=4 * threads)
    assert np.array_equal(bins, np.bincount(values, minlength=threads))
    c = kernel.counts
    blocks, warps = n // threads, n // 32
    assert c.shared_atomics == Atomics(requests=warps, lanes=n, serialized=11 * warps)
    assert c.shared_stores == SharedTraffic(warps, warps)                   # local[threadIdx.x] = 0
    assert c.atomics["bins"] == Atomics(requests=warps, lanes=n, serialized=warps)
    assert blocks * threads == n


def test_counts_are_plain_data_and_a_table_and_an_ordinary_module_has_none(module):
    kernel = module.get_function("gather")
    src = np.arange(64, dtype=np.float32)
    kernel(cuda.Out(np.empty_like(src)), cuda.In(src), np.int32(64), np.int32(1), block=(64, 1, 1), grid=(1, 1))
    plain = kernel.counts.as_dict()
    assert plain["loads"]["src"] == {"requests": 2, "sectors": 8, "lines": 2, "bytes": 256}
    assert "load src" in kernel.counts.table() and "emulator" in kernel.counts.label
    assert kernel.bytes_read == {"dst": 0, "src": 256}
    ordinary = cuda.SourceModule(SOURCE, backend="emulator", nvcc_check=False).get_function("gather")
    ordinary(cuda.Out(np.empty_like(src)), cuda.In(src), np.int32(64), np.int32(1), block=(64, 1, 1), grid=(1, 1))
    assert ordinary.counts is None
