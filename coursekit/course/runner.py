"""Execute one notebook in its own process and report what happened to every code cell.

Grading runs code we do not trust to finish: a student's ``while True: pass``, an ``os._exit(1)``, a
segfault in an extension, a handler that ignores Ctrl-C. So :func:`run_notebook` never executes a
notebook in the calling process. It starts this file as a script in a fresh process (which starts
the Jupyter kernel through nbclient) and enforces two limits:

* per cell: nbclient interrupts the kernel when a cell runs longer than ``cell_timeout`` and goes
  on with the next cell (``interrupt_on_timeout``), so one endless cell costs one cell;
* per notebook: if the whole run exceeds ``notebook_timeout`` (for instance because the kernel
  ignores the interrupt), the runner process and the kernel's process group are killed.

Errors are allowed, so the cells after a failing one still run. The child writes one JSON line per
event (cell started, cell finished, kernel died) and flushes it at once: whatever happens to the
child, the parent knows how far it got.

This file imports only the standard library at module level (nbformat/nbclient only in the child),
and is started by path rather than as ``coursekit.course.runner``, so running a notebook does not
depend on the ``coursekit`` library importing cleanly.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

TIMEOUT_ENAME = "CoursekitCellTimeout"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class CellOutcome:
    """What happened to one code cell. ``passed`` is True only when it ran and raised nothing."""

    passed: bool
    reason: str


@dataclass
class NotebookRun:
    """The outcome of every code cell of one run, by cell index (see :meth:`outcome`)."""

    cells: dict[int, CellOutcome] = field(default_factory=dict)
    default: CellOutcome = CellOutcome(False, "not run")
    stderr: str = ""

    def outcome(self, index: int) -> CellOutcome:
        """The cell's outcome; cells the run never reached get the run's ``default`` reason."""
        return self.cells.get(index, self.default)


def short(text: str, limit: int = 200) -> str:
    """One line, no terminal colours, at most ``limit`` characters: fit for a CSV cell."""
    text = " ".join(ANSI_RE.sub("", str(text)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_error(ename: str, evalue: str, cell_timeout: int) -> str:
    """The reason shown to a student for a cell that raised."""
    if ename == TIMEOUT_ENAME:
        return f"timeout after {cell_timeout}s"
    if ename == "AssertionError":
        return f"failed assertion: {short(evalue)}" if evalue.strip() else "failed assertion (no message)"
    return short(f"error: {ename}: {evalue}") if evalue else f"error: {ename}"


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for the runner and its kernel: small problem sizes, this coursekit importable."""
    env = dict(os.environ)
    env.setdefault("COURSEKIT_SIZE", "small")
    env.setdefault("MPLBACKEND", "Agg")
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # silences a debugger warning per kernel
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def run_notebook(
    path,
    *,
    cell_timeout: int = 60,
    notebook_timeout: int = 600,
    workdir=None,
    env: dict[str, str] | None = None,
    executed_path=None,
    kernel_name: str = "python3",
) -> NotebookRun:
    """Run the notebook at ``path`` in a separate process; never raises for what the notebook does.

    ``workdir`` is the kernel's working directory (a fresh temporary directory by default), ``env``
    adds to :func:`child_env` (``COURSEKIT_SIZE=small`` unless already set). If ``executed_path`` is
    given, the executed notebook (with outputs and tracebacks) is written there for inspection.
    """
    with tempfile.TemporaryDirectory(prefix="coursekit-run-") as tmp:
        events_path = Path(tmp) / "events.jsonl"
        kernel_dir = Path(workdir) if workdir else Path(tmp) / "work"
        kernel_dir.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable, str(Path(__file__).resolve()), str(Path(path).resolve()), str(events_path),
            "--cell-timeout", str(int(cell_timeout)), "--workdir", str(kernel_dir),
            "--kernel", kernel_name,
        ]
        if executed_path:
            command += ["--executed", str(Path(executed_path).resolve())]
        process = subprocess.Popen(
            command, env=child_env(env), cwd=tmp, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )
        killed = False
        _LIVE[process.pid] = events_path
        try:
            output, _ = process.communicate(timeout=notebook_timeout)
        except subprocess.TimeoutExpired:
            killed = True
            _kill_group(process.pid)
            _kill_group(_kernel_pid(events_path))
            output, _ = process.communicate()
        finally:
            _LIVE.pop(process.pid, None)
        return _read_events(events_path, output.decode(errors="replace"), process.returncode, killed,
                            int(cell_timeout), notebook_timeout)


