"""Exercise 11's graded cells judge results *and* counts: wrong kernels lose the points, other correct ones keep them.

Each graded cell of ``solutions/11_gpu_memory_counted_solutions.ipynb`` runs here after the notebook's
setup cell and one answer (a kernel source), judged twice as in a grading run (``judged_twice``):
in the kernel, and by the grader's judge on the reported observations. Wrong answers come in two kinds:
kernels that compute wrong values (a missing guard or barrier, an exclusive scan, unzeroed shared
bins) and kernels that compute the right values the way the task rules out, which only the warp
counts can tell (a naive transpose, a tile without padding, a one-thread scan, a scan that works in
global memory, global atomics per value, a plain ``++`` in shared memory, a merge without atomics).
A shortcut that leaves the launched kernel's output alone scores 0 too. Valid alternatives use
other techniques than the solution (an XOR-swizzled tile, a warp-shuffle scan, a histogram that
merges only the bins it used).
"""
from __future__ import annotations

from pathlib import Path

import nbformat
from course_cells import imports_cell
import pytest
from judged_twice import run_judged_twice

from coursekit import cuda
from coursekit.course.student.check import NONCE_ENV, REPORT_DIR_ENV
from coursekit.course.authoring.graded import graded_cells

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOK = nbformat.read(ROOT / "solutions" / "11_gpu_memory_counted_solutions.ipynb", as_version=4)
SETUP = imports_cell(NOTEBOOK).source
GRADED = {cell.id: cell.source for cell in graded_cells(NOTEBOOK)}
NONCE = "lesson11-test-run"


