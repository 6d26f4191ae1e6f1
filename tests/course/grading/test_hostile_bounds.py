"""The grader's own process stays small whatever a run does (issue 22's table).

Before: a cell raising an exception with a 150 MB message took the grader's process to 1.36 GB
(events were read whole and parsed); a report that made the judge allocate took it to 1.68 GB under
a 1 GB run limit (the judge ran outside the run's limits). Now texts are cut before they leave the
run, the events read from a run are capped, and the judge runs in the runner's child inside the
run's memory limit. The grader here is a fresh Python process, so its peak memory is its own.
"""

from __future__ import annotations

import json
import subprocess
import sys

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

JUDGE_HOG = '''from coursekit.course.student.check import graded_check
import numpy as np
def inputs(rng, small):
    return {"n": 3}
def probe(n):
    return {"size": 2_000_000_000}
def judge(n, size):
    hog = np.ones(int(size))          # a judge that trusts a reported size
    assert hog.sum() == size
graded_check("hog", inputs, probe, judge, seed=1)'''

GRADER = '''
import json, sys
from coursekit.course.grading.runner import run_notebook
from coursekit.course.grading.sandbox import Limits
run = run_notebook(sys.argv[1], cell_timeout=60, notebook_timeout=180, limits=Limits(memory_mb=2000))
# VmHWM, this process image's own peak: ru_maxrss also keeps the RSS of the pytest process this one was
# forked from (Linux carries it across execve), which a long test run makes hundreds of MB
peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"peak_mb": peak_kb / 1024,
                  "outcomes": [[run.outcome(i).passed, run.outcome(i).reason] for i in range(3)]}))
'''


def _grade_in_a_fresh_process(tmp_path, cells):
    nbformat.write(new_notebook(cells=cells), tmp_path / "bounds.ipynb")
    done = subprocess.run([sys.executable, "-c", GRADER, str(tmp_path / "bounds.ipynb")], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_exception_with_a_150_mb_message_costs_the_run_not_the_grader(tmp_path):
    result = _grade_in_a_fresh_process(tmp_path, [new_code_cell("raise ValueError('x' * 150_000_000)"),
                                                  new_code_cell("after = 1"), new_code_cell("after += 1")])
    (raised, reason), (after, _), _ = result["outcomes"]
    assert not raised and reason.startswith("error: ValueError: xxx") and len(reason) <= 200, reason
    assert after, "the cell after it ran"
    assert result["peak_mb"] < 400, f"the grader's process peaked at {result['peak_mb']:.0f} MB"


def test_a_judge_made_to_allocate_meets_the_runs_limit_not_the_graders(tmp_path):
    hog_cell = new_code_cell(JUDGE_HOG, metadata={"tags": ["graded"], "coursekit": {"id": "hog", "points": 1}})
    result = _grade_in_a_fresh_process(tmp_path, [new_code_cell("x = 1"), hog_cell, new_code_cell("y = 2")])
    _, (judged, verdict), _ = result["outcomes"]
    assert not judged, verdict
    assert result["peak_mb"] < 400, f"the grader's process peaked at {result['peak_mb']:.0f} MB"
