"""Loops and convolutions (issue 12's workloads), timed side by side in one process run.

* **S1** a small RNN step in ``scan`` (hidden 64, 100 steps, float32): time per step against a
  hand-written NumPy loop (target: at most 2x) and PyTensor's scan when installed (target: ahead);
* **S2** compiling that scan (target: at most 0.2 s);
* **C1** ``conv2d`` forward + backward on a 32x1x28x28 batch with 20 5x5 filters against a NumPy
  im2col + GEMM reference doing the same three products (target: within 1.5x).

Timings are paired (the baseline's loops alternate with coursekit's) and reported as best and
median of the repeats; the machine's load average is printed with them.  Run from a checkout::

    python benchmarks/scan_conv.py [--device cpu|sim] [--repeats 7] [--save]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def paired(fn_a, fn_b, calls, repeats):
    """(times of a, times of b) per call, loops alternating so that load drift hits both alike."""
    ta, tb = [], []
    for _ in range(repeats):
        for fn, out in ((fn_a, ta), (fn_b, tb)):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            out.append((time.perf_counter() - start) / calls)
    return np.array(ta), np.array(tb)


def rnn_workload(theano, T, hidden=64, steps=100, repeats=7):
    rng = np.random.default_rng(0)
    Wv = (rng.standard_normal((hidden, hidden)) * 0.1).astype("float32")
    Uv = (rng.standard_normal((hidden, hidden)) * 0.1).astype("float32")
    bv = np.zeros(hidden, "float32")
    xv = rng.standard_normal((steps, hidden)).astype("float32")
    hv = np.zeros(hidden, "float32")
    W, U, b = theano.shared(Wv), theano.shared(Uv), theano.shared(bv)
    x, h0 = T.fmatrix("x"), T.fvector("h0")
    start = time.perf_counter()
    h, _ = theano.scan(lambda x_t, prev: T.tanh(T.dot(x_t, W) + T.dot(prev, U) + b), sequences=x, outputs_info=h0)
    f = theano.function([x, h0], h[-1])
    compile_s = time.perf_counter() - start

    def numpy_loop():
        state = hv
        for t in range(steps):
            state = np.tanh(xv[t] @ Wv + state @ Uv + bv)
        return state

    np.testing.assert_allclose(f(xv, hv), numpy_loop(), rtol=1e-4, atol=1e-5)
    f(xv, hv)
    # one call (100 steps, under a millisecond) per loop and many loops: the best loop of each side is its time
    # between two scheduler preemptions, which a loaded shared machine still offers
    ours, ref = paired(lambda: f(xv, hv), numpy_loop, 1, 20 * repeats)
    rows = [("S1 scan RNN step (h=64, 100 steps)", ours / steps, ref / steps, "NumPy loop", 2.0),
            ("S2 scan compile", np.array([compile_s]), None, None, None)]
    try:
        import pytensor
        import pytensor.tensor as pt
    except Exception as exc:  # not installed: say so
        rows.append((f"S1 vs PyTensor scan: not available ({type(exc).__name__})", None, None, None, None))
    else:
        rows += pytensor_rows(pytensor, pt, f, (Wv, Uv, bv, xv, hv), steps, repeats)
    return rows


def pytensor_rows(pytensor, pt, f, values, steps, repeats):
    """coursekit's scan against PyTensor's: its default linker (numba in PyTensor 3: the loop is compiled)
    and, for the record, its C ('cvm') and Python ('py') linkers.  Each row gives PyTensor's compile time."""
    from pytensor.compile.mode import Mode, get_default_mode

    Wv, Uv, bv, xv, hv = values
    rows = []
    default = type(get_default_mode().linker).__name__
    for linker in (None, "cvm", "py"):
        Wp, Up, bp = pytensor.shared(Wv), pytensor.shared(Uv), pytensor.shared(bv)
        xp, h0p = pt.fmatrix(), pt.fvector()
        hp = pytensor.scan(lambda x_t, prev: pt.tanh(pt.dot(x_t, Wp) + pt.dot(prev, Up) + bp), sequences=xp,
                           outputs_info=h0p, return_updates=False)
        start = time.perf_counter()
        try:
            g = pytensor.function([xp, h0p], hp[-1], mode=None if linker is None else Mode(linker=linker))
            np.testing.assert_allclose(g(xv, hv), f(xv, hv), rtol=1e-4, atol=1e-5)
        except Exception as exc:  # a linker this machine cannot build (no compiler): say so
            rows.append((f"S1 vs PyTensor ({linker}): not available ({type(exc).__name__})", None, None, None, None))
            continue
        compile_s = time.perf_counter() - start
        ours, peer = paired(lambda: f(xv, hv), lambda: g(xv, hv), 1, 20 * repeats)
        name = default if linker is None else linker
        rows.append((f"S1 scan RNN step vs PyTensor {name}{' (its default)' if linker is None else ''}", ours / steps,
                     peer / steps, f"PyTensor {pytensor.__version__} {name} (compiled in {compile_s:.2f} s)", 1.0))
    return rows


