"""Hostile submissions against the runner's isolation (issue 13): one kernel run shares them all.

Every cell is something a student could put in a notebook to read what is not theirs, write outside
the run or outlive it. The assertions are made *outside* the kernel (on files and processes), and
each protection is checked only where :func:`coursekit.course.grading.sandbox.detect` says the machine gives
it: a test that needs bubblewrap or a cgroup skips with the reason when it is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from coursekit.course.grading.runner import PROJECT_ROOT, protection, run_notebook

GUARD = protection()
needs_bwrap = pytest.mark.skipif(not GUARD.bubblewrap, reason="bubblewrap unavailable here: " + "; ".join(GUARD.missing))

# name -> cell source. A cell passes when the hostile attempt *failed* (it asserts that itself), and
# the test also checks the world outside afterwards.
ATTEMPTS = {
    "read_solutions": (
        "import os, coursekit\n"
        "root = os.path.dirname(os.path.dirname(coursekit.__file__))\n"
        "assert not os.path.exists(os.path.join(root, 'solutions')), os.listdir(root)\n"
        "assert not os.path.exists({solutions!r})"),
    "read_submissions": "import os\nassert not os.path.exists({secret!r})",
    "write_outside": (
        "import os\nfor target in [{outside!r}, '/tmp/../' + {outside!r}.lstrip('/')]:\n"
        "    try:\n        open(target, 'w').write('forged')\n    except OSError:\n        pass\n"
        "assert not os.path.exists({outside!r})"),
    "snoop_proc": (
        "import os\npids = [int(p) for p in os.listdir('/proc') if p.isdigit()]\n"
        "assert {grader_pid} not in pids or not os.path.exists('/proc/{grader_pid}/cwd/{marker}'), pids"),
    "network": (
        "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    reached = True\n"
        "except OSError:\n    reached = False\nassert not reached"),
    "daemon": (
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True: time.sleep(0.1)', {daemon_tag!r}],\n"
        "                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"),
    "huge_file": (
        "try:\n    with open('big', 'wb') as f:\n        f.write(b'x' * (300 * 1024 * 1024))\n    grew = True\n"
        "except OSError:\n    grew = False\nassert not grew"),
    # Forged verdicts: 'done ok' records for every cell, written wherever the old runner read them
    # (../events.jsonl). The next cell must still fail: events now come over a pipe the kernel never holds.
    "forge_events": (
        "import json, os\nlines = ''.join(json.dumps({{'event': 'done', 'index': i, 'status': 'ok'}}) + '\\n' "
        "for i in range(40))\n"
        "for target in ['../events.jsonl', 'events.jsonl']:\n    try:\n        open(target, 'a').write(lines)\n"
        "    except OSError:\n        pass"),
    "must_fail": "assert False, 'this cell really fails'",
}


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    secret = root / "submissions" / "bob" / "01_tour.ipynb"
    secret.parent.mkdir(parents=True)
    secret.write_text("{}")
    marker = "grader-cwd-marker"
    (Path.cwd() / marker).exists()
    values = dict(solutions=str(PROJECT_ROOT / "solutions"), secret=str(secret), outside=str(root / "forged.txt"),
                  grader_pid=os.getpid(), marker=marker, daemon_tag=f"coursekit-hostile-{os.getpid()}")
    nb = new_notebook(cells=[new_code_cell(src.format(**values)) for src in ATTEMPTS.values()])
    nbformat.write(nb, root / "hostile.ipynb")
    run = run_notebook(root / "hostile.ipynb", cell_timeout=30, notebook_timeout=240)
    outcomes = {name: run.outcome(i) for i, name in enumerate(ATTEMPTS)}
    return outcomes, values, root, run


@needs_bwrap
@pytest.mark.parametrize("name", ["read_solutions", "read_submissions", "write_outside", "snoop_proc", "network"])
def test_the_sandbox_hides_and_protects_everything_outside_the_run(hostile_run, name):
    outcomes, values, root, run = hostile_run
    assert outcomes[name].passed, (name, outcomes[name].reason, run.stderr[-800:])
    assert not (root / "forged.txt").exists()
    assert run.protection == GUARD.label and "bubblewrap" in run.protection


def test_no_process_of_the_run_outlives_it(hostile_run):
    outcomes, values, _, _ = hostile_run
    assert outcomes["daemon"].passed, outcomes["daemon"].reason
    tag = values["daemon_tag"].encode()
    survivors = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and tag in Path(f"/proc/{entry}/cmdline").read_bytes():
                survivors.append(int(entry))
        except OSError:
            pass
    assert not survivors, f"processes started by the run are still alive: {survivors}"


def test_file_size_limit_stops_a_huge_file(hostile_run):
    outcomes, *_ = hostile_run
    assert outcomes["huge_file"].passed, outcomes["huge_file"].reason


def test_the_report_names_what_was_not_enforced():
    lines = GUARD.describe()
    assert any(line.startswith("rlimits") for line in lines)
    assert GUARD.bubblewrap or any("NOT enforced" in line and "isolation" in line for line in lines)


@pytest.mark.parametrize("cgroup", ["1", "0"], ids=["cgroup-or-polling", "polling"])
def test_a_memory_hog_costs_its_cell_only_and_the_cells_after_it_run(tmp_path, monkeypatch, cgroup):
    """Cgroup (hard limit, OOM) where the grader may create one, else the runner's memory polling; either
    way the kernel is stopped, a fresh one re-runs the cells before the hog (``x`` is back) and the run
    goes on (issue 22: every later task used to score 0)."""
    from coursekit.course.grading import sandbox
    from coursekit.course.grading.sandbox import Limits

    monkeypatch.setenv("COURSEKIT_SANDBOX_CGROUP", cgroup)
    sandbox.detect.cache_clear()
    nb = new_notebook(cells=[new_code_cell("x = 41"),
                             new_code_cell("import numpy as np\nhog = np.ones(2_000_000_000 // 8)"),
                             new_code_cell("assert x == 41\ny = x + 1"), new_code_cell("assert y == 42")])
    nbformat.write(nb, tmp_path / "hog.ipynb")
    try:
        run = run_notebook(tmp_path / "hog.ipynb", cell_timeout=60, notebook_timeout=180, limits=Limits(memory_mb=400))
    finally:
        sandbox.detect.cache_clear()
    assert run.outcome(0).passed
    assert run.outcome(1).reason.startswith("memory limit exceeded (400 MB): the kernel was stopped, and a fresh "
                                            "one ran the cells before it again"), run.outcome(1)
    assert run.outcome(2).passed and run.outcome(3).passed, (run.outcome(2), run.outcome(3))


def test_forged_event_records_change_no_verdict(hostile_run):
    outcomes, *_ = hostile_run
    assert outcomes["must_fail"].reason == "failed assertion: this cell really fails", outcomes["must_fail"]
