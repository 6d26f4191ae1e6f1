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
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

if __package__:
    from . import sandbox
else:  # started by path as the runner child: import the stdlib-only sibling by path too
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import sandbox  # type: ignore[no-redef]

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
    records: dict[int, list] = field(default_factory=dict)   # cell index -> values it sent (see check.py)
    protection: str = ""                                      # what the run was protected by

    def outcome(self, index: int) -> CellOutcome:
        """The cell's outcome; cells the run never reached get the run's ``default`` reason."""
        return self.cells.get(index, self.default)


RECORD_MIME = "application/vnd.coursekit.record+json"   # what coursekit.course.check.record displays
RECORD_LIMIT = 16 * 1024 * 1024                          # characters of records kept per cell


def collect_records(cell) -> list:
    """The records a cell displayed (data only: the runner never unpickles or evaluates them)."""
    found, size = [], 0
    for output in cell.get("outputs", []):
        record = output.get("data", {}).get(RECORD_MIME) if output.get("output_type") == "display_data" else None
        if isinstance(record, dict):
            size += len(json.dumps(record))
            if size > RECORD_LIMIT:
                break
            found.append(record)
    return found


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
    """Environment for the runner process: small problem sizes, this coursekit importable.

    The kernel does not inherit it as a whole: see :func:`sandbox.sandbox_env` (the repository
    root is never on the kernel's ``PYTHONPATH`` when bubblewrap runs it).
    """
    env = dict(os.environ)
    env.setdefault("COURSEKIT_SIZE", "small")
    env.setdefault("MPLBACKEND", "Agg")
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # silences a debugger warning per kernel
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def protection() -> "sandbox.Protection":
    """What each run gets on this machine (bubblewrap, cgroup, rlimits): see :mod:`sandbox`."""
    return sandbox.detect()


def run_notebook(
    path,
    *,
    cell_timeout: int = 60,
    notebook_timeout: int = 600,
    workdir=None,
    env: dict[str, str] | None = None,
    executed_path=None,
    kernel_name: str = "python3",
    limits: "sandbox.Limits | None" = None,
    records: bool = False,
) -> NotebookRun:
    """Run the notebook at ``path`` in a separate process; never raises for what the notebook does.

    The kernel runs inside this machine's protections (:func:`protection`) with ``limits``; its
    working directory is ``workdir`` (a fresh empty directory by default) and nothing else of the
    grader's is visible to it where bubblewrap runs. ``env`` adds to :func:`child_env`
    (``COURSEKIT_SIZE=small`` unless already set). If ``executed_path`` is given, the executed
    notebook (with outputs and tracebacks) is written there for inspection. With ``records``, the
    values graded cells sent (see :mod:`coursekit.course.check`) come back in ``run.records``.
    """
    limits = limits or sandbox.Limits()
    guard = protection()
    token = secrets.token_hex(8)
    with tempfile.TemporaryDirectory(prefix="coursekit-run-") as tmp:
        os.chmod(tmp, 0o700)
        kernel_dir = Path(workdir) if workdir else Path(tmp) / "work"
        kernel_dir.mkdir(parents=True, exist_ok=True)
        ipc_dir = Path(tmp) / "ipc"
        ipc_dir.mkdir()
        group = sandbox.RunGroup(f"coursekit-{token}", limits, guard.cgroup)
        config = {
            "workdir": str(kernel_dir), "ipc_dir": str(ipc_dir), "limits": limits.__dict__,
            "cgroup": group.procs_files() or None, "bubblewrap": guard.bubblewrap,
        }
        command = [
            sys.executable, str(Path(__file__).resolve()), str(Path(path).resolve()),
            "--cell-timeout", str(int(cell_timeout)), "--kernel", kernel_name, "--sandbox", json.dumps(config),
            "--events-fd", "{fd}",
        ]
        if executed_path:
            command += ["--executed", str(Path(executed_path).resolve())]
        if records:
            command += ["--records"]
        read_end, write_end = os.pipe()     # the event channel: no file a kernel could find and write
        command[command.index("{fd}")] = str(write_end)
        output_path = Path(tmp) / "output.log"       # a file, not a pipe: a forked daemon holding it
        with open(output_path, "wb") as output_file:  # cannot make the grader wait for its EOF
            process = subprocess.Popen(
                command, env=child_env(dict(env or {}, COURSEKIT_RUN_TOKEN=token)), cwd=tmp,
                stdin=subprocess.DEVNULL, stdout=output_file, stderr=subprocess.STDOUT,
                start_new_session=True, pass_fds=(write_end,),
            )
        os.close(write_end)
        channel = _Reader(read_end)
        watch = _Watch(process, group, token, limits)
        _LIVE[process.pid] = watch
        killed = False
        try:
            process.wait(timeout=notebook_timeout)
        except subprocess.TimeoutExpired:
            killed = True
            watch.kill()
            process.wait()
        finally:
            _LIVE.pop(process.pid, None)
            watch.stop()
            watch.kill()                      # the sweep: daemons and new sessions of the run end here
            memory = watch.over_memory or group.out_of_memory()
            group.close()
        output = _tail(output_path)
        events = channel.events()
        run = _read_events(events, output, process.returncode, killed,
                           int(cell_timeout), notebook_timeout, memory and limits.memory_mb)
        run.protection = guard.label
        return run


def _tail(path: Path, limit: int = 64 * 1024) -> str:
    """The end of the runner's output (a notebook that prints gigabytes must not fill the grader)."""
    with open(path, "rb") as handle:
        handle.seek(max(0, path.stat().st_size - limit))
        return handle.read().decode(errors="replace")


