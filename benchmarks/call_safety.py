"""What a compiled function's thread safety costs per call (issue 10, defect 5).

    python benchmarks/call_safety.py             # writes benchmarks/results/DATE-MACHINE-call-safety.{json,md}
    python benchmarks/call_safety.py --no-save   # print only

Since the fix, every call takes the function's *turn* (one call at a time, so
two threads never share its storage cells), and a call with updates also holds
the locks of the shared variables it updates from reading them to storing the
new values (no update is lost).  Here the same graphs are compiled twice in
one process: once as the library compiles them, once with the call generated
without the turn and the locks (``callgen._locked`` replaced while that twin
is compiled; unsafe, for measuring only).  The two are timed alternately, best
of several rounds, on W2's tiny graph (the per-call overhead is what the lock
could show in) and on W4's update step.  CPU wall times of the whole call.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import REPO_ROOT, dump_json, git_revision, machine_info, machine_slug, today, version_of  # noqa: E402

import coursekit as theano  # noqa: E402
import coursekit.tensor as T  # noqa: E402
from coursekit.compile import callgen  # noqa: E402


def workloads():
    """name -> builder(): a function of no arguments that makes one call."""
    def w2():
        a, b = T.fscalar("a"), T.fscalar("b")
        f = theano.function([a, b], a + b)
        x, y = np.float32(1.5), np.float32(2.5)
        return lambda: f(x, y)

    def w4_update():
        m, b = theano.shared(np.float32(0.5), name="m"), theano.shared(np.float32(0.25), name="b")
        x = theano.shared(np.linspace(0, 1, 100, dtype=np.float32), name="x")
        y = theano.shared(np.zeros(100, np.float32), name="y")
        f = theano.function([], [], updates={y: m * x + b})
        return f

    return {"W2: a + b, float32 scalars": w2, "W4: y = m*x + b as an update, 100 floats": w4_update}


def unsafe(build):
    """The same graph, its call generated without the turn and the update locks."""
    saved = callgen._locked
    callgen._locked = lambda ns, plan, body: body
    try:
        call = build()
        call()
    finally:
        callgen._locked = saved
    return call


def best_per_call(call, n, repeats):
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            call()
        times.append((time.perf_counter() - start) / n)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-save", action="store_true")
    opts = ap.parse_args()
    rows = []
    for name, build in workloads().items():
        safe_call, unsafe_call = build(), unsafe(build)
        safe, bare = [], []
        for _ in range(opts.rounds):                   # alternate, so load drift hits both alike
            safe.append(best_per_call(safe_call, opts.calls, 1))
            bare.append(best_per_call(unsafe_call, opts.calls, 1))
        rows.append({"workload": name, "with_safety_s": min(safe), "without_s": min(bare),
                     "cost_s": min(safe) - min(bare), "ratio": min(safe) / min(bare)})
    print("per-call cost of thread safety (CPU wall time of the whole call, best of rounds, same process)")
    print(f"{'workload':45s} {'with':>10s} {'without':>10s} {'cost':>9s} {'ratio':>7s}")
    for r in rows:
        print(f"{r['workload']:45s} {r['with_safety_s'] * 1e6:8.2f}us {r['without_s'] * 1e6:8.2f}us "
              f"{r['cost_s'] * 1e9:7.0f}ns {r['ratio']:7.3f}")
    if opts.no_save:
        return
    info = machine_info()
    stem = os.path.join(REPO_ROOT, "benchmarks", "results", f"{today()}-{machine_slug(info)}-call-safety")
    dump_json(stem + ".json", {"machine": info, "revision": git_revision(), "numpy": version_of("numpy"),
                               "calls": opts.calls, "rounds": opts.rounds, "date": today(),
                               "note": "CPU wall time per call, best of rounds; 'without' is an unsafe twin "
                                       "compiled for measuring only", "rows": rows})
    with open(stem + ".md", "w") as f:
        f.write(f"# Thread safety per call ({today()}, {info['cpu_model']}, {info['cores_usable']} cores, "
                f"Python {info['python']}, revision {git_revision()})\n\n"
                f"`python benchmarks/call_safety.py`: the same graph compiled as the library does (one call at "
                f"a time per function, update locks) and as an unsafe twin without them, timed alternately in "
                f"one process; best of {opts.rounds} rounds of {opts.calls} calls. CPU wall time.\n\n"
                "| workload | with safety | without | cost per call | ratio |\n|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['workload']} | {r['with_safety_s'] * 1e6:.2f} µs | {r['without_s'] * 1e6:.2f} µs | "
                    f"{r['cost_s'] * 1e9:.0f} ns | {r['ratio']:.3f} |\n")
    print("wrote", os.path.relpath(stem + ".json", REPO_ROOT), "and .md")


if __name__ == "__main__":
    main()
