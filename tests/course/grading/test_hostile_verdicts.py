"""Hostile submissions against the verdicts (issue 13): code in the student's kernel cannot forge a pass.

Graded cells written with :func:`coursekit.course.student.check.graded_check` are judged by the grader,
outside the kernel, on observations the kernel reported in a safe format. Each student below tries
to bend that from an ordinary cell of their notebook; the test checks that every one gets exactly
what their code earns. One grading run (two at a time) covers them all.
"""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from coursekit.course.authoring.exercises import make_exercise
from coursekit.course.authoring.graded import graded_cells
from coursekit.course.grading.grader import Reference, grade_notebook
from test_course_grader import FIXTURE, NAME, ROW_NORMS, SOFTPLUS, solution

WRONG_SOFTPLUS = "def softplus(x):\n    return x"
WRONG_ROW_NORMS = "def row_norms(a):\n    return (a * a).sum(axis=1)"
HOOKS = {
    # an IPython input transformer that turns every graded cell into `pass`
    "transformer": (
        "ip = get_ipython()\n"
        "ip.input_transformers_cleanup.append(\n"
        "    lambda lines: ['pass\\n'] if any('graded_check' in line for line in lines) else lines)"),
    # NumPy's comparisons monkeypatched to agree with anything, before the checks
    "numpy_patched": "import numpy\nnumpy.allclose = lambda *a, **k: True\nnumpy.isclose = lambda *a, **k: True",
    # coursekit's check replaced in the kernel so that it never asserts
    "coursekit_patched": (
        "import coursekit.course.student.check as check\n"
        "check.graded_check = lambda *args, **kwargs: None"),
    # the checks' own judges sabotaged: the kernel says 'failed', the work is right
    "sabotaged": "import numpy\nnumpy.allclose = lambda *a, **k: False",
    # an IPython pre-run hook writes a forged report before each cell (it cannot know the run's seed
    # in advance, so it plants values for the interactive inputs)
    "planted_reports": (
        "import os, numpy as np\nfrom coursekit.course import check\n"
        "def plant(*_):\n"
        "    folder = os.environ.get('COURSEKIT_REPORT_DIR')\n"
        "    if folder:\n"
        "        x = np.random.default_rng(11).standard_normal(37) * 30\n"
        "        data = check.encode('not-this-run', 'softplus', {'got': np.logaddexp(0, x)})\n"
        "        open(os.path.join(folder, 'softplus.npz'), 'wb').write(data)\n"
        "get_ipython().events.register('post_run_cell', plant)"),
}
# student: (hook, wrong cells, expected {cell id: (points, reason prefix)})
CASES = {
    "transformer": ("transformer", {SOFTPLUS: WRONG_SOFTPLUS}, {
        "softplus": (0, "not judged: the cell reported nothing"),
        "row-norms": (0, "not judged: the cell reported nothing"),
        "standardize": (0, "not judged: the cell reported nothing")}),
    "numpy_patched": ("numpy_patched", {SOFTPLUS: WRONG_SOFTPLUS, ROW_NORMS: WRONG_ROW_NORMS}, {
        "softplus": (0, "failed assertion: softplus(x) does not match log(1 + exp(x))"),
        "row-norms": (0, "failed assertion: row_norms(a) is not the Euclidean norm of each row"),
        "standardize": (1, "passed")}),
    "coursekit_patched": ("coursekit_patched", {SOFTPLUS: WRONG_SOFTPLUS}, {
        "softplus": (0, "not judged: the cell reported nothing"),
        "row-norms": (0, "not judged: the cell reported nothing"),
        "standardize": (0, "not judged: the cell reported nothing")}),
    "sabotaged": ("sabotaged", {}, {
        "softplus": (2, "passed"), "row-norms": (3, "passed"), "standardize": (1, "passed")}),
    "planted_reports": ("planted_reports", {SOFTPLUS: WRONG_SOFTPLUS}, {
        "softplus": (0, "failed assertion: softplus(x) does not match"),
        "row-norms": (3, "passed"), "standardize": (1, "passed")}),
}


def reference():
    nb = make_exercise(solution(), "fixture")
    return Reference(NAME, nb, graded_cells(nb))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from concurrent.futures import ThreadPoolExecutor

    root = tmp_path_factory.mktemp("hostile-verdicts")
    ref = reference()
    paths = {}
    for student, (hook, wrong, _) in CASES.items():
        nb = solution()
        for index, source in wrong.items():
            nb.cells[index].source = source
        nb.cells.insert(2, new_code_cell(HOOKS[hook]))   # after the imports, before any graded cell
        paths[student] = root / f"{student}.ipynb"
        nbformat.write(nb, paths[student])
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {student: pool.submit(grade_notebook, path, ref, student=student, cell_timeout=60,
                                        notebook_timeout=180) for student, path in paths.items()}
        return {student: {s.cell_id: s for s in future.result()} for student, future in futures.items()}


@pytest.mark.parametrize("student", CASES)
def test_code_in_the_kernel_cannot_forge_a_verdict(graded, student):
    for cell_id, (points, reason) in CASES[student][2].items():
        score = graded[student][cell_id]
        assert (score.points, score.reason[:len(reason)]) == (points, reason), (student, cell_id, score)


def test_the_fixture_reference_is_judged_outside_the_kernel():
    sources = [c.source for c in graded_cells(nbformat.read(FIXTURE, as_version=4))]
    assert sources and all("graded_check(" in s for s in sources)


def test_every_graded_cell_of_the_course_is_judged_outside_the_kernel():
    """A graded cell with plain asserts judges itself in the student's kernel, where it can be fooled."""
    root = FIXTURE.parents[2]
    exercises = sorted((root / "exercises").glob("*_exercises.ipynb"))
    assert len(exercises) >= 9
    in_kernel = [f"{path.name}: {cell.metadata['coursekit']['id']}" for path in exercises
                 for cell in graded_cells(nbformat.read(path, as_version=4)) if "graded_check(" not in cell.source]
    assert not in_kernel, f"graded cells that do not call graded_check: {in_kernel}"