_LIVE: dict[int, Path] = {}  # runner pid -> its event log, for kill_all()


def kill_all() -> None:
    """Kill every runner still going and its kernel (the grader calls this on Ctrl-C).

    They run in their own sessions, so the terminal's Ctrl-C does not reach them by itself.
    """
    for pid, events_path in list(_LIVE.items()):
        _kill_group(pid)
        _kill_group(_kernel_pid(events_path))


def _kill_group(pid: int | None) -> None:
    """SIGKILL a process group led by ``pid`` (runner and kernel both lead their own session)."""
    if pid:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut short by a kill
            break
    return events


def _kernel_pid(path: Path) -> int | None:
    return next((e["pid"] for e in _events(path) if e["event"] == "kernel"), None)


def _read_events(path, output, returncode, killed, cell_timeout, notebook_timeout) -> NotebookRun:
    """Turn the child's event log into one :class:`CellOutcome` per code cell."""
    run = NotebookRun(stderr=output)
    running = None
    crashed = finished = False
    failure = None
    for event in _events(path):
        kind = event["event"]
        if kind == "start":
            running = event["index"]
        elif kind == "done":
            running = None
            if event["status"] == "ok":
                run.cells[event["index"]] = CellOutcome(True, "passed")
            else:
                reason = describe_error(event.get("ename", "Error"), event.get("evalue", ""), cell_timeout)
                run.cells[event["index"]] = CellOutcome(False, reason)
        elif kind == "crashed":
            crashed = True
            if event.get("index") is not None:
                run.cells[event["index"]] = CellOutcome(False, "kernel crashed")
            running = None
        elif kind == "failed":
            failure = event.get("message", "")
        elif kind == "finished":
            finished = True
    if crashed:
        run.default = CellOutcome(False, "not run: kernel crashed earlier")
    elif killed:
        if running is not None:
            run.cells[running] = CellOutcome(False, f"timeout: notebook exceeded {notebook_timeout}s")
        run.default = CellOutcome(False, f"not run: notebook timeout after {notebook_timeout}s")
    elif finished and failure is None:
        run.default = CellOutcome(False, "not run")
    else:
        lines = output.strip().splitlines()
        detail = short(failure or (lines[-1] if lines else f"exit code {returncode}"))
        if running is not None:
            run.cells[running] = CellOutcome(False, f"runner failed: {detail}")
        run.default = CellOutcome(False, f"not run: runner failed: {detail}")
    return run


# ---------------------------------------------------------------------------------------------
# The child side: runs inside the separate process started by run_notebook().


def _child_main(argv: list[str]) -> int:
    import argparse

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    parser = argparse.ArgumentParser(description="Run one notebook, logging cell events (internal).")
    parser.add_argument("notebook")
    parser.add_argument("events")
    parser.add_argument("--cell-timeout", type=int, required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--kernel", default="python3")
    parser.add_argument("--executed")
    args = parser.parse_args(argv)

    log = open(args.events, "a", encoding="utf-8")

    def emit(**event) -> None:
        log.write(json.dumps(event) + "\n")
        log.flush()

    nb = nbformat.read(args.notebook, as_version=4)
    state = {"index": None}
    client = NotebookClient(
        nb,
        timeout=args.cell_timeout,
        interrupt_on_timeout=True,
        error_on_timeout={"ename": TIMEOUT_ENAME, "evalue": f"cell ran longer than {args.cell_timeout}s",
                          "traceback": []},
        allow_errors=True,
        kernel_name=args.kernel,
        resources={"metadata": {"path": args.workdir}},
        shutdown_kernel="immediate",
    )

    def on_start(**_):
        emit(event="kernel", pid=getattr(client.km.provisioner, "pid", None))

    def on_execute(cell, cell_index, **_):
        state["index"] = cell_index
        emit(event="start", index=cell_index)

    def on_executed(cell, cell_index, execute_reply, **_):
        state["index"] = None
        content = (execute_reply or {}).get("content", {})
        emit(event="done", index=cell_index, status=content.get("status", "error"),
             ename=content.get("ename", ""), evalue=content.get("evalue", ""))

    client.on_notebook_start = on_start
    client.on_cell_execute = on_execute
    client.on_cell_executed = on_executed
    try:
        client.execute()
    except DeadKernelError:
        emit(event="crashed", index=state["index"])
    except Exception as exc:  # e.g. the kernel could not start: report it instead of a bare exit code
        emit(event="failed", message=f"{type(exc).__name__}: {exc}")
    finally:
        if args.executed:
            Path(args.executed).parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, args.executed)
    emit(event="finished")
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
