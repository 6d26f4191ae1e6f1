"""The README's start command opens the whole course (issue 14, item 1).

``jupyter lab notebooks/`` served only ``notebooks/``: ``exercises/`` was a 404 and the lessons'
``../exercises/...`` links opened nothing. The README's command, run from the repository root, must
serve ``exercises/`` and open lesson 1, and docs/teaching.md must give the same command. Needs only
JupyterLab (a course dependency), no browser: the server writes the page it would open to its runtime
folder, and that page names the file. About 6 s.
"""
from __future__ import annotations

import json
import re
import shlex
import time
import urllib.request
from pathlib import Path

import pytest
from lab_server import lab_server

ROOT = Path(__file__).resolve().parents[3]


def readme_start_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.search(r"&& (jupyter lab [^\n]*)", readme).group(1)


def test_teaching_docs_give_the_readmes_start_command():
    teaching = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    assert f"`{readme_start_command()}`" in teaching, "docs/teaching.md and the README give different start commands"


@pytest.mark.slow
def test_readme_start_command_serves_the_whole_course_and_opens_lesson_1(tmp_path):
    """The README's `jupyter lab ...` arguments, run from the root: exercises/ reachable, lesson 1 opened."""
    command = readme_start_command()
    args = shlex.split(command)[2:]
    with lab_server([*args, "--ServerApp.browser=true %s"], tmp_path, cwd=ROOT) as lab:
        deadline = time.monotonic() + 90
        while True:
            opened = list((tmp_path / "runtime").glob("jpserver-file-to-run-*-open.html"))
            try:
                with urllib.request.urlopen(f"{lab.base}/api/contents/exercises?token={lab.token}",
                                            timeout=2) as reply:
                    listing = json.load(reply)
                if opened:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or lab.process.poll() is not None:
                pytest.fail(f"`{command}` did not serve exercises/ and open a file within 90 s")
            time.sleep(0.5)
        names = {entry["name"] for entry in listing["content"]}
        assert "01_tour_exercises.ipynb" in names
        assert "/lab/tree/notebooks/01_tour.ipynb" in opened[0].read_text(encoding="utf-8")
