"""A root grader's kernels run as an unprivileged host user, and the sandbox's filesystem is capped (issue 39).

Before: bubblewrap started by root maps the sandbox's uid 1000 to root outside, so a graded kernel
read ``/etc/shadow`` (and any root-only key in the mounted trees) and sent it back in a graded cell's
reason, into ``grades.csv``, ``grades.md`` and the students' feedback; and bubblewrap's own ``/`` and
``/dev`` were writable memory filesystems of half the RAM each, so without a cgroup a run held 600 MB
past a 400 MB polled limit. Now the launcher (``coursekit/course/launch.py``) joins the cgroup, sets
the limits and becomes ``nobody`` (or ``COURSEKIT_GRADE_USER``) before bubblewrap or the kernel
starts; ``/`` and ``/dev`` are read-only and ``/dev/shm`` capped. As an unprivileged grader
(``.ci/hostile-unprivileged``) the kernel already runs as that grader's user and the same checks hold.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from coursekit.course.grading import sandbox
from coursekit.course.authoring.exercises import make_exercise
from coursekit.course.authoring.graded import graded_cells
from coursekit.course.grading.grader import Reference, grade_notebook
from coursekit.course.grading.report import write_reports
from coursekit.course.grading.runner import protection, run_notebook
from coursekit.course.grading.sandbox import Limits
from test_course_grader import NAME, SOFTPLUS, solution

GUARD = protection()
ROOT = os.geteuid() == 0
SHADOW = Path("/etc/shadow")


def _secret() -> str:
    """The first line of /etc/shadow (root can read it): the text that must never reach a report."""
    return SHADOW.read_text().splitlines()[0] if ROOT and SHADOW.is_file() else ""


def _run(tmp_path, sources, **limits):
    nb = new_notebook(cells=[new_code_cell(source) for source in sources])
    nbformat.write(nb, tmp_path / "run.ipynb")
    return run_notebook(tmp_path / "run.ipynb", cell_timeout=60, notebook_timeout=180, limits=Limits(**limits))


@pytest.mark.skipif(not (ROOT and SHADOW.is_file()), reason="needs a root grader and /etc/shadow")
def test_a_root_graders_kernel_cannot_read_root_only_files_and_no_report_carries_them(tmp_path):
    assert GUARD.run_as and GUARD.run_as[0] != 0, GUARD
    nb = solution()       # the student's softplus sends the machine's password hashes back in its error
    nb.cells[SOFTPLUS].source = "def softplus(x):\n    raise RuntimeError(open('/etc/shadow').read())"
    nbformat.write(nb, tmp_path / "thief.ipynb")
    reference = make_exercise(solution(), "fixture")
    scores = grade_notebook(tmp_path / "thief.ipynb", Reference(NAME, reference, graded_cells(reference)),
                            student="thief", cell_timeout=60, notebook_timeout=180)
    stolen = next(s for s in scores if s.cell_id == "softplus")
    assert stolen.points == 0 and "PermissionError" in stolen.reason, stolen
    csv_path, md_path = write_reports(scores, tmp_path / "grades.csv", protection=GUARD.describe())
    secret = _secret()
    for text in (csv_path.read_text(), md_path.read_text(), *(s.reason for s in scores)):
        assert secret and secret not in text and secret.split(":")[0] + ":" + secret.split(":")[1] not in text


@pytest.mark.skipif(not ROOT, reason="a root grader drops to an unprivileged user; others already are one")
def test_a_root_graders_kernel_is_the_unprivileged_user_and_its_folders_are_its_own(tmp_path):
    run = _run(tmp_path, [
        "import os\nassert os.getuid() != 0",
        "import os\nopen(os.path.join(os.environ['COURSEKIT_REPORT_DIR'], 'probe'), 'w').write('x')",
        "open('written-at-home', 'w').write('x')",
        "import os\nassert not [p for p in ('/root', '/etc/ssh') if os.path.isdir(p) and os.access(p, os.W_OK)]"])
    for index in range(4):
        assert run.outcome(index).passed, (index, run.outcome(index), run.stderr[-800:])


WRITES = {
    # the sandbox's own root and /dev are read-only (bubblewrap made them memory filesystems of half the RAM)
    "root_read_only": ("import errno\ntry:\n    open('/planted', 'w').write('x')\n    ok = False\n"
                       "except OSError as exc:\n    ok = exc.errno in (errno.EROFS, errno.EACCES)\nassert ok"),
    "dev_read_only": ("import errno\ntry:\n    open('/dev/planted', 'w').write('x')\n    ok = False\n"
                      "except OSError as exc:\n    ok = exc.errno in (errno.EROFS, errno.EACCES)\nassert ok"),
    # /dev/shm and /tmp stop at their caps (ENOSPC, or EFBIG at the file-size limit), far below what was asked
    "shm_capped": ("import errno\nwritten = 0\ntry:\n    with open('/dev/shm/big', 'wb') as f:\n"
                   "        for _ in range(600):\n            f.write(b'x' * 2**20)\n            written += 1\n"
                   "except OSError as exc:\n    assert exc.errno in (errno.ENOSPC, errno.EFBIG), exc\nassert written <= 100, written"),
    "tmp_capped": ("import errno\nwritten = 0\ntry:\n    with open('/tmp/big', 'wb') as f:\n"
                   "        for _ in range(600):\n            f.write(b'x' * 2**20)\n            written += 1\n"
                   "except OSError as exc:\n    assert exc.errno in (errno.ENOSPC, errno.EFBIG), exc\nassert written <= 300, written"),
    "still_works": "x = 1",
}


@pytest.mark.skipif(not GUARD.bubblewrap or "--size" not in GUARD.bwrap_flags,
                    reason="needs bubblewrap 0.6+ (size-capped tmpfs)")
@pytest.mark.parametrize("cgroup", ["1", "0"], ids=["cgroup-or-polling", "polling"])
def test_writes_to_root_dev_shm_and_tmp_fail_or_stop_at_the_caps(tmp_path, monkeypatch, cgroup):
    """400 MB of memory and 512 MB of disk: without a cgroup the three memory filesystems share the
    400 MB (/tmp 160, /dev/shm 64 at most, the home 160); with one, /dev/shm is 64 MB and /tmp 512,
    each counted as the run's memory, so 600 MB in /tmp stops at the memory limit or the cap."""
    monkeypatch.setenv("COURSEKIT_SANDBOX_CGROUP", cgroup)
    sandbox.detect.cache_clear()
    try:
        run = _run(tmp_path, list(WRITES.values()), memory_mb=400, disk_mb=512)
    finally:
        sandbox.detect.cache_clear()
    outcomes = {name: run.outcome(index) for index, name in enumerate(WRITES)}
    for name in ("root_read_only", "dev_read_only", "shm_capped", "still_works"):
        assert outcomes[name].passed, (name, outcomes[name], run.stderr[-800:])
    tmp = outcomes["tmp_capped"]    # ENOSPC at the cap, or (with a cgroup) stopped at the memory limit
    assert tmp.passed or tmp.reason.startswith("memory limit exceeded (400 MB)"), tmp


def test_without_a_cgroup_the_memory_filesystems_together_fit_the_memory_limit():
    tmp, shm = sandbox.tmpfs_sizes({"memory_mb": 400, "disk_mb": 512}, cgroup=False)
    assert 2 * tmp + shm <= 400 and shm >= 1
    assert sandbox.tmpfs_sizes({"memory_mb": 400, "disk_mb": 512}, cgroup=True) == (512, 64)
