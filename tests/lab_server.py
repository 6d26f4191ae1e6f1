"""A JupyterLab server on a fresh Jupyter profile, as a new user's first start would see it.

Shared by the tests that open the course in JupyterLab (tests/course/student/test_start_command.py, and
tests/lessons/test_browser_pictures.py with Chromium): nothing is trusted or configured, the server listens on
a free local port with a token, and it is stopped, with its whole session, when the test is done.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
from dataclasses import dataclass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Lab:
    process: subprocess.Popen
    base: str        # http://127.0.0.1:PORT
    token: str


@contextlib.contextmanager
def lab_server(args, home, cwd=None):
    """Run ``python -m jupyterlab ARGS`` with ``home`` as HOME and its own Jupyter data, runtime and
    config folders (a fresh profile); yield a :class:`Lab`, and stop the server afterwards."""
    port, token = free_port(), secrets.token_hex(8)
    env = dict(os.environ, HOME=str(home), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), JUPYTER_CONFIG_DIR=str(home / "config"))
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", *args, "--allow-root", f"--port={port}", "--ServerApp.ip=127.0.0.1",
         f"--IdentityProvider.token={token}"],
        cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield Lab(process, f"http://127.0.0.1:{port}", token)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
