"""How long the grader takes for a class, and what the isolation costs per notebook (issue 13).

    python benchmarks/grading_speed.py                      # 30 students x every exercise, --jobs 2
    python benchmarks/grading_speed.py --students 5 --compare 3 --no-save
    python benchmarks/grading_speed.py --per-notebook          # each notebook once, isolation off and on

A class of ``--students`` honest students, each handing in every solution notebook (the graded
cells then run the students' full work, as for a good class), is graded with the ``grade`` command
exactly as an instructor would run it: its own process, ``--jobs`` notebooks at once, the machine's
isolation on (bubblewrap, cgroup, rlimits where available; the CSV's protection column is
recorded). Then ``--compare`` students are graded twice more, alternating isolation off
(``COURSEKIT_SANDBOX=none COURSEKIT_SANDBOX_CGROUP=0``: no bubblewrap, no cgroup, rlimits only) and
on, so that the isolation's cost per notebook is a difference of two runs made minutes apart, not
of runs an hour apart on a shared machine. Wall-clock times of the whole command; the machine's
load is recorded before and after because it moves these figures. Results go to
``benchmarks/results/<date>-<machine>-grading.{json,md}``.

``--per-notebook`` instead grades each solution notebook once (``--jobs 1``), with the isolation off
and on in turn, to show which notebook pays for the isolation
(``<date>-<machine>-grading-per-notebook.{json,md}``).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import REPO_ROOT, dump_json, git_revision, machine_info, machine_slug, today, version_of  # noqa: E402

SOLUTIONS = Path(REPO_ROOT) / "solutions"
EXERCISES = Path(REPO_ROOT) / "exercises"


def make_class(root: Path, students: int, notebooks: list[Path]) -> Path:
    """``root/submissions/student_NN/<NN_name>.ipynb``: every student hands in every solution."""
    folder = root / "submissions"
    for k in range(students):
        student = folder / f"student_{k:02d}"
        student.mkdir(parents=True)
        for nb in notebooks:
            shutil.copyfile(nb, student / nb.name.replace("_solutions", ""))
    return folder


def grade(submissions: Path, reference: Path, out: Path, jobs: int, isolation: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, MPLBACKEND="Agg")
    if not isolation:
        env.update(COURSEKIT_SANDBOX="none", COURSEKIT_SANDBOX_CGROUP="0")
    command = [sys.executable, "-m", "coursekit", "grade", str(submissions), "--reference", str(reference),
               "--out", str(out), "--jobs", str(jobs), "--no-progress"]
    load_before = os.getloadavg()
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=REPO_ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"grade failed ({done.returncode}):\n{done.stderr[-3000:]}")
    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    notebooks = len({(r["student"], r["notebook"]) for r in rows})
    return {
        "isolation": isolation, "seconds": round(seconds, 1), "notebooks": notebooks,
        "seconds_per_notebook": round(seconds / notebooks, 2),
        "points": sum(int(r["points"]) for r in rows), "max_points": sum(int(r["max_points"]) for r in rows),
        "not_passed": sorted({f"{r['notebook']}/{r['cell_id']}: {r['reason'][:120]}" for r in rows
                              if r["points"] != r["max_points"]}),
        "protection": sorted({r["protection"] for r in rows}),
        "loadavg_before": [round(v, 2) for v in load_before], "loadavg_after": [round(v, 2) for v in os.getloadavg()],
    }


PER_NOTEBOOK = r"""
import json, sys, time
from coursekit.course.grading.grader import grade_notebook, load_reference
from coursekit.course.grading.runner import protection
rows = []
for solution, exercise in json.loads(sys.argv[1]):
    start = time.perf_counter()
    scores = grade_notebook(solution, load_reference(exercise))
    rows.append({"notebook": exercise.rsplit("/", 1)[-1], "seconds": round(time.perf_counter() - start, 1),
                 "points": sum(s.points for s in scores), "max_points": sum(s.max_points for s in scores)})
