"""The first-hour rough edges of issue 29 that a student or an instructor meets at once.

* Exercise 2's timing loop: ``return np.min(times)`` gives a NumPy float64, which is a float; it was
  refused as "return the time as a float, not float64".
* A graded cell's traceback in JupyterLab starts at the student's cell and the check's own frames
  (graded_check and the helpers it calls) are hidden, so the first frame shown is the student's code.
* Grading an empty or wrong folder is an error naming the folder and the layout it expected, not
  "graded 0 students" and exit 0.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from judged_twice import run_judged_twice

from coursekit.course.student.check import NONCE_ENV, REPORT_DIR_ENV
from coursekit.course.authoring.graded import graded_cells

ROOT = Path(__file__).resolve().parents[2]
NONCE = "first-hour-test-run"

TIMING_ANSWER = '''
import time
import numpy as np

def best_seconds_per_call(fn, sync, repeat=5, number=10, clock=time.perf_counter):
    fn()
    sync()
    times = []
    for _ in range(repeat):
        start = clock()
        for _ in range(number):
            fn()
        sync()
        times.append((clock() - start) / number)
    return {expression}
'''


@pytest.fixture
def timing_loop(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSEKIT_SIZE", "small")
    monkeypatch.setenv(REPORT_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(NONCE_ENV, NONCE)
    nb = nbformat.read(ROOT / "solutions" / "02_exp_benchmark_solutions.ipynb", as_version=4)
    (graded,) = [c.source for c in graded_cells(nb) if c.id == "timing-loop"]

    def run(expression):
        answer = TIMING_ANSWER.format(expression=expression)
        run_judged_twice([("answer cell", answer)], "timing-loop", graded, tmp_path, NONCE, "exercise2")

    return run


def test_timing_loop_accepts_a_numpy_float(timing_loop):
    timing_loop("np.min(times)")        # np.float64: a float


def test_timing_loop_still_refuses_an_integer(timing_loop):
    with pytest.raises(AssertionError, match="as a float .seconds., not int"):
        timing_loop("int(1000 * min(times))")


FAILING_GRADED_CELL = '''
from coursekit.course.student.check import graded_check

def add_one(x):
    return x + 2                     # the student's bug

def inputs(rng, small):
    return {"x": 1}

def probe(x):
    return {"got": add_one(x)}

def judge(x, got):
    assert got == x + 1, f"add_one({x}) gave {got}"

graded_check("add-one", inputs, probe, judge, seed=1)
'''


def test_graded_cell_traceback_hides_the_checks_own_frames(monkeypatch):
    """What JupyterLab shows (IPython's traceback): the cell, then the judge; no grader frames."""
    import contextlib
    import io

    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.delenv(REPORT_DIR_ENV, raising=False)
    shell = InteractiveShell.instance(colors="nocolor")
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(shown):
        shell.run_cell(FAILING_GRADED_CELL)
    text = shown.getvalue()
    assert "AssertionError: add_one(1) gave 3" in text
    assert "in judge(x, got)" in text
    assert "check.py" not in text, f"the check's own frames show in the traceback:\n{text}"
