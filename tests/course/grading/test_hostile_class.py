"""Hostile submissions against the grader as a whole (issue 13): a class graded with the ``grade`` command.

Each student hands in the fixture's solution with one hostile addition in an ordinary cell (an
endless Python loop, an endless CUDA kernel, 48 MB of printed output), or a file that is not a
notebook at all. The test checks that every student gets exactly what their work earns — the
honest ones full marks, whatever their classmates did — and that nothing outside the runs changed:
the submissions (bytes and times), the reference, the output folder (only the tables and the
executed notebooks) and the machine's temporary folder. Memory hogs, daemons, forged records and
``/proc`` snooping are in ``test_hostile_isolation.py``; forged verdicts in ``test_hostile_verdicts.py``.
"""

from __future__ import annotations

import csv
import hashlib
import json
import multiprocessing.util
import os
import tempfile
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from coursekit.__main__ import main
from coursekit.course.authoring.exercises import make_exercise
from coursekit.course.grading.grader import Reference, grade_notebook
from coursekit.course.authoring.graded import graded_cells
from test_course_grader import NAME, solution

FULL = {"softplus": (2, "passed"), "row-norms": (3, "passed"), "standardize": (1, "passed")}
SPIN_SETUP = (
    "import numpy as np\nfrom coursekit import cuda\n"
    "spin = cuda.SourceModule('__global__ void spin(const int *flag) { while (flag[0] == 0) { } }').get_function('spin')")
SPIN = "spin(cuda.In(np.zeros(1, np.int32)), block=(32, 1, 1), timeout=600, check=False)"   # no watchdog for 10 min
TIMEOUT = 8
# student: the hostile cells put before the graded cells, with how each must end
HOSTILE_CELLS = {
    "honest": [("x = 1", "passed")],
    "endless_python": [("while True:\n    pass", "timeout")],
    "endless_cuda_kernel": [(SPIN_SETUP, "passed"), (SPIN, "timeout")],
    "huge_output": [   # 48 messages of 1 MB (past the grader's output limit), then one message of 100 MB
        ("import sys\nline = 'x' * 1_000_000 + '\\n'\nfor _ in range(48):\n    sys.stdout.write(line)\n    sys.stdout.flush()",
         "passed"),
        ("print('y' * 100_000_000)", "passed")],
}
OUTPUT_LIMIT_MB = 16     # sandbox.Limits.output_mb's default


