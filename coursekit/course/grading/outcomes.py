"""What happened to each cell of a run, from the runner child's event log (see :mod:`.execute`).

:func:`read_events` turns the events into one :class:`CellOutcome` per code cell. For a graded cell
judged outside the kernel (:mod:`coursekit.course.student.check`) the judge's verdict is the outcome; the
kernel's own report ("the cell ran without error") never makes such a cell pass by itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

TIMEOUT_ENAME = "CoursekitCellTimeout"
ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class CellOutcome:
    """What happened to one code cell. ``passed`` is True only when it ran and raised nothing (and,
    for a judged graded cell, when the judge accepted its observations)."""

    passed: bool
    reason: str


@dataclass
class NotebookRun:
    """The outcome of every code cell of one run, by cell index (see :meth:`outcome`)."""

    cells: dict[int, CellOutcome] = field(default_factory=dict)
    default: CellOutcome = CellOutcome(False, "not run")
    stderr: str = ""
    protection: str = ""                                      # what the run was protected by
    judged: set[int] = field(default_factory=set)             # graded cells judged outside the kernel
    # with run_notebook(submission=...): where each graded cell is, the scrutiny warnings, and the
    # student's reason when the submission could not be read (all from the run's child)
    where: dict | None = None
    warnings: list = field(default_factory=list)
    unreadable: str | None = None

    def outcome(self, index: int) -> CellOutcome:
        """The cell's outcome; cells the run never reached get the run's ``default`` reason."""
        return self.cells.get(index, self.default)


ASSERTION_LIMIT = 400   # a graded check's own message: longer than an error's, still one table cell


def short(text: str, limit: int = 200) -> str:
    """One line, no terminal colours, at most ``limit`` characters: fit for a CSV cell."""
    text = " ".join(ANSI_RE.sub("", str(text)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_error(ename: str, evalue: str, cell_timeout: int) -> str:
    """The reason shown to a student for a cell that raised."""
    if ename == TIMEOUT_ENAME:
        return f"timeout after {cell_timeout}s"
    if ename == "AssertionError":   # a check's message says what, on which input and what to look at
        return f"failed assertion: {short(evalue, ASSERTION_LIMIT)}" if evalue.strip() else "failed assertion (no message)"
    return short(f"error: {ename}: {evalue}") if evalue else f"error: {ename}"


RESTARTED = ("memory limit exceeded ({memory_mb} MB): the kernel was stopped, and a fresh one ran the cells "
             "before it again and went on after it")
UNREPORTED = ("not judged: {why} in this run, so it did not run as restored "
              "(code elsewhere in the notebook may be rewriting or skipping it)")


def read_events(events, output, returncode, killed, cell_timeout, notebook_timeout, memory_mb=None,
                disk_mb=None) -> NotebookRun:
    """Turn the child's event log into one :class:`CellOutcome` per code cell. ``memory_mb`` or
    ``disk_mb``: the run was stopped at that limit of memory or of its folders on disk."""
    run = NotebookRun(stderr=output)
    log = _replay(events, run, cell_timeout)
    _mark_the_end(run, log, output, returncode, killed, notebook_timeout, memory_mb, disk_mb)
    _apply_verdicts(run, log.verdicts)
    return run


@dataclass
class _Log:
    """What the event log says beyond each cell's own outcome: where it stopped and why."""

    running: int | None = None          # the cell started and not done when the log ends
    crashed: bool = False               # the kernel died and no fresh one took over
    finished: bool = False
    failure: str | None = None          # the child's own failure message
    crashed_in: int | None = None       # the cell the kernel last died in
    crash_cells: list[int] = field(default_factory=list)
    verdicts: dict = field(default_factory=dict)   # cell index -> (status, reason) from the judge


def _replay(events, run: NotebookRun, cell_timeout) -> _Log:
    """Record each cell's outcome in ``run`` as the log tells it; return the rest of what it says."""
    log = _Log()
    for event in events:
        kind = event.get("event")
        if kind == "judged":
            run.judged = {int(i) for i in event.get("indices", [])}
        elif kind == "start":
            log.running = event["index"]
        elif kind == "done":
            log.running = None
            if event["status"] == "ok":
                run.cells[event["index"]] = CellOutcome(True, "passed")
            else:
                reason = describe_error(event.get("ename", "Error"), event.get("evalue", ""), cell_timeout)
                run.cells[event["index"]] = CellOutcome(False, reason)
        elif kind == "verdict":
            log.verdicts[event["index"]] = (event["status"], short(event["reason"], ASSERTION_LIMIT))
        elif kind == "crashed":
            log.crashed = True
            log.crashed_in = event.get("index")
            if log.crashed_in is not None:
                run.cells[log.crashed_in] = CellOutcome(False, RESTARTED.format(memory_mb=event.get("memory_mb"))
                                                        if event.get("memory") else "kernel crashed")
                log.crash_cells.append(log.crashed_in)
            log.running = None
        elif kind == "restarted":       # a fresh kernel re-ran the cells before and goes on after it
            log.crashed = False
        elif kind == "failed":
            log.failure = event.get("message", "")
        elif kind == "finished":
            log.finished = True
    return log


def _mark_the_end(run: NotebookRun, log: _Log, output, returncode, killed, notebook_timeout, memory_mb,
                  disk_mb) -> None:
    """Say why the run ended where it did: on the cell it was running, and for every cell it never ran."""
    running = log.running
    if memory_mb and log.finished and not log.crashed and not killed:   # the run went on in fresh kernels
        for index in log.crash_cells:
            if run.cells[index].reason == "kernel crashed":
                run.cells[index] = CellOutcome(False, RESTARTED.format(memory_mb=memory_mb))
    elif memory_mb or disk_mb:
        what = "memory" if memory_mb else "disk"
        limit = memory_mb or disk_mb
        if running is None:
            running = log.crashed_in
        if running is not None:
            run.cells[running] = CellOutcome(False, f"{what} limit exceeded ({limit} MB): the run was stopped")
        run.default = CellOutcome(False, f"not run: the run was stopped at the {what} limit ({limit} MB)")
    elif log.crashed:
        run.default = CellOutcome(False, "not run: kernel crashed earlier")
    elif killed:
        if running is not None:
            run.cells[running] = CellOutcome(False, f"timeout: notebook exceeded {notebook_timeout}s")
        run.default = CellOutcome(False, f"not run: notebook timeout after {notebook_timeout}s")
    elif log.finished and log.failure is None:
        run.default = CellOutcome(False, "not run")
    else:
        lines = output.strip().splitlines()
        detail = short(log.failure or (lines[-1] if lines else f"exit code {returncode}"))
        if running is not None:
            run.cells[running] = CellOutcome(False, f"runner failed: {detail}")
        run.default = CellOutcome(False, f"not run: runner failed: {detail}")


def _apply_verdicts(run: NotebookRun, verdicts: dict) -> None:
    """A judged cell passes only on its judge's word; the kernel's report explains a missing one."""
    for index in run.judged:
        kernel = run.outcome(index)
        status, reason = verdicts.get(index, ("unjudged", ""))
        if status in ("passed", "failed"):
            run.cells[index] = CellOutcome(status == "passed", reason)
        elif kernel.passed:
            run.cells[index] = CellOutcome(False, UNREPORTED.format(why=reason) if status == "unreported" else
                                           "not judged: the run ended before the grader judged this cell")
