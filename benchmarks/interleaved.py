#!/usr/bin/env python
"""Every system in interleaved rounds, for the "ahead of every peer" targets of issue 17.

    python benchmarks/interleaved.py [--rounds 15] [--processes 3] [--only W1,W1b,W3,W4b] [--no-save]

``run.py`` times each peer in a block of its own, so on a shared machine a peer timed in a quiet
minute can look faster than coursekit timed in a busy one.  Here every system runs a short burst
of calls in turn, round after round, in a rotated order; each round gives every system a ratio to
the NumPy baseline timed in *the same round*, and a row reports the median of those ratios.  The
whole run is repeated in several fresh processes (``--processes``), and the table gives the median
over all rounds of all processes, plus each process's median so one can see whether they agree.

Workloads (the same graphs as ``run.py``; see README.md):

* ``W1``: ``exp`` of a shared float32 vector of 230,400 values, result returned (new array per call);
* ``W1b``: the same with ``Out(..., borrow=True)``; baseline ``np.exp(x, out=buf)``;
* ``W3``: one training step of the tutorial's logistic regression (N=400, 784 features);
* ``W4b``: ``dot(m, x) + b`` with m, x, b shared (m 1000x1000, float32).

coursekit runs twice: with NumPy kernels (the default) and with ``config.cpu_kernels='numba'``.
Writes ``results/<date>-<machine>-interleaved.{json,md}``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, HERE]

WORKLOADS = ("W1", "W1b", "W3", "W4b")
BURST = {"W1": 20, "W1b": 20, "W3": 40, "W4b": 20}  # calls per system per round
VLEN = 10 * 30 * 768


# ------------------------------------------------------------------------------------ builders
# Each builder returns {system: callable} for one workload; a system that cannot run is left out
# with a note.  Every callable is checked against NumPy's result before timing.

def _coursekit(kernels):
    import coursekit as theano
    import coursekit.tensor as T
    return theano, T, theano.config.change(cpu_kernels=kernels)


def build_w1(borrow, notes):
    xv = np.asarray(np.random.RandomState(22).rand(VLEN), dtype=np.float32)
    ref, buf = np.exp(xv), np.empty_like(xv)
    calls = {"numpy": (lambda: np.exp(xv, out=buf)) if borrow else (lambda: np.exp(xv))}
    for label, kernels in (("coursekit", "numpy"), ("coursekit[numba]", "numba")):
        theano, T, kernels_mode = _coursekit(kernels)
        with kernels_mode:
            x = theano.shared(xv.copy(), name="x")
            out = theano.Out(T.exp(x), borrow=True) if borrow else T.exp(x)
            calls[label] = theano.function([], out)
    _pytensor(calls, notes, lambda pt, pytensor, mode: _pt_w1(pt, pytensor, mode, xv, borrow))
    try:
        import jax
        import jax.numpy as jnp
        xj, fj = jax.device_put(xv), jax.jit(jnp.exp)
        calls["jax"] = lambda: fj(xj).block_until_ready()
    except Exception as e:  # noqa: BLE001
        notes.append(f"jax skipped: {e}")
    try:
        import torch
        xt, bt = torch.from_numpy(xv.copy()), torch.empty(VLEN, dtype=torch.float32)
        calls["torch"] = (lambda: torch.exp(xt, out=bt)) if borrow else (lambda: torch.exp(xt))
    except Exception as e:  # noqa: BLE001
        notes.append(f"torch skipped: {e}")
    return calls, lambda r: np.allclose(np.asarray(r), ref, rtol=1e-5)


def _pt_w1(pt, pytensor, mode, xv, borrow):
    x = pytensor.shared(xv.copy(), name="x")
    out = pytensor.Out(pt.exp(x), borrow=True) if borrow else pt.exp(x)
    return pytensor.function([], out, mode=mode)


def _pytensor(calls, notes, make):
    try:
        import pytensor
        import pytensor.tensor as pt
    except Exception as e:  # noqa: BLE001
        notes.append(f"pytensor skipped: {e}")
        return
    for label, mode in (("pytensor[numba]", pytensor.compile.mode.Mode(linker="numba", optimizer="fast_run")),
                        ("pytensor[C]", pytensor.compile.mode.Mode(linker="cvm", optimizer="fast_run"))):
        try:
            calls[label] = make(pt, pytensor, mode)
        except Exception as e:  # noqa: BLE001
            notes.append(f"{label} skipped: {type(e).__name__}: {e}")


def build_w3(notes):
    from workloads import LR, numpy_trainer, w3_data
    D, w0, b0 = w3_data()
    step, _ = numpy_trainer(D, w0, b0, np.float32)
    calls = {"numpy": step}
    for label, kernels in (("coursekit", "numpy"), ("coursekit[numba]", "numba")):
        theano, T, kernels_mode = _coursekit(kernels)
        with kernels_mode:
            train = _logistic(theano, T, theano.shared, D, w0, b0, LR, np.float32)
        calls[label] = lambda train=train: train(D[0], D[1])

    def pt_train(pt, pytensor, mode):
        return _logistic(pytensor, pt, pytensor.shared, D, w0, b0, LR, np.float32, mode=mode)
    pt_calls = {}
    _pytensor(pt_calls, notes, pt_train)
    for label, train in pt_calls.items():
        calls[label] = lambda train=train: train(D[0], D[1])
    try:
        calls["jax"] = _jax_w3(D, w0, b0, LR)
    except Exception as e:  # noqa: BLE001
        notes.append(f"jax skipped: {e}")
    try:
        calls["torch"] = _torch_w3(D, w0, b0, LR)
    except Exception as e:  # noqa: BLE001
        notes.append(f"torch skipped: {e}")
    return calls, None


def _logistic(lib, T, shared, D, w0, b0, lr, f32, mode=None):
    """The tutorial's model, literally (coursekit and PyTensor get the same graph)."""
    x, y = T.matrix("x", dtype="float32"), T.vector("y", dtype="float32")
    w, b = shared(w0.copy(), name="w"), shared(np.asarray(b0, dtype=np.float32), name="b")
    p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
    xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
    cost = xent.mean() + f32(0.01) * (w ** 2).sum()
    gw, gb = lib.grad(cost, [w, b])
    kwargs = {} if mode is None else {"mode": mode}
    return lib.function([x, y], [p_1 > 0.5, xent], updates=[(w, w - f32(lr) * gw), (b, b - f32(lr) * gb)],
                        **kwargs)


