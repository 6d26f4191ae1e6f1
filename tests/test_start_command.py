"""The README's start command opens the whole course (issue 14, item 1).

``jupyter lab notebooks/`` served only ``notebooks/``: ``exercises/`` was a 404 and the lessons'
``../exercises/...`` links opened nothing. The README's command, run from the repository root, must
serve ``exercises/`` and open lesson 1, and docs/teaching.md must give the same command. Needs only
JupyterLab (a course dependency), no browser: the server writes the page it would open to its runtime
folder, and that page names the file. About 6 s.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_start_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.search(r"&& (jupyter lab [^\n]*)", readme).group(1)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_teaching_docs_give_the_readmes_start_command():
    teaching = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    assert f"`{readme_start_command()}`" in teaching, "docs/teaching.md and the README give different start commands"


@pytest.mark.slow
def test_readme_start_command_serves_the_whole_course_and_opens_lesson_1(tmp_path):
    """The README's `jupyter lab ...` arguments, run from the root: exercises/ reachable, lesson 1 opened."""
    command = readme_start_command()
    args = shlex.split(command)[2:]
    port, token = _free_port(), secrets.token_hex(8)
    env = dict(os.environ, HOME=str(tmp_path), JUPYTER_DATA_DIR=str(tmp_path / "data"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", *args, "--allow-root", f"--port={port}", "--ServerApp.ip=127.0.0.1",
         f"--IdentityProvider.token={token}", "--ServerApp.browser=true %s"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            opened = list((tmp_path / "runtime").glob("jpserver-file-to-run-*-open.html"))
            try:
                with urllib.request.urlopen(f"{base}/api/contents/exercises?token={token}", timeout=2) as reply:
                    listing = json.load(reply)
                if opened:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                pytest.fail(f"`{command}` did not serve exercises/ and open a file within 90 s")
            time.sleep(0.5)
        names = {entry["name"] for entry in listing["content"]}
        assert "01_tour_exercises.ipynb" in names
        assert "/lab/tree/notebooks/01_tour.ipynb" in opened[0].read_text(encoding="utf-8")
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
