"""Execute one notebook in its own process and report what happened to every code cell.

Grading runs code we do not trust to finish: a student's ``while True: pass``, an ``os._exit(1)``, a
segfault in an extension, a handler that ignores Ctrl-C. So :func:`run_notebook` never executes a
notebook in the calling process. It starts :mod:`coursekit.course.grading.execute` as a script in a fresh
process (which starts the Jupyter kernel inside :mod:`coursekit.course.grading.sandbox` through nbclient)
and enforces two limits:

* per cell: nbclient interrupts the kernel when a cell runs longer than ``cell_timeout`` and goes
  on with the next cell (``interrupt_on_timeout``), so one endless cell costs one cell;
* per notebook: if the whole run exceeds ``notebook_timeout`` (for instance because the kernel
  ignores the interrupt), the runner process and every process of the run are killed.

Errors are allowed, so the cells after a failing one still run. The child writes one JSON line per
event to a pipe the kernel never holds; :mod:`coursekit.course.grading.outcomes` turns them into outcomes.
Graded cells written with :func:`coursekit.course.student.check.graded_check` are judged by the child,
outside the kernel, on the observations the kernel reported in a safe format (see that module).

The child is forked from a server that has imported nbclient and its kin once per grader (see
:mod:`coursekit.course.grading.child`), or started as a fresh interpreter by path where that is not possible;
either way it imports only the standard library, Jupyter's client libraries and its sibling
``sandbox`` until it judges, so running a notebook does not depend on the ``coursekit`` library
importing cleanly.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

from . import child, rungroup, sandbox
from ..student.check import NONCE_ENV, REPORT_DIR_ENV, REPORT_LIMIT
from .outcomes import CellOutcome, NotebookRun, describe_error, read_events, short

__all__ = ["CellOutcome", "NotebookRun", "describe_error", "kill_all", "protection", "run_notebook", "short"]

PROJECT_ROOT = Path(__file__).resolve().parents[3]
FREE_SPACE_FLOOR_MB = int(os.environ.get("COURSEKIT_GRADE_FREE_MB", "1024"))   # no run starts below it
KERNEL_STOPS = 4          # kernels stopped for memory before the whole run is (the child restarts 3)
FOLDER_ENTRIES = 10_000    # files a run may leave in its folders on the grader's disk
EVENTS_LIMIT = 8 * 2**20   # bytes of events read from one run; the child cuts each text to 4 KB


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


def run_notebook(path, *, cell_timeout: int = 60, notebook_timeout: int = 600, workdir=None,
                 env: dict[str, str] | None = None, executed_path=None, kernel_name: str = "python3",
                 limits: "sandbox.Limits | None" = None, judge: bool = True, reports_path=None,
                 submission: dict | None = None) -> NotebookRun:
    """Run the notebook at ``path`` in a separate process; never raises for what the notebook does.

    The kernel runs inside this machine's protections (:func:`protection`) with ``limits``; its
    working directory is ``workdir`` (a fresh empty directory by default) and nothing else of the
    grader's is visible to it where bubblewrap runs. ``env`` adds to :func:`child_env`
    (``COURSEKIT_SIZE=small`` unless already set). If ``executed_path`` is given, the executed
    notebook (with outputs and tracebacks) is written there for inspection.

    With ``judge`` (the default), graded cells that call :func:`coursekit.course.student.check.graded_check`
    report their observations to a folder of this run and are judged after the kernel has gone, in
    the runner's process; their outcome is the judge's verdict (``run.judged`` lists them). Other
    cells' outcomes are what the kernel reported. ``reports_path``, if given, receives a copy of
    the observations the graded cells reported (``<cell id>.npz``) and ``nonce.txt``, to judge again.

    ``submission`` (``{"reference": notebook file, "label": "student/name"}``): ``path`` is a raw
    hand-in that the run's child bounds, parses and restores in the run's limits (:mod:`.prepare`);
    ``run.where``, ``run.warnings`` and ``run.unreadable`` say what came of it.
    """
    limits = limits or sandbox.Limits()
    guard = protection()
    refused = _low_disk(guard)
    if refused:
        return refused
    with tempfile.TemporaryDirectory(prefix="coursekit-run-") as tmp:
        # a root grader's kernel runs as another user (sandbox.sandbox_user): it may pass through the
        # run's folder to the folders it is given, never list it
        os.chmod(tmp, 0o711 if guard.run_as else 0o700)
        folders = _run_folders(Path(tmp), workdir)
        token, nonce = secrets.token_hex(8), secrets.token_hex(16)
        group = rungroup.RunGroup(f"coursekit-{token}", limits, guard.cgroup)
        config = _child_config(guard, group, limits, folders, workdir is None, judge, nonce)
        reporting = {REPORT_DIR_ENV: str(folders["report"]), NONCE_ENV: nonce} if judge else {}
        args = _child_args(path, Path(tmp), cell_timeout, kernel_name, config, executed_path, submission)
        read_end, write_end = os.pipe()     # the event channel: no file a kernel could find and write
        output_path = Path(tmp) / "output.log"
        output_path.touch()
        try:
            process = child.start(args, env=child_env(dict(env or {}, COURSEKIT_RUN_TOKEN=token, **reporting)),
                                  cwd=tmp, output_path=str(output_path), events_fd=write_end)
        finally:
            os.close(write_end)
        channel = _Reader(read_end)
        watch = _Watch(process, group, token, limits, [folders["ipc"], folders["report"], folders["work"]], Path(tmp))
        killed, memory = _supervise(process, watch, group, notebook_timeout)
        if reports_path:
            _copy_reports(folders["report"], Path(reports_path), nonce)
        events = channel.events()
        run = read_events(events, _tail(output_path), process.returncode, killed, int(cell_timeout),
                          notebook_timeout, memory and limits.memory_mb, watch.over_disk and limits.disk_mb)
        run.protection = guard.label
        _read_preparation(run, events)
        return run


def _child_config(guard, group, limits, folders, private_home: bool, judge: bool, nonce: str) -> dict:
    """What the child and the kernel's launcher need to know about the run (``--sandbox``, JSON)."""
    return {"workdir": str(folders["work"]), "ipc_dir": str(folders["ipc"]), "limits": limits.__dict__,
            "cgroup": group.procs_files() or None, "bubblewrap": guard.bubblewrap,
            "bwrap_flags": list(guard.bwrap_flags), "private_home": private_home, "run_as": guard.run_as,
            "report_dir": str(folders["report"]) if judge else None, "nonce": nonce}