def _jax_w3(D, w0, b0, lr):
    import jax

    def loss(w, b, x, y):
        z = x @ w + b
        xent = y * jax.nn.softplus(-z) + (1 - y) * jax.nn.softplus(z)
        return xent.mean() + 0.01 * (w ** 2).sum(), (jax.nn.sigmoid(z) > 0.5, xent)

    @jax.jit
    def step(w, b, x, y):
        (_, (pred, xent)), (gw, gb) = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(w, b, x, y)
        return w - lr * gw, b - lr * gb, pred, xent
    xj, yj = jax.device_put(D[0]), jax.device_put(D[1])
    st = {"w": jax.device_put(w0.copy()), "b": jax.device_put(np.float32(b0))}

    def one():
        st["w"], st["b"], _, _ = step(st["w"], st["b"], xj, yj)
        st["w"].block_until_ready()
    return one


def _torch_w3(D, w0, b0, lr):
    import torch
    F = torch.nn.functional
    xt, yt = torch.from_numpy(D[0]), torch.from_numpy(D[1])
    wt = torch.from_numpy(w0.copy()).requires_grad_(True)
    bt = torch.zeros((), dtype=torch.float32, requires_grad=True)

    def one():
        z = xt @ wt + bt
        xent = yt * F.softplus(-z) + (1 - yt) * F.softplus(z)
        cost = xent.mean() + 0.01 * (wt ** 2).sum()
        cost.backward()
        with torch.no_grad():
            wt.sub_(lr * wt.grad)
            bt.sub_(lr * bt.grad)
            wt.grad = bt.grad = None
            pred = torch.sigmoid(z) > 0.5
        return pred, xent
    return one


