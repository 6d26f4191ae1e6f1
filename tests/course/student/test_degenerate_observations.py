"""Grades are earned: the reference earns every point, an unsolved exercise or an answer-free report none.

Each solution notebook is graded against its exercise exactly as ``python -m coursekit grade`` grades
a class of one (restored graded cells, the grading environment with ``COURSEKIT_CUDA_CHECK=memory``,
this machine's sandbox): every graded cell must pass (105 points of 11 exercises when this was
written). Each unsolved exercise graded the same way must score 0. Then every judged cell's
*reference* judge is replayed on the observations of that run made degenerate (see
``degenerate.py``: nothing, empty containers, every number 0 or 1, the right shapes full of noise,
NaN, the inputs echoed back, and shapes NumPy broadcasts against the answer — ``(0, 1)``, ``(1,)``,
``(k, 1)``, 0-d — mixed per observation): each must fail, so no point is given without an answer.
(Exercise 5's ``placement`` passed an empty ``(0, 1)`` array, compared with ``np.allclose`` before any
shape check: judges now compare through ``coursekit.course.check.close``/``close_each``/``equal``,
which check shape and dtype first.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import degenerate
from coursekit.course.student import check
from coursekit.course.grading.grader import grade_notebook, load_reference
from coursekit.course.grading.runner import protection

ROOT = Path(__file__).resolve().parents[3]
NAMES = sorted(p.name[: -len("_exercises.ipynb")] for p in (ROOT / "exercises").glob("*_exercises.ipynb"))
# graded cells whose judge another issue owns, with the degenerate kinds they still accept; the test
# fails when one of them stops accepting them (then it leaves this list)
OWNED_ELSEWHERE = {}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """``{name: (reference, solution scores, exercise scores, reports folder)}``."""
    root = tmp_path_factory.mktemp("graded-reference")
    found = {}
    for name in NAMES:
        reference = load_reference(ROOT / "exercises" / f"{name}_exercises.ipynb")
        reports = root / name
        solved = grade_notebook(ROOT / "solutions" / f"{name}_solutions.ipynb", reference, student="reference",
                                reports_path=reports)
        unsolved = grade_notebook(ROOT / "exercises" / f"{name}_exercises.ipynb", reference, student="unsolved")
        found[name] = (reference, solved, unsolved, reports)
    return found


def test_the_reference_solutions_earn_every_point_under_the_graders_settings(graded):
    scores = [s for _, solved, _, _ in graded.values() for s in solved]
    lost = [(s.notebook, s.cell_id, s.reason) for s in scores if s.points < s.max_points]
    assert not lost, lost
    assert sum(s.points for s in scores) == sum(s.max_points for s in scores)
    if protection().bubblewrap:
        assert all("bubblewrap" in s.protection for s in scores), {s.protection for s in scores}


def test_the_unsolved_exercises_earn_nothing(graded):
    scores = [s for _, _, unsolved, _ in graded.values() for s in unsolved]
    earned = [(s.notebook, s.cell_id, s.reason) for s in scores if s.points]
    assert not earned, earned
    assert sum(s.max_points for s in scores) == sum(s.max_points for _, solved, _, _ in graded.values() for s in solved)


@pytest.mark.parametrize("name", NAMES)
def test_no_point_for_observations_without_an_answer(graded, name):
    reference, _, _, reports = graded[name]
    nonce = (reports / "nonce.txt").read_text()
    accepted = {}
    for cell in reference.cells:
        observed = check.decode((reports / f"{cell.id}.npz").read_bytes(), nonce=nonce, cell_id=cell.id)
        given = degenerate.given_inputs(cell.source, cell.id, nonce)
        assert degenerate.verdict(cell.source, cell.id, nonce, observed, given) == "passed", cell.id
        kinds = degenerate.variants(observed, given, np.random.default_rng(0))
        passed = {kind for kind, seen in kinds.items()
                  if degenerate.verdict(cell.source, cell.id, nonce, seen, given) == "passed"}
        if passed or (name, cell.id) in OWNED_ELSEWHERE:
            accepted[cell.id] = passed
    expected = {cell: kinds for (notebook, cell), kinds in OWNED_ELSEWHERE.items() if notebook == name}
    assert accepted == expected, f"judges that accept observations without an answer: {accepted}"
