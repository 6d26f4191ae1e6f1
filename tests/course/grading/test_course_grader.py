"""The instructor's grader, end to end on a synthetic class (pure NumPy; no coursekit dependency).

Each student is built from the fixture solutions notebook and breaks it in one way; the test checks
that every one gets the right score *and* the right reason, and that the grader finishes (an
infinite loop and a dead kernel must not stop it).
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from coursekit.__main__ import main
from coursekit.course.authoring.exercises import make_exercise
from coursekit.course.grading.grader import Reference, find_submissions, restore_graded
from coursekit.course.authoring.graded import graded_cells
from coursekit.course.grading.report import summary_markdown
from coursekit.course.grading.runner import protection, run_notebook

FIXTURE = Path(__file__).resolve().parents[2] / "course_fixtures" / "solution_notebook.json"
NAME = "01_fixture"
# Cell indices in the fixture: 2 defines softplus, 3 checks it (2 points), 4 defines row_norms,
# 5 checks it (3 points), 6 defines standardize, 7 checks it (1 point).
SOFTPLUS, ROW_NORMS, STANDARDIZE = 2, 4, 6


def solution():
    return nbformat.read(FIXTURE, as_version=4)


def with_cell(nb, index, source):
    nb.cells[index].source = source
    return nb


def synthetic_class(root: Path):
    """Write the reference (the generated exercise) and one submission per scenario."""
    reference = root / "reference"
    reference.mkdir()
    nbformat.write(make_exercise(solution(), "fixture"), reference / f"{NAME}.ipynb")

    students = {
        "correct": solution(),
        "partly_wrong": with_cell(
            with_cell(solution(), ROW_NORMS, "def row_norms(a):\n    return (a * a).sum(axis=1)"),
            STANDARDIZE, "def standardize(a):\n    return (a - average) / a.std(axis=0)",
        ),
        "edited_check": with_cell(
            with_cell(solution(), SOFTPLUS, "def softplus(x):\n    return x"), SOFTPLUS + 1, "assert True"
        ),
        "infinite_loop": with_cell(solution(), SOFTPLUS, "def softplus(x):\n    while True:\n        pass"),
        "crash": with_cell(solution(), ROW_NORMS, "def row_norms(a):\n    import os\n    os._exit(1)"),
        "stub": make_exercise(solution()),
    }
    deleted = solution()
    del deleted.cells[SOFTPLUS + 1]
    students["deleted_check"] = deleted
    for student, nb in students.items():
        (root / "submissions" / student).mkdir(parents=True)
        nbformat.write(nb, root / "submissions" / student / f"{NAME}.ipynb")
    # A flat-layout submission, saved under a renamed copy's name.
    nbformat.write(solution(), root / "submissions" / f"flat__{NAME}-Copy1.ipynb")
    (root / "submissions" / "no_notebook").mkdir()
    (root / "submissions" / "notes.txt").write_text("not a submission")
    return reference


# Every cell of the class runs under this limit, set-up imports included: generous enough for a loaded
# machine (3 s timed out the set-up of a correct notebook under load), so only the endless loop hits it.
CELL_LIMIT = 12

EXPECTED = {
    # student: {cell id: (points, reason prefix)}
    "correct": {"softplus": (2, "passed"), "row-norms": (3, "passed"), "standardize": (1, "passed")},
    "flat": {"softplus": (2, "passed"), "row-norms": (3, "passed"), "standardize": (1, "passed")},
    "partly_wrong": {
        "softplus": (2, "passed"),
        "row-norms": (0, "failed assertion: row_norms(a) is not the Euclidean norm of each row"),
        "standardize": (0, "error: NameError: name 'average' is not defined"),
    },
    "edited_check": {
        "softplus": (0, "failed assertion: softplus(x) does not match log(1 + exp(x))"),
        "row-norms": (3, "passed"),
        "standardize": (1, "passed"),
    },
    "deleted_check": {
        "softplus": (0, "missing graded cell"),
        "row-norms": (3, "passed"),
        "standardize": (1, "passed"),
    },
    "infinite_loop": {
        "softplus": (0, f"timeout after {CELL_LIMIT}s"),
        "row-norms": (3, "passed"),
        "standardize": (1, "passed"),
    },
    "crash": {
        "softplus": (2, "passed"),
        "row-norms": (0, "kernel crashed"),
        "standardize": (1, "passed"),      # a fresh kernel re-ran the cells before and went on (issue 22)
    },
    "stub": {
        "softplus": (0, "error: NotImplementedError: Exercise: np.logaddexp(0, x)"),
        "row-norms": (0, "error: NotImplementedError: Exercise: replace this line"),
        "standardize": (0, "error: NotImplementedError: Exercise: replace this line"),
    },
    "no_notebook": {cell: (0, "missing notebook") for cell in ("softplus", "row-norms", "standardize")},
}


@pytest.mark.slow
def test_grader_scores_a_synthetic_class(tmp_path, capsys):
    reference = synthetic_class(tmp_path)
    out = tmp_path / "out" / "grades.csv"
    start = time.monotonic()
    code = main([
        "grade", str(tmp_path / "submissions"), "--out", str(out), "--reference", str(reference),
        "--cell-timeout", str(CELL_LIMIT), "--notebook-timeout", "240", "--jobs", "2",
        "--executed", str(tmp_path / "executed"),
    ])
    elapsed = time.monotonic() - start
    assert code == 0
    assert elapsed < 400, f"grading took {elapsed:.0f}s"   # a hang guard, not a speed test

    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["student", "notebook", "cell_id", "points", "max_points", "reason", "protection",
                             "submission_sha256", "judge_sha256", "grader", "grader_fault"]
    assert all(row["protection"] == protection().label for row in rows if row["reason"] != "missing notebook")
    got = {(r["student"], r["cell_id"]): r for r in rows}
    assert {student for student, _ in got} == set(EXPECTED)
    for student, cells in EXPECTED.items():
        for cell_id, (points, reason) in cells.items():
            row = got[student, cell_id]
            assert row["notebook"] == NAME
            assert int(row["points"]) == points, (student, cell_id, row)
            assert row["reason"].startswith(reason), (student, cell_id, row["reason"])
    assert len(rows) == 3 * len(EXPECTED)

    summary = (tmp_path / "out" / "grades.md").read_text()
    assert f"| student | {NAME} (/6) | total (/6) |" in summary
    assert "| correct | 6 | 6 |" in summary and "| crash | 3 | 3 |" in summary
    assert f"**infinite_loop** · `01_fixture` · `softplus` (0/2): timeout after {CELL_LIMIT}s" in summary
    assert "ignored notes.txt" in summary
    assert "## How each run was isolated" in summary
    assert (tmp_path / "executed" / "crash" / f"{NAME}.ipynb").exists()
    assert "wrote" in capsys.readouterr().out


@pytest.mark.slow
def test_kernel_that_ignores_interrupts_hits_the_notebook_timeout(tmp_path):
    """The last line of defence: the per-cell interrupt does not work, the notebook limit kills all.

    The kernel stays stuck in cell 0, so every later cell times out too (2 s each); fifteen of them
    add up past the 20 s notebook limit, whatever the kernel's start-up time on a loaded machine.
    """
    nb = new_notebook(cells=[
        new_code_cell("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"),
    ] + [new_code_cell(f"x = {k}") for k in range(15)])
    nbformat.write(nb, tmp_path / "stubborn.ipynb")
    start = time.monotonic()
    run = run_notebook(tmp_path / "stubborn.ipynb", cell_timeout=2, notebook_timeout=20)
    assert time.monotonic() - start < 50, "the notebook timeout did not stop the run"
    assert run.outcome(0).reason in ("timeout after 2s", "timeout: notebook exceeded 20s")
    assert run.outcome(15).reason in ("timeout: notebook exceeded 20s", "not run: notebook timeout after 20s")
    assert not any(run.outcome(k).passed for k in range(16))


def test_runner_sets_small_size_and_a_fresh_working_directory(tmp_path):
    nb = new_notebook(cells=[new_code_cell(
        "import os\nassert os.environ['COURSEKIT_SIZE'] == 'small'\n"
        f"assert os.getcwd() != {str(Path.cwd())!r}\nassert os.listdir('.') == []"
    )])
    nbformat.write(nb, tmp_path / "env.ipynb")
    assert run_notebook(tmp_path / "env.ipynb", cell_timeout=30).outcome(0).reason == "passed"


# --- restoring graded cells (no kernel) ----------------------------------------------------------


def reference():
    nb = make_exercise(solution())
    return Reference(NAME, nb, graded_cells(nb))


def test_restore_by_metadata_cell_id_or_source_and_markdown_is_turned_back():
    sub = solution()
    sub.cells[3].metadata = {}  # metadata lost, notebook cell id kept: found by cell id
    sub.cells[5] = new_markdown_cell(sub.cells[5].source)  # turned into Markdown: found by source
    sub.cells[7].source = "assert True"  # edited: found by metadata id
    restored, where = restore_graded(sub, reference())
    assert where == {"softplus": 3, "row-norms": 5, "standardize": 7}
    for index in (3, 5, 7):
        original = solution().cells[index]
        assert restored.cells[index].cell_type == "code"
        assert restored.cells[index].source == original.source
        assert restored.cells[index].metadata["coursekit"] == original.metadata["coursekit"]


def test_unknown_graded_cells_lose_their_markers():
    sub = solution()
    sub.cells.append(new_code_cell("assert True", metadata={"tags": ["graded", "x"], "coursekit": {"id": "bonus", "points": 100}}))
    restored, where = restore_graded(sub, reference())
    assert "bonus" not in where
    assert restored.cells[-1].metadata == {"tags": ["x"]}


def test_find_submissions_reports_what_it_ignores(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / f"{NAME}.ipynb").write_text("{}")
    (tmp_path / "alice" / "01_fixture-Copy1.ipynb").write_text("{}")
    (tmp_path / "alice" / "99_other.ipynb").write_text("{}")
    (tmp_path / f"bob__{NAME}.ipynb").write_text("{}")
    students, warnings = find_submissions(tmp_path, [reference()])
    assert students == {"alice": {NAME: tmp_path / "alice" / f"{NAME}.ipynb"},
                        "bob": {NAME: tmp_path / f"bob__{NAME}.ipynb"}}
    assert any("two submissions" in w for w in warnings)
    assert any("99_other.ipynb" in w for w in warnings)


def test_unreadable_submission_scores_zero_with_reason(tmp_path):
    from coursekit.course.grading.grader import grade_one

    (tmp_path / "broken.ipynb").write_text("this is not json")
    scores = grade_one("dora", reference(), tmp_path / "broken.ipynb", cell_timeout=5, notebook_timeout=30)
    assert [s.points for s in scores] == [0, 0, 0]
    assert all(s.reason.startswith("unreadable notebook") for s in scores)
    assert "every graded cell passed" not in summary_markdown(scores)


@pytest.mark.parametrize("args, message", [
    (["grade", "/nonexistent/submissions", "--reference", "/nonexistent/ref"], "does not exist"),
])
def test_grade_cli_explains_bad_paths(args, message, capsys):
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_progress_is_one_line_per_notebook_off_a_terminal_and_ignored_files_are_listed(tmp_path, monkeypatch):
    import io

    from coursekit.course.grading.grader import Score, _Progress

    stream = io.StringIO()
    with _Progress(2, True, stream) as bar:
        bar.finished("alice/01_fixture", [Score("alice", NAME, "softplus", 2, 2, "passed")])
        bar.finished("bob/01_fixture", [Score("bob", NAME, "softplus", 0, 2, "missing notebook")])
    assert stream.getvalue().splitlines() == ["graded alice/01_fixture: 2/2 [1/2 notebooks]",
                                              "missing bob/01_fixture (not handed in): 0/2 [2/2 notebooks]"]
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / f"{NAME}.ipynb").write_text("{}")
    (tmp_path / "alice" / "notes.txt").write_text("x")
    (tmp_path / "alice" / ".hidden").write_text("x")
    _, warnings = find_submissions(tmp_path, [reference()])
    assert "alice: ignored 1 non-notebook file: notes.txt" in warnings
