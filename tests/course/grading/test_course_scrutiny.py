"""The grader lists cells that name the grading mechanism, for a person to read (coursekit.course.grading.scrutiny).

A hint, not a defence: the listing changes no score, and code that builds the names from pieces is
not seen. These tests keep it quiet on every notebook the course hands out (an untouched exercise is
never listed), loud on the hostile hooks of tests/course/grading/test_hostile_verdicts.py that reach for the
mechanism, and show where it lands: the warnings of ``grade`` and so ``grades.md``.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from coursekit.course.grading import grader
from coursekit.course.authoring.exercises import make_exercise
from coursekit.course.grading.report import summary_markdown
from coursekit.course.grading.scrutiny import cells_naming_the_grader, warnings_for
from test_course_grader import NAME, SOFTPLUS, solution
from test_hostile_verdicts import HOOKS

ROOT = Path(__file__).resolve().parents[3]
COURSE_NOTEBOOKS = sorted(p for folder in ("notebooks", "solutions", "exercises") for p in (ROOT / folder).glob("*.ipynb"))


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_course_notebook_names_the_grading_mechanism_outside_its_graded_cells(path):
    assert cells_naming_the_grader(nbformat.read(path, as_version=4)) == []


@pytest.mark.parametrize("hook, names", [
    ("transformer", ["graded_check", "input_transformers"]),
    ("coursekit_patched", ["graded_check", "coursekit.course"]),
    ("planted_reports", ["COURSEKIT_REPORT", "coursekit.course", "events.register"]),
    ("numpy_patched", []),    # harmless to the verdict (the judge's NumPy is the grader's): not listed
])
def test_the_hostile_hooks_that_reach_for_the_mechanism_are_listed(hook, names):
    nb = solution()
    nb.cells.insert(SOFTPLUS, new_code_cell(HOOKS[hook]))
    assert cells_naming_the_grader(nb) == ([(SOFTPLUS, names)] if names else [])


def test_grade_lists_them_in_its_warnings_and_changes_no_score(tmp_path, monkeypatch):
    reference = tmp_path / "reference"
    reference.mkdir()
    nbformat.write(make_exercise(solution(), "fixture"), reference / f"{NAME}.ipynb")
    for student, hook in [("honest", None), ("hooked", "named")]:
        nb = solution()
        if hook:   # names the mechanism (in a comment) and does nothing with it: the score must not move
            nb.cells.insert(SOFTPLUS, new_code_cell("# read about graded_check and input_transformers\nnamed = 1"))
        (tmp_path / "subs" / student).mkdir(parents=True)
        nbformat.write(nb, tmp_path / "subs" / student / f"{NAME}.ipynb")
    # the warnings come from each run's child, which parses the notebook inside the run's limits
    scores, warnings = grader.grade(tmp_path / "subs", reference, progress=False, jobs=2)

    assert {(s.student, s.points) for s in scores} == {("honest", 2), ("honest", 3), ("honest", 1),
                                                       ("hooked", 2), ("hooked", 3), ("hooked", 1)}
    assert warnings == warnings_for(f"hooked/{NAME}", nbformat.read(tmp_path / "subs/hooked" / f"{NAME}.ipynb", 4))
    assert len(warnings) == 1 and warnings[0].startswith(f"hooked/{NAME}: code cell {SOFTPLUS + 1} (`# read about "
                                                         "graded_check and input_transformers`) names graded_check, "
                                                         "input_transformers")
    assert "## Warnings" in summary_markdown(scores, warnings) and "hooked/01_fixture: code cell" in \
        summary_markdown(scores, warnings)


def test_a_planting_cell_dressed_up_as_graded_is_read_as_it_runs(tmp_path):
    """A cell tagged graded with an id the reference does not have runs as ordinary code (the grader
    strips its marks), so scrutiny reads it: it used to be skipped because it *looked* graded."""
    reference = tmp_path / "reference"
    reference.mkdir()
    nbformat.write(make_exercise(solution(), "fixture"), reference / f"{NAME}.ipynb")
    nb = solution()
    nb.cells.insert(SOFTPLUS, new_code_cell(HOOKS["transformer"], metadata={
        "tags": ["graded"], "coursekit": {"id": "not-in-the-reference", "points": 5}}))
    (tmp_path / "subs" / "planter").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "subs" / "planter" / f"{NAME}.ipynb")
    _, warnings = grader.grade(tmp_path / "subs", reference, progress=False)   # a real run: its child reads it
    assert len(warnings) == 1 and warnings[0].startswith(f"planter/{NAME}: code cell {SOFTPLUS + 1}"), warnings
