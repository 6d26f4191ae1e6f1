"""What one hostile notebook costs the grader's own process (issue 39, item 2).

    python benchmarks/grading_submission_cost.py --mb 64 --out DIR              # the byte cap, empty cells
    python benchmarks/grading_submission_cost.py --mb 64 --out DIR --cluster 1  # through a local Dask cluster

Writes a class of one student whose ``01_fixture`` notebook is ``--mb`` megabytes of empty code cells
(the shape the red team used: 500,000 cells in 22 MB), grades it with
:func:`coursekit.course.grading.grader.grade` in this process against the test fixture's exercise (``--jobs
1``, or ``--cluster N`` local Dask workers), and prints one JSON line: the wall time of the grading,
this process's peak resident memory (Linux's ``VmHWM``: the grader alone, runs are other processes; the
file is written in small pieces first so that writing it does not count), the workers' peak, and the
reasons in the rows. ``--honest`` adds a student who hands in the fixture's solution. Run it with an
older checkout on ``PYTHONPATH`` to measure the before; figures in the commit that added it.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import nbformat

EMPTY = '{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": ""}'


def empty_cells_notebook(path: Path, megabytes: float) -> int:
    """A valid notebook of empty code cells, at most ``megabytes`` long, written in small pieces;
    returns its cell count."""
    count = int(megabytes * 2**20 - 100) // (len(EMPTY) + 2)
    with open(path, "w") as handle:
        handle.write('{"cells": [')
        for start in range(0, count, 10_000):
            handle.write((", " if start else "") + ", ".join([EMPTY] * min(10_000, count - start)))
        handle.write('], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    return count


def _peak_mb() -> float:
    """This process's peak resident memory. Linux's ``VmHWM`` belongs to the process's own address space,
    which ``exec`` makes anew; ``ru_maxrss`` is kept across ``exec``, so a process started from a large
    parent (this script under a long pytest session: 544 MB) would report the parent's size."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=64.0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--cluster", type=int, default=0, help="local Dask workers (0: local jobs)")
    parser.add_argument("--honest", action="store_true", help="add a student with the fixture's solution")
    parser.add_argument("--worker-env", action="append", default=[], help="KEY=VALUE for the Dask workers only")
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "tests"))
    sys.path.insert(0, str(root / "tests" / "course" / "grading"))
    from coursekit.course.authoring.exercises import make_exercise
    from coursekit.course.grading.grader import grade
    from test_course_grader import NAME, solution

    out = Path(args.out)
    (out / "reference").mkdir(parents=True, exist_ok=True)
    (out / "submissions" / "eve").mkdir(parents=True, exist_ok=True)
    nbformat.write(make_exercise(solution(), "fixture"), out / "reference" / f"{NAME}.ipynb")
    cells = empty_cells_notebook(out / "submissions" / "eve" / f"{NAME}.ipynb", args.mb)
    if args.honest:
        (out / "submissions" / "ann").mkdir(exist_ok=True)
        nbformat.write(solution(), out / "submissions" / "ann" / f"{NAME}.ipynb")
    before = _peak_mb()
    result = {"cells": cells, "megabytes": args.mb, "grader_peak_rss_mb_before_grading": round(before)}
    start = time.perf_counter()
    if args.cluster:
        from distributed import Client

        from coursekit.course.grading.cluster import local_cluster

        env = dict(item.split("=", 1) for item in args.worker_env)
        with local_cluster(args.cluster, env=env) as cluster, Client(cluster) as client:
            scores, _ = grade(out / "submissions", out / "reference", cluster=client, progress=False)
            peaks = client.run(_peak_mb)
        result["worker_peak_rss_mb"] = round(max(peaks.values()))
    else:
        scores, _ = grade(out / "submissions", out / "reference", jobs=1, progress=False)
    result.update(wall_s=round(time.perf_counter() - start, 1), grader_peak_rss_mb=round(_peak_mb()),
                  rows={f"{s.student}/{s.cell_id}": [s.points, s.reason, s.protection] for s in scores})
    print(json.dumps(result))


if __name__ == "__main__":
    main()