def _low_disk(guard) -> NotebookRun | None:
    """A run refused before it starts when the temporary folder is short of space: a full disk would
    fail it for a reason not the student's (the reason says it is the grader's)."""
    free_mb = shutil.disk_usage(tempfile.gettempdir()).free // 2**20
    if free_mb >= FREE_SPACE_FLOOR_MB:
        return None
    why = (f"not run: the grader's temporary folder {tempfile.gettempdir()} has {free_mb} MB free, below the "
           f"{FREE_SPACE_FLOOR_MB} MB the grader keeps free (COURSEKIT_GRADE_FREE_MB): free space and grade again")
    return NotebookRun(default=CellOutcome(False, why), protection=guard.label)


def _run_folders(tmp: Path, workdir) -> dict[str, Path]:
    """The run's folders: the kernel's working folder, its sockets, and the report folder (the only
    folder of the run the kernel writes besides its own)."""
    folders = {"work": Path(workdir) if workdir else tmp / "work", "ipc": tmp / "ipc", "report": tmp / "report"}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    return folders


def _child_args(path, tmp: Path, cell_timeout, kernel_name, config, executed_path, submission) -> list[str]:
    """The command line of :mod:`coursekit.course.grading.execute` (``{fd}``: the event pipe's descriptor)."""
    notebook = tmp / "notebook.ipynb" if submission else Path(path).resolve()
    args = [str(notebook), "--cell-timeout", str(int(cell_timeout)), "--kernel", kernel_name,
            "--sandbox", json.dumps(config), "--events-fd", "{fd}"]
    if submission:
        args += ["--submission", os.path.abspath(path), "--reference", str(submission["reference"]),
                 "--label", str(submission.get("label", "student/notebook"))]
    if executed_path:
        args += ["--executed", str(Path(executed_path).resolve())]
    return args


