"""A graded cell's message names the student's actual slip (issue 14, item 5).

Exercise 2's last task asks for the largest relative difference between exp in float32 and in
float64. Computing that difference in float32 rounds away exactly what it measures; the check used
to report it as "worst must be a Python float", which sent students after the wrong fix. The graded
cell runs here, in this process, after an answer (as in JupyterLab).
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import numpy as np
import pytest

from coursekit.course.authoring.graded import graded_cells

ROOT = Path(__file__).resolve().parents[3]
GRADED = {cell.id: cell.source
          for cell in graded_cells(nbformat.read(ROOT / "solutions" / "02_exp_benchmark_solutions.ipynb", as_version=4))}

IN_FLOAT64 = '''
def float32_vs_float64(values):
    r32 = np.exp(np.asarray(values, dtype="float32"))
    r64 = np.exp(np.asarray(values, dtype="float64"))
    return r32, r64, float(np.max(np.abs(r32.astype("float64") - r64) / np.abs(r64)))
'''
IN_FLOAT32 = '''
def float32_vs_float64(values):
    r32 = np.exp(np.asarray(values, dtype="float32"))
    r64 = np.exp(np.asarray(values, dtype="float64"))
    return r32, r64, np.max(np.abs(r32 - r64.astype("float32")) / np.abs(r64.astype("float32")))
'''


def run_graded(answer, monkeypatch):
    monkeypatch.setenv("COURSEKIT_SIZE", "small")
    namespace = {"np": np}
    exec(compile(answer, "answer cell", "exec"), namespace)
    exec(compile(GRADED["float32-vs-float64"], "graded cell", "exec"), namespace)


def test_a_difference_computed_in_float64_passes(monkeypatch, capsys):
    run_graded(IN_FLOAT64, monkeypatch)
    assert "PASSED · Task 4 · float32-vs-float64" in capsys.readouterr().out


def test_a_difference_computed_in_float32_is_named_as_such(monkeypatch):
    with pytest.raises(AssertionError) as failed:
        run_graded(IN_FLOAT32, monkeypatch)
    message = str(failed.value)
    assert "float32" in message and "float64" in message, message
    assert "Python float" not in message, message
