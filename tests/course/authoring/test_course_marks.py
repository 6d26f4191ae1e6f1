"""Graded cells are visible to people and readable by nbgrader.

* every graded cell's first line says it is graded (task, id, points, "do not edit") and its last
  line prints one uniform pass line;
* every exercise and solutions notebook carries nbgrader's cell metadata and passes nbgrader's own
  validator (schema version 3, checked with nbgrader's JSON schema and its extra rules);
* the grader still matches submissions saved under the exercises' old names (``01_tour.ipynb``).
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from coursekit.course.authoring.exercises import exercise_name, make_exercise
from coursekit.course.grading.grader import Reference, find_submissions
from coursekit.course.authoring.graded import HEADER_PREFIX, PASS_PREFIX, graded_cells, mark_notebook

nbgraderformat = pytest.importorskip("nbgrader.nbgraderformat", reason="nbgrader is a test dependency")

ROOT = Path(__file__).resolve().parents[3]
COURSE = sorted((ROOT / "solutions").glob("*.ipynb")) + sorted((ROOT / "exercises").glob("*.ipynb"))


def graded(source, cell_id="check", points=2):
    return new_code_cell(source, metadata={"tags": ["graded"], "coursekit": {"id": cell_id, "points": points}})


def small_notebook():
    return new_notebook(cells=[
        new_markdown_cell("## Task 3 — something · 2 points"),
        new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n"),
        graded("assert f() == 1\nprint(\"f: all fine\")"),
    ])


def nbgrader_validate(nb):
    nbgraderformat.MetadataValidator().validate_nb(nb)


@pytest.mark.parametrize("path", COURSE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_course_notebooks_pass_nbgraders_validator(path):
    nb = nbformat.read(path, as_version=4)
    nbgrader_validate(nb)
    cells = graded_cells(nb)
    assert cells, f"{path} has no graded cell"
    for cell in cells:
        meta = nb.cells[cell.index].metadata["nbgrader"]
        assert (meta["grade"], meta["locked"], meta["solution"]) == (True, True, False)
        assert (meta["grade_id"], meta["points"]) == (cell.id, cell.points)
        lines = cell.source.splitlines()
        assert lines[0].startswith(HEADER_PREFIX) and cell.id in lines[0] and "do not edit" in lines[0]
        assert lines[-1].startswith(PASS_PREFIX) and cell.id in lines[-1]
    solution_cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert solution_cells, f"{path}: no cell is marked as an nbgrader solution cell"


def test_marks_are_derived_idempotent_and_replace_old_ones():
    nb = small_notebook()
    assert mark_notebook(nb) is True
    first = copy.deepcopy(nb)
    assert mark_notebook(nb) is False and nb == first
    source = nb.cells[2].source.splitlines()
    assert source[0] == "# GRADED · Task 3 · check · 2 points · do not edit: grading puts this cell back"
    assert source[-1] == 'print("PASSED · Task 3 · check · 2 points")'
    nb.cells[2].metadata["coursekit"]["points"] = 1
    assert mark_notebook(nb) is True
    assert nb.cells[2].source.count(HEADER_PREFIX) == 1 and nb.cells[2].source.count(PASS_PREFIX) == 1
    assert "· 1 point ·" in nb.cells[2].source and nb.cells[2].metadata["nbgrader"]["points"] == 1
    assert nb.cells[1].metadata["nbgrader"]["solution"] is True
    nbgrader_validate(nb)


def test_exercise_graded_cells_are_read_only_and_keep_nbgrader_marks():
    nb = small_notebook()
    mark_notebook(nb)
    exercise = make_exercise(nb, "small")
    assert exercise.cells[2].metadata["editable"] is False and exercise.cells[2].metadata["deletable"] is False
    assert exercise.cells[1].metadata["nbgrader"] == nb.cells[1].metadata["nbgrader"]
    nbgrader_validate(exercise)


def test_nbgraders_validator_is_not_vacuous():
    nb = small_notebook()
    mark_notebook(nb)
    broken = copy.deepcopy(nb)
    broken.cells[2].metadata["nbgrader"]["points"] = -1
    with pytest.raises(Exception, match="-1"):
        nbgrader_validate(broken)
    duplicate = copy.deepcopy(nb)
    duplicate.cells[1].metadata["nbgrader"]["grade_id"] = "check"
    with pytest.raises(Exception, match="Duplicate grade id"):
        nbgrader_validate(duplicate)


def test_exercise_names_differ_from_lessons_and_solutions():
    assert exercise_name("01_tour_solutions.ipynb") == "01_tour_exercises.ipynb"
    assert exercise_name("01_tour.ipynb") == "01_tour_exercises.ipynb"
    lessons = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    for kind in ("solutions", "exercises"):
        names = {p.name for p in (ROOT / kind).glob("*.ipynb")}
        assert not names & lessons, f"{kind}/ reuses lesson file names {names & lessons}"


def test_grader_matches_submissions_saved_under_the_old_names(tmp_path):
    references = [Reference(name, None, []) for name in ("01_tour_exercises", "05_logreg_exercises")]
    (tmp_path / "alice").mkdir()
    for name in ("01_tour-Copy1.ipynb", "01_tour.ipynb", "05_logreg_exercises.ipynb"):
        (tmp_path / "alice" / name).write_text("{}")
    (tmp_path / "bob__01_tour.ipynb").write_text("{}")
    students, warnings = find_submissions(tmp_path, references)
    assert students == {
        "alice": {"01_tour_exercises": tmp_path / "alice" / "01_tour.ipynb",
                  "05_logreg_exercises": tmp_path / "alice" / "05_logreg_exercises.ipynb"},
        "bob": {"01_tour_exercises": tmp_path / "bob__01_tour.ipynb"},
    }
    assert any("01_tour-Copy1.ipynb" in w for w in warnings)
