"""The sandbox takes everything away, root or not (issue 22, first row of its table).

As root, a kernel inside bubblewrap used to keep every capability: it remounted the grader's own
``coursekit/`` read-write and appended to ``course/judge.py``, so every later grading session ran
the student's code outside the sandbox. The checks here run *inside a graded kernel* (a notebook
run by the runner exactly as the grader runs one) and are confirmed outside it: the kernel has no
capability, is not uid 0, and can neither write nor remount the grader's package, the virtual
environment or the system folders. CI runs this file as root.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from coursekit.course.grading.runner import PROJECT_ROOT, protection, run_notebook
from coursekit.course.grading.sandbox import LIBRARY_MOUNT

GUARD = protection()
pytestmark = pytest.mark.skipif(not GUARD.bubblewrap,
                                reason="bubblewrap unavailable here: " + "; ".join(GUARD.missing))

TARGETS = [f"{LIBRARY_MOUNT}/coursekit", f"{LIBRARY_MOUNT}/coursekit/course", sys.prefix, sys.base_prefix,
           "/usr", "/etc"]

# Each cell asserts that the attempt failed; names are the cells' keys in the outcome table.
CELLS = {
    "no_capabilities": (
        "status = dict(line.split(':', 1) for line in open('/proc/self/status').read().splitlines() if ':' in line)\n"
        "for cap in ('CapEff', 'CapPrm', 'CapBnd', 'CapAmb'):\n"
        "    assert int(status[cap].strip(), 16) == 0, (cap, status[cap])"),
    "not_root": "import os\nassert os.getuid() != 0 and os.geteuid() != 0 and os.getgid() != 0, os.getuid()",
    "cannot_write": (
        "import os\nwritten = []\n"
        "for folder in {targets!r}:\n"
        "    for name in ('judge.py', 'planted.py'):\n"
        "        target = os.path.join(folder, name)\n"
        "        try:\n"
        "            with open(target, 'a') as handle:\n"
        "                handle.write('# planted\\n')\n"
        "            written.append(target)\n"
        "        except OSError:\n"
        "            pass\n"
        "assert not written, written"),
    "cannot_remount": (
        "import ctypes, ctypes.util, os\n"
        "libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)\n"
        "MS_REMOUNT, MS_BIND = 32, 4096\n"
        "remounted = [t for t in {targets!r} if os.path.isdir(t)\n"
        "             and libc.mount(b'none', t.encode(), None, MS_REMOUNT | MS_BIND, None) == 0]\n"
        "assert not remounted, remounted"),
    # A new user namespace would give back every capability inside it: forbidden where bubblewrap
    # can (0.8+), and even where it is not, the mounts it inherits stay read-only (locked).
    "no_namespace_escape": (
        "import subprocess, sys\n"
        "code = '''\n"
        "import ctypes, ctypes.util, os, sys\n"
        "libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)\n"
        "if libc.unshare(0x10000000 | 0x00020000) != 0:\n"
        "    sys.exit(0)\n"
        "bad = [t for t in {targets!r} if os.path.isdir(t) and libc.mount(b'none', t.encode(), None, 32 | 4096, None) == 0]\n"
        "sys.exit(1 if bad else 0)\n"
        "'''\n"
        "assert subprocess.run([sys.executable, '-c', code]).returncode == 0"),
}


def _fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        digest.update(str(path).encode() + path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def sandbox_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("sandbox")
    nb = new_notebook(cells=[new_code_cell(src.format(targets=TARGETS)) for src in CELLS.values()])
    nbformat.write(nb, root / "attack.ipynb")
    before = _fingerprint(PROJECT_ROOT / "coursekit" / "course")
    run = run_notebook(root / "attack.ipynb", cell_timeout=60, notebook_timeout=240)
    return run, before


@pytest.mark.parametrize("name", list(CELLS))
def test_inside_a_graded_kernel_nothing_outside_the_run_is_the_students(sandbox_run, name):
    run, _ = sandbox_run
    outcome = run.outcome(list(CELLS).index(name))
    assert outcome.passed, (name, outcome.reason, run.stderr[-800:])


def test_the_graders_package_is_unchanged_after_the_run(sandbox_run):
    run, before = sandbox_run
    assert _fingerprint(PROJECT_ROOT / "coursekit" / "course") == before
    assert not any((Path(t) / "planted.py").exists() for t in (PROJECT_ROOT / "coursekit", Path(sys.prefix)))
