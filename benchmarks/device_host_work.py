"""coursekit's own host work per call on the CUDA device path, measured on a CPU through the CuPy stand-in.

    .venv/bin/python benchmarks/device_host_work.py [--calls 2000] [--out results/<date>-device-host-work.md]

A call on ``device='cuda'`` is coursekit's Python (the generated call, thunks, input checks, kernel
choice, output buffers, handles) plus CuPy's (here: the stand-in's NumPy and emulator work, which is
NOT what CuPy costs).  cProfile splits one from the other by file: the table gives, per call, the
time spent in coursekit's own functions (its host path), the stand-in's (with the CUDA emulator that
runs its kernels) and the rest, and the launch/sync/copy
counts.  What a GPU adds (launch latency, kernels, transfers) is not here at all: these are CPU
figures of the host path only, labelled as such, never a GPU measurement.  The ordinary call
(mode.without_cuda_graphs()) and the default call (a CUDA graph where the function allows one) are
measured side by side, and W3 beside the same step written by hand in CuPy (the naive way: one CuPy call
per operation, gradients by hand).

Host dispatch, counted (load cannot change it): the Python function calls of the framework per call
(coursekit's own; for the hand-written step, the step function itself) plus its calls into CuPy (one per
kernel launch, graph launch, copy or synchronisation: what each of those costs the host in CuPy's own
compiled code is the same for both).  The W3 rows print their ratio to the hand-written step's.

cProfile's own overhead inflates every figure (a few hundred ns per Python call); compare rows with
each other, not with timings taken without it.  The count of coursekit's Python function calls per
call does not depend on the machine's load: it is the figure to compare across versions.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import sys
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import coursekit as theano  # noqa: E402
import coursekit.tensor as T  # noqa: E402
import cupy_standin  # noqa: E402
from coursekit.compile.mode import get_mode  # noqa: E402


def workloads(graphs):
    """(name, compiled function, args) on the current (stand-in CUDA) device."""
    mode = None if graphs else get_mode("FAST_RUN").without_cuda_graphs()   # the default mode has graphs on
    rng = np.random.RandomState(0)
    x = theano.shared(rng.rand(1000).astype("float32"))
    yield "W1 exp(x) into a borrowed device buffer", theano.function(
        [], theano.Out(theano.gpu_from_host(T.exp(x)), borrow=True), mode=mode), ()
    a, b = T.fscalar("a"), T.fscalar("b")
    yield "W2 a + b, float32 scalars (host_scalars: no device work)", theano.function(
        [a, b], a + b, mode=mode), (np.float32(1.5), np.float32(2.25))
    data = theano.shared(rng.randn(400, 784).astype("float32"))
    labels = theano.shared(rng.randint(0, 2, 400).astype("float32"))
    w, bias = theano.shared(np.zeros(784, "float32")), theano.shared(np.float32(0))
    p = 1 / (1 + T.exp(-T.dot(data, w) - bias))
    cost = (-labels * T.log(p) - (1 - labels) * T.log(1 - p)).mean() + 0.01 * (w ** 2).sum()
    gw, gb = T.grad(cost, [w, bias])
    yield "W3 logistic step, data shared (returns the cost)", theano.function(
        [], cost, updates=[(w, w - 0.1 * gw), (bias, bias - 0.1 * gb)], mode=mode), ()
    m, v, c = (theano.shared(rng.rand(*s).astype("float32")) for s in ((100, 100), (100, 1), (100, 1)))
    yield "W4 dot(m, x) + b, all shared (result copied home)", theano.function(
        [], T.dot(m, v) + c, mode=mode), ()


def naive_cupy_w3():
    """W3 by hand in CuPy (the stand-in here): the tutorial's step with manual gradients, data on the device."""
    import cupy
    rng = np.random.RandomState(0)
    data, labels = cupy.asarray(rng.randn(400, 784).astype("float32")), cupy.asarray(
        rng.randint(0, 2, 400).astype("float32"))
    state = {"w": cupy.zeros(784, "float32"), "b": cupy.zeros((), "float32")}

    def step():
        w, b = state["w"], state["b"]
        p = 1 / (1 + cupy.exp(-(data @ w) - b))
        cost = (-labels * cupy.log(p) - (1 - labels) * cupy.log(1 - p)).mean() + 0.01 * (w * w).sum()
        delta = (p - labels) / data.shape[0]
        state["w"] = w - 0.1 * (data.T @ delta + 0.02 * w)
        state["b"] = b - 0.1 * delta.sum()
        return float(cost)
    return "W3 logistic step, written by hand in CuPy (naive)", step, ()


