#!/usr/bin/env python
"""Side-by-side speed comparison of coursekit with NumPy and its peers, in one process run.

    python benchmarks/run.py [--quick] [--only W1,W2] [--systems numpy,coursekit,pytensor,jax,torch]
                             [--device cpu|sim|gpu] [--repeats K] [--no-save] [--out DIR]

Prints a table (per-call times, ratios against the NumPy baseline, targets and verdicts) and
writes ``benchmarks/results/<date>-<machine>-<device>[-quick].{json,md}``. ``<device>`` is the
device that really ran coursekit: a ``--device gpu`` run on a machine without a GPU falls back to
the simulated GPU and is recorded as ``sim``, never as a GPU. See benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ALL_SYSTEMS = ["numpy", "coursekit", "pytensor", "jax", "torch", "cupy"]
ALL_WORKLOADS = ["W1", "W2", "W3", "W4", "import", "compile", "memory"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer calls and steps (about a minute in all)")
    p.add_argument("--only", default="", help="comma-separated workloads: " + ",".join(ALL_WORKLOADS))
    p.add_argument("--systems", default="",
                   help="comma-separated systems (default: all; numpy is always run, it is the baseline): "
                        + ",".join(ALL_SYSTEMS))
    p.add_argument("--device", default="cpu", choices=["cpu", "sim", "gpu"],
                   help="coursekit's device; with gpu the peers also run on CUDA where they can")
    p.add_argument("--threads", type=int, default=None,
                   help="limit every library's CPU threads (BLAS/OpenMP, PyTorch, XLA) to N; default: "
                        "each library's own default. --threads 1 gives steadier figures on a busy machine")
    p.add_argument("--repeats", type=int, default=None, help="timed repeats per row (default 5, quick 3)")
    p.add_argument("--no-save", action="store_true", help="print only; write nothing to results/")
    p.add_argument("--out", default=os.path.join(HERE, "results"), help="results folder")
    args = p.parse_args(argv)

    def split(text, allowed, what):
        items = [s.strip() for s in text.split(",") if s.strip()]
        bad = [s for s in items if s not in allowed]
        if bad:
            p.error(f"unknown {what}: {', '.join(bad)} (choose from {', '.join(allowed)})")
        return items
    lower = {w.lower(): w for w in ALL_WORKLOADS}
    args.only = [lower.get(w.lower(), w) for w in split(args.only, list(lower) + ALL_WORKLOADS, "workload")] \
        or list(ALL_WORKLOADS)
    args.systems = split(args.systems, ALL_SYSTEMS, "system") or list(ALL_SYSTEMS)
    if "numpy" not in args.systems:
        args.systems.insert(0, "numpy")
    return args


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def configure_environment(device: str, threads: int | None = None) -> None:
    """Must run before NumPy, coursekit, JAX or PyTorch are imported."""
    if threads:
        for var in THREAD_VARS:
            os.environ[var] = str(threads)
        if threads == 1:
            os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                       " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1").strip()
    flags = [f for f in os.environ.get("COURSEKIT_FLAGS", "").split(",")
             if f.strip() and not f.strip().startswith(("device=", "floatX="))]
    os.environ["COURSEKIT_FLAGS"] = ",".join(flags + [f"device={device}", "floatX=float32"])
    if device != "gpu":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")    # no CUDA probing when the run is CPU-only
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if REPO not in sys.path:
        sys.path.insert(0, REPO)                        # run from a checkout without installing
    if HERE not in sys.path:
        sys.path.insert(0, HERE)


def versions(systems) -> dict:
    from _common import version_of
    out = {"numpy": version_of("numpy")}
    out["coursekit"] = None
    if "coursekit" in sys.modules:
        mod = sys.modules["coursekit"]
        out["coursekit"] = getattr(mod, "__version__", None) or version_of("coursekit") or "checkout"
    for dist, mod in (("pytensor", "pytensor"), ("jax", "jax"), ("jaxlib", "jaxlib"), ("torch", "torch"),
                      ("cupy", "cupy"), ("tqdm", "tqdm"), ("numba", "numba")):
        if mod in sys.modules:
            out[dist] = version_of(dist, mod) or getattr(sys.modules[mod], "__version__", None)
        elif dist in ("cupy",):
            v = version_of("cupy-cuda12x") or version_of("cupy-cuda13x") or version_of("cupy")
            if v and "cupy" in sys.modules:
                out[dist] = v
    if "pytensor" in sys.modules:
        try:
            import pytensor
            out["pytensor_mode"] = f"{pytensor.config.mode} (linker {pytensor.config.linker})"
        except Exception:
            pass
    if "torch" in sys.modules:
        try:
            import torch
            out["torch_threads"] = torch.get_num_threads()
        except Exception:
            pass
    return out


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------
def table_lines(rows) -> list[str]:
    from _common import fmt_value
    head = ["workload", "system", "what", "device", "best", "median", "× base", "base", "target", "verdict"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        if r.status == "ok":
            best, median = fmt_value(r.best, r.unit), fmt_value(r.median, r.unit)
            if r.unit == "s/step":
                best += "/step"
        else:
            best, median = r.status, ""
        base = r.base.split("|", 1)[1] if r.base and r.ratio is not None and r.base != r.key else ""
        if base and r.extra.get("paired_base_best"):
            base += f" (paired: {fmt_value(r.extra['paired_base_best'], r.unit)}"
            if r.extra.get("ratio_median"):
                base += f"; median ratio {r.extra['ratio_median']:.2f}×"
            base += ")"
        ratio = f"{r.ratio:.2f}×" if r.ratio is not None and base else ("1.00× (base)" if r.base == r.key and r.status == "ok" else "")
        target = r.target.text if r.target else ""
        verdict = {"pass": "PASS", "miss": "MISS"}.get(r.verdict or "", r.verdict or "")
        what = r.what + (f" — {r.note}" if r.note else "")
        cells = [r.workload, r.system, what, r.device if r.status == "ok" else "—", best, median, ratio, base, target, verdict]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return lines


def device_ran(rows, requested: str, gpu: dict) -> str:
    """The device that really ran coursekit in this run (cpu | sim | gpu-<name>)."""
    ck = [r.device for r in rows if r.system == "coursekit" and r.status == "ok" and r.workload in ("W1", "W4")]
    devs = set(ck)
    if any(d.startswith("cuda") for d in devs):
        name = gpu.get("name", "gpu")
        return "gpu-" + re.sub(r"[^a-z0-9]+", "-", name.lower().replace("nvidia", "")).strip("-")
    if "sim" in devs:
        return "sim"
    if devs:
        return "cpu"
    # coursekit did not run: name the run after where the rest really ran.
    if any(r.device.startswith("cuda") for r in rows if r.status == "ok"):
        name = gpu.get("name", "gpu")
        return "gpu-" + re.sub(r"[^a-z0-9]+", "-", name.lower().replace("nvidia", "")).strip("-")
    return "cpu"


def main(argv=None) -> int:
    args = parse_args(argv)
    configure_environment(args.device, args.threads)
    if args.threads and "torch" in args.systems:
        try:
            import torch
            torch.set_num_threads(args.threads)
        except Exception:
            pass

    import _common
    import workloads as wl

    systems = _common.Systems(args.systems)
    try:
        from tqdm import tqdm
    except Exception:
        tqdm = None

    bar = None
    if tqdm is not None:
        bar = tqdm(total=len(args.only), desc="benchmarks", unit="workload", file=sys.stderr, leave=False)

    def progress(label):
        if bar is not None:
            bar.set_postfix_str(label, refresh=True)
        else:
            print(f"  … {label}", file=sys.stderr, flush=True)

    ctx = wl.Context(quick=args.quick, device=args.device, systems=systems, repeats=args.repeats,
                     progress=progress)
    started = _common.now_iso()
    load_start = _common._loadavg()
    t_start = time.perf_counter()
    # Load every selected system first so the versions and "skipped" notes are known up front.
    for name in args.systems:
        if name == "cupy" and args.device != "gpu":
            continue
        systems.available(name)
    for w in args.only:
        try:
            wl.WORKLOADS[w](ctx)
        except Exception as e:  # noqa: BLE001  -- a workload bug must not lose the others
            ctx.notes.append(f"{w} stopped early: {type(e).__name__}: {e}")
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    elapsed = time.perf_counter() - t_start
    _common.finish_rows(ctx.rows)

    gpu = ctx.gpu() if args.device == "gpu" else {"real": False}
    info = _common.machine_info()
    info["loadavg_at_start"] = load_start
    info["threads"] = {"--threads": args.threads, **{v: os.environ.get(v) for v in THREAD_VARS}}
    ran = device_ran(ctx.rows, args.device, gpu)
    notes = list(ctx.notes)
    for name, note in systems.notes.items():
        notes.append(f"{name}: {note}")
    ck_ran = any(r.system == "coursekit" and r.status == "ok" and r.workload != "import" for r in ctx.rows)
    if args.device == "gpu" and not gpu.get("real"):
        notes.append("--device gpu asked, but no CUDA GPU is visible"
                     + (": coursekit ran on the simulated GPU; those figures are CPU timings, labelled 'sim'."
                        if ran == "sim" else "; nothing ran on a GPU."))
    if not ck_ran and "coursekit" in args.systems:
        notes.append("coursekit ran no workload in this run (see the 'not available' rows).")
    if ran == "sim":
        notes.append("'sim' rows ran on coursekit's simulated GPU: they are CPU timings, not GPU timings.")
    if "W3" in args.only:
        notes.append("W3 peers JAX and PyTorch use the stable softplus form of the same cross-entropy "
                     "(-log p = softplus(-z)); NumPy's manual gradient is (p - y)/N exactly.")

    loads = [l[0] for l in (load_start, info.get("loadavg_1_5_15")) if l]
    if loads and max(loads) > (info.get("cores_usable") or 1):
        notes.insert(0, f"the machine was overloaded during this run (1-minute load average up to {max(loads):.1f} "
                        f"on {info.get('cores_usable')} cores): unpaired figures are unreliable; trust the paired "
                        "ratios more, and re-run on a quiet machine before drawing conclusions.")
    lines = table_lines(ctx.rows)
    vers = versions(systems)
    threads_txt = f"--threads {args.threads}" if args.threads else "library default threads"
    header = [
        f"coursekit benchmarks — {started} — {'quick' if args.quick else 'full'} run, "
        f"device asked: {args.device}, device that ran coursekit: {ran}, {threads_txt}",
        f"machine: {info['cpu_model']}, {info['cores_usable']} cores usable ({info['cores']} total), "
        f"{info['ram_gib']} GiB RAM; {info['os']}; Python {info['python']}; BLAS {info['numpy_blas']}; "
        f"load average {info['loadavg_at_start']} at start, {info['loadavg_1_5_15']} at end",
        "versions: " + ", ".join(f"{k} {v}" for k, v in vers.items() if v is not None),
    ]
    if gpu.get("real"):
        header.append(f"GPU: {gpu.get('name')} (count {gpu.get('count')})")
    print("\n".join(header))
    print()
    print("\n".join(lines))
    print()
    verdicts = [r for r in ctx.rows if r.verdict in ("pass", "miss")]
    n_pass = sum(r.verdict == "pass" for r in verdicts)
    summary = f"coursekit targets: {n_pass} passed, {len(verdicts) - n_pass} missed (of {len(verdicts)})"
    print(summary)
    for nline in notes:
        print("note:", nline)
    print(f"(run took {elapsed:.1f} s)")

    if not args.no_save:
        os.makedirs(args.out, exist_ok=True)
        stem = (f"{_common.today()}-{_common.machine_slug(info)}-{ran}" + (f"-t{args.threads}" if args.threads else "")
                + ("-quick" if args.quick else ""))
        payload = {
            "date": started,
            "command": "python benchmarks/run.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "quick": args.quick,
            "device_requested": args.device,
            "device_ran": ran,
            "gpu": gpu,
            "machine": info,
            "versions": vers,
            "git": _common.git_revision(),
            "workloads": args.only,
            "systems": args.systems,
            "repeats": ctx.repeats,
            "elapsed_s": elapsed,
            "summary": summary,
            "notes": notes,
            "rows": [r.to_json() for r in ctx.rows],
        }
        _common.dump_json(os.path.join(args.out, stem + ".json"), payload)
        with open(os.path.join(args.out, stem + ".md"), "w") as f:
            f.write(f"# Benchmarks {stem}\n\n")
            f.write(f"Command: `{payload['command'].strip()}` (git {payload['git']})\n\n")
            f.write("\n\n".join(header) + "\n\n")
            f.write("Times are per call (best of the repeats, then the median); `× base` is best ÷ the "
                    "baseline row's best, or, where it says *paired*, ÷ the baseline timed in loops "
                    "alternating with that row. The first call (compilation) is excluded.\n\n")
            f.write("\n".join(lines) + "\n\n")
            f.write(f"**{summary}**\n\n")
            for nline in notes:
                f.write(f"- {nline}\n")
            f.write(f"\nRun took {elapsed:.1f} s.\n")
        print(f"wrote {os.path.relpath(os.path.join(args.out, stem), REPO)}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
