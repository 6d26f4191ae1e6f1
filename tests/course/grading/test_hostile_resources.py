"""No run can starve another (issue 22's table): disk, /tmp and the grader's own limits.

Before: a student filling the disk the runs share gave the student graded beside it 0/10 (``No space
left on device``); RAM held in the sandbox's ``/tmp`` went 700 MB past a 400 MB limit; run cgroups
were made at the root of the hierarchy, so they escaped any limit around the grader. Now each run's
``/tmp`` and home are size-capped memory filesystems (counted in the run's cgroup), the folders a
run writes on the grader's disk are watched and the run stopped past its limit, run cgroups nest
under the grader's own, and no run starts below a free-space floor.
"""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from coursekit.course.grading import runner, rungroup, sandbox
from coursekit.course.grading.runner import protection, run_notebook
from coursekit.course.grading.sandbox import Limits

GUARD = protection()


def _run(tmp_path, sources, **limits):
    nb = new_notebook(cells=[new_code_cell(source) for source in sources])
    nbformat.write(nb, tmp_path / "run.ipynb")
    return run_notebook(tmp_path / "run.ipynb", cell_timeout=60, notebook_timeout=180, limits=Limits(**limits))


FILL_REPORT_FOLDER = (          # the one folder of the grader's disk every kernel may write
    "import os\nfolder = os.environ['COURSEKIT_REPORT_DIR']\nchunk = b'x' * 2**20\n"
    "for i in range(400):\n    with open(os.path.join(folder, f'fill{i}'), 'wb') as f:\n        f.write(chunk)\n"
    "import time\ntime.sleep(5)")


def test_filling_the_graders_disk_stops_that_run_only(tmp_path):
    run = _run(tmp_path, ["x = 1", FILL_REPORT_FOLDER, "y = 2"], disk_mb=64)
    assert run.outcome(0).passed
    assert run.outcome(1).reason == "disk limit exceeded (64 MB): the run was stopped", run.outcome(1)
    neighbour = _run(tmp_path, ["open('small', 'w').write('ok')"], disk_mb=64)
    assert neighbour.outcome(0).passed, neighbour.outcome(0)


@pytest.mark.skipif(not GUARD.bubblewrap or "--size" not in GUARD.bwrap_flags,
                    reason="needs bubblewrap 0.6+ (size-capped tmpfs)")
def test_tmp_and_home_are_capped_in_size(tmp_path):
    fill = ("import errno\ntry:\n    with open({path!r}, 'wb') as f:\n        for _ in range(100):\n"
            "            f.write(b'x' * 2**20)\n    full = False\nexcept OSError as exc:\n"
            "    full = exc.errno == errno.ENOSPC\nassert full")
    run = _run(tmp_path, [fill.format(path="/tmp/big"), fill.format(path="big")], disk_mb=32)
    assert run.outcome(0).passed and run.outcome(1).passed, (run.outcome(0), run.outcome(1), run.stderr[-500:])


@pytest.mark.skipif(not (GUARD.bubblewrap and GUARD.cgroup), reason="needs bubblewrap and a cgroup")
def test_ram_held_in_tmp_counts_against_the_runs_memory(tmp_path):
    hold = ("chunk = b'x' * 2**20\nwith open('/tmp/held', 'wb') as f:\n    for _ in range(700):\n"
            "        f.write(chunk)\nimport time\ntime.sleep(3)")
    run = _run(tmp_path, ["x = 1", hold, "y = 2"], memory_mb=300, disk_mb=1024)
    assert run.outcome(1).reason.startswith("memory limit exceeded (300 MB)"), run.outcome(1)
    assert not run.outcome(1).passed


def test_run_cgroups_nest_under_the_graders_own():
    if not GUARD.cgroup:
        pytest.skip("no writable cgroup here")
    group = rungroup.RunGroup("coursekit-nesting-test", Limits(), GUARD.cgroup)
    try:
        assert group.dirs, "the cgroup could not be made"
        owners = sandbox.own_cgroups(GUARD.cgroup)     # cgroup v1: the run's CPU weight is a third hierarchy
        owners += sandbox.own_cgroups("v1", ("cpu",)) if group.cpu and GUARD.cgroup == "v1" else []
        for folder, own in zip(group.dirs, owners, strict=True):
            assert folder.parent == own and folder.is_dir()
    finally:
        group.close()
    assert not any(folder.exists() for folder in group.dirs)


def test_no_run_starts_below_the_free_space_floor(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "FREE_SPACE_FLOOR_MB", 10**12)
    run = _run(tmp_path, ["x = 1"])
    assert run.outcome(0).reason.startswith("not run: the grader's temporary folder"), run.outcome(0)
    assert "MB free, below the" in run.outcome(0).reason and "COURSEKIT_GRADE_FREE_MB" in run.outcome(0).reason
