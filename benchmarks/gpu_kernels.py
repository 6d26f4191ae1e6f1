"""Lesson 11's kernels on a real GPU, and coursekit's SourceModule launch against CuPy's RawKernel.

    python benchmarks/gpu_kernels.py [--out DIR] [--small]

Part of the prepared GPU run (benchmarks/gpu_run.sh).  Two measurements:

1. **Lesson 11's kernels as CuPy raw kernels, timed with CUDA events**: the naive, shared-memory-tiled
   and padded transposes of an n x n float32 matrix, and the strided gather at strides 1-32.  Beside
   each: the cost model's kernel time priced from the sectors its warps moved, counted on the CUDA
   emulator at lesson 11's small size and scaled to the timed size (sectors per element do not depend on
   n for these kernels).  Two timed runs per kernel, so that ``model_accuracy.held_out`` can judge them
   as it judges the call corpus (kernel times only: no launch, no host).
2. **Launch cost**: an empty-bodied kernel launched many times through ``coursekit.cuda.SourceModule``
   (CuPy style) and through ``cupy.RawKernel``, host seconds per queued launch, one synchronisation at
   the end of each batch.  The issue's target: SourceModule <= 1.2x RawKernel.

The kernel sources are read from notebooks/11_gpu_memory_counted.ipynb itself, so they are the lesson's.
On the CuPy stand-in (the dry run) every figure is a CPU figure and the output says so.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402

from coursekit import costmodel, cuda, devices  # noqa: E402
from coursekit.cuda.warp_counts import SECTOR_BYTES  # noqa: E402
from coursekit.work import Work  # noqa: E402

LESSON = os.path.join(os.path.dirname(HERE), "notebooks", "11_gpu_memory_counted.ipynb")
EMPTY = r"""
__global__ void touch(float *x, int n)
{
    if (n < 0) x[0] = 1.0f;
}
"""


def lesson_source(name):
    """The ``NAME = r'''...'''`` CUDA source of lesson 11."""
    with open(LESSON, encoding="utf-8") as fh:
        cells = json.load(fh)["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return re.search(name + r" = r'''(.*?)'''", text, re.S).group(1)


def counted(source, name, args, block, grid):
    """Sectors loaded and stored by one launch on the CUDA emulator (its warp counts)."""
    kernel = cuda.SourceModule(source, backend="emulator", counts=True).get_function(name)
    kernel(*args, block=block, grid=grid)
    counts = kernel.counts
    return (sum(t.sectors for t in counts.loads.values()), sum(t.sectors for t in counts.stores.values()))


def event_seconds(cupy, launch, repeats=20):
    """Best kernel time of ``repeats`` launches, each between two CUDA events (device time, no host)."""
    launch()
    best = float("inf")
    for _ in range(repeats):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return best


def kernel_rows(cupy, model, small):
    rng = np.random.default_rng(1111)
    rows = []
    transpose = lesson_source("TRANSPOSE_SOURCE")
    n_count, n = 64, (128 if small else 4096)
    a = rng.standard_normal((n_count, n_count)).astype(np.float32)
    for label, pad, name in (("naive", 0, "transpose_naive"), ("tiled", 0, "transpose_tiled"),
                             ("padded", 1, "transpose_tiled")):
        source = f"#define PAD {pad}\n" + transpose
        out = np.empty_like(a)
        loads, stores = counted(source, name, (cuda.Out(out), cuda.In(a), np.int32(n_count)), (32, 8, 1),
                                (n_count // 32, n_count // 32))
        scale = (n / n_count) ** 2
        d_in = cupy.asarray(rng.standard_normal((n, n)).astype(np.float32))
        d_out = cupy.empty_like(d_in)
        kernel = cupy.RawKernel(source, name)
        def launch(k=kernel, o=d_out, i=d_in):
            k((n // 32, n // 32), (32, 8), (o, i, np.int32(n)))
        rows.append((f"lesson 11 transpose {label}, n={n}", launch, loads * scale, stores * scale, n * n))
    gather = lesson_source("GATHER_SOURCE")
    g_count, g = 1 << 14, (1 << 16 if small else 1 << 24)
    src = rng.standard_normal(g_count).astype(np.float32)
    d_src = cupy.asarray(rng.standard_normal(g).astype(np.float32))
    d_dst = cupy.empty_like(d_src)
    kernel = cupy.RawKernel(gather, "gather")
    for stride in (1, 2, 4, 8, 16, 32):
        loads, stores = counted(gather, "gather", (cuda.Out(np.empty_like(src)), cuda.In(src), np.int32(g_count),
                                                   np.int32(stride)), (256, 1, 1), (g_count // 256, 1))
        scale = g / g_count
        def launch(s=stride):
            kernel((g // 256,), (256,), (d_dst, d_src, np.int32(g), np.int32(s)))
        rows.append((f"lesson 11 gather stride {stride}, n=2^{g.bit_length() - 1}", launch, loads * scale,
                     stores * scale, g))
    results = []
    for name, launch, loads, stores, threads in rows:
        work = Work(bytes_read=SECTOR_BYTES * loads, bytes_written=SECTOR_BYTES * stores, launches=1,
                    threads=threads)
        modelled, bound = model.kernel_time(work)
        for run in ("run 1", "run 2"):
            measured = event_seconds(cupy, launch)
            results.append(dict(row=name, run=run, measured=measured, modelled=modelled, bound=bound,
                                ratio=measured / modelled))
            print(f"{name} ({run}): {measured * 1e6:.1f} µs (CUDA events) vs {modelled * 1e6:.1f} µs modelled "
                  f"kernel, {bound}-bound", flush=True)
    return results


def launch_rows(cupy, launches):
    """Host seconds per queued launch: coursekit.cuda.SourceModule against cupy.RawKernel."""
    x, mine = cupy.zeros(1, dtype=np.float32), cuda.zeros(1, np.float32)   # each path's own device memory
    n = np.int32(1)
    ours = cuda.SourceModule(EMPTY).get_function("touch")
    theirs = cupy.RawKernel(EMPTY, "touch")
    ways = {"coursekit SourceModule": lambda: ours((1,), (1,), (mine, n)),
            "cupy RawKernel": lambda: theirs((1,), (1,), (x, n))}
    best = {}
    for _ in range(5):              # interleaved, so that a busy moment hits both
        for name, call in ways.items():
            call()
            start = time.perf_counter()
            for _ in range(launches):
                call()
            cupy.cuda.Device().synchronize()
            best[name] = min(best.get(name, float("inf")), (time.perf_counter() - start) / launches)
    ratio = best["coursekit SourceModule"] / best["cupy RawKernel"]
    for name, seconds in best.items():
        print(f"{name}: {seconds * 1e6:.2f} µs per launch (host, queued)")
    print(f"SourceModule / RawKernel: {ratio:.2f}x (target <= 1.2x)")
    return dict(per_launch=best, ratio=ratio, launches=launches)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    parser.add_argument("--small", action="store_true", help="small sizes (the dry run on the stand-in)")
    parser.add_argument("--gpu-model", default=None, help="preset to price with (default: the card's own)")
    args = parser.parse_args(argv)
    cupy, reason = devices.cupy_status()
    if cupy is None:
        sys.exit(f"gpu_kernels.py needs CuPy and a GPU (or the stand-in for a dry run): {reason}")
    standin = getattr(cupy, "STANDIN", False)
    card = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    card = card.decode() if isinstance(card, bytes) else str(card)
    model = costmodel.model(args.gpu_model) if args.gpu_model else costmodel.model_for(devices.get("cuda:0"))
    print(f"{card}: {'CuPy STAND-IN, CPU figures, not GPU timings' if standin else 'real GPU'}; model {model.label}")
    result = dict(date=datetime.date.today().isoformat(), card=card, standin=standin, gpu_model=model.spec.key,
                  kernels=kernel_rows(cupy, model, args.small), launch=launch_rows(cupy, 200 if args.small else 5000))
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{result['date']}-gpu-kernels{'-standin' if standin else ''}.json")
    with open(path, "w") as fh:
        json.dump(result, fh, indent=2)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
