"""The runner's child, forked from the grader's forkserver or started fresh (coursekit/course/grading/child.py).

Both ways must give a run the same process: its own session, the run's environment (not the
grader's), the run's event pipe and log, and coursekit imported afresh under that environment.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from coursekit.course.grading import child, runner
from coursekit.course.grading.runner import run_notebook

PROBE = new_notebook(cells=[
    new_code_cell("import os\nprint(os.environ.get('COURSEKIT_PROBE'), os.getsid(0) == os.getpid())"),
    new_code_cell("assert os.environ.get('COURSEKIT_PROBE') == 'from-the-run'"),
    new_code_cell("raise ValueError('the error of cell 2')"),
    new_code_cell("print('after the error')"),
    new_code_cell("import sys\nprint(sys.modules.get('debugpy', 'not imported'), '' in sys.path)"),
])


@pytest.fixture()
def started(monkeypatch):
    """Records the kind of child each run got."""
    kinds = []
    original = child.start

    def spy(*args, **kwargs):
        made = original(*args, **kwargs)
        kinds.append(type(made).__name__)
        return made

    monkeypatch.setattr(runner.child, "start", spy)
    return kinds


def run_probe(tmp_path, **env):
    nbformat.write(PROBE, tmp_path / "probe.ipynb")
    return run_notebook(tmp_path / "probe.ipynb", cell_timeout=60, executed_path=tmp_path / "executed.ipynb",
                        env={"COURSEKIT_PROBE": "from-the-run", **env})


@pytest.mark.parametrize("switch, kind", [("1", "ForkedChild"), ("0", "FreshChild")])
def test_forked_and_fresh_children_run_a_notebook_the_same_way(tmp_path, started, switch, kind):
    run = run_probe(tmp_path, COURSEKIT_GRADE_FORKSERVER=switch)
    assert started == [kind]
    assert [run.outcome(k).passed for k in range(5)] == [True, True, False, True, True]
    assert "ValueError" in run.outcome(2).reason and "the error of cell 2" in run.outcome(2).reason
    executed = nbformat.read(tmp_path / "executed.ipynb", as_version=4)
    assert executed.cells[0].outputs[0]["text"].split()[0] == "from-the-run"   # the run's environment
    assert executed.cells[3].outputs[0]["text"] == "after the error\n"
    # the kernel started without ipykernel's debugger (0.15-0.2 s of CPU), the working folder importable
    assert executed.cells[4].outputs[0]["text"] == "None True\n"


def test_the_fork_forgets_the_coursekit_the_server_imported_under_the_graders_environment():
    """The server imported coursekit.config under the grader's THEANO_FLAGS; the fork must read the run's."""
    script = ("import os\n"
              "from coursekit.config import config\n"
              "before = config.floatX\n"
              "os.environ['THEANO_FLAGS'] = 'floatX=float16'\n"
              "from coursekit.course.grading.child import forget_coursekit\n"
              "forget_coursekit()\n"
              "from coursekit.config import config\n"
              "print(before, config.floatX)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, THEANO_FLAGS="floatX=float64"))
    assert done.stdout.split() == ["float64", "float16"], done.stderr


def _grade_in_daemon(path, queue):
    run = run_notebook(path, cell_timeout=60, env={"COURSEKIT_PROBE": "from-the-run"})
    queue.put([run.outcome(k).passed for k in range(4)])


def test_a_daemonic_process_such_as_a_dask_worker_gets_a_fresh_child(tmp_path):
    """multiprocessing forbids daemonic processes children of its own: the run must still work."""
    nbformat.write(PROBE, tmp_path / "probe.ipynb")
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    worker = context.Process(target=_grade_in_daemon, args=(tmp_path / "probe.ipynb", queue), daemon=True)
    worker.start()
    assert queue.get(timeout=300) == [True, True, False, True]
    worker.join(timeout=60)
