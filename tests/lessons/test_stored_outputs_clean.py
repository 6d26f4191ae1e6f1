"""No stored output of any notebook shows a path of the machine that ran it, or a terminal escape (issue 34).

A lesson's stored outputs are what a student reads before running anything; a developer's home or
worktree path (``/root/``, ``/home/``, ``/work/``, ``/Users/``) or ANSI colour codes (``ESC[32m``, which
JupyterLab may render but GitHub and nbviewer show as garbage) have no place there.  The one path
allowed is the name Jupyter gives a cell's code, ``/tmp/ipykernel_<pid>/<hash>.py``: it is what every
student's own run prints for a line of their notebook (in warnings and error messages that point at
the user's line), it says nothing about whose machine ran the notebook, and nbval's sanitizer
(``nbval_sanitize.cfg``, "temporary-paths") already treats it as run-dependent.
"""
from __future__ import annotations

import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p for folder in ("notebooks", "solutions", "exercises") for p in (ROOT / folder).glob("*.ipynb"))
MACHINE_PATH = re.compile(r"(?<![\w.])(?:/root/|/home/|/work/|/Users/|/tmp/(?!ipykernel_\d+/-?\d+\.py\b)\S)")
ESCAPE = "\x1b"


def stored_texts(path):
    """(cell index, text) for every text an output of the notebook stores, tracebacks included."""
    nb = json.loads(path.read_text())
    for index, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", ()):
            pieces = [output.get("text", ""), output.get("evalue", ""), *output.get("traceback", ())]
            for mime, value in output.get("data", {}).items():
                if mime.startswith("text/") or mime.endswith("json"):
                    pieces.append(value if isinstance(value, str) else json.dumps(value))
            for piece in pieces:
                yield index, "".join(piece) if isinstance(piece, list) else str(piece)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[f"{p.parent.name}/{p.name}" for p in NOTEBOOKS])
def test_no_machine_path_and_no_terminal_escape_in_stored_outputs(path):
    for index, text in stored_texts(path):
        found = MACHINE_PATH.search(text)
        assert not found, (f"{path.name}, cell {index}: a stored output shows a path of the machine that ran it: "
                           f"...{text[max(0, found.start() - 40):found.end() + 40]!r}...")
        assert ESCAPE not in text, (f"{path.name}, cell {index}: a stored output holds a terminal escape "
                                    f"(ANSI colours): ...{text[max(0, text.index(ESCAPE) - 40):text.index(ESCAPE) + 20]!r}...")


def test_the_check_finds_what_it_is_for():
    # the patterns above, on the kinds of line they are for (so that the test above cannot pass vacuously)
    assert MACHINE_PATH.search("> /work/wt/h23/coursekit/compile/linker.py(207)")
    assert MACHINE_PATH.search("File /home/ann/course/x.py, line 3")
    assert MACHINE_PATH.search("saved to /tmp/tmpab12/kernel.cu")
    assert not MACHINE_PATH.search('File "/tmp/ipykernel_3117/4239166307.py", line 8')
    assert not MACHINE_PATH.search("coursekit/compile/linker.py(207)")