def dispatch(parts, counts):
    """Host dispatch per call: framework Python calls + calls into CuPy (launches, graph launches, copies, syncs)."""
    return parts["coursekit calls"] + counts.launches + counts.graph_launches + counts.h2d + counts.d2h + counts.syncs


def split(stats):
    """Seconds of own time: coursekit's host path, the device stand-in (the stand-in's files and the CUDA
    emulator that runs its kernels, coursekit/cuda/), and everything else (NumPy, builtins, C calls)."""
    parts = {"coursekit": 0.0, "stand-in": 0.0, "other": 0.0, "coursekit calls": 0}
    emulator = os.sep + os.path.join("coursekit", "cuda") + os.sep
    for (path, _, _), (calls, _, own, _, _) in stats.stats.items():
        if os.sep + "cupy_standin" + os.sep in path or emulator in path:
            parts["stand-in"] += own
        elif (os.sep + "coursekit" + os.sep in path or path.startswith("<coursekit function")
              or path.endswith("device_host_work.py")):   # the hand-written step's own Python counts as its framework
            parts["coursekit"] += own
            parts["coursekit calls"] += calls
        else:
            parts["other"] += own
    return parts


def measure(f, args, calls):
    for _ in range(5):
        f(*args)
    with cupy_standin.counting() as counts:
        f(*args)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        f(*args)
    profiler.disable()
    parts = split(pstats.Stats(profiler))
    return {k: v / calls for k, v in parts.items()}, counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--out", default=None)
    opts = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    with cupy_standin.installed(), theano.config.change(device="cuda", floatX="float32", allow_gc=False):
        for graphs in (False, True):
            for name, f, args in workloads(graphs):
                parts, c = measure(f, args, opts.calls)
                rows.append((name, "graph" if graphs and f.cuda_graph and f.cuda_graph.graph else "ordinary",
                             parts, c))
        name, step, args = naive_cupy_w3()
        parts, c = measure(step, args, opts.calls)
        rows.append((name, "CuPy by hand", parts, c))
    naive = dispatch(rows[-1][2], rows[-1][3])
    load = os.getloadavg()[0]
    lines = [f"# coursekit's host work per call on the CUDA path (CuPy stand-in, CPU) — {time.strftime('%Y-%m-%d')}",
             "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load {load:.1f}; "
             f"Python {platform.python_version()}, NumPy {np.__version__}; {opts.calls} calls per row under "
             "cProfile. CPU figures of the host path only (coursekit's own Python), never a GPU measurement; "
             "the stand-in's column is its own Python and the CUDA emulator's (coursekit/cuda/) that runs its "
             "kernels, not CuPy's cost; 'other' is NumPy, builtins and C calls of both.", "",
             "| workload | call | framework Python calls/call | host dispatch (calls + CuPy calls) | vs W3 by hand "
             "| framework µs/call | stand-in µs/call | other µs/call | launches | graph launches | syncs | H2D | D2H "
             "| allocations |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, kind, parts, c in rows:
        ratio = f"{dispatch(parts, c) / naive:.2f}x" if name.startswith("W3") else ""
        lines.append(f"| {name} | {kind} | {parts['coursekit calls']:.0f} | {dispatch(parts, c):.0f} | {ratio} | "
                     f"{parts['coursekit'] * 1e6:.1f} | {parts['stand-in'] * 1e6:.1f} | "
                     f"{parts['other'] * 1e6:.1f} | {c.launches} | {c.graph_launches} | {c.syncs} | {c.h2d} | "
                     f"{c.d2h} | {c.allocations} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if opts.out:
        with open(opts.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
