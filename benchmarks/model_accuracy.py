"""How close is the modelled GPU to a real one?  Measured vs modelled on W1, W4 and a transfer sweep.

Issue 11 aims at modelled within ±30% of measured on a calibrated card.  On a machine with an NVIDIA GPU:

    python -m coursekit calibrate                  # saves a preset, prints its name
    python benchmarks/model_accuracy.py --gpu-model <that name>

Each row is timed on the real GPU (``device=cuda``, synchronised, BLAS on 1 thread, best of repeats) and
modelled for the same compiled function (measured host time + modelled device work), and the ratio
modelled / measured is printed with a within-30% verdict.  Without a GPU, ``--device sim`` runs the same
rows on the simulated GPU to check the script itself: its "measured" column is then CPU time and the
ratios mean nothing (the output says so).  Results go to benchmarks/results/<date>-model-accuracy-<device>.

The corpus.  ``--corpus`` needs no GPU: it re-models the committed real-GPU runs (CORPUS: every row's
measured call time and measured host time on that machine) with a preset, by compiling the same rows on
the simulated GPU (the same graph, so the same modelled device work) and adding the host time measured
there.  It prints modelled / measured per row and the error band the corpus gives: the lowest and
highest measured / modelled, over rows without a host copy of 32 MiB or more and, separately, over rows
with one (their fresh host pages make pageable copies much slower; see docs/gpu-model.md).  The preset's
``band`` fields hold these numbers, and tests/costmodel/test_model_accuracy.py checks that they still do.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import coursekit as theano  # noqa: E402
import coursekit.tensor as T  # noqa: E402
from coursekit.lessons import time_call  # noqa: E402
from coursekit import costmodel  # noqa: E402
from coursekit.costmodel import LARGE_COPY  # noqa: E402
from coursekit.profiling.predict import predict_call  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import many_launch  # noqa: E402


def rows(small, many=False):
    """The corpus's rows (W1, W4, a transfer sweep: one kernel launch each); ``many``: also the lessons'
    many-launch calls (benchmarks/many_launch.py)."""
    if many:
        yield from many_launch.rows()
    rng = np.random.RandomState(0)
    vlen = 23040 if small else 230400
    x = theano.shared(rng.rand(vlen).astype("float32"), name="x")
    yield "W1 exp, copy back", theano.function([], T.exp(x)), ()
    yield "W1 exp, device handle", theano.function([], theano.gpu_from_host(T.exp(x))), ()
    yield "W1 exp, borrow=True", theano.function([], theano.Out(theano.gpu_from_host(T.exp(x)), borrow=True)), ()
    n = 256 if small else 1000
    m_val, x_val, b_val = (rng.rand(n, n).astype("float32") for _ in range(3))
    tm, tx, tb = T.fmatrix("m"), T.fmatrix("x"), T.fmatrix("b")
    yield f"W4 n={n}, inputs each call", theano.function([tm, tx, tb], T.dot(tm, tx) + tb), (m_val, x_val, b_val)
    m, b = theano.shared(m_val), theano.shared(b_val)
    yield f"W4 n={n}, shared m and b", theano.function([tx], T.dot(m, tx) + b), (x_val,)
    xs, y = theano.shared(x_val), theano.shared(np.zeros((n, n), "float32"))
    yield f"W4 n={n}, all on device", theano.function([], [], updates=[(y, T.dot(m, xs) + b)]), ()
    for kib in ((64, 1024) if small else (64, 1024, 16384, 65536)):
        v = T.fvector("v")
        data = np.ones(kib * 256, "float32")
        yield f"{kib} KiB to the device, one kernel, back", theano.function([v], v * 2), (data,)


RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
CORPUS = {"h100": ("2026-11-24-h100-lent-model-accuracy-calibrated.json",
                   "2026-11-24-h100-lent-model-accuracy-datasheet.json")}


def load_corpus(card="h100", files=None):
    """``[(run file, row dict with row, measured, host)]`` of every committed real-GPU run of ``card``
    (or of the result ``files`` given, e.g. a run just made on a lent GPU)."""
    out = []
    for name in files or CORPUS[card]:
        with open(os.path.join(RESULTS, name)) as fh:
            out += [(os.path.basename(name), row) for row in json.load(fh)["rows"]]
    return out


def remodel(preset, card="h100", files=None):
    """``[(run file, row, ModelledCall with that run's measured host time)]``: the corpus under ``preset``."""
    model = costmodel.model(preset)
    corpus = load_corpus(card, files)
    many = any(row["row"].startswith("lesson ") for _, row in corpus)
    with theano.config.change(device="sim", floatX="float32"):
        calls = {name: predict_call(fn, *fargs, model=model, calls=2) for name, fn, fargs in rows(False, many)}
    missing = {row["row"] for _, row in corpus} - set(calls)
    if missing:
        raise ValueError(f"corpus rows {sorted(missing)} are not rows of this script: re-measure on a GPU")
    return [(run, row, calls[row["row"]].with_host(row["host"])) for run, row in corpus]


def derive_band(remodelled):
    """``(band, band_large_copies)``: (lowest, highest) measured / modelled, rounded outwards to 0.01."""
    small, large = [], []
    for _, row, call in remodelled:
        if _class(call) != "many":   # many-launch calls have a band of their own (held_out)
            (large if _class(call) == "large" else small).append(row["measured"] / call.total)

    def spread(ratios):
        return (math.floor(min(ratios) * 100) / 100, math.ceil(max(ratios) * 100) / 100) if ratios else ()
    return spread(small), spread(large)


def _workload(row):
    return row["row"]


def _fit(ratios):
    return (min(ratios), max(ratios)) if ratios else None


def held_out(remodelled, by="workload"):
    """The band held out: each row judged by a band fitted WITHOUT it.

    ``by="workload"``: leave one workload out (both of its runs) and fit on the rest;
    ``by="run"``: fit on one run and test on the other (calibrate-on-one, test-on-the-other).
    Rows are judged within their class: "small" (one kernel launch, host copies under 32 MiB), "large"
    (a copy of 32 MiB or more) and "many" (more than one kernel launch: the lessons' training steps).
    Returns ``{class: dict(inside, judged, unjudged, band)}``: how many held-out
    rows fall inside their training band, how many could be judged (a class with a single workload has
    no training rows when it is left out), and the held-out band: the in-sample band widened by the
    worst factor by which a held-out row fell outside its training band.  That widening is what an
    unseen workload has cost the model so far, so it is the honest error to quote for one.
    """
    out = {}
    for cls in ("small", "large", "many"):
        rows = [(run, row, row["measured"] / call.total) for run, row, call in remodelled if _class(call) == cls]
        inside = judged = 0
        worst_low = worst_high = 1.0
        for run, row, ratio in rows:
            if by == "workload":
                train = [r for _, w, r in rows if _workload(w) != _workload(row)]
            else:
                train = [r for rr, w, r in rows if rr != run]
            fit = _fit(train)
            if fit is None:
                continue
            judged += 1
            inside += fit[0] <= ratio <= fit[1]
            worst_low, worst_high = max(worst_low, fit[0] / ratio), max(worst_high, ratio / fit[1])
        full = _fit([r for _, _, r in rows])
        band = () if not judged or full is None else (math.floor(round(full[0] / worst_low * 100, 6)) / 100,
                                                       math.ceil(round(full[1] * worst_high * 100, 6)) / 100)
        out[cls] = dict(inside=inside, judged=judged, unjudged=len(rows) - judged, band=band)
    return out


def _class(call):
    if call.largest_copy >= LARGE_COPY:
        return "large"
    return "many" if call.launches > 1 else "small"


def measured_operations(remodelled):
    """(fewest, most) kernel launches and (fewest, most) host copies per call in the corpus."""
    launches = [call.launches for _, _, call in remodelled]
    copies = [call.transfers for _, _, call in remodelled]
    return (min(launches), max(launches)), (min(copies), max(copies))


def held_out_report(preset, files=None):
    remodelled = remodel(preset, files=files)
    in_sample = derive_band(remodelled)
    (l0, l1), (c0, c1) = measured_operations(remodelled)
    lines = [f"The committed H100 corpus, {len(remodelled)} rows, re-modelled with {costmodel.model(preset).label}",
             f"calls of {l0}-{l1} kernel launch(es) and {c0}-{c1} host copies each: no many-launch call is measured", "",
             f"in-sample band (fitted on every row, judged on the same rows: agreement by construction): "
             f"{_band(in_sample[0])} for copies under 32 MiB, {_band(in_sample[1])} with a larger copy", "",
             "| held out by | calls | inside its training band | not judgeable | held-out band |",
             "|---|---|---|---|---|"]
    for by, words in (("workload", "leave one workload out (both runs)"), ("run", "fit on one run, test on the other")):
        for cls, result in held_out(remodelled, by).items():
            what = {"small": "1 launch, copies under 32 MiB", "large": "a copy from 32 MiB", "many": "many launches"}
            lines.append(f"| {words} | {what[cls]} | {result['inside']}/{result['judged']} | {result['unjudged']} | "
                         f"{_band(result['band'])} |")
    spec = costmodel.presets.get(preset)
    lines += ["", f"{preset} states: {costmodel.presets.band_text(spec)} (held out, leave one workload out); "
                  f"{costmodel.presets.band_text(spec, large_copies=True)} with a copy of 32 MiB or more; calls of "
                  f"more than {spec.band_launches} launch(es): {costmodel.presets.band_text(spec, launches=spec.band_launches + 1)}"]
    return "\n".join(lines)


def _band(band):
    if not band:
        return "none (nothing to fit or judge)"
    return f"x{band[0]:.2f}-{band[1]:.2f} ({round(100 * (band[0] - 1)):+d}%/{round(100 * (band[1] - 1)):+d}%)"


def corpus_report(preset):
    remodelled = remodel(preset)
    band, large = derive_band(remodelled)
    lines = [f"The committed H100 corpus re-modelled with {costmodel.model(preset).label} (no GPU needed)", "",
             "| run | row | measured | modelled (measured host) | modelled / measured | within ±30% |",
             "|---|---|---|---|---|---|"]
    for run, row, call in remodelled:
        ratio = call.total / row["measured"]
        lines.append(f"| {run.split('accuracy-')[1][:-5]} | {row['row']} | {row['measured'] * 1e6:.1f} µs | "
                     f"{call.total * 1e6:.1f} µs ({call.host * 1e6:.1f}) | {ratio:.2f} | "
                     f"{'yes' if 0.7 <= ratio <= 1.3 else 'no'} |")
    lines += ["", f"band (measured / modelled): {band} for calls whose host copies are under 32 MiB, "
                  f"{large} for calls with a larger one"]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (default) or sim (checks the script only)")
    parser.add_argument("--gpu-model", default=None, help="preset to compare with (default: config.gpu_model)")
    parser.add_argument("--small", action="store_true", help="small sizes (quick check)")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--corpus", action="store_true", help="re-model the committed H100 runs (no GPU)")
    parser.add_argument("--many-launch", action="store_true",
                        help="also the lessons' many-launch calls (lessons 5, 8, 10: benchmarks/many_launch.py)")
    parser.add_argument("--corpus-file", action="append", default=[],
                        help="with --held-out/--corpus: judge these result JSON files (e.g. a new GPU run) instead")
    parser.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    parser.add_argument("--held-out", action="store_true",
                        help="the band held out (leave one workload out; one run against the other), no GPU")
    args = parser.parse_args()
    if args.corpus or args.held_out:
        preset = args.gpu_model or "h100"
        print(held_out_report(preset, args.corpus_file or None) if args.held_out else corpus_report(preset))
        return
    results = []
    try:
        theano.config.device = args.device
        theano.devices.current()
    except (ValueError, theano.devices.DeviceError) as exc:
        sys.exit(f"error: {exc}\n(use --device sim to check this script without a GPU)")
    with theano.config.change(device=args.device, floatX="float32"):
        model = costmodel.model(args.gpu_model) if args.gpu_model else costmodel.model_for()
        for name, fn, fargs in rows(args.small, args.many_launch):
            t = time_call(fn, *fargs, repeat=5, model=model.spec.key)
            ratio = t.modelled.total / t.best
            results.append(dict(row=name, measured=t.best, measured_on=t.device, modelled=t.modelled.total,
                                modelled_device=t.modelled.device, host=t.modelled.host, ratio=ratio,
                                within_30=bool(0.7 <= ratio <= 1.3), launches=t.modelled.launches,
                                transfers=t.modelled.transfers))
            print(f"{name}: {t.best * 1e6:.1f} µs measured, {t.modelled.total * 1e6:.1f} µs modelled", flush=True)
    standin = getattr(theano.devices.cupy_status()[0], "STANDIN", False)   # the dry run's CuPy stand-in
    real = args.device.startswith("cuda") and not standin
    what = "real GPU" if real else ("CuPy STAND-IN: CPU times" if standin else "SIMULATED GPU: CPU times")
    lines = [f"Measured ({what}{'' if real else ', ratios meaningless'}) vs "
             f"{model.label}, BLAS on 1 thread", "",
             "| row | measured | modelled (device + measured host) | modelled / measured | within ±30% |",
             "|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['row']} | {r['measured'] * 1e6:.1f} µs | {r['modelled'] * 1e6:.1f} µs "
                     f"({r['modelled_device'] * 1e6:.1f} + {r['host'] * 1e6:.1f}) | {r['ratio']:.2f} | "
                     f"{'yes' if r['within_30'] else 'no'} |")
    text = "\n".join(lines)
    print(text)
    if not args.no_save:
        stamp = datetime.date.today().isoformat()
        base = os.path.join(args.out or RESULTS, f"{stamp}-model-accuracy-{args.device.replace(':', '')}"
                            + ("-many-launch" if args.many_launch else "") + ("-standin" if standin else ""))
        meta = dict(date=stamp, machine=platform.processor() or platform.machine(), device=args.device, standin=standin,
                    gpu_model=model.spec.key, measured_preset=model.spec.measured, rows=results)
        with open(base + ".json", "w") as fh:
            json.dump(meta, fh, indent=2)
        with open(base + ".md", "w") as fh:
            fh.write(text + "\n")
        print(f"wrote {base}.json and .md")


if __name__ == "__main__":
    main()