@pytest.fixture
def run(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSEKIT_SIZE", "small")
    monkeypatch.setenv(REPORT_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(NONCE_ENV, NONCE)

    def run_cells(answer, graded_id):
        run_judged_twice([("setup cell", SETUP), ("answer cell", answer)], graded_id, GRADED[graded_id],
                         tmp_path, NONCE, "exercise11")

    return run_cells


def test_the_notebook_has_the_three_graded_cells_these_tests_drive():
    assert {k: c.points for k, c in ((c.id, c) for c in graded_cells(NOTEBOOK))} == {
        "transpose-coalesced": 3, "scan-blocks": 3, "histogram-private": 2}


def source(name, body):
    return f'{name} = r"""\n{body}\n"""\n'


# --- task 1: transpose ------------------------------------------------------------------------------

TILED = r'''
#define TILE 32
#define ROWS 8
__global__ void transpose(float *out, const float *in, int rows, int cols)
{
    __shared__ float tile[TILE][TILE + PAD];
    int c = blockIdx.x * TILE + threadIdx.x, r = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (r + j < rows && c < cols) tile[threadIdx.y + j][threadIdx.x] = in[(r + j) * cols + c];
    BARRIER
    r = blockIdx.y * TILE + threadIdx.x;
    c = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (GUARD) out[(c + j) * rows + r] = tile[threadIdx.x][threadIdx.y + j];
}
'''


def tiled(pad="1", barrier="__syncthreads();", guard="c + j < cols && r < rows"):
    return source("TRANSPOSE_SOURCE", TILED.replace("PAD", pad).replace("BARRIER", barrier).replace("GUARD", guard))


NAIVE = source("TRANSPOSE_SOURCE", r'''
__global__ void transpose(float *out, const float *in, int rows, int cols)
{
    const int c = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * 32 + threadIdx.y;
    for (int r = r0; r < r0 + 32; r += 8)
        if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}
''')
EMPTY_KERNEL_HOST_RESULT = source("TRANSPOSE_SOURCE", r'''
__global__ void transpose(float *out, const float *in, int rows, int cols) { }
''') + "\ntranspose = lambda a: (np.ascontiguousarray(a.T), None)\n"
SWIZZLED = source("TRANSPOSE_SOURCE", r'''
// no padding: the tile's column c of row r is stored at column c ^ r, so a column spans every bank
__global__ void transpose(float *out, const float *in, int rows, int cols)
{
    __shared__ float tile[32][32];
    const int tx = threadIdx.x;
    for (int ty = threadIdx.y; ty < 32; ty += 8) {
        const int r = blockIdx.y * 32 + ty, c = blockIdx.x * 32 + tx;
        if (r < rows && c < cols) tile[ty][tx ^ ty] = in[r * cols + c];
    }
    __syncthreads();
    for (int ty = threadIdx.y; ty < 32; ty += 8) {
        const int c = blockIdx.x * 32 + ty, r = blockIdx.y * 32 + tx;
        if (c < cols && r < rows) out[c * rows + r] = tile[tx][ty ^ tx];
    }
}
''')


def test_the_solution_transpose_passes(run):
    run(tiled(), "transpose-coalesced")


def test_a_swizzled_tile_instead_of_padding_passes(run):
    run(SWIZZLED, "transpose-coalesced")


@pytest.mark.parametrize("answer, error, match", [
    (NAIVE, AssertionError, "stores to out took"),                      # right values, 32 sectors per store
    (tiled(pad="0"), AssertionError, "bank conflicts"),                 # right values, 32-way conflicts
    (tiled(guard="c + j < cols"), cuda.MemoryAccessError, "out-of-bounds write"),   # no guard on r
    (EMPTY_KERNEL_HOST_RESULT, AssertionError, "elements of the transpose are wrong"),   # host result
    (tiled(barrier=""), cuda.RaceConditionError, "missing __syncthreads"),
], ids=["naive", "no-padding", "missing-guard", "empty-kernel", "no-barrier"])
def test_wrong_transposes_lose_the_points(run, answer, error, match):
    with pytest.raises(error, match=match):
        run(answer, "transpose-coalesced")


# --- task 2: scan -----------------------------------------------------------------------------------

HILLIS_STEELE = r'''
#define BLOCK 256
__global__ void scan_blocks(int *out, int *block_sums, const int *in, int n)
{
    __shared__ int partial[BLOCK];
    const int t = threadIdx.x, i = blockIdx.x * BLOCK + t;
    partial[t] = i < n ? in[i] : 0;
    __syncthreads();
    for (int offset = 1; offset < BLOCK; offset *= 2) {
        const int left = t >= offset ? partial[t - offset] : 0;
        MIDDLE
        partial[t] += left;
        __syncthreads();
    }
    if (i < n) out[i] = RESULT;
    if (t == BLOCK - 1) block_sums[blockIdx.x] = partial[t];
}
'''


def hillis_steele(middle="__syncthreads();", result="partial[t]"):
    return source("SCAN_SOURCE", HILLIS_STEELE.replace("MIDDLE", middle).replace("RESULT", result))


SERIAL_SCAN = source("SCAN_SOURCE", r'''
__global__ void scan_blocks(int *out, int *block_sums, const int *in, int n)
{
    if (threadIdx.x != 0) return;
    const int start = blockIdx.x * 256, stop = min(start + 256, n);
    int running = 0;
    for (int i = start; i < stop; ++i) { running += in[i]; out[i] = running; }
    block_sums[blockIdx.x] = running;
}
''')
GLOBAL_MEMORY_SCAN = source("SCAN_SOURCE", r'''
// right values, but every step reads and writes out in global memory
__global__ void scan_blocks(int *out, int *block_sums, const int *in, int n)
{
    const int t = threadIdx.x, i = blockIdx.x * 256 + t;
    if (i < n) out[i] = in[i];
    __syncthreads();
    for (int offset = 1; offset < 256; offset *= 2) {
        const int left = (t >= offset && i < n) ? out[i - offset] : 0;
        __syncthreads();
        if (i < n) out[i] += left;
        __syncthreads();
    }
    const int last = min(n - 1, blockIdx.x * 256 + 255);
    if (i == last) block_sums[blockIdx.x] = out[i];
}
''')
WARP_SHUFFLE_SCAN = source("SCAN_SOURCE", r'''
// a scan within each warp by shuffles, then the warps' totals in shared memory
__global__ void scan_blocks(int *out, int *block_sums, const int *in, int n)
{
    __shared__ int warp_total[8];
    const int t = threadIdx.x, i = blockIdx.x * 256 + t, lane = t & 31, warp = t >> 5;
    int v = i < n ? in[i] : 0;
    for (int d = 1; d < 32; d *= 2) {
        const int up = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += up;
    }
    if (lane == 31) warp_total[warp] = v;
    __syncthreads();
    int before = 0;
    for (int w = 0; w < warp; ++w) before += warp_total[w];
    v += before;
    if (i < n) out[i] = v;
    if (t == 255) block_sums[blockIdx.x] = v;
}
''')


def test_the_solution_scan_passes(run):
    run(hillis_steele(), "scan-blocks")


def test_a_warp_shuffle_scan_passes(run):
    run(WARP_SHUFFLE_SCAN, "scan-blocks")


@pytest.mark.parametrize("answer, error, match", [
    (hillis_steele(result="partial[t] - (i < n ? in[i] : 0)"), AssertionError, "scanned values are wrong"),  # exclusive
    (SERIAL_SCAN, AssertionError, "the loads from in were"),                 # right values, one lane per request
    (GLOBAL_MEMORY_SCAN, AssertionError, "the stores to out were"),          # right values, steps in global memory
    (source("SCAN_SOURCE", "__global__ void scan_blocks(int *out, int *block_sums, const int *in, int n) { }"),
     AssertionError, "scanned values are wrong"),
    (hillis_steele(middle=""), cuda.RaceConditionError, "missing __syncthreads"),   # read and write in one step
], ids=["exclusive", "one-thread", "global-memory-steps", "empty-kernel", "no-barrier"])
def test_wrong_scans_lose_the_points(run, answer, error, match):
    with pytest.raises(error, match=match):
        run(answer, "scan-blocks")


# --- task 3: histogram ------------------------------------------------------------------------------

PRIVATE = r'''
__global__ void histogram(unsigned int *bins, const int *values, int n, int nbins)
{
    extern __shared__ unsigned int local[];
    ZERO
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) COUNT;
    AFTER
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) MERGE;
}
'''


def private(zero="for (int b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;", count="atomicAdd(&local[values[i]], 1u)",
            after="__syncthreads();", merge="atomicAdd(&bins[b], local[b])"):
    body = PRIVATE.replace("ZERO", zero).replace("COUNT", count).replace("AFTER", after).replace("MERGE", merge)
    return source("HISTOGRAM_SOURCE", body)


GLOBAL_ATOMICS = source("HISTOGRAM_SOURCE", r'''
__global__ void histogram(unsigned int *bins, const int *values, int n, int nbins)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[values[i]], 1u);
}
''')


def test_the_solution_histogram_passes(run):
    run(private(), "histogram-private")


def test_a_histogram_that_merges_only_the_bins_it_used_passes(run):
    run(private(merge="{ if (local[b]) atomicAdd(&bins[b], local[b]); }"), "histogram-private")


@pytest.mark.parametrize("answer, error, match", [
    (GLOBAL_ATOMICS, AssertionError, "0 shared-memory atomic updates"),             # right bins, n global atomics
    (private(count="local[values[i]]++"), AssertionError, "0 shared-memory atomic"),  # right only on the emulator
    (private(merge="bins[b] += local[b]"), AssertionError, "0 atomic updates of the global bins"),
    (private(zero=""), AssertionError, "bins are wrong"),                           # shared bins hold garbage
    (private(after=""), cuda.RaceConditionError, "missing __syncthreads"),          # merge before counting ends
], ids=["global-atomics", "plain-increment", "plain-merge", "no-zeroing", "no-barrier"])
def test_wrong_histograms_lose_the_points(run, answer, error, match):
    with pytest.raises(error, match=match):
        run(answer, "histogram-private")
