"""What counting a launch's warp requests costs on the CUDA emulator (issue 25).

    python benchmarks/warp_counts_overhead.py              # prints and saves to benchmarks/results/
    python benchmarks/warp_counts_overhead.py --no-save

Lesson 11 and exercise 11's grader build kernels with ``SourceModule(..., counts=True)``: every
load and store of the student's code calls a hook (g++'s ThreadSanitizer instrumentation, served
by ck_count.cpp and ck_warp.h) that files it under its warp request. This measures, per launch, a
plain build, a ``count_reads=True`` build (the same hooks, bytes only) and a ``counts=True`` build,
on three of the lesson's kernels, best of ``--repeats``, in this process. All figures are emulator
wall times on the CPU -- not GPU timings -- and move with the machine's load (recorded).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import REPO_ROOT, dump_json, git_revision, machine_info, machine_slug, today, version_of  # noqa: E402

from coursekit import cuda  # noqa: E402

SOURCE = r'''
#define TILE 32
#define ROWS 8
__global__ void transpose_padded(float *out, const float *in, int n)
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void gather(float *dst, const float *src, int n, int stride)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[(long long)i * stride % n];
}

__global__ void histogram(unsigned int *bins, const int *values, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[values[i]], 1u);
}
'''


def workloads(module):
    """(name, accesses per launch, a call that launches once) for one build."""
    rng = np.random.default_rng(0)
    n = 256
    a = rng.standard_normal((n, n)).astype(np.float32)
    out = np.empty_like(a)
    transpose = module.get_function("transpose_padded")
    m = 1 << 16
    src = rng.standard_normal(m).astype(np.float32)
    dst = np.empty_like(src)
    gather = module.get_function("gather")
    values = rng.integers(0, 256, m).astype(np.int32)
    bins = np.zeros(256, np.uint32)
    histogram = module.get_function("histogram")
    return [
        (f"transpose {n}x{n}, padded tile", 4 * n * n,
         lambda: transpose(cuda.Out(out), cuda.In(a), np.int32(n), block=(32, 8, 1), grid=(n // 32, n // 32))),
        (f"gather of {m} floats, stride 8", 2 * m,
         lambda: gather(cuda.Out(dst), cuda.In(src), np.int32(m), np.int32(8), block=(256, 1, 1), grid=(m // 256, 1))),
        (f"histogram of {m} values, global atomics", 2 * m,
         lambda: histogram(cuda.InOut(bins), cuda.In(values), np.int32(m), block=(256, 1, 1), grid=(m // 256, 1))),
    ]


def best(call, repeats):
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-save", action="store_true")
    opts = ap.parse_args()
    builds = {"plain": {}, "count_reads": {"count_reads": True}, "counts": {"counts": True}}
    load_before = os.getloadavg()
    seconds = {}
    for build, flags in builds.items():
        module = cuda.SourceModule(SOURCE, backend="emulator", nvcc_check=False, **flags)
        for name, accesses, call in workloads(module):
            seconds.setdefault(name, {"accesses": accesses})[build] = best(call, opts.repeats)
    load_after = os.getloadavg()
    rows = [{"workload": name, "memory accesses": s["accesses"], **{f"{b}_s": s[b] for b in builds},
             "counts/plain": s["counts"] / s["plain"],
             "counts, us per access": (s["counts"] - s["plain"]) / s["accesses"] * 1e6}
            for name, s in seconds.items()]
    print("emulator wall time per launch (CPU, not a GPU timing), best of", opts.repeats)
    print(f"{'workload':42s} {'plain':>9s} {'reads':>9s} {'counts':>9s} {'ratio':>6s} {'us/access':>9s}")
    for r in rows:
        print(f"{r['workload']:42s} {r['plain_s'] * 1e3:7.1f}ms {r['count_reads_s'] * 1e3:7.1f}ms "
              f"{r['counts_s'] * 1e3:7.1f}ms {r['counts/plain']:6.1f} {r['counts, us per access']:9.2f}")
    print(f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    if not opts.no_save:
        info = machine_info()
        path = os.path.join(REPO_ROOT, "benchmarks", "results", f"{today()}-{machine_slug(info)}-warp-counts.json")
        gxx = subprocess.run([os.environ.get("CXX", "g++"), "--version"], capture_output=True, text=True).stdout
        dump_json(path, {"machine": info, "revision": git_revision(), "numpy": version_of("numpy"),
                         "cxx": gxx.splitlines()[0] if gxx else None, "repeats": opts.repeats, "date": today(),
                         "load_average": [load_before[0], load_after[0]],
                         "note": "emulator wall time on the CPU, best of repeats; not GPU timings", "rows": rows})
        print("wrote", os.path.relpath(path, REPO_ROOT))


if __name__ == "__main__":
    main()
