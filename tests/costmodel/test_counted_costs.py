"""The cost model priced from the CUDA emulator's warp counts: what a kernel's warps moved, not what its
threads asked for (issue 23, item 4).  A gather with stride 1 uses every byte of each 32-byte sector; with
stride 8 or more each float costs a whole sector, so the same kernel moves 8x the bytes and the model's
time for it is 8x longer once memory-bound.  Counts, not timings: the emulator counts sectors exactly."""
from __future__ import annotations

import numpy as np
import pytest

from coursekit import cuda
from coursekit import costmodel

SOURCE = r'''
__global__ void gather(float *dst, const float *src, int n, int stride)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[(long long)i * stride % n];
}
'''
N = 1 << 14


@pytest.fixture(scope="module")
def gather():
    return cuda.SourceModule(SOURCE, backend="emulator", counts=True).get_function("gather")


def counted(gather, stride):
    src, dst = np.arange(N, dtype=np.float32), np.zeros(N, dtype=np.float32)
    gather(cuda.Out(dst), cuda.In(src), np.int32(N), np.int32(stride), block=(256, 1, 1), grid=(N // 256, 1))
    assert np.array_equal(dst, src[(np.arange(N) * stride) % N])
    return gather.counts


def test_a_strided_gather_is_priced_by_the_sectors_it_moves(gather):
    model = costmodel.model("h100")
    coalesced, strided = counted(gather, 1), counted(gather, 8)
    assert coalesced.loads["src"].sectors == N * 4 // 32 and strided.loads["src"].sectors == N   # closed forms
    fast, bound_fast, work_fast = model.counted_kernel_time(coalesced, threads=N)
    slow, bound_slow, work_slow = model.counted_kernel_time(strided, threads=N)
    assert bound_fast == bound_slow == "memory"
    # loads: 8x the sectors; stores: the same (dst[i] is coalesced in both)
    assert work_slow.bytes_read == 8 * work_fast.bytes_read and work_slow.bytes_written == work_fast.bytes_written
    assert slow / fast == pytest.approx((8 * N * 4 + N * 4) / (N * 4 + N * 4))
    # a coalesced kernel is priced as the declared-bytes roofline prices it: every byte it asked for
    assert work_fast.bytes == 2 * N * 4
