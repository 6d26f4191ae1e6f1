#!/usr/bin/env python
"""Before/after: this tree against another checkout of coursekit, ``run.py`` rows alternated.

    python benchmarks/ab_trees.py --base /path/to/other/checkout [--rounds 4] [--only W1,W2,W3,W4,import]
                                  [--label name] [--no-save]

On a shared machine two runs minutes apart do not compare: the load moves.  Here the two trees run
``run.py`` (NumPy and coursekit only, ``--threads 1``) in turn, in fresh processes, in alternating order,
and every coursekit row is read as its ratio to NumPy *in the same run* -- the paired median ratio where
``run.py`` pairs it (W1, W3, W4), else its ratio to its NumPy row.  The table gives, per row, the median of
those ratios for each tree and after/before.  Make the other checkout with
``git worktree add /tmp/before <commit>``.  Writes ``results/<date>-<machine>-ab-<label>.{json,md}``.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [HERE]

from _common import machine_info, machine_slug, today  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="the other checkout (the 'before' tree)")
    p.add_argument("--rounds", type=int, default=4, help="runs per tree (alternating order)")
    p.add_argument("--only", default="W1,W2,W3,W4", help="run.py workloads")
    p.add_argument("--label", default="before-after", help="names the results file")
    p.add_argument("--no-save", action="store_true")
    return p.parse_args(argv)


def one_run(tree, only, out):
    subprocess.run([sys.executable, os.path.join(tree, "benchmarks", "run.py"), "--only", only,
                    "--systems", "numpy,coursekit", "--threads", "1", "--out", out],
                   capture_output=True, env={**os.environ, "PYTHONPATH": tree}, check=True)
    with open(sorted(glob.glob(os.path.join(out, "*.json")))[-1]) as f:
        return json.load(f)


def ratios(result):
    """{row: ratio to NumPy in this run} for coursekit's timed rows."""
    found = {}
    for row in result["rows"]:
        if row["system"] != "coursekit" or row["status"] != "ok" or row.get("ratio") is None:
            continue
        if row.get("unit") not in ("s/call", "s/step", "s"):
            continue
        extra = row.get("extra") or {}
        found[f'{row["workload"]} {row["what"][:70]}'] = extra.get("ratio_median", row["ratio"])
    return found


def main(argv=None):
    args = parse_args(argv)
    trees = {"before": os.path.abspath(args.base), "after": REPO}
    seen = {name: {} for name in trees}
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name in (("before", "after") if r % 2 == 0 else ("after", "before")):
                result = one_run(trees[name], args.only, os.path.join(tmp, f"{name}{r}"))
                loads.append(result["machine"].get("loadavg_1_5_15", [None])[0])
                for key, value in ratios(result).items():
                    seen[name].setdefault(key, []).append(value)
                print(f"round {r + 1}/{args.rounds}: {name} done", file=sys.stderr, flush=True)
    rows = [{"row": key, "before": statistics.median(seen["before"][key]),
             "after": statistics.median(seen["after"][key]), "runs": len(seen["after"][key])}
            for key in seen["before"] if key in seen["after"]]
    git = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout
    base_git = subprocess.run(["git", "-C", trees["before"], "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout
    machine = machine_info()
    lines = [f"# Before/after: {base_git.strip()} -> {git.strip()} ({args.label})", "",
             f"machine: {machine['cpu_model']}, {machine['cores_usable']} cores usable; {machine['python']}; "
             f"1-minute load average during the runs: {min(loads)}-{max(loads)}", "",
             f"Each tree ran `run.py --only {args.only} --systems numpy,coursekit --threads 1` {args.rounds} times, "
             "alternating; a value is coursekit's time over NumPy's in the same run (paired median where run.py "
             "pairs it), and the table gives the median over the runs.", "",
             "| row | before (× NumPy) | after (× NumPy) | after / before |", "|---|---|---|---|"]
    lines += [f"| {r['row']} | {r['before']:.3f} | {r['after']:.3f} | {r['after'] / r['before']:.3f} |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_save:
        stem = os.path.join(HERE, "results", f"{today()}-{machine_slug(machine)}-ab-{args.label}")
        with open(stem + ".md", "w") as f:
            f.write(text)
        with open(stem + ".json", "w") as f:
            json.dump({"before": base_git.strip(), "after": git.strip(), "machine": machine, "loads": loads,
                       "only": args.only, "rounds": args.rounds, "rows": rows, "raw": seen}, f, indent=1)
        print(f"wrote {stem}.md and .json")


if __name__ == "__main__":
    main()
