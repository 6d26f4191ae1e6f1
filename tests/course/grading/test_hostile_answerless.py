"""Observations with no answer in them earn nothing, end to end (issue 22's table, second row).

A student hands in an *unsolved* exercise plus one cell that wraps ``graded_check`` in the kernel so
that every graded cell still reports, but reports nothing an answer would hold: no observations when
the probe fails on the stubs, otherwise the same names with empty lists, empty dicts and arrays of
shape (0, 1). The grader's judges used to give 13 of 21 points for this. Every judge now checks the
observations its inputs require before their values: 0 points. ``test_degenerate_observations.py``
replays the same idea (and more kinds) on every graded cell's judge directly.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from coursekit.course.grading.grader import grade_notebook, load_reference

ROOT = Path(__file__).resolve().parents[3]
FORGE = '''
import numpy as np
import coursekit.course.student.check as check

_real_graded_check = check.graded_check

def _hollow(value):
    if isinstance(value, np.ndarray):
        return np.zeros((0, 1), value.dtype)
    return [] if isinstance(value, list) else {} if isinstance(value, dict) else value

def graded_check(cell_id, inputs, probe, judge, *, seed):
    def answerless(**given):
        try:
            seen = probe(**given)
        except Exception:
            return {}
        return {name: _hollow(value) for name, value in seen.items()}
    _real_graded_check(cell_id, inputs, answerless, judge, seed=seed)

check.graded_check = graded_check
'''


@pytest.mark.slow
@pytest.mark.parametrize("name", ["02_exp_benchmark", "03_handles_and_borrow", "10_afternoon_project"])
def test_an_unsolved_exercise_reporting_hollow_observations_scores_zero(tmp_path, name):
    exercise = ROOT / "exercises" / f"{name}_exercises.ipynb"
    nb = nbformat.read(exercise, as_version=4)
    first_code = next(i for i, cell in enumerate(nb.cells) if cell.cell_type == "code")
    nb.cells.insert(first_code + 1, new_code_cell(FORGE))
    nbformat.write(nb, tmp_path / exercise.name)
    scores = grade_notebook(tmp_path / exercise.name, load_reference(exercise), student="hollow")
    earned = [(s.cell_id, s.reason) for s in scores if s.points]
    assert not earned, earned
    assert all(s.reason != "missing graded cell" for s in scores), scores
