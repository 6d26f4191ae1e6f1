"""Grading on a Dask cluster (issue 29): same rows as local jobs, and a dead worker costs a retry, never a grade.

The slow test starts a local Dask cluster of two worker processes (each worker runs the same sandboxed
run a local job does), grades a small class through it, kills one worker while it holds a run, and
checks that every (student, notebook) still has exactly one set of rows with the points a local run
gives. The fast tests check the retry rule of :func:`coursekit.course.grading.cluster.dispatch` with an
executor whose futures fail, and the error for a scheduler that is not there.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from coursekit.__main__ import main
from coursekit.course.grading import cluster
from coursekit.course.authoring.exercises import make_exercise
from coursekit.course.grading.grader import grade

FIXTURE = Path(__file__).resolve().parents[2] / "course_fixtures" / "solution_notebook.json"


class FlakyExecutor(ThreadPoolExecutor):
    """Fails the first ``failures`` submissions of each key as a lost worker would."""

    def __init__(self, failures):
        super().__init__(max_workers=2)
        self.failures, self.calls = failures, []

    def submit(self, fn, *args, **kwargs):
        key = args[0]
        self.calls.append(key)
        if self.calls.count(key) <= self.failures.get(key, 0):
            future = Future()
            future.set_exception(RuntimeError(f"worker running {key} died"))
            return future
        return super().submit(fn, *args, **kwargs)


def test_dispatch_resubmits_a_failed_run_and_takes_each_result_once():
    pool = FlakyExecutor({"bob": 1, "eve": 5})
    finished = []
    with pool:
        results = cluster.dispatch(pool, {name: (str.upper, (name,), {}) for name in ("alice", "bob", "eve")},
                                   lambda key, result: finished.append(key), lambda key, exc: f"lost: {exc}")
    assert results == {"alice": "ALICE", "bob": "BOB", "eve": "lost: worker running eve died"}
    assert sorted(finished) == ["alice", "bob", "eve"]                     # each key reported once
    assert pool.calls.count("bob") == 2 and pool.calls.count("eve") == cluster.RETRIES + 1


def test_unreachable_scheduler_is_a_clear_error(tmp_path, capsys, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", "1s")
    reference = tmp_path / "reference"
    reference.mkdir()
    nbformat.write(make_exercise(nbformat.read(FIXTURE, as_version=4), "fixture"), reference / "01_fixture.ipynb")
    (tmp_path / "sub" / "alice").mkdir(parents=True)
    nbformat.write(nbformat.read(FIXTURE, as_version=4), tmp_path / "sub" / "alice" / "01_fixture.ipynb")
    code = main(["grade", str(tmp_path / "sub"), "--reference", str(reference), "--out", str(tmp_path / "g.csv"),
                 "--cluster", "tcp://127.0.0.1:9", "--no-progress"])
    assert code == 2
    assert "--cluster tcp://127.0.0.1:9: cannot reach a Dask scheduler there" in capsys.readouterr().err


def small_class(root: Path):
    solution = nbformat.read(FIXTURE, as_version=4)
    reference = root / "reference"
    reference.mkdir()
    for name in ("01_fixture", "02_fixture"):
        nbformat.write(make_exercise(solution, "fixture"), reference / f"{name}.ipynb")
    for student in ("ann", "ben", "cal"):
        for name in ("01_fixture", "02_fixture"):
            nb = solution if student != "cal" else make_exercise(solution)
            (root / "sub" / student).mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, root / "sub" / student / f"{name}.ipynb")
    return root / "sub", reference


@pytest.mark.slow
def test_cluster_grades_like_local_jobs_and_survives_a_killed_worker(tmp_path):
    distributed = pytest.importorskip("distributed")
    submissions, reference = small_class(tmp_path)
    with cluster.local_cluster(2, worker_class=distributed.Nanny) as local, distributed.Client(local) as client:
        killed = {}

        def kill_a_busy_worker():
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not killed:
                busy = [address for address, tasks in client.processing().items() if tasks]
                if busy:
                    pids = client.run(os.getpid, workers=[busy[0]])
                    time.sleep(1.0)                     # let the run get going on that worker
                    os.kill(pids[busy[0]], signal.SIGKILL)
                    killed[busy[0]] = pids[busy[0]]
                time.sleep(0.2)

        killer = threading.Thread(target=kill_a_busy_worker, daemon=True)
        killer.start()
        scores, _ = grade(submissions, reference, cell_timeout=120, notebook_timeout=300, cluster=client,
                          progress=False)
        killer.join(timeout=5)
        client.wait_for_workers(2, timeout=120)
        # every worker, the one its nanny restarted too, may fork each run's client (coursekit/course/grading/child.py)
        assert set(client.run(_is_daemonic).values()) == {False}
    assert killed, "no worker was killed during the run"
    rows = [(s.student, s.notebook, s.cell_id) for s in scores]
    assert len(rows) == len(set(rows)) == 3 * 2 * 3                 # no lost and no duplicated grade
    got = {(s.student, s.notebook): 0 for s in scores}
    for s in scores:
        got[s.student, s.notebook] += s.points
        assert not s.reason.startswith("grader error"), s.reason
    assert got == {(student, name): (0 if student == "cal" else 6)
                   for student in ("ann", "ben", "cal") for name in ("01_fixture", "02_fixture")}


def _is_daemonic():
    import multiprocessing

    return multiprocessing.current_process().daemon