print(json.dumps({"protection": protection().label, "rows": rows}))
"""


def per_notebook(notebooks: list[Path], rounds: int) -> list[dict]:
    """Each notebook graded once per round with the isolation off, then on (a fresh grader each time)."""
    pairs = json.dumps([(str(nb), str(EXERCISES / nb.name.replace("_solutions", "_exercises"))) for nb in notebooks])
    runs = []
    for _ in range(rounds):
        for isolation in (False, True):
            env = dict(os.environ, PYTHONPATH=REPO_ROOT, MPLBACKEND="Agg")
            if not isolation:
                env.update(COURSEKIT_SANDBOX="none", COURSEKIT_SANDBOX_CGROUP="0")
            load = os.getloadavg()[0]
            done = subprocess.run([sys.executable, "-c", PER_NOTEBOOK, pairs], env=env, cwd=REPO_ROOT,
                                  capture_output=True, text=True, check=True)
            runs.append(dict(json.loads(done.stdout.strip().splitlines()[-1]), isolation=isolation,
                             loadavg_before=round(load, 2), loadavg_after=round(os.getloadavg()[0], 2)))
            print(runs[-1], flush=True)
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--compare", type=int, default=3, help="students graded with isolation off and on (0: skip)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--notebooks", default="0[1-7]_*", help="glob of solution notebooks (default: exercises 1-7)")
    parser.add_argument("--per-notebook", type=int, default=0, metavar="ROUNDS",
                        help="grade each notebook alone, isolation off then on, ROUNDS times (instead of a class)")
    parser.add_argument("--revision", default=None, help="git revision to record (default: this checkout's)")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()

    notebooks = sorted(SOLUTIONS.glob(f"{args.notebooks}_solutions.ipynb"))
    if args.per_notebook:
        return save_per_notebook(notebooks, per_notebook(notebooks, args.per_notebook), args)
    reference = Path(tempfile.mkdtemp(prefix="grading-speed-ref-"))
    for nb in notebooks:                     # only the exercises the class hands in
        shutil.copyfile(EXERCISES / nb.name.replace("_solutions", "_exercises"), reference / nb.name.replace("_solutions", "_exercises"))
    runs = []
    with tempfile.TemporaryDirectory(prefix="grading-speed-") as tmp:
        tmp = Path(tmp)
        whole = make_class(tmp / "class", args.students, notebooks)
        runs.append(dict(grade(whole, reference, tmp / "class.csv", args.jobs, True), students=args.students))
        print(f"class of {args.students}: {runs[-1]}", flush=True)
        if args.compare:
            small = make_class(tmp / "small", args.compare, notebooks)
            for isolation in (False, True):
                runs.append(dict(grade(small, reference, tmp / f"small-{isolation}.csv", args.jobs, isolation),
                                 students=args.compare))
                print(f"{args.compare} students, isolation {'on' if isolation else 'off'}: {runs[-1]}", flush=True)
    shutil.rmtree(reference)
    info = machine_info()
    revision = args.revision or git_revision()
    payload = {"date": today(), "git_revision": revision, "machine": info, "jobs": args.jobs,
               "notebooks": [nb.name for nb in notebooks], "runs": runs,
               "versions": {name: version_of(name) for name in ("nbclient", "ipykernel", "jupyter_client", "numpy")},
               "bubblewrap": shutil.which("bwrap")}
    lines = [f"# Grading speed, {today()} ({machine_slug(info)}, git {revision})", "",
             f"{info['cpu_model']}, {info['cores_usable']} usable cores, shared with other work (load recorded);",
             f"`coursekit grade --jobs {args.jobs}`, wall-clock seconds of the whole command; every student hands in",
             f"the {len(notebooks)} solution notebooks. Measured on the CPU (no GPU; CUDA cells run on the emulator).", "",
             "| students | notebooks | isolation | protection | seconds | s / notebook | points | load before -> after |",
             "|---|---|---|---|---|---|---|---|"]
    for run in runs:
        lines.append(f"| {run['students']} | {run['notebooks']} | {'on' if run['isolation'] else 'off'} | "
                     f"{', '.join(run['protection'])} | {run['seconds']} | {run['seconds_per_notebook']} | "
                     f"{run['points']}/{run['max_points']} | {run['loadavg_before'][0]} -> {run['loadavg_after'][0]} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_save:
        base = Path(REPO_ROOT) / "benchmarks" / "results" / f"{today()}-{machine_slug(info)}-grading"
        dump_json(str(base) + ".json", payload)
        Path(str(base) + ".md").write_text(text)
        print(f"wrote {base}.json and .md")
    return 0


def save_per_notebook(notebooks, runs, args) -> int:
    info = machine_info()
    revision = args.revision or git_revision()
    lines = [f"# Grading one notebook at a time, {today()} ({machine_slug(info)}, git {revision})", "",
             f"{info['cpu_model']}, {info['cores_usable']} usable cores, shared with other work; `grade_notebook` on each",
             "solution notebook in turn (one kernel at a time), isolation off (no bubblewrap, no cgroup) then on;",
             "wall-clock seconds per notebook. Measured on the CPU (CUDA cells on the emulator).", "",
             "| round | isolation | load | " + " | ".join(nb.name.split("_")[0] for nb in notebooks) + " | total |",
             "|---|---|---|" + "---|" * (len(notebooks) + 1)]
    for k, run in enumerate(runs):
        seconds = [row["seconds"] for row in run["rows"]]
        lines.append(f"| {k // 2 + 1} | {'on' if run['isolation'] else 'off'} | {run['loadavg_before']} | "
                     + " | ".join(f"{s:.1f}" for s in seconds) + f" | {sum(seconds):.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_save:
        base = Path(REPO_ROOT) / "benchmarks" / "results" / f"{today()}-{machine_slug(info)}-grading-per-notebook"
        dump_json(str(base) + ".json", {"date": today(), "git_revision": revision, "machine": info, "runs": runs})
        Path(str(base) + ".md").write_text(text)
        print(f"wrote {base}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
