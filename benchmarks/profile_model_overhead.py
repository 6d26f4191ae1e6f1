"""What the modelled GPU adds to profiling: per profiled call, and per report (issue 11's 5% budget).

The model runs when a profile is *reported* (summary, HTML, modelled_line), never inside a profiled
call, and it prices each (op, shapes, dtypes) once (a cache).  This script checks both claims on the
seed workloads, on the simulated GPU:

* per call: a profiled call runs exactly the same code with or without the model (the model is never
  called from the profiler's hook); what the model adds is report time: a full report with the model
  (cold cache: every node priced) minus the same report with the model switched off, spread over the N
  calls the report covers, as a share of one profiled call;
* per report: the same report again with a warm cache (the shapes were priced before).

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
from coursekit import costmodel  # noqa: E402


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


class model_switched_off:  # noqa: N801  (used as a context manager, named like one)
    """The profile as it was before the model: no modelled column, no modelled line."""

    def __enter__(self):
        self.saved = profiling.ProfileStats.modelled_times, profiling.ProfileStats.has_device_ops
        profiling.ProfileStats.modelled_times = lambda self, model=None: {}
        profiling.ProfileStats.has_device_ops = property(lambda self: False)

    def __exit__(self, *exc):
        profiling.ProfileStats.modelled_times, profiling.ProfileStats.has_device_ops = self.saved


def best(fn, rounds):
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return min(samples)


def calls_loop(fn, args, calls):
    def run():
        for _ in range(calls):
            fn(*args)
    return run


def report_with_cold_cache(fn):
    costmodel.pricing._MODELS.clear()  # a fresh CostModel: every node priced again
    fn.profile.summary(file="str")


def main():
    from threadpoolctl import threadpool_limits

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="profiled calls per report")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    rows = []
    with theano.config.change(device="sim"), threadpool_limits(1, user_api="blas"):
        for fn, fargs in workloads():
            fn(*fargs)
            per_call = best(calls_loop(fn, fargs, args.calls), args.rounds) / args.calls
            with model_switched_off():
                report_without = best(lambda: fn.profile.summary(file="str"), args.rounds)
            report_cold = best(lambda: report_with_cold_cache(fn), args.rounds)
            report_warm = best(lambda: fn.profile.summary(file="str"), args.rounds)
            extra = report_cold - report_without  # what the model adds, once per report, nothing per call
            rows.append(dict(workload=fn.name, nodes=len(fn.nodes), per_call=per_call,
                             report_without=report_without, report_cold=report_cold, report_warm=report_warm,
                             overhead_per_call=extra / args.calls,
                             overhead_percent=100 * extra / args.calls / per_call))
    lines = [f"Profiling with the modelled GPU ({theano.config.gpu_model}) vs without, simulated GPU, BLAS on 1 "
             f"thread, best of {args.rounds}. The model adds nothing inside a profiled call (it runs when a "
             f"report is made); its cost per call is its extra report time spread over {args.calls} calls.",
             "", "| workload | nodes | per profiled call | report without model | with model (cold cache) | "
                 "(warm cache) | model cost per call | share |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['nodes']} | {r['per_call'] * 1e6:.1f} µs | "
                     f"{r['report_without'] * 1e3:.2f} ms | {r['report_cold'] * 1e3:.2f} ms | "
                     f"{r['report_warm'] * 1e3:.2f} ms | {r['overhead_per_call'] * 1e6:.2f} µs | "
                     f"{r['overhead_percent']:.2f}% |")
    text = "\n".join(lines)
    print(text)
    if not args.no_save:
        stamp = datetime.date.today().isoformat()
        folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
        base = os.path.join(folder, f"{stamp}-profile-model")
        meta = dict(date=stamp, machine=platform.processor() or platform.machine(), cpus=os.cpu_count(),
                    load=os.getloadavg(), python=platform.python_version(), numpy=np.__version__,
                    calls_per_report=args.calls, rows=rows)
        with open(base + ".json", "w") as fh:
            json.dump(meta, fh, indent=2)
        with open(base + ".md", "w") as fh:
            fh.write(text + f"\n\nmachine: {meta['machine']}, {meta['cpus']} CPUs, load {meta['load']}\n")
        print(f"wrote {base}.json and .md")


if __name__ == "__main__":
    main()