def build_w4b(notes):
    rng = np.random.RandomState(4)
    M, X, B = (rng.rand(1000, 1000).astype(np.float32), rng.rand(1000, 1).astype(np.float32),
               rng.rand(1000, 1).astype(np.float32))
    ref = (M.astype(np.float64) @ X + B).astype(np.float32)
    calls = {"numpy": lambda: np.dot(M, X) + B}
    for label, kernels in (("coursekit", "numpy"), ("coursekit[numba]", "numba")):
        theano, T, kernels_mode = _coursekit(kernels)
        with kernels_mode:
            m, x, b = (theano.shared(v.copy()) for v in (M, X, B))
            calls[label] = theano.function([], T.dot(m, x) + b)

    def pt_f(pt, pytensor, mode):
        m, x, b = (pytensor.shared(v.copy()) for v in (M, X, B))
        return pytensor.function([], pt.dot(m, x) + b, mode=mode)
    _pytensor(calls, notes, pt_f)
    try:
        import jax
        mj, xj, bj = (jax.device_put(v) for v in (M, X, B))
        fj = jax.jit(lambda m, x, b: m @ x + b)
        calls["jax"] = lambda: fj(mj, xj, bj).block_until_ready()
    except Exception as e:  # noqa: BLE001
        notes.append(f"jax skipped: {e}")
    try:
        import torch
        mt, xt, bt = (torch.from_numpy(v.copy()) for v in (M, X, B))
        calls["torch"] = lambda: torch.addmm(bt, mt, xt)
    except Exception as e:  # noqa: BLE001
        notes.append(f"torch skipped: {e}")
    return calls, lambda r: np.allclose(np.asarray(r), ref, rtol=1e-4, atol=1e-3)


BUILDERS = {"W1": lambda notes: build_w1(False, notes), "W1b": lambda notes: build_w1(True, notes),
            "W3": build_w3, "W4b": build_w4b}


# ------------------------------------------------------------------------------------- timing
def time_workload(name, rounds, notes):
    calls, check = BUILDERS[name](notes)
    for label, fn in list(calls.items()):
        try:
            with np.errstate(over="ignore"):
                first = fn()
                fn()
            if check is not None and not check(first):
                notes.append(f"{name} {label}: wrong result, left out")
                del calls[label]
        except Exception as e:  # noqa: BLE001
            notes.append(f"{name} {label}: failed ({type(e).__name__}: {e}), left out")
            del calls[label]
    labels, n = list(calls), BURST[name]
    per_call = {k: [] for k in labels}
    with np.errstate(over="ignore"):
        for r in range(rounds):
            order = labels[r % len(labels):] + labels[:r % len(labels)]  # rotate who goes first
            for label in order:
                fn = calls[label]
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                per_call[label].append((time.perf_counter() - t0) / n)
    return per_call


def one_process(workloads, rounds):
    notes, out = [], {}
    for w in workloads:
        out[w] = time_workload(w, rounds, notes)
    return {"timings": out, "notes": notes}


