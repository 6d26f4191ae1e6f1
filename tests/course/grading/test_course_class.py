"""Teaching a real class (issue 29): assignments, exports, regrades, and folders with nothing to grade.

The fast tests replace the notebook run (``grade_one``) by a recorder, so they check what the grader
asks to run and how it totals, reports and exports, without kernels. The slow test grades a small
class for real twice: a regrade after one judge changed and one student handed in again re-runs
exactly those notebooks, and its diff names exactly the students whose points changed.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import nbformat
import pytest

from coursekit.__main__ import main
from coursekit.course.grading import grader
from coursekit.course.grading.assignment import AssignmentError, select
from coursekit.course.authoring.exercises import make_exercise
from coursekit.course.grading.escape import csv_cell
from coursekit.course.grading.export import write_exports
from coursekit.course.grading.grader import Score, load_references
from coursekit.course.grading.regrade import diff

FIXTURE = Path(__file__).resolve().parents[2] / "course_fixtures" / "solution_notebook.json"
ROW_NORMS = 4                                     # the cell defining row_norms in the fixture
EXERCISES = ["01_fixture", "02_fixture", "05_fixture"]


def solution():
    return nbformat.read(FIXTURE, as_version=4)


def write_references(root: Path, names=EXERCISES) -> Path:
    reference = root / "reference"
    reference.mkdir(parents=True, exist_ok=True)
    for name in names:
        nbformat.write(make_exercise(solution(), "fixture"), reference / f"{name}.ipynb")
    return reference


def hand_in(root: Path, student: str, name: str, nb) -> Path:
    path = root / "submissions" / student / f"{name}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


@pytest.fixture
def recorded_runs(monkeypatch):
    """grade_one replaced by a recorder: every graded cell of a handed-in notebook passes."""
    runs = []

    def fake_grade_one(student, reference, path, **_):
        runs.append((student, reference.name))
        return [Score(student, reference.name, c.id, c.points if path else 0, c.points,
                      "passed" if path else "missing notebook") for c in reference.cells]

    monkeypatch.setattr(grader, "grade_one", fake_grade_one)
    return runs


# --- --assignment --------------------------------------------------------------------------------


def test_assignment_by_number_or_name(tmp_path):
    references = load_references(write_references(tmp_path))
    assert [r.name for r in select(references, "02,5")] == ["02_fixture", "05_fixture"]
    assert [r.name for r in select(references, "05_fixture, 01")] == ["01_fixture", "05_fixture"]
    assert select(references, None) == references
    with pytest.raises(AssignmentError, match=r"'07' matches no reference notebooks.*01_fixture, 02_fixture"):
        select(references, "02,07")


def test_assignment_grades_and_totals_only_those_exercises(tmp_path, recorded_runs):
    reference = write_references(tmp_path)
    for name in EXERCISES:
        hand_in(tmp_path, "alice", name, solution())
    hand_in(tmp_path, "bob", "05_fixture", solution())
    out = tmp_path / "out" / "grades.csv"
    assert main(["grade", str(tmp_path / "submissions"), "--reference", str(reference), "--out", str(out),
                 "--assignment", "02,05", "--no-progress"]) == 0
    assert sorted(recorded_runs) == [("alice", "02_fixture"), ("alice", "05_fixture"),
                                     ("bob", "02_fixture"), ("bob", "05_fixture")]
    summary = (tmp_path / "out" / "grades.md").read_text()
    assert "Assigned: `02_fixture`, `05_fixture`" in summary
    assert "| student | 02_fixture (/6) | 05_fixture (/6) | total (/12) |" in summary
    assert "| alice | 6 | 6 | 12 |" in summary and "| bob | 0 | 6 | 6 |" in summary
    assert "01_fixture.ipynb (01_fixture is not in this assignment)" in summary


@pytest.mark.parametrize("layout, expected", [
    ("empty", "the folder is empty"),
    ("loose", "it holds 01_fixture.ipynb, notes.txt"),
    ("unassigned", "student folder (alice) hold no notebook of the exercises graded (02_fixture)"),
])
def test_a_folder_with_nothing_to_grade_is_an_error_naming_it(tmp_path, recorded_runs, capsys, layout, expected):
    reference = write_references(tmp_path)
    folder = tmp_path / "submissions"
    folder.mkdir()
    if layout == "loose":          # e.g. the exercises folder itself, or notebooks without student folders
        nbformat.write(solution(), folder / "01_fixture.ipynb")
        (folder / "notes.txt").write_text("x")
    if layout == "unassigned":
        hand_in(tmp_path, "alice", "01_fixture", solution())
    code = main(["grade", str(folder), "--reference", str(reference), "--out", str(tmp_path / "g.csv"),
                 "--no-progress"] + (["--assignment", "02"] if layout == "unassigned" else []))
    err = capsys.readouterr().err
    assert code == 2 and recorded_runs == []
    assert f"no submissions to grade in {folder}" in err and expected in err
    example = "02_fixture" if layout == "unassigned" else "01_fixture"
    assert f"{folder}/alice/{example}.ipynb" in err            # the layout it expected
    assert not (tmp_path / "g.csv").exists()


# --- exports -------------------------------------------------------------------------------------


def scores_of_a_class():
    return [Score("alice", "03_x_exercises", "a", 2, 2, "passed"), Score("alice", "03_x_exercises", "b", 0, 1, "error"),
            Score("alice", "05_y_exercises", "c", 1.5, 3, "passed"),
            Score("=HYPERLINK(\"http://x\")", "03_x_exercises", "a", 0, 2, "-1 is wrong"),
            Score("=HYPERLINK(\"http://x\")", "03_x_exercises", "b", 1, 1, "passed"),
            Score("=HYPERLINK(\"http://x\")", "05_y_exercises", "c", 3, 3, "passed")]


def test_canvas_moodle_and_json_exports(tmp_path):
    paths = write_exports(scores_of_a_class(), tmp_path / "grades.csv", ["canvas", "moodle", "json"],
                          grader="abc code 123")
    assert [p.name for p in paths] == ["grades-canvas.csv", "grades-moodle.csv", "grades.json"]
    canvas = list(csv.reader(open(tmp_path / "grades-canvas.csv", newline="")))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "03_x", "05_y"]
    assert canvas[1] == ["    Points Possible", "", "", "", "", "3", "3"]
    assert canvas[2] == ["alice", "", "", "alice", "", "2", "1.5"]
    assert canvas[3][0] == canvas[3][3] == "'=HYPERLINK(\"http://x\")"      # shown as text, never run
    moodle = list(csv.reader(open(tmp_path / "grades-moodle.csv", newline="")))
    assert moodle == [["Username", "03_x", "05_y"], ["alice", "2", "1.5"], ["'=HYPERLINK(\"http://x\")", "1", "3"]]
    data = json.loads((tmp_path / "grades.json").read_text())
    assert data["grader"] == "abc code 123" and data["max_points"] == {"03_x_exercises": 3, "05_y_exercises": 3}
    assert data["students"]["alice"]["total"] == 3.5
    assert data["students"]["alice"]["notebooks"]["03_x_exercises"]["cells"]["b"]["reason"] == "error"


@pytest.mark.parametrize("text, cell", [("=1+1", "'=1+1"), ("+1", "'+1"), ("-x", "'-x"), ("@SUM(A1)", "'@SUM(A1)"),
                                        ("\tx", "'\tx"), ("\rx", "'x"), ("alice", "alice"), (-1.5, "-1.5")])
def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(text, cell):
    assert csv_cell(text) == cell


def test_unknown_export_format_is_an_error(tmp_path, capsys):
    assert main(["grade", str(tmp_path), "--export", "canvas,blackboard"]) == 2
    assert "unknown format blackboard; choose from canvas, moodle, json" in capsys.readouterr().err


# --- regrades ------------------------------------------------------------------------------------


def test_regrade_reuses_unchanged_notebooks_without_running_them(tmp_path, recorded_runs):
    reference = write_references(tmp_path, ["01_fixture", "02_fixture"])
    for student in ("alice", "bob"):
        for name in ("01_fixture", "02_fixture"):
            hand_in(tmp_path, student, name, solution())
    out = tmp_path / "grades.csv"
    args = ["grade", str(tmp_path / "submissions"), "--reference", str(reference), "--out", str(out), "--no-progress"]
    assert main(args) == 0 and len(recorded_runs) == 4
    first = out.read_text()
    recorded_runs.clear()
    assert main(args + ["--regrade"]) == 0
    assert recorded_runs == [] and out.read_text() == first        # same inputs, same grades, nothing run
    regraded = tmp_path / "grades-regrade-1.csv"
    assert main(args + ["--regrade", str(out), "--assignment", "01", "--out", str(tmp_path / "one.csv")]) == 0
    assert recorded_runs == []
    assert len(list(csv.reader(open(tmp_path / "one-regrade-1.csv")))) == 1, "exercise 2's rows shown as removed"
    assert regraded.exists()
    hand_in(tmp_path, "bob", "02_fixture", make_exercise(solution()))  # bob hands in again
    assert main(args + ["--regrade"]) == 0
    assert recorded_runs == [("bob", "02_fixture")]


def test_diff_lists_changed_added_and_removed_rows():
    before = [Score("a", "n", "c", 1, 1, "passed"), Score("b", "n", "c", 1, 1, "passed"), Score("c", "n", "c", 0, 1, "x")]
    after = [Score("a", "n", "c", 1, 1, "passed"), Score("b", "n", "c", 0, 1, "failed"), Score("d", "n", "c", 1, 1, "p")]
    assert [(c.student, c.before, c.after) for c in diff(before, after)] == [("b", 1, 0), ("c", 0, None), ("d", None, 1)]


@pytest.mark.slow
def test_regrade_after_a_judge_change_reruns_only_that_exercise_and_names_whose_points_moved(tmp_path, monkeypatch):
    """Real runs: 3 students x 2 exercises, then exercise 2's row-norms judge gets stricter and one student
    hands in exercise 1 again. The regrade runs exactly those 4 notebooks; the diff names exactly the
    2 students whose points changed (a 6-decimal answer fails the stricter judge; the new hand-in passes)."""
    reference = write_references(tmp_path, ["01_fixture", "02_fixture"])
    rounded = solution()
    rounded.cells[ROW_NORMS].source = "def row_norms(a):\n    return np.round(np.sqrt((a * a).sum(axis=1)), 6)"
    for name in ("01_fixture", "02_fixture"):
        hand_in(tmp_path, "correct", name, solution())
        hand_in(tmp_path, "rounded", name, rounded)
        hand_in(tmp_path, "late", name, make_exercise(solution()))
    runs = []
    real = grader.grade_one
    monkeypatch.setattr(grader, "grade_one", lambda student, ref, path, **kw: runs.append((student, ref.name))
                        or real(student, ref, path, **kw))
    out = tmp_path / "out" / "grades.csv"
    args = ["grade", str(tmp_path / "submissions"), "--reference", str(reference), "--out", str(out),
            "--jobs", "2", "--no-progress", "--cell-timeout", "60"]
    assert main(args) == 0 and len(runs) == 6
    first = {(r["student"], r["notebook"], r["cell_id"]): r for r in csv.DictReader(open(out, newline=""))}
    assert first["rounded", "02_fixture", "row-norms"]["points"] == "3"
    assert all(len(r["submission_sha256"]) == 64 and len(r["judge_sha256"]) == 64 and r["grader"] for r in first.values())

    judged = reference / "02_fixture.ipynb"
    text = judged.read_text()
    old = 'np.allclose(got, reference), \\"row_norms(a)'           # the row-norms judge's closeness test
    assert text.count(old) == 1
    judged.write_text(text.replace(old, 'np.allclose(got, reference, rtol=1e-12, atol=0), \\"row_norms(a)'))
    hand_in(tmp_path, "late", "01_fixture", solution())
    runs.clear()
    assert main(args + ["--regrade"]) == 0
    assert sorted(runs) == [("correct", "02_fixture"), ("late", "01_fixture"), ("late", "02_fixture"),
                            ("rounded", "02_fixture")]
    changed = list(csv.DictReader(open(tmp_path / "out" / "grades-regrade-1.csv", newline="")))
    assert {r["student"] for r in changed} == {"rounded", "late"}
    assert {(r["student"], r["notebook"], r["cell_id"], r["points_before"], r["points_after"]) for r in changed} == {
        ("rounded", "02_fixture", "row-norms", "3", "0"),
        ("late", "01_fixture", "softplus", "0", "2"), ("late", "01_fixture", "row-norms", "0", "3"),
        ("late", "01_fixture", "standardize", "0", "1")}
    report = (tmp_path / "out" / "grades-regrade-1.md").read_text()
    assert "4 notebooks graded again" in report and "2 taken unchanged" in report and "| rounded | 12 | 9 |" in report
    second = {(r["student"], r["notebook"], r["cell_id"]): r for r in csv.DictReader(open(out, newline=""))}
    assert second["correct", "01_fixture", "softplus"] == first["correct", "01_fixture", "softplus"]   # kept as is