def corrupt_files(good: str) -> dict[str, bytes]:
    def notebook(**fields):
        return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, **fields}).encode()

    return {
        "empty": b"",
        "binary": bytes(range(256)) * 8,
        "truncated": good[: len(good) // 2].encode(),
        "json_list": b"[1, 2, 3]",
        "no_cells": notebook(),
        "cell_without_outputs": notebook(cells=[{"id": "c0", "cell_type": "code", "metadata": {}, "source": "x = 1"}]),
        "source_not_text": notebook(cells=[{"id": "c0", "cell_type": "code", "metadata": {}, "source": 5, "outputs": [],
                                            "execution_count": None}]),
        "future_format": json.dumps({"nbformat": 9, "nbformat_minor": 0, "cells": []}).encode(),
        "deeply_nested": b"[" * 100_000 + b"]" * 100_000,
    }


CORRUPT_REASONS = {
    "empty": "unreadable notebook: NotJSONError", "binary": "unreadable notebook: UnicodeDecodeError",
    "truncated": "unreadable notebook: NotJSONError", "json_list": "unreadable notebook: ",
    "no_cells": "unreadable notebook: ValidationError", "future_format": "unreadable notebook: NBFormatError",
    "cell_without_outputs": "unreadable notebook: cell 0 is not a valid notebook cell",
    "source_not_text": "unreadable notebook: cell 0 is not a valid notebook cell",
    "deeply_nested": "unreadable notebook: RecursionError",
}


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry under ``folder``: (kind, bytes' digest or link target, modification time)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        stat = path.lstat()
        if path.is_symlink():
            found[str(path.relative_to(folder))] = ("link", os.readlink(path), stat.st_mtime_ns)
        elif path.is_file():
            found[str(path.relative_to(folder))] = ("file", hashlib.sha256(path.read_bytes()).hexdigest(), stat.st_mtime_ns)
        else:
            found[str(path.relative_to(folder))] = ("dir", None, stat.st_mtime_ns)
    return found


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile-class")
    reference = root / "reference"
    reference.mkdir()
    nbformat.write(make_exercise(solution(), "fixture"), reference / f"{NAME}.ipynb")
    submissions = root / "submissions"
    for student, cells in HOSTILE_CELLS.items():
        nb = solution()
        nb.cells[2:2] = [new_code_cell(source) for source, _ in cells]
        (submissions / student).mkdir(parents=True)
        nbformat.write(nb, submissions / student / f"{NAME}.ipynb")
    for student, data in corrupt_files(nbformat.writes(solution())).items():
        (submissions / student).mkdir()
        (submissions / student / f"{NAME}.ipynb").write_bytes(data)
    (submissions / "link_to_honest").mkdir()
    (submissions / "link_to_honest" / f"{NAME}.ipynb").symlink_to(submissions / "honest" / f"{NAME}.ipynb")
    private_tmp = root / "tmp"     # the runs' temporary folders go here, so that other graders' do not count
    private_tmp.mkdir()
    # multiprocessing's folder for this process (the grader's forkserver keeps its socket there) lives as
    # long as the process and is made on first use; made now, outside private_tmp, it is not a run's
    # leftover whichever test of the session first starts the forkserver
    multiprocessing.util.get_temp_dir()
    before = snapshot(submissions), snapshot(reference), sorted(private_tmp.iterdir())
    out = root / "out"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(private_tmp))
        patch.setenv("TMPDIR", str(private_tmp))
        code = main(["grade", str(submissions), "--reference", str(reference), "--out", str(out / "grades.csv"),
                     "--executed", str(out / "executed"), "--cell-timeout", str(TIMEOUT), "--notebook-timeout", "120",
                     "--jobs", "2", "--no-progress"])
    after = snapshot(submissions), snapshot(reference), sorted(private_tmp.iterdir())
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {(row["student"], row["cell_id"]): row for row in csv.DictReader(handle)}
    return code, rows, before, after, out


def executed(out: Path, student: str):
    return nbformat.read(out / "executed" / student / f"{NAME}.ipynb", as_version=4)


@pytest.mark.slow
@pytest.mark.parametrize("student", HOSTILE_CELLS)
def test_each_student_earns_exactly_what_their_work_earns(hostile_class, student):
    code, rows, *_ = hostile_class
    assert code == 0
    for cell_id, (points, reason) in FULL.items():
        row = rows[student, cell_id]
        assert (int(row["points"]), row["reason"]) == (points, reason), (student, row)
    # the hostile cells themselves (from index 2 of the executed notebook) ended as expected, and the run went on
    cells = executed(hostile_class[4], student).cells[2:2 + len(HOSTILE_CELLS[student])]
    for cell, (_, expected) in zip(cells, HOSTILE_CELLS[student]):
        errors = [(o.ename, o.evalue) for o in cell.outputs if o.output_type == "error"]
        if expected == "passed":
            assert errors == [], (student, cell.source, errors)
        else:   # the per-cell timeout interrupted it (the notebook timeout would have left later cells unrun)
            assert [name for name, _ in errors] == ["KeyboardInterrupt"], (student, cell.source, errors)
    if student == "endless_cuda_kernel":
        assert "kernel `spin` was interrupted" in errors[0][1], errors


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(CORRUPT_REASONS) + ["link_to_honest"])
def test_a_file_that_is_not_a_notebook_scores_zero_and_says_why(hostile_class, student):
    _, rows, *_ = hostile_class
    reason = CORRUPT_REASONS.get(student, "unreadable notebook: the file is a symbolic link: hand in the notebook itself")
    for cell_id in FULL:
        row = rows[student, cell_id]
        assert (int(row["points"]), row["reason"][:len(reason)]) == (0, reason), (student, row)


@pytest.mark.slow
def test_huge_outputs_are_cut_in_the_grader_not_kept(hostile_class):
    out = hostile_class[4]
    size = (out / "executed" / "huge_output" / f"{NAME}.ipynb").stat().st_size
    assert size < (OUTPUT_LIMIT_MB + 1) * 2**20, f"the executed notebook kept {size / 2**20:.0f} MB of 148 MB printed"
    texts = [o.get("text", "") for o in executed(out, "huge_output").cells[2].outputs]
    assert any(f"outputs past {OUTPUT_LIMIT_MB} MB per notebook were dropped" in text for text in texts)


@pytest.mark.slow
def test_nothing_outside_the_runs_changed(hostile_class):
    _, rows, before, after, out = hostile_class
    assert after[0] == before[0], "the submissions folder changed"
    assert after[1] == before[1], "the reference folder changed"
    assert after[2] == before[2] == [], f"runs left temporary files: {after[2]}"
    assert sorted(p.name for p in out.iterdir()) == ["executed", "grades.csv", "grades.md", "grades.scope.json"]
    students = {student for student, _ in rows}
    assert {p.name for p in (out / "executed").iterdir()} <= students
    assert all([p.name for p in (out / "executed" / s).iterdir()] == [f"{NAME}.ipynb"]
               for s in HOSTILE_CELLS)


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from coursekit.course.grading import grader

    monkeypatch.setattr(grader, "SUBMISSION_LIMIT_MB", 1)
    path = tmp_path / f"{NAME}.ipynb"
    nb = solution()
    nb.cells[0].outputs = []
    nb.metadata["padding"] = "x" * (2 * 2**20)
    nbformat.write(nb, path)
    exercise = make_exercise(solution(), "fixture")
    scores = grade_notebook(path, Reference(NAME, exercise, graded_cells(exercise)))
    assert {s.points for s in scores} == {0}
    assert all(s.reason.startswith("unreadable notebook: the file has 2 MB, over the grader's 1 MB: clear its "
                                   "outputs") for s in scores), scores
