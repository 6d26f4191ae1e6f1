"""The pieces of "run one notebook", each on its own (issue 37 item 2; issue 39 items 1 and 2).

``execute.main`` used to be one 144-line function that only end-to-end grading reached. It is now
argument parsing (:func:`execute.parse_args`), the submission's preparation in the child
(:func:`execute.prepare_submission`), the Jupyter side (:mod:`notebook_client`: the kernel manager,
the cell callbacks), judging (:func:`execute.judge_run`), and the kernel's launcher
(:mod:`launch`: cgroup joining, limits, the privilege drop). Each is checked here without a class.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from coursekit.course.authoring.exercises import make_exercise
from coursekit.course.grading import execute, launch, notebook_client, sandbox
from test_course_grader import solution

ROOT = os.geteuid() == 0


def test_arguments_are_parsed_and_a_submission_needs_its_reference(capsys):
    args = execute.parse_args(["nb.ipynb", "--events-fd", "5", "--cell-timeout", "9", "--sandbox", "{}"])
    assert (args.notebook, args.events_fd, args.cell_timeout, args.kernel, args.submission) == \
        ("nb.ipynb", 5, 9, "python3", None)
    with pytest.raises(SystemExit):
        execute.parse_args(["nb.ipynb", "--events-fd", "5", "--cell-timeout", "9", "--sandbox", "{}",
                            "--submission", "s.ipynb"])
    assert "--submission and --reference go together" in capsys.readouterr().err


def _events(tmp_path, action) -> list[dict]:
    read_end, write_end = os.pipe()
    emit = execute.Events(write_end).emit
    action(emit)
    emit.__self__.log.close()
    with os.fdopen(read_end) as pipe:
        return [json.loads(line) for line in pipe.read().splitlines()]


def test_the_submission_is_prepared_in_the_child_or_refused_with_the_students_reason(tmp_path):
    exercise = make_exercise(solution(), "fixture")
    nbformat.write(exercise, tmp_path / "reference.ipynb")
    student = solution()
    student.cells.insert(2, new_code_cell("# graded_check, by name only"))
    nbformat.write(student, tmp_path / "student.ipynb")
    (tmp_path / "broken.ipynb").write_text("{not json")
    args = execute.parse_args([str(tmp_path / "run.ipynb"), "--events-fd", "0", "--cell-timeout", "9",
                               "--sandbox", "{}", "--submission", str(tmp_path / "student.ipynb"),
                               "--reference", str(tmp_path / "reference.ipynb"), "--label", "ann/01_fixture"])
    events = _events(tmp_path, lambda emit: execute.prepare_submission(args, emit))
    assert events[0]["event"] == "prepared" and set(events[0]["where"]) == {"softplus", "row-norms", "standardize"}
    assert events[0]["warnings"][0].startswith("ann/01_fixture: code cell 3")
    ran = nbformat.read(tmp_path / "run.ipynb", 4)          # the restored notebook the kernel will run
    assert [ran.cells[i].source for i in events[0]["where"].values()] == \
        [c.source for c in exercise.cells if c.get("metadata", {}).get("coursekit")]
    args.submission = str(tmp_path / "broken.ipynb")
    events = _events(tmp_path, lambda emit: execute.prepare_submission(args, emit))
    assert events[0]["event"] == "unreadable" and "does not appear to be JSON" in events[0]["reason"]


def test_judging_an_unreported_cell_says_so_and_nothing_is_judged_without_cells(tmp_path):
    judged = execute.judged_cells(make_exercise(solution(), "fixture"))
    assert [cell_id for _, cell_id, _ in judged] == ["softplus", "row-norms", "standardize"]
    config = {"report_dir": str(tmp_path), "nonce": "n" * 32}
    assert _events(tmp_path, lambda emit: execute.judge_run([], config, 9, emit)) == []
    events = _events(tmp_path, lambda emit: execute.judge_run(judged, config, 9, emit))
    assert [(e["event"], e["status"]) for e in events] == [("verdict", "unreported")] * 3


def test_the_kernel_manager_starts_the_kernel_through_the_launcher(tmp_path):
    guard = sandbox.detect()
    config = {"ipc_dir": str(tmp_path), "workdir": str(tmp_path), "private_home": True, "report_dir": None,
              "bwrap_flags": list(guard.bwrap_flags), "limits": sandbox.Limits().__dict__, "cgroup": None,
              "bubblewrap": guard.bubblewrap, "run_as": guard.run_as}
    km = notebook_client.kernel_manager(config, "python3")
    assert km.connection_file == str(tmp_path / "connection.json")
    command = km.format_kernel_cmd()
    assert command[:4] == [sys.executable, "-I", "-S", str(sandbox.LAUNCHER)]
    launcher_config = json.loads(command[4])
    assert launcher_config["run_as"] == (list(guard.run_as) if guard.run_as else None)
    assert ("--remount-ro" in command) == guard.bubblewrap and "debugpy" in " ".join(command)
    assert km.client_factory.output_limit == 16 * 2**20


def test_the_cell_callbacks_write_events_and_stay_quiet_while_replaying():
    seen = []
    callbacks = notebook_client.Callbacks(lambda **event: seen.append(event))
    callbacks.on_execute(cell=None, cell_index=3)
    assert callbacks.index == 3
    callbacks.on_executed(cell=None, cell_index=3, execute_reply={"content": {"status": "error", "ename": "E" * 9000,
                                                                              "evalue": "bad"}})
    callbacks.replaying = True
    callbacks.on_execute(cell=None, cell_index=1)
    callbacks.on_executed(cell=None, cell_index=1, execute_reply=None)
    assert seen == [{"event": "start", "index": 3},
                    {"event": "done", "index": 3, "status": "error", "ename": "E" * 4096, "evalue": "bad"}]
    assert callbacks.index is None


def test_the_launcher_joins_the_cgroup_files_it_is_given(tmp_path):
    procs = [tmp_path / "a.procs", tmp_path / "b.procs"]
    launch.join_cgroups([str(p) for p in procs])
    assert [p.read_text() for p in procs] == [str(os.getpid())] * 2


@pytest.mark.skipif(not ROOT, reason="the privilege drop is a root grader's")
def test_the_launcher_gives_up_root_after_handing_over_the_runs_folders_and_reaching_its_python():
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:    # /tmp: only the 0700 folder below blocks the way
        os.chmod(folder, 0o755)
        _drop_and_reach(Path(folder))


def _drop_and_reach(tmp_path: Path) -> None:
    hidden = tmp_path / "closed"                      # a 0700 folder, like /root, on the way to the run's folder
    run = hidden / "run"
    run.mkdir(parents=True)
    hidden.chmod(0o700)
    assert launch.blocked_at(str(run), (65534, 65534)) == str(hidden)
    config = {"limits": sandbox.Limits().__dict__, "run_as": [65534, 65534], "own": [str(run)], "own_files_in": [],
              "expose": [str(run), *sandbox._python_dirs()], "env": None}
    code = (f"import os\nopen({str(run / 'written')!r}, 'w').write(str(os.getuid()))\n"
            "try:\n    open('/etc/shadow').read()\n    print('READ')\nexcept OSError:\n    print('refused')")
    out = subprocess.run([sys.executable, "-I", "-S", str(launch.__file__), json.dumps(config), "--",
                          sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert (run / "written").read_text() == "65534" and out.stdout.strip() == "refused"
    assert (run.stat().st_uid, hidden.stat().st_uid) == (65534, 0)      # the run's folder, and nothing else
