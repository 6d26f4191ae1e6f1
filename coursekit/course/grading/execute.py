"""The runner's child: prepares one notebook, executes it in a sandboxed kernel and writes what
happened to a pipe.

:func:`coursekit.course.grading.runner.run_notebook` starts this file *by path* in a fresh process (or forks
it from :mod:`coursekit.course.grading.child`'s server), so that a student's endless loop or crash cannot take
the grader with it. :func:`main` is a short pipeline of pieces each testable alone:

1. :func:`parse_args` — the command line;
2. join the run's cgroup (:func:`coursekit.course.grading.launch.join_cgroups`) before anything else, so
   parsing, the kernel's client and the judges all count as the run's memory, never the grader's;
3. :func:`prepare_submission` — with ``--submission``, read, bound, parse and restore the student's
   notebook here (:mod:`coursekit.course.grading.prepare`): ``prepared`` (where each graded cell is, the
   scrutiny warnings) or ``unreadable``;
4. :func:`run_cells` — the kernel manager, client and callbacks of
   :mod:`coursekit.course.grading.notebook_client`: ``judged``, ``kernel``, ``start``, ``done``, ``crashed``,
   ``restarted``, ``failed``;
5. :func:`judge_run` — after the kernel has gone, one ``verdict`` per judged cell from
   :func:`coursekit.course.grading.judge.judge_cells`, run here with the grader's own Python; then ``finished``.

Events are JSON lines on a pipe the kernel never holds; texts are cut to :data:`TEXT_LIMIT`
characters here. It imports Jupyter's client libraries and nbformat (which the forkserver of
:mod:`coursekit.course.grading.child` has already loaded) and coursekit's light course modules; the judges
(NumPy, the reference's code) are imported only after the notebook ran.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

if not __package__:   # started by path: make ``coursekit`` importable from the checkout this file is in
    sys.path.insert(0, str(next(p.parent for p in Path(__file__).resolve().parents if p.name == "coursekit")))
sys.modules.setdefault("rfc3987_syntax", None)   # see execute_imports.load (not needed to judge)

import nbformat  # noqa: E402
from nbclient.exceptions import DeadKernelError  # noqa: E402
from nbclient.util import run_sync  # noqa: E402

from coursekit.course.grading import notebook_client as nc  # noqa: E402
from coursekit.course.grading.launch import join_cgroups  # noqa: E402
from coursekit.course.grading.prepare import UnreadableSubmission, prepare  # noqa: E402

METADATA_KEY = "coursekit"
TEXT_LIMIT = 4096         # characters of an error's name, message or verdict sent to the grader


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The child's command line (internal: :func:`coursekit.course.grading.runner.run_notebook` writes it)."""
    parser = argparse.ArgumentParser(description="Run one notebook, logging cell events (internal).")
    parser.add_argument("notebook", help="the notebook to run (written here first with --submission)")
    parser.add_argument("--events-fd", type=int, required=True)
    parser.add_argument("--cell-timeout", type=int, required=True)
    parser.add_argument("--sandbox", required=True, help="the run's configuration, JSON")
    parser.add_argument("--kernel", default="python3")
    parser.add_argument("--executed")
    parser.add_argument("--submission", help="the student's file: bounded, parsed and restored in this process")
    parser.add_argument("--reference", help="with --submission: the reference notebook to restore from")
    parser.add_argument("--label", default="student/notebook", help="with --submission: names warnings")
    args = parser.parse_args(argv)
    if bool(args.submission) != bool(args.reference):
        parser.error("--submission and --reference go together")
    return args


class Events:
    """One JSON line per event, flushed at once (the runner may kill this process at any moment)."""

    def __init__(self, fd: int):
        self.log = os.fdopen(fd, "w", encoding="utf-8")

    def emit(self, **event) -> None:
        self.log.write(json.dumps(event) + "\n")
        self.log.flush()


def judged_cells(nb) -> list[tuple[int, str, str]]:
    """``(index, id, source)`` of the graded cells that call graded_check (the runner's own copy of
    the notebook, read before the kernel started: the kernel cannot change these sources)."""
    found = []
    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get(METADATA_KEY)
        if cell.get("cell_type") == "code" and isinstance(meta, dict) and isinstance(meta.get("id"), str) \
                and "graded_check(" in cell.get("source", ""):
            found.append((index, meta["id"], cell["source"]))
    return found


def prepare_submission(args, emit) -> bool:
    """Write the restored submission to ``args.notebook``; False (and an ``unreadable`` event with
    the student's reason) when it cannot be graded."""
    try:
        prepared = prepare(args.submission, args.reference, args.label, args.notebook)
    except UnreadableSubmission as exc:
        emit(event="unreadable", reason=str(exc)[:TEXT_LIMIT])
        return False
    emit(event="prepared", where=prepared["where"], warnings=[w[:TEXT_LIMIT] for w in prepared["warnings"]])
    return True


def run_cells(nb, args, config: dict, emit) -> None:
    """Execute every cell of ``nb`` in the sandboxed kernel, writing cell events; the executed
    notebook goes to ``--executed`` whatever happened."""
    client = nc.notebook_client(nb, nc.kernel_manager(config, args.kernel), config, args.cell_timeout, args.kernel)
    callbacks = nc.Callbacks(emit)
    callbacks.attach(client)
    graded = {index for index, cell in enumerate(nb.cells)
              if isinstance(cell.get("metadata", {}).get(METADATA_KEY), dict)}
    try:
        run_sync(nc.execute_with_restarts)(client, graded, callbacks, config)
    except DeadKernelError:
        emit(event="crashed", index=callbacks.index, memory=False)
    except Exception as exc:  # noqa: BLE001 -- e.g. the kernel could not start: report it instead of a bare exit code
        emit(event="failed", message=f"{type(exc).__name__}: {exc}"[:TEXT_LIMIT])
    finally:
        if args.executed:
            Path(args.executed).parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, args.executed)


def judge_run(judged, config: dict, cell_timeout: int, emit) -> None:
    """One ``verdict`` per judged cell, from the reference's judges on what the kernel reported."""
    if not judged:
        return
    from coursekit.course.grading.judge import judge_cells   # the grader's coursekit (PROJECT_ROOT first on the path)

    verdicts = judge_cells(judged, config["report_dir"], config["nonce"], time_limit=cell_timeout)
    for index, (status, reason) in verdicts.items():
        emit(event="verdict", index=index, status=status, reason=reason[:TEXT_LIMIT])


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    config = json.loads(args.sandbox)
    join_cgroups(config.get("cgroup"))    # this process (parsing, client, judges) counts as the run's memory
    emit = Events(args.events_fd).emit
    if args.submission and not prepare_submission(args, emit):
        emit(event="finished")
        return 0
    nb = nbformat.read(args.notebook, as_version=4)
    judged = judged_cells(nb) if config.get("report_dir") else []
    emit(event="judged", indices=[index for index, _, _ in judged])
    run_cells(nb, args, config, emit)
    judge_run(judged, config, args.cell_timeout, emit)
    emit(event="finished")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
