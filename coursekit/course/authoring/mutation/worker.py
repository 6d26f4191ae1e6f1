"""Grade the mutants of one graded task in one process, the way the grader grades a notebook.

``python -m coursekit.course.authoring.mutation.worker SPEC OUT`` reads a JSON spec (the notebook, the graded
cell, the mutants) and appends one JSON line per graded run to ``OUT``, so that a mutant that takes
the process down (a fault no handler survives) loses nothing done before it.

How a run is graded, and why it is the grader's verdict: the environment is the grader's
(``COURSEKIT_SIZE=small``, a report folder and a nonce, so :func:`~coursekit.course.student.check.graded_check`
draws the grading run's inputs from the nonce and writes the observations in the safe format); the
notebook's code cells run in order in one namespace, an error in a cell does not stop the run (as in
the grader), and the graded cell's verdict is its judge's on the decoded observations — exactly what
:mod:`coursekit.course.grading.judge` computes from the same report. A cell that raises, runs past the cell
time limit, or reports nothing scores 0: the mutant is *killed*.

One process per task, reused across mutants (that is what makes the tool fast): the code cells before
the first solution cell run once; each mutant then re-runs
only the cells from the solution cell to the graded cell (graded cells in between are skipped), in
the same namespace dict with the setup's bindings put back (the setup's functions read their globals
from that dict, so it cannot be a copy). What a
cell can leave behind outside its namespace is put back before each run: the registered graph
rewrites (exercise 9 registers one). Two baseline runs of the unmutated solution must pass; when their
observations differ, the task's observations are not reproducible and no mutant is set aside as
equivalent (see :func:`same`).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
import tempfile

import nbformat
import numpy as np

from coursekit.course.student import check
from coursekit.course.authoring.graded import is_graded


class CellTimeout(Exception):
    """A cell ran past its limit (a mutant that loops forever)."""


@contextlib.contextmanager
def _limit(seconds):
    def expire(*_):
        raise CellTimeout(f"cell ran past {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _run_cell(source, namespace, seconds, name):
    """Run one cell's source; return None or the error (``Type: message``), as the grader's kernel would."""
    try:
        code = compile(source, name, "exec")
        with _limit(seconds), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            exec(code, namespace)
    except BaseException as exc:     # noqa: BLE001 - a student's cell may raise anything, SystemExit included
        if isinstance(exc, KeyboardInterrupt):
            raise
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    return None


def same(a, b) -> bool:
    """Observations equal in value, shape and dtype (NaN equal to NaN): the mutant computed what the
    solution computed on every input the judge used."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return type(a) is type(b) and a == b


def _rewrites():
    """The registered graph rewrites (a stage -> list dict), or None when the compiler is not loaded."""
    module = sys.modules.get("coursekit.rewriting")
    return getattr(module, "_DB", None)


class Task:
    """One graded cell and the cells a run of it executes."""

    def __init__(self, spec):
        self.nb = nbformat.read(spec["notebook"], as_version=4)
        self.graded, self.first = spec["graded_index"], spec["first_solution_index"]
        self.cell_id, self.seconds = spec["cell_id"], spec.get("cell_timeout", 60)
        self.report_dir = tempfile.mkdtemp(prefix="coursekit-mutation-")
        os.environ.update({check.REPORT_DIR_ENV: self.report_dir, check.NONCE_ENV: spec["nonce"],
                           "COURSEKIT_SIZE": "small", "MPLBACKEND": "Agg"})
        os.environ.setdefault("COURSEKIT_CUDA_TIMEOUT", str(min(20, self.seconds)))
        self.nonce = spec["nonce"]
        self.prefix = {"__name__": "__main__"}
        for index in range(self.first):
            self._cell(index, None, self.prefix)
        self.snapshot = dict(self.prefix)        # the names bound before the solution cells
        rewrites = _rewrites()
        self.saved_rewrites = None if rewrites is None else {k: list(v) for k, v in rewrites.items()}

    def _cell(self, index, replaced, namespace):
        cell = self.nb.cells[index]
        if cell.cell_type != "code" or is_graded(cell):
            return None
        source = replaced.get(index, cell.source) if replaced else cell.source
        return _run_cell(source, namespace, self.seconds, f"<cell {index}>")

    def run(self, replaced: dict[int, str] | None):
        """``(verdict, observations or None)`` of one graded run with ``replaced`` cell sources."""
        rewrites = _rewrites()
        if rewrites is not None and self.saved_rewrites is not None:
            rewrites.clear()
            rewrites.update({k: list(v) for k, v in self.saved_rewrites.items()})
        namespace = self.prefix      # the same dict, its bindings put back: functions the setup cells
        namespace.clear()            # defined read their globals from this very dict
        namespace.update(self.snapshot)
        for index in range(self.first, self.graded):
            self._cell(index, replaced, namespace)
        report = os.path.join(self.report_dir, f"{self.cell_id}.npz")
        if os.path.exists(report):
            os.remove(report)
        error = _run_cell(self.nb.cells[self.graded].source, namespace, self.seconds, f"<graded cell {self.cell_id}>")
        try:
            seen = check.decode(check.read_report(self.report_dir, self.cell_id), nonce=self.nonce, cell_id=self.cell_id)
        except check.NotReported:
            seen = None
        return ("passed" if error is None else error), seen


def main(spec_path, out_path):
    with open(spec_path) as handle:
        spec = json.load(handle)
    task = Task(spec)
    with open(out_path, "a") as out:
        def emit(record):
            out.write(json.dumps(record) + "\n")
            out.flush()

        saved = spec["baseline_path"]            # the solution's observations, kept for a restarted worker
        if not os.path.exists(saved):
            first, seen = task.run(None)
            second, again = task.run(None)
            reproducible = seen is not None and again is not None and same(seen, again)
            emit({"id": "baseline", "verdict": first, "again": second, "reproducible": reproducible})
            if reproducible:
                with open(saved, "wb") as handle:
                    handle.write(check.encode(task.nonce, task.cell_id, seen))
            else:
                open(saved, "wb").close()
        with open(saved, "rb") as handle:
            data = handle.read()
        base_seen = check.decode(data, nonce=task.nonce, cell_id=task.cell_id) if data else None
        for mutant in spec["mutants"]:
            verdict, seen = task.run({mutant["cell"]: mutant["source"]})
            emit({"id": mutant["id"], "verdict": verdict,
                  "equal": seen is not None and base_seen is not None and same(seen, base_seen)})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
