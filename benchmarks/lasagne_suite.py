"""Lasagne's own test suite against coursekit, through the ``import theano`` alias (issue 27).

    python benchmarks/lasagne_suite.py                  # device=cpu; writes results/<date>-lasagne-suite-cpu.*
    python benchmarks/lasagne_suite.py --device sim --floatX float32   # on the simulated GPU, as GPU users ran
    python benchmarks/lasagne_suite.py --no-save        # print only

Lasagne is fetched at run time at the pinned commit (``tests/compat/libraries.py``; set
``COURSEKIT_LASAGNE_SRC`` to a local clone or mirror when GitHub is out of reach), its ``lasagne/tests``
run under ``python -m coursekit.theano -m pytest``, and the outcome is counted from pytest's JUnit XML:
passed / failed / errors / skipped, and every failure grouped by its error message so the gaps are listed
by reason.  Counts, not timings: this measures compatibility.
"""
from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "compat"))
import libraries  # noqa: E402  (tests/compat/libraries.py: fetching at pinned versions)


def run_suite(device, extra=(), floatx=None):
    src = libraries.lasagne_source()
    junit = pathlib.Path(tempfile.mkdtemp()) / "junit.xml"
    flags = f"device={device}" + (f",floatX={floatx}" if floatx else "")
    env = dict(os.environ, THEANO_FLAGS=flags, PYTHONPATH=f"{REPO}{os.pathsep}{src}")
    cmd = [sys.executable, "-m", "coursekit.theano", "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider",
           "-q", "-W", "ignore", f"--junitxml={junit}", "lasagne/tests", *extra]
    proc = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True, timeout=3600)
    if not junit.exists():
        raise SystemExit(f"pytest wrote no report:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return parse(junit)


def _reason(element):
    text = (element.get("message") or element.text or "").strip().splitlines()
    first = text[0] if text else element.tag
    first = re.sub(r"0x[0-9a-f]+", "0x…", first)
    return first[:220]


def parse(junit):
    counts = collections.Counter()
    reasons = collections.defaultdict(list)
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        outcome = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        if outcome is None:
            counts["passed"] += 1
            continue
        kind = {"failure": "failed", "error": "errors", "skipped": "skipped"}[outcome.tag]
        counts[kind] += 1
        reasons[(kind, _reason(outcome))].append(name)
    return counts, reasons


def report(device, counts, reasons):
    ran = counts["passed"] + counts["failed"] + counts["errors"]
    lines = [f"# Lasagne's test suite through `python -m coursekit.theano` (device={device})", "",
             f"Lasagne commit {libraries.LASAGNE_COMMIT}; Python {platform.python_version()}, "
             f"{platform.machine()}, {os.cpu_count()} CPUs; {dt.date.today()}.", "",
             f"**{counts['passed']} of {ran} run tests pass ({100 * counts['passed'] / max(ran, 1):.1f}%)**; "
             f"{counts['failed']} failed, {counts['errors']} errors, {counts['skipped']} skipped (Lasagne's own "
             "skips: GPU-only layers, cuDNN, `--runslow`).", "",
             "Adaptations of Lasagne's test code (not of the library) applied by the runner:", ""]
    lines += [f"* `{f}`: {why}" for f, _p, _r, why in libraries.TEST_CODE_FIXES]
    lines += ["", "| outcome | tests | reason (first line of the error) |", "|---|---|---|"]
    for (kind, why), names in sorted(reasons.items(), key=lambda kv: (kv[0][0] == "skipped", -len(kv[1]))):
        lines.append(f"| {kind} | {len(names)} | {why.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "sim", "gpu"])
    parser.add_argument("--floatX", default=None, choices=["float32", "float64"],
                        help="floatX for the run (default: Theano's float64; float32 is what GPU users set)")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (e.g. -k recurrent)")
    args = parser.parse_args()
    try:
        counts, reasons = run_suite(args.device, args.pytest_args, args.floatX)
    except libraries.Unavailable as exc:
        raise SystemExit(f"Lasagne is not available here: {exc}")
    label = args.device + (f"-{args.floatX}" if args.floatX else "")
    text = report(label, counts, reasons)
    print(text)
    if not args.no_save:
        stem = REPO / "benchmarks" / "results" / f"{dt.date.today()}-lasagne-suite-{label}"
        stem.with_suffix(".md").write_text(text)
        data = {"device": args.device, "floatX": args.floatX or "float64", "lasagne_commit": libraries.LASAGNE_COMMIT, "counts": dict(counts),
                "python": platform.python_version(),
                "reasons": [{"outcome": k, "reason": r, "tests": n} for (k, r), n in reasons.items()]}
        stem.with_suffix(".json").write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