class _Reader:
    """Reads the runner child's JSON event lines from a pipe, in a thread (the pipe must not fill)."""

    def __init__(self, fd: int):
        self.chunks: list[bytes] = []
        self.thread = threading.Thread(target=self._read, args=(fd,), daemon=True)
        self.thread.start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as pipe:
            for chunk in iter(lambda: pipe.read(65536), b""):
                self.chunks.append(chunk)

    def events(self) -> list[dict]:
        self.thread.join(timeout=10)
        events = []
        for line in b"".join(self.chunks).decode(errors="replace").splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut short by a kill
                break
        return events


class _Watch:
    """Polls the run's memory (when no cgroup limits it) and kills every process of the run."""

    def __init__(self, process, group, token, limits):
        self.process, self.group, self.token = process, group, token
        self.limit = limits.memory_mb * 1024 * 1024
        self.over_memory = False
        self.stopped = threading.Event()
        if not group.version:
            threading.Thread(target=self._poll, daemon=True).start()

    def pids(self) -> set[int]:
        return self.group.pids() if self.group.version else sandbox.processes_of_run(self.token, {self.process.pid})

    def _poll(self) -> None:
        while not self.stopped.wait(0.25):
            if sandbox.memory_in_use(self.pids()) > self.limit:
                self.over_memory = True
                self.kill()
                return

    def stop(self) -> None:
        self.stopped.set()

    def kill(self) -> None:
        if self.group.version:
            self.group.kill()
            _kill_group(self.process.pid)
            return
        sandbox.kill_until_gone(self.pids, rounds=5)


_LIVE: dict[int, _Watch] = {}  # runner pid -> its watch, for kill_all()


def kill_all() -> None:
    """Kill every runner still going and its kernel (the grader calls this on Ctrl-C).

    They run in their own sessions, so the terminal's Ctrl-C does not reach them by itself.
    """
    for watch in list(_LIVE.values()):
        watch.kill()


def _kill_group(pid: int | None) -> None:
    """SIGKILL a process group led by ``pid``."""
    if pid:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _read_events(events, output, returncode, killed, cell_timeout, notebook_timeout, memory_mb=None) -> NotebookRun:
    """Turn the child's event log into one :class:`CellOutcome` per code cell."""
    run = NotebookRun(stderr=output)
    running = None
    crashed = finished = False
    failure = crashed_in = None
    for event in events:
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
        elif kind == "verdict":
            run.cells[event["index"]] = CellOutcome(event["passed"], event["reason"])
        elif kind == "records":
            run.records[event["index"]] = event["records"]
        elif kind == "crashed":
            crashed = True
            crashed_in = event.get("index")
            if event.get("index") is not None:
                run.cells[event["index"]] = CellOutcome(False, "kernel crashed")
            running = None
        elif kind == "failed":
            failure = event.get("message", "")
        elif kind == "finished":
            finished = True
    if memory_mb:
        if running is None:
            running = crashed_in
        if running is not None:
            run.cells[running] = CellOutcome(False, f"memory limit exceeded ({memory_mb} MB): the run was stopped")
        run.default = CellOutcome(False, f"not run: the run was stopped at the memory limit ({memory_mb} MB)")
    elif crashed:
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
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    parser = argparse.ArgumentParser(description="Run one notebook, logging cell events (internal).")
    parser.add_argument("notebook")
    parser.add_argument("--events-fd", type=int, required=True)
    parser.add_argument("--cell-timeout", type=int, required=True)
    parser.add_argument("--sandbox", required=True)
    parser.add_argument("--kernel", default="python3")
    parser.add_argument("--executed")
    parser.add_argument("--records", action="store_true")
    args = parser.parse_args(argv)
    config = json.loads(args.sandbox)
    log = os.fdopen(args.events_fd, "w", encoding="utf-8")

    def emit(**event) -> None:
        log.write(json.dumps(event) + "\n")
        log.flush()

    class SandboxedKernelManager(AsyncKernelManager):
        """Starts the kernel through the sandbox's launcher; interrupts it by message (no signal
        crosses the sandbox's PID namespace)."""

        def format_kernel_cmd(self, extra_arguments=None):
            self.kernel_spec.interrupt_mode = "message"
            return sandbox.kernel_command(
                super().format_kernel_cmd(extra_arguments), workdir=config["workdir"], ipc_dir=config["ipc_dir"],
                env=sandbox.sandbox_env(dict(os.environ), config["bubblewrap"]), limits=config["limits"],
                cgroup_procs=config["cgroup"], bubblewrap=config["bubblewrap"])

    km = SandboxedKernelManager(kernel_name=args.kernel, transport="ipc",
                                ip=str(Path(config["ipc_dir"]) / "kernel"))
    km.connection_file = str(Path(config["ipc_dir"]) / "connection.json")
    nb = nbformat.read(args.notebook, as_version=4)
    state = {"index": None}
    client = NotebookClient(
        nb,
        km=km,
        timeout=args.cell_timeout,
        interrupt_on_timeout=True,
        error_on_timeout={"ename": TIMEOUT_ENAME, "evalue": f"cell ran longer than {args.cell_timeout}s",
                          "traceback": []},
        allow_errors=True,
        kernel_name=args.kernel,
        resources={"metadata": {"path": config["workdir"]}},
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
        if args.records:
            emit(event="records", index=cell_index, records=collect_records(cell))

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
