"""Run a graded cell after an answer, in this process, and judge it twice as a grading run does.

The exercise answer tests (``tests/course/authoring/test_course_lesson*_answers.py``) put plausible wrong answers, and
correct ones written differently from the solution, in front of a solution's graded cell. A grading
run judges a cell twice: the cell itself in the student's kernel (what the student sees in JupyterLab)
and the grader's judge (:func:`coursekit.course.grading.judge.judge_cells`), which runs the cell's source
again in a namespace holding nothing of the notebook, on the observations the probe wrote to the run's
report folder. The two verdicts must agree; this module checks that they do.
"""
from __future__ import annotations

import pytest

from coursekit import config
from coursekit.course.grading.judge import judge_cells


def solution_cell(notebook, marker):
    """The source of the one code cell of a solution ``notebook`` (not a graded cell) containing ``marker``."""
    (source,) = [c.source for c in notebook.cells if c.cell_type == "code" and marker in c.source
                 and "GRADED" not in c.source]
    return source


def run_judged_twice(cells, graded_id, graded_source, report_dir, nonce, module_name):
    """Run ``cells`` (``(label, source)`` pairs), then the graded cell, in one namespace; then the judge.

    Raises what the graded cell raised (AssertionError for a wrong answer). When the cell passed, the
    judge must pass too; when it failed an assertion, the judge must fail with the same message; when
    the probe raised anything else, nothing was reported and the judge must say so.
    """
    # a notebook's setup cell sets flags for its kernel (``theano.config.device = "gpu"``); here that
    # kernel is this test process, so the flags go back when the run ends
    with config.change():
        _run(cells, graded_id, graded_source, report_dir, nonce, module_name)


def _run(cells, graded_id, graded_source, report_dir, nonce, module_name):
    namespace = {"__name__": module_name}
    for label, source in cells:
        exec(compile(source, label, "exec"), namespace)

    def judged():
        return judge_cells([(0, graded_id, graded_source)], str(report_dir), nonce)[0]

    try:
        exec(compile(graded_source, f"graded cell {graded_id}", "exec"), namespace)
    except AssertionError as failed:               # the probe ran and reported; the judge must agree
        verdict = judged()
        if verdict != ("failed", f"failed assertion: {' '.join(str(failed).split())}"):
            pytest.fail(f"the kernel failed {graded_id} ({failed}), the grader's judge says {verdict}")
        raise
    except Exception:                              # the probe itself raised: nothing was reported
        verdict = judged()
        if verdict[0] != "unreported":
            pytest.fail(f"the probe of {graded_id} raised, yet the grader's judge says {verdict}")
        raise
    verdict = judged()
    if verdict != ("passed", "passed"):
        pytest.fail(f"the kernel passed {graded_id}, the grader's judge says {verdict}")