def conv_workload(theano, T, repeats=7):
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((32, 1, 28, 28)).astype("float32")
    wv = (rng.standard_normal((20, 1, 5, 5)) * 0.1).astype("float32")
    rv = rng.standard_normal((32, 20, 24, 24)).astype("float32")
    x, w, r = T.ftensor4("x"), T.ftensor4("w"), T.ftensor4("r")
    out = T.nnet.conv2d(x, w, filter_shape=(20, 1, 5, 5))
    cost = (out * r).sum()
    f = theano.function([x, w, r], [out] + T.grad(cost, [x, w]))

    def numpy_im2col():
        cols = np.lib.stride_tricks.sliding_window_view(xv, (5, 5), axis=(2, 3))  # (32, 1, 24, 24, 5, 5)
        cols = np.ascontiguousarray(cols.transpose(0, 2, 3, 1, 4, 5)).reshape(-1, 25)
        wmat = wv[:, :, ::-1, ::-1].reshape(20, 25)
        y = (cols @ wmat.T).reshape(32, 24, 24, 20).transpose(0, 3, 1, 2)
        g = rv.transpose(0, 2, 3, 1).reshape(-1, 20)
        gw = (g.T @ cols).reshape(20, 1, 5, 5)[:, :, ::-1, ::-1]
        dcols = (g @ wmat).reshape(32, 24, 24, 1, 5, 5)
        gx = np.zeros_like(xv)
        for i in range(5):
            for j in range(5):
                gx[:, :, i:i + 24, j:j + 24] += dcols[..., i, j].transpose(0, 3, 1, 2)
        return y, gx, gw

    for got, expected in zip(f(xv, wv, rv), numpy_im2col()):
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-3)
    ours, ref = paired(lambda: f(xv, wv, rv), numpy_im2col, 1, 3 * repeats)
    return [("C1 conv2d fwd+bwd 32x1x28x28, 20 5x5", ours, ref, "NumPy im2col+GEMM", 1.5)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "sim", "gpu"])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--save", action="store_true", help="write benchmarks/results/<date>-scan_conv-<device>.json")
    args = parser.parse_args()
    import coursekit as theano
    import coursekit.tensor as T

    load_start = os.getloadavg()
    with theano.config.change(device=args.device, floatX="float32"):
        rows = rnn_workload(theano, T, repeats=args.repeats) + conv_workload(theano, T, repeats=args.repeats)
    load_end = os.getloadavg()
    label = f"coursekit on {args.device}" + (" (simulated GPU: CPU timings)" if args.device == "sim" else "")
    print(f"{label}; {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"load {load_start[0]:.1f} -> {load_end[0]:.1f}")
    results = []
    for name, ours, ref, ref_name, target in rows:
        if ours is None:
            print(f"  {name}")
            results.append({"row": name})
            continue
        if ref is None:
            verdict = "" if "compile" not in name else ("pass" if ours.min() <= 0.2 else "miss")
            print(f"  {name}: {ours.min() * 1e3:.1f} ms (target <= 200 ms: {verdict})")
            results.append({"row": name, "seconds": float(ours.min()), "target_s": 0.2, "verdict": verdict})
            continue
        best, median = ours.min() / ref.min(), np.median(ours / ref)
        verdict = "pass" if best <= target else "miss"
        print(f"  {name}: {ours.min() * 1e6:.1f} us vs {ref_name} {ref.min() * 1e6:.1f} us: ratio {best:.2f} "
              f"(median {median:.2f}; target <= {target}: {verdict})")
        results.append({"row": name, "coursekit_s": float(ours.min()), "baseline": ref_name,
                        "baseline_s": float(ref.min()), "ratio": float(best), "median_ratio": float(median),
                        "target": target, "verdict": verdict})
    if args.save:
        save(args.device, label, load_start, load_end, results)


def save(device, label, load_start, load_end, results):
    """results/<date>-<machine>-scan_conv-<device>.json and .md, with the machine and every version."""
    from _common import git_revision, machine_info, machine_slug, version_of

    machine, revision = machine_info(), git_revision()  # the revision before this run's files are written
    versions = {name: version_of(name) for name in ("numpy", "scipy", "pytensor", "numba")}
    stem = f"{time.strftime('%Y-%m-%d')}-{machine_slug(machine)}-scan_conv-{device}"
    out = ROOT / "benchmarks" / "results" / stem
    out.with_suffix(".json").write_text(json.dumps(
        {"device": label, "load": [load_start, load_end], "machine": machine, "versions": versions,
         "git": revision, "date": time.strftime("%Y-%m-%d %H:%M %Z"), "rows": results}, indent=1) + "\n")
    lines = [f"# scan_conv on {label}", "",
             f"{machine['cpu_model']}, {machine['cores_usable']} cores, {machine['os']}; Python {machine['python']}; "
             + ", ".join(f"{k} {v}" for k, v in versions.items() if v) + f"; coursekit {revision}; "
             f"load {load_start[0]:.1f} -> {load_end[0]:.1f}; {time.strftime('%Y-%m-%d %H:%M %Z')}", "",
             "| row | coursekit | baseline | ratio (best, median) | target | verdict |", "|---|---|---|---|---|---|"]
    for r in results:
        if "ratio" in r:
            lines.append(f"| {r['row']} | {r['coursekit_s'] * 1e6:.1f} us | {r['baseline']} {r['baseline_s'] * 1e6:.1f} us "
                         f"| {r['ratio']:.2f}, {r['median_ratio']:.2f} | <= {r['target']} | {r['verdict']} |")
        elif "seconds" in r:
            lines.append(f"| {r['row']} | {r['seconds'] * 1e3:.1f} ms | | | <= 200 ms | {r['verdict']} |")
        else:
            lines.append(f"| {r['row']} | | | | | |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("wrote", out.relative_to(ROOT).with_suffix(".json"), "and .md")


if __name__ == "__main__":
    main()
