"""Grading through a Dask cluster: how it scales, what it costs over local jobs, and a large class (issue 29).

    python benchmarks/grading_cluster.py scaling --students 2         # local vs cluster, 1 and 2 workers
    python benchmarks/grading_cluster.py class --students 1000        # a generated class, a worker killed

``scaling`` grades the same small class (every student hands in the solution notebooks of
``--notebooks``) four times with the ``grade`` command: ``--jobs 1``, ``--cluster`` on a local Dask
cluster of 1 worker process, ``--jobs 2``, and a cluster of 2 workers (each worker one thread: one
notebook at a time). The clusters are started before the timed command and stopped after it, so
the times are those of grading, as on a cluster that is already up. Targets: 2 workers >= 1.7x one,
and the cluster path <= 10% per notebook over local jobs at the same parallelism.

``class`` generates ``--students`` students handing in ``--per-student`` notebooks of a small
pure-NumPy exercise (tests/course_fixtures: three graded cells, 6 points), each a correct, partly
wrong (3 points), unfinished (0) or missing notebook chosen by a hash of the student's name, grades
them through a local cluster of ``--workers`` workers, kills one worker (SIGKILL) after
``--kill-after`` seconds, and checks that every (student, notebook) has exactly one set of rows with
the expected points: no lost and no duplicated grade.

Wall-clock times; the machine's load average is recorded before and after every run because on a
shared machine it moves these figures more than anything measured here. Results go to
``benchmarks/results/<date>-<machine>-grading-cluster-<mode>.{json,md}``.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import REPO_ROOT, dump_json, git_revision, machine_info, machine_slug, today, version_of  # noqa: E402
from grading_speed import EXERCISES, SOLUTIONS, make_class  # noqa: E402

FIXTURE = Path(REPO_ROOT) / "tests" / "course_fixtures" / "solution_notebook.json"
ROW_NORMS = 4                   # the fixture cell that defines row_norms


def local_cluster(workers: int):
    from coursekit.course.grading.cluster import local_cluster as start

    return start(workers)


def warm_up(address: str) -> None:
    """Import the grader on every worker, as a cluster that is already up has done (the first task
    would otherwise pay the imports, seconds on a loaded machine)."""
    import distributed

    def load_grader():
        from coursekit.course.grading import grader, kernel_cache

        kernel_cache.grading_env()
        return grader.__name__

    with distributed.Client(address) as client:
        client.run(load_grader)


def grade_command(submissions: Path, reference: Path, out: Path, *, jobs=1, cluster=None) -> dict:
    command = [sys.executable, "-m", "coursekit", "grade", str(submissions), "--reference", str(reference),
               "--out", str(out), "--no-progress"] + (["--cluster", cluster] if cluster else ["--jobs", str(jobs)])
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=REPO_ROOT, MPLBACKEND="Agg"))
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"grade failed ({done.returncode}):\n{done.stderr[-3000:]}")
    rows = list(csv.DictReader(open(out, newline="", encoding="utf-8")))
    notebooks = len({(r["student"], r["notebook"]) for r in rows})
    return {"seconds": round(seconds, 1), "notebooks": notebooks, "seconds_per_notebook": round(seconds / notebooks, 2),
            "points": sum(float(r["points"]) for r in rows), "max_points": sum(float(r["max_points"]) for r in rows),
            "protection": sorted({r["protection"] for r in rows}),
            "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2)}


def scaling(args) -> tuple[dict, list[str]]:
    notebooks = sorted(SOLUTIONS.glob(f"{args.notebooks}_solutions.ipynb"))
    runs = []
    order = [("local --jobs 1", 0), ("cluster, 1 worker", 1), ("local --jobs 2", 0), ("cluster, 2 workers", 2)]
    with tempfile.TemporaryDirectory(prefix="grading-cluster-") as tmp:
        tmp = Path(tmp)
        reference = tmp / "reference"
        reference.mkdir()
        for nb in notebooks:
            name = nb.name.replace("_solutions", "_exercises")
            shutil.copyfile(EXERCISES / name, reference / name)
        submissions = make_class(tmp / "class", args.students, notebooks)
        for round_ in range(args.rounds):       # alternating, so that a change of load hits every setting
            for label, workers in (order if round_ % 2 == 0 else order[::-1]):
                jobs = 2 if "2" in label else 1
                if workers:
                    with local_cluster(workers) as cluster:
                        warm_up(cluster.scheduler_address)
                        run = grade_command(submissions, reference, tmp / "g.csv", cluster=cluster.scheduler_address)
                else:
                    run = grade_command(submissions, reference, tmp / "g.csv", jobs=jobs)
                runs.append(dict(run, label=label, round=round_ + 1))
                print(runs[-1], flush=True)
    by = {label: statistics.median(r["seconds"] for r in runs if r["label"] == label) for label, _ in order}
    speedup = by["cluster, 1 worker"] / by["cluster, 2 workers"]
    overhead1 = by["cluster, 1 worker"] / by["local --jobs 1"] - 1
    overhead2 = by["cluster, 2 workers"] / by["local --jobs 2"] - 1
    lines = ["| run | round | notebooks | seconds | s / notebook | points | protection | load before -> after |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['label']} | {r['round']} | {r['notebooks']} | {r['seconds']} | {r['seconds_per_notebook']} | "
              f"{r['points']:g}/{r['max_points']:g} | {', '.join(r['protection'])} | {r['load_before']} -> {r['load_after']} |"
              for r in runs]
    lines += ["", f"Medians over {args.rounds} rounds: 2 workers vs 1: {speedup:.2f}x (target >= 1.7x); cluster over local per notebook: "
              f"{overhead1:+.0%} with 1 worker, {overhead2:+.0%} with 2 (target <= +10%)."]
    return {"notebooks": [nb.name for nb in notebooks], "students": args.students, "runs": runs,
            "speedup_2_vs_1": round(speedup, 3), "overhead_1": round(overhead1, 3), "overhead_2": round(overhead2, 3)}, lines


KINDS = ("correct", "correct", "correct", "correct", "partly", "partly", "unfinished", "missing")


def variant(student: str, notebook: str) -> str:
    """What this student handed in for this notebook: half correct, a quarter partly wrong, the rest
    unfinished or missing (by a hash of the names, so a run is reproducible)."""
    return KINDS[hashlib.sha256(f"{student}/{notebook}".encode()).digest()[0] % len(KINDS)]


EXPECTED = {"correct": 6, "partly": 3, "unfinished": 0, "missing": 0}


def generate_class(root: Path, students: int, per_student: int):
    from coursekit.course.authoring.exercises import make_exercise

    solution = nbformat.read(FIXTURE, as_version=4)
    partly = nbformat.read(FIXTURE, as_version=4)
    partly.cells[ROW_NORMS].source = "def row_norms(a):\n    return (a * a).sum(axis=1)      # forgot the root"
    notebooks = {"correct": solution, "partly": partly, "unfinished": make_exercise(solution)}
    names = [f"{k + 1:02d}_fixture" for k in range(per_student)]
    reference = root / "reference"
    reference.mkdir(parents=True)
    for name in names:
        nbformat.write(make_exercise(solution, "fixture"), reference / f"{name}.ipynb")
    expected = {}
    for k in range(students):
        student = f"s{k:04d}"
        folder = root / "submissions" / student
        folder.mkdir(parents=True)           # a student who hands in nothing still has a folder (else the
        for name in names:                   # grader cannot know the student: 1,000 students had one such)
            kind = variant(student, name)
            expected[student, name] = EXPECTED[kind]
            if kind != "missing":
                nbformat.write(notebooks[kind], folder / f"{name}.ipynb")
    return root / "submissions", reference, expected


def big_class(args) -> tuple[dict, list[str]]:
    import distributed

    from coursekit.course.grading.grader import grade

    with tempfile.TemporaryDirectory(prefix="grading-class-") as tmp:
        submissions, reference, expected = generate_class(Path(tmp), args.students, args.per_student)
        with local_cluster(args.workers) as cluster, distributed.Client(cluster) as client:
            killed = {}

            def kill_one():
                time.sleep(args.kill_after)
                busy = [address for address, tasks in client.processing().items() if tasks]
                if busy:
                    pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                    os.kill(pid, signal.SIGKILL)
                    killed.update(address=busy[0], pid=pid, at_seconds=round(time.perf_counter() - start, 1))
                    print(f"killed worker {busy[0]} (pid {pid})", flush=True)

            load = os.getloadavg()[0]
            start = time.perf_counter()
            threading.Thread(target=kill_one, daemon=True).start()
            scores, _ = grade(submissions, reference, cell_timeout=120, notebook_timeout=600, cluster=client,
                              progress=args.progress)
            seconds = time.perf_counter() - start
    keys = [(s.student, s.notebook, s.cell_id) for s in scores]
    got: dict = {}
    for s in scores:
        got[s.student, s.notebook] = got.get((s.student, s.notebook), 0) + s.points
    wrong = {key: (got.get(key), points) for key, points in expected.items() if got.get(key) != points}
    result = {"students": args.students, "per_student": args.per_student, "workers": args.workers,
              "notebooks": len(expected), "rows": len(keys), "duplicated_rows": len(keys) - len(set(keys)),
              "expected_rows": 3 * len(expected), "wrong_totals": len(wrong), "wrong_examples": list(wrong.items())[:5],
              "grader_errors": sum(s.reason.startswith("grader error") for s in scores), "killed": killed,
              "seconds": round(seconds, 1), "seconds_per_notebook": round(seconds / len(expected), 3),
              "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2)}
    ok = not wrong and result["duplicated_rows"] == 0 and result["rows"] == result["expected_rows"] and killed
    lines = [f"{args.students} students x {args.per_student} notebooks = {len(expected)} notebooks "
             f"({sum(1 for v in expected.values() if v)} scoring, the rest unfinished or missing) through a local Dask "
             f"cluster of {args.workers} workers; worker killed: {killed or 'none'}.", "",
             f"{result['rows']} rows (expected {result['expected_rows']}), {result['duplicated_rows']} duplicated, "
             f"{len(wrong)} notebooks with other points than expected, {result['grader_errors']} grader errors: "
             f"{'no lost or duplicated grade' if ok else 'FAILED'}.",
             f"{result['seconds']} s in all, {result['seconds_per_notebook']} s per notebook, load "
             f"{result['load_before']} -> {result['load_after']}."]
    return result, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("scaling", "class"))
    parser.add_argument("--students", type=int, default=None)
    parser.add_argument("--notebooks", default="0[1-6]_*", help="scaling: glob of solution notebooks")
    parser.add_argument("--rounds", type=int, default=2, help="scaling: rounds of the four settings")
    parser.add_argument("--per-student", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kill-after", type=float, default=20.0)
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    args.students = args.students or (2 if args.mode == "scaling" else 1000)
    info = machine_info()
    result, lines = (scaling if args.mode == "scaling" else big_class)(args)
    header = [f"# Grading through Dask ({args.mode}), {today()} ({machine_slug(info)}, git {git_revision()})", "",
              f"{info['cpu_model']}, {info['cores_usable']} usable cores, shared with other sessions (load recorded); "
              "wall-clock seconds; CPU only (CUDA cells on the emulator); isolation as the protection column says.", ""]
    text = "\n".join(header + lines) + "\n"
    print(text)
    if not args.no_save:
        base = Path(REPO_ROOT) / "benchmarks" / "results" / f"{today()}-{machine_slug(info)}-grading-cluster-{args.mode}"
        dump_json(str(base) + ".json", {"date": today(), "git_revision": git_revision(), "machine": info,
                                        "versions": {n: version_of(n) for n in ("distributed", "nbclient", "numpy")},
                                        "result": result})
        Path(str(base) + ".md").write_text(text)
        print(f"wrote {base}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