def summarise(runs, workloads):
    """Per workload and system: median time per call, median of per-round ratios to NumPy (all
    processes pooled), and each process's median ratio."""
    table = {}
    for w in workloads:
        labels = list(runs[0]["timings"][w])
        rows = {}
        for label in labels:
            times, ratios, per_process = [], [], []
            for run in runs:
                t, base = run["timings"][w].get(label), run["timings"][w]["numpy"]
                if t is None:
                    continue
                r = [a / b for a, b in zip(t, base)]
                times += t
                ratios += r
                per_process.append(float(np.median(r)))
            rows[label] = {"median_s": float(np.median(times)), "best_s": float(np.min(times)),
                           "median_ratio": float(np.median(ratios)), "process_median_ratios": per_process,
                           "rounds": len(ratios)}
        table[w] = rows
    return table


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--processes", type=int, default=3)
    p.add_argument("--only", default=",".join(WORKLOADS))
    p.add_argument("--threads", type=int, default=None,
                   help="every library on this many CPU threads (as run.py --threads)")
    p.add_argument("--no-save", action="store_true")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    workloads = [w for w in args.only.split(",") if w]
    from run import configure_environment, versions
    configure_environment("cpu", args.threads)  # the children inherit it (set before they import anything)
    if args.child:
        if args.threads:
            try:
                import torch
                torch.set_num_threads(args.threads)
            except Exception:  # noqa: BLE001
                pass
        json.dump(one_process(workloads, args.rounds), sys.stdout)
        return 0
    import _common
    started, load_start = _common.now_iso(), _common._loadavg()
    runs = []
    for k in range(args.processes):
        print(f"process {k + 1} of {args.processes} ...", file=sys.stderr, flush=True)
        done = subprocess.run([sys.executable, __file__, "--child", "--rounds", str(args.rounds),
                               "--only", ",".join(workloads)] + (["--threads", str(args.threads)] if args.threads else []),
                              capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout))
    table = summarise(runs, workloads)
    info = _common.machine_info()
    info["loadavg_at_start"] = load_start
    systems = _common.Systems("numpy,coursekit,pytensor,jax,torch")
    for name in ("coursekit", "pytensor", "jax", "torch"):
        systems.available(name)
    lines = _markdown(table, runs, info, versions(systems), started, args)
    print("\n".join(lines))
    if not args.no_save:
        stem = (f"{_common.today()}-{_common.machine_slug(info)}-interleaved"
                + ("" if workloads == list(WORKLOADS) else "-" + "-".join(workloads))
                + (f"-t{args.threads}" if args.threads else ""))
        path = os.path.join(HERE, "results", stem)
        _common.dump_json(path + ".json", {"date": started, "machine": info, "versions": versions(systems),
                                           "git": _common.git_revision(), "rounds": args.rounds,
                                           "processes": args.processes, "threads": args.threads,
                                           "bursts": BURST, "table": table,
                                           "notes": sorted({n for r in runs for n in r["notes"]})})
        with open(path + ".md", "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"wrote {os.path.relpath(path, REPO)}.json and .md", file=sys.stderr)
    return 0


WHAT = {"W1": "exp of a shared float32 vector (230,400), new result per call; base np.exp(x)",
        "W1b": "the same with Out(borrow=True); base np.exp(x, out=buf)",
        "W3": "logistic-regression training step (N=400, 784 features); base hand-written NumPy",
        "W4b": "dot(m, x) + b with m, x, b shared (m 1000x1000); base np.dot(m, x) + b"}


def _fmt(s):
    return f"{s * 1e6:.1f} µs" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def _markdown(table, runs, info, vers, started, args):
    lines = [f"# Interleaved benchmark {started}", "",
             f"Command: `python benchmarks/interleaved.py --rounds {args.rounds} --processes {args.processes} "
             f"--only {args.only}" + (f" --threads {args.threads}" if args.threads else "") + "`", "",
             "threads: " + (f"every library on {args.threads} thread(s) (OMP/OpenBLAS/MKL, XLA, torch)"
                            if args.threads else "library defaults"), "",
             f"machine: {info['cpu_model']}, {info['cores_usable']} cores usable, {info['ram_gib']} GiB RAM; "
             f"{info['os']}; Python {info['python']}; BLAS {info['numpy_blas']}; load average "
             f"{info['loadavg_at_start']} at start, {info['loadavg_1_5_15']} at end", "",
             "versions: " + ", ".join(f"{k} {v}" for k, v in vers.items() if v is not None), "",
             f"Each round runs every system for a burst of calls ({', '.join(f'{w}: {n}' for w, n in BURST.items())}) "
             "in a rotated order; `ratio` is the median over all rounds of (system ÷ NumPy in the same round), "
             f"{args.rounds} rounds in each of {args.processes} fresh processes; `per process` lists each "
             "process's median ratio. Times are the median and best per call over all rounds.", ""]
    for w, rows in table.items():
        lines += [f"## {w}: {WHAT[w]}", "", "| system | median | best | ratio to NumPy (median) | per process |",
                  "|---|---|---|---|---|"]
        for label, r in sorted(rows.items(), key=lambda kv: kv[1]["median_ratio"]):
            lines.append(f"| {label} | {_fmt(r['median_s'])} | {_fmt(r['best_s'])} | {r['median_ratio']:.2f}× | "
                         + ", ".join(f"{x:.2f}" for x in r["process_median_ratios"]) + " |")
        lines.append("")
    notes = sorted({n for r in runs for n in r["notes"]})
    if notes:
        lines += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    return lines


if __name__ == "__main__":
    sys.exit(main())
