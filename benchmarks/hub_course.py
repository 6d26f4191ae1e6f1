"""The course JupyterHub of docs/teaching.md, run end to end with two users (issue 33, item 5).

NOT part of CI (it needs JupyterHub from PyPI and configurable-http-proxy from npm, and a few minutes).
Run it by hand, from the repository root, with the repository's venv (the instructor's install):

    python -m venv /tmp/hub-venv && /tmp/hub-venv/bin/pip install jupyterhub dist/coursekit-*.whl
    npm install --prefix /tmp/hub-npm configurable-http-proxy
    .venv/bin/python benchmarks/hub_course.py --hub-python /tmp/hub-venv/bin/python \
        --proxy /tmp/hub-npm/node_modules/.bin/configurable-http-proxy

What it does, timing each step: starts JupyterHub on 127.0.0.1 with benchmarks/hub/jupyterhub_config.py
(DummyAuthenticator, SimpleLocalProcessSpawner, a pre-spawn hook running ``coursekit start --no-lab``);
logs two users in through the hub's REST API (create the user, start their server, wait until it is up);
checks that each one's course folder exists and that a lesson opens in their server (the Contents API
returns the notebook, with its setup cell); alice then saves a solved exercise 01 (the reference
solution, through her server's Contents API) while bob leaves his untouched; a second start of alice's
server must keep her work; the hub stops, and the instructor grades every user's folder with one
command. Expected: alice all points of exercise 01, bob none. The run is written to
benchmarks/results/<date>-jupyterhub-two-users.json (users, commands, times, grades).
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "benchmarks" / "hub" / "jupyterhub_config.py"
USERS = ("alice", "bob")
EXERCISE = "exercises/01_tour_exercises.ipynb"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Hub:
    def __init__(self, base: str, token: str):
        self.base, self.token = base, token

    def call(self, method: str, path: str, body=None, timeout: float = 30):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            text = reply.read().decode()
            return reply.status, (json.loads(text) if text.strip() else None)

    def wait_until_up(self, deadline_s: float = 60):
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            try:
                if self.call("GET", "/hub/api/")[0] == 200:
                    return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        raise RuntimeError(f"the hub did not answer at {self.base} within {deadline_s:.0f} s")

    def log_in(self, user: str, deadline_s: float = 180):
        """Create the user (first login) and start their server; wait until the hub says it is ready."""
        try:
            self.call("POST", f"/hub/api/users/{user}")
        except urllib.error.HTTPError as exc:
            if exc.code != 409:  # 409: the user exists already (a second login)
                raise
        self.call("POST", f"/hub/api/users/{user}/server", timeout=deadline_s)
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            model = self.call("GET", f"/hub/api/users/{user}")[1]
            server = (model.get("servers") or {}).get("", {})
            if server.get("ready"):
                return
            time.sleep(1)
        raise RuntimeError(f"{user}'s server was not ready within {deadline_s:.0f} s")

    def stop(self, user: str):
        self.call("DELETE", f"/hub/api/users/{user}/server", timeout=60)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if not (self.call("GET", f"/hub/api/users/{user}")[1].get("servers") or {}):
                return
            time.sleep(0.5)


def timed(steps: list, what: str, command: str, fn):
    started = time.monotonic()
    result = fn()
    steps.append({"step": what, "command": command, "seconds": round(time.monotonic() - started, 2)})
    print(f"  {steps[-1]['seconds']:7.2f} s  {what}", flush=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hub-python", required=True, help="the Python of a venv with jupyterhub and coursekit")
    parser.add_argument("--proxy", required=True, help="the configurable-http-proxy executable (npm)")
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results"), help="where the run is written")
    args = parser.parse_args()
    hub_python, proxy = Path(args.hub_python), Path(args.proxy)
    for path, fix in ((hub_python, "python -m venv DIR && DIR/bin/pip install jupyterhub <coursekit wheel>"),
                      (proxy, "npm install --prefix DIR configurable-http-proxy")):
        if not path.exists():
            print(f"error: {path} does not exist; make it with `{fix}`", file=sys.stderr)
            return 2
    root = Path(tempfile.mkdtemp(prefix="coursekit-hub-"))
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, COURSE_HUB_ROOT=str(root), COURSE_HUB_PORT=str(port), COURSE_HUB_ADMIN_TOKEN=token,
               PATH=f"{proxy.parent}{os.pathsep}{hub_python.parent}{os.pathsep}{os.environ['PATH']}")
    hub_command = [str(hub_python), "-m", "jupyterhub", "-f", str(CONFIG)]
    steps: list = []
    checks: dict = {}
    hub = Hub(f"http://127.0.0.1:{port}", token)
    log = open(root / "hub.log", "w")
    process = None
    try:
        process = subprocess.Popen(hub_command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
        timed(steps, "start JupyterHub (and its proxy)", " ".join(["jupyterhub", "-f", CONFIG.relative_to(ROOT).as_posix()]),
              hub.wait_until_up)
        for user in USERS:
            timed(steps, f"{user}: first login (create user, start server, pre-spawn hook copies the course)",
                  f"POST /hub/api/users/{user}; POST /hub/api/users/{user}/server", lambda u=user: hub.log_in(u))
            home = root / "home" / user / "course"
            lessons = sorted(p.name for p in (home / "notebooks").glob("*.ipynb"))
            exercises = sorted(p.name for p in (home / "exercises").glob("*.ipynb"))
            status, model = timed(steps, f"{user}: open lesson 1 in their server",
                                  f"GET /user/{user}/api/contents/course/notebooks/01_tour.ipynb",
                                  lambda u=user: hub.call("GET", f"/user/{u}/api/contents/course/notebooks/01_tour.ipynb"))
            cells = model["content"]["cells"]
            checks[user] = {"course_folder": str(home.relative_to(root)), "lessons": len(lessons),
                            "exercises": len(exercises), "solutions_in_folder": len(list(home.rglob("*solution*"))),
                            "lesson_1_opened": status == 200 and model["type"] == "notebook",
                            "lesson_1_first_code_cell_is_setup": next(c for c in cells if c["cell_type"] == "code")
                            ["id"] == "coursekit-setup"}
        solved = json.loads((ROOT / "solutions" / "01_tour_solutions.ipynb").read_text())
        timed(steps, "alice saves her solved exercise 01", f"PUT /user/alice/api/contents/course/{EXERCISE}",
              lambda: hub.call("PUT", f"/user/alice/api/contents/course/{EXERCISE}",
                               {"type": "notebook", "format": "json", "content": solved}))
        timed(steps, "alice logs out (server stopped)", "DELETE /hub/api/users/alice/server", lambda: hub.stop("alice"))
        timed(steps, "alice logs in again (pre-spawn hook runs coursekit start again)",
              "POST /hub/api/users/alice/server", lambda: hub.log_in("alice"))
        kept = json.loads((root / "home" / "alice" / "course" / EXERCISE).read_text())
        checks["alice"]["work_kept_after_second_login"] = kept["cells"] == solved["cells"]
        for user in USERS:
            timed(steps, f"{user}: server stopped", f"DELETE /hub/api/users/{user}/server", lambda u=user: hub.stop(u))
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        log.close()
    grades = root / "grades.csv"
    grade_command = [sys.executable, "-m", "coursekit", "grade", str(root / "home"), "--assignment", "01",
                     "--out", str(grades), "--no-progress"]
    graded = timed(steps, "instructor grades every user's folder (one command)",
                   f"coursekit grade {root.name}/home --assignment 01 --out grades.csv",
                   lambda: subprocess.run(grade_command, cwd=ROOT, capture_output=True, text=True))
    rows = list(csv.DictReader(grades.open())) if grades.is_file() else []
    totals: dict = {}
    for row in rows:
        student = row.get("student")
        got, out_of = float(row.get("points") or 0), float(row.get("max_points") or 0)
        before = totals.get(student, (0.0, 0.0))
        totals[student] = (before[0] + got, before[1] + out_of)
    expected = (set(totals) == set(USERS) and totals["alice"][0] == totals["alice"][1] > 0 and totals["bob"][0] == 0)
    passed = expected and graded.returncode == 0 and all(
        c["lessons"] == 11 and c["exercises"] == 11 and c["solutions_in_folder"] == 0 and c["lesson_1_opened"]
        and c["lesson_1_first_code_cell_is_setup"] for c in checks.values()) and checks["alice"]["work_kept_after_second_login"]
    versions = {name: subprocess.run([str(hub_python), "-c", f"import {name}; print({name}.__version__)"],
                                     capture_output=True, text=True).stdout.strip()
                for name in ("jupyterhub", "jupyterlab", "coursekit")}
    versions["configurable-http-proxy"] = subprocess.run([str(proxy), "--version"], capture_output=True,
                                                         text=True).stdout.strip()
    record = {
        "what": "benchmarks/hub_course.py: the docs/teaching.md JupyterHub recipe, two users, end to end",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} CPUs (shared; times are wall-clock)",
        "git": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "versions": versions, "users": list(USERS), "steps": steps, "checks": checks,
        "grades": {user: {"points": got, "max_points": out_of} for user, (got, out_of) in totals.items()},
        "grader_stdout": graded.stdout.strip().splitlines()[-3:],
        "grader_warnings": [line for line in graded.stderr.splitlines() if line.startswith("warning:")][:10],
        "passed": passed,
    }
    out = Path(args.results) / f"{datetime.date.today().isoformat()}-jupyterhub-two-users.json"
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out}\n{'PASSED' if passed else 'FAILED'}: {json.dumps(checks)} grades {record['grades']}")
    if not passed:
        print((root / "hub.log").read_text()[-4000:] + graded.stderr[-2000:], file=sys.stderr)
    shutil.rmtree(root, ignore_errors=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
