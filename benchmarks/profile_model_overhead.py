"""What the modelled GPU adds to profiling: per profiled call, and per report (issue 11's 5% budget).

The model runs when a profile is *reported* (summary, HTML, modelled_line), never inside a profiled
call, and it prices each (op, shapes, dtypes) once (a cache).  This script checks both claims on the
seed workloads, on the simulated GPU:

* per call: loops of N profiled calls, each loop followed by one full report, with the model switched
  off (A) and on (B), alternating A and B so load drift hits both; (B - A) / N is what the model costs
  per profiled call, as a share of A's per-call time;
* per report: one report's modelling work, the first time (pricing every node) and again (cache hits).

Run: ``python benchmarks/profile_model_overhead.py [--calls N] [--rounds R] [--no-save]``.
Timings belong here, never in tests; results go to benchmarks/results/<date>-profile-model.{json,md}.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import coursekit as theano  # noqa: E402
import coursekit.tensor as T  # noqa: E402
from coursekit import profiling  # noqa: E402
from coursekit.devices import costmodel  # noqa: E402


def workloads():
    rng = np.random.RandomState(0)
    x = theano.shared(rng.rand(230400).astype("float32"), name="x")
    w1 = theano.function([], T.exp(x), profile=True, name="W1 exp, copy back")
    n = 256
    m, b = (theano.shared(rng.rand(n, n).astype("float32")) for _ in range(2))
    tx = T.fmatrix("x")
    x_val = rng.rand(n, n).astype("float32")
    w4 = theano.function([tx], T.dot(m, tx) + b, profile=True, name="W4 y = m.x + b (shared m, b)")
    xs, ys = T.fmatrix("xs"), T.fvector("ys")
    wv = theano.shared(np.zeros(784, "float32"), name="w")
    bv = theano.shared(np.float32(0), name="b")
    p = 1 / (1 + T.exp(-T.dot(xs, wv) - bv))
    cost = (-ys * T.log(p) - (1 - ys) * T.log(1 - p)).mean() + 0.01 * (wv ** 2).sum()
    gw, gb = T.grad(cost, [wv, bv])
    w3 = theano.function([xs, ys], cost, updates=[(wv, wv - 0.1 * gw), (bv, bv - 0.1 * gb)], profile=True,
                         name="W3 logistic regression step")
    data = (rng.randn(400, 784).astype("float32"), rng.randint(0, 2, 400).astype("float32"))
    return [(w1, ()), (w4, (x_val,)), (w3, data)]


def loop(fn, args, calls, with_model):
    original = profiling.ProfileStats.modelled_times
    if not with_model:  # the profile as it was before the model: no modelled column, no modelled line
        profiling.ProfileStats.modelled_times = lambda self, model=None: {}
        has = profiling.ProfileStats.has_device_ops
        profiling.ProfileStats.has_device_ops = property(lambda self: False)
    try:
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        fn.profile.summary(file="str")
        return time.perf_counter() - start
    finally:
        profiling.ProfileStats.modelled_times = original
        if not with_model:
            profiling.ProfileStats.has_device_ops = has


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    rows = []
    with theano.config.change(device="sim"):
        for fn, fargs in workloads():
            fn(*fargs)
            a, b = [], []
            for _ in range(args.rounds):  # alternate, so drift in the machine's load hits both
                a.append(loop(fn, fargs, args.calls, with_model=False))
                b.append(loop(fn, fargs, args.calls, with_model=True))
            per_call_a, per_call_b = min(a) / args.calls, min(b) / args.calls
            model = costmodel.CostModel(theano.config.gpu_model)  # a fresh cache
            t0 = time.perf_counter()
            from coursekit.modelled import modelled_apply_times

            modelled_apply_times(fn.profile, model)
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            modelled_apply_times(fn.profile, model)
            again = time.perf_counter() - t0
            rows.append(dict(workload=fn.name, per_call_without=per_call_a, per_call_with=per_call_b,
                             overhead_percent=100 * (per_call_b - per_call_a) / per_call_a,
                             report_model_first=first, report_model_cached=again, nodes=len(fn.nodes)))
    lines = [f"Profiling with the modelled GPU ({theano.config.gpu_model}) vs without, simulated GPU, "
             f"{args.calls} calls + 1 report per loop, best of {args.rounds} alternating loops",
             "", "| workload | nodes | per profiled call, without | with | overhead | model per report, "
                 "first | cached |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['nodes']} | {r['per_call_without'] * 1e6:.1f} µs | "
                     f"{r['per_call_with'] * 1e6:.1f} µs | {r['overhead_percent']:+.1f}% | "
                     f"{r['report_model_first'] * 1e6:.0f} µs | {r['report_model_cached'] * 1e6:.0f} µs |")
    text = "\n".join(lines)
    print(text)
    if not args.no_save:
        stamp = datetime.date.today().isoformat()
        folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
        base = os.path.join(folder, f"{stamp}-profile-model")
        meta = dict(date=stamp, machine=platform.processor() or platform.machine(), cpus=os.cpu_count(),
                    load=os.getloadavg(), python=platform.python_version(), numpy=np.__version__, rows=rows)
        with open(base + ".json", "w") as fh:
            json.dump(meta, fh, indent=2)
        with open(base + ".md", "w") as fh:
            fh.write(text + f"\n\nmachine: {meta['machine']}, {meta['cpus']} CPUs, load {meta['load']}\n")
        print(f"wrote {base}.json and .md")


if __name__ == "__main__":
    main()
