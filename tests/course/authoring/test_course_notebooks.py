"""Graded cells are not vacuous: they pass on the solutions and every one fails on the exercises.

A graded cell that passes on the stub notebook gives points for nothing; one that fails on the
solution takes points for nothing. Both are checked by running the notebooks the way the grader does
(own process, ``COURSEKIT_SIZE=small``, errors allowed so every graded cell is reached).

Runs on every ``solutions/NN_name_solutions.ipynb`` with its ``exercises/NN_name_exercises.ipynb``, and always on the
fixture notebook, so the test means something even before the course has notebooks.
"""

from __future__ import annotations

import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from coursekit.course.authoring.exercises import exercise_name, generate
from coursekit.course.authoring.graded import graded_cells
from coursekit.course.grading.runner import run_notebook

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = Path(__file__).resolve().parents[2] / "course_fixtures" / "solution_notebook.json"
CELL_TIMEOUT = 300
NOTEBOOK_TIMEOUT = 600
REPO_NOTEBOOKS = sorted(path.stem for path in (ROOT / "solutions").glob("*.ipynb"))
CASES = ["fixture"] + REPO_NOTEBOOKS


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run every solutions and exercises notebook once, two at a time, before the tests look."""
    fixture_dir = tmp_path_factory.mktemp("fixture")
    (fixture_dir / "solutions").mkdir()
    shutil.copy(FIXTURE, fixture_dir / "solutions" / "01_fixture_solutions.ipynb")
    generate(fixture_dir / "solutions", fixture_dir / "exercises")
    paths = {("fixture", "solutions"): fixture_dir / "solutions" / "01_fixture_solutions.ipynb",
             ("fixture", "exercises"): fixture_dir / "exercises" / "01_fixture_exercises.ipynb"}
    for stem in REPO_NOTEBOOKS:
        paths[stem, "solutions"] = ROOT / "solutions" / f"{stem}.ipynb"
        paths[stem, "exercises"] = ROOT / "exercises" / exercise_name(f"{stem}.ipynb")
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            key: pool.submit(run_notebook, path, cell_timeout=CELL_TIMEOUT, notebook_timeout=NOTEBOOK_TIMEOUT)
            for key, path in paths.items() if path.exists()
        }
        return {key: (paths[key], future.result()) for key, future in futures.items()}


def outcomes(runs, case, kind):
    if (case, kind) not in runs:
        pytest.fail(f"the {kind} notebook of {case} is missing; run `python -m coursekit exercises`.")
    path, run = runs[case, kind]
    cells = graded_cells(nbformat.read(path, as_version=4))
    assert cells, f"{path} has no graded cell, so there is nothing to prove"
    return path, [(cell, run.outcome(cell.index)) for cell in cells]


@pytest.mark.parametrize("case", CASES)
def test_every_graded_cell_passes_on_the_solution(runs, case):
    path, results = outcomes(runs, case, "solutions")
    failing = [f"{cell.id}: {outcome.reason}" for cell, outcome in results if not outcome.passed]
    assert not failing, f"graded cells of {path} fail on the solution: {failing}"


@pytest.mark.parametrize("case", CASES)
def test_every_graded_cell_fails_on_the_exercise(runs, case):
    path, results = outcomes(runs, case, "exercises")
    passing = [cell.id for cell, outcome in results if outcome.passed]
    assert not passing, (
        f"graded cells of {path} pass on the unsolved exercise, so they give points for nothing: {passing}"
    )


@pytest.mark.parametrize("case", CASES)
def test_an_unsolved_exercise_fails_with_its_hints_not_name_errors(runs, case):
    """A student who has not done a task sees that task's hint, in its own cells and in the later
    cells that use it (exercise 7 gave ``NameError: name 'MATRIX_SOURCE' is not defined``, and an
    undone task 1 of exercise 5 broke task 2's demo with a NameError)."""
    if (case, "exercises") not in runs:
        pytest.fail(f"the exercises notebook of {case} is missing; run `python -m coursekit exercises`.")
    path, run = runs[case, "exercises"]
    nb = nbformat.read(path, as_version=4)
    confusing = [f"cell {index} ({nb.cells[index].source.splitlines()[0][:60]!r}): {run.outcome(index).reason}"
                 for index, cell in enumerate(nb.cells)
                 if cell.cell_type == "code" and cell.source.strip()
                 and re.match(r"error: (NameError|UnboundLocalError)\b", run.outcome(index).reason)]
    assert not confusing, f"{path.name}: cells fail with a NameError instead of the task's hint:\n" + "\n".join(confusing)
    for cell, outcome in outcomes(runs, case, "exercises")[1]:
        assert "Exercise" in outcome.reason or outcome.reason.startswith(("failed assertion", "not judged")), (
            f"{path.name}: graded cell {cell.id} fails without the task's hint or an assertion: {outcome.reason}")