def _supervise(process, watch, group, notebook_timeout) -> tuple[bool, bool]:
    """Wait for the child at most ``notebook_timeout`` seconds, then sweep every process of the run
    away; ``(killed for time, stopped for memory)``."""
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
        memory = not watch.over_disk and (watch.over_memory or group.out_of_memory())
        group.close()
    return killed, memory


def _read_preparation(run: NotebookRun, events: list[dict]) -> None:
    """What the child said about the submission it prepared (see :mod:`coursekit.course.grading.prepare`)."""
    for event in events:
        if event.get("event") == "prepared" and isinstance(event.get("where"), dict):
            run.where = {str(k): (v if isinstance(v, int) else None) for k, v in event["where"].items()}
            run.warnings = [str(w) for w in event.get("warnings", [])][:100]
        elif event.get("event") == "unreadable":
            run.unreadable = short(f"unreadable notebook: {event.get('reason', '')}")


def _copy_reports(report_dir: Path, target: Path, nonce: str) -> None:
    """Copy the regular ``.npz`` files the kernel left (never a link) and the run's nonce to ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    (target / "nonce.txt").write_text(nonce)
    for entry in os.scandir(report_dir):
        if entry.name.endswith(".npz") and entry.is_file(follow_symlinks=False):
            with open(entry.path, "rb") as handle:      # never more than a graded cell may report
                (target / entry.name).write_bytes(handle.read(REPORT_LIMIT))


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
        kept = 0
        with os.fdopen(fd, "rb") as pipe:
            for chunk in iter(lambda: pipe.read(65536), b""):
                if kept < EVENTS_LIMIT:        # past the cap: read and dropped (the pipe must not fill)
                    self.chunks.append(chunk[:EVENTS_LIMIT - kept])
                    kept += len(self.chunks[-1])

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
    """Polls the run's memory (when no cgroup limits it) and the size of the run's folders on the
    grader's disk (the report and socket folders, which the kernel writes), and kills every process
    of the run when one is over its limit."""

    def __init__(self, process, group, token, limits, folders, cwd: Path):
        self.process, self.group, self.token, self.folders, self.cwd = process, group, token, folders, cwd
        self.limit = limits.memory_mb * 1024 * 1024
        self.disk_limit = limits.disk_mb * 1024 * 1024
        self.over_memory = self.over_disk = False
        self.stopped = threading.Event()
        threading.Thread(target=self._poll, daemon=True).start()

    def pids(self) -> set[int]:
        return self.group.pids() if self.group.version else rungroup.processes_of_run(self.token, {self.process.pid})

    def _poll(self) -> None:
        stops = 0
        while not self.stopped.wait(0.25):
            size, entries = rungroup.folder_usage(self.folders, FOLDER_ENTRIES)
            if size > self.disk_limit or entries > FOLDER_ENTRIES:
                self.over_disk = True
                self.kill()
                return
            if not self.group.version and rungroup.memory_in_use(self.pids()) > self.limit:
                self.over_memory = True
                stops += 1
                if stops > KERNEL_STOPS:    # the runner itself over the limit, or a kernel that never learns
                    self.kill()
                    return
                # the kernel's processes only: the runner starts a fresh kernel for the cells after it
                (self.cwd / "memory-stops").write_text(str(stops))
                rungroup.kill_until_gone(lambda: self.pids() - {self.process.pid}, rounds=5)

    def stop(self) -> None:
        self.stopped.set()

    def kill(self) -> None:
        if self.group.version:
            self.group.kill()
            _kill_group(self.process.pid)
            return
        rungroup.kill_until_gone(self.pids, rounds=5)


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
