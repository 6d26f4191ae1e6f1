"""Grade a folder of student submissions against the reference notebooks.

For every (student, notebook) pair the grader

1. finds the submission (``SUBMISSIONS/<student>/<NN_name>.ipynb`` or the flat
   ``SUBMISSIONS/<student>__<NN_name>.ipynb``; a renamed copy such as ``05_logreg-Copy1.ipynb`` is
   matched by its ``NN_`` prefix when that is unambiguous);
2. restores every graded cell from the reference notebook (see :func:`restore_graded`), so that a
   student cannot win points by editing or weakening a check;
3. runs the result with :func:`coursekit.course.grading.runner.run_notebook`: its own process, a fresh
   temporary working directory, ``COURSEKIT_SIZE=small``, per-cell and per-notebook time limits,
   errors allowed so that one failure does not hide the later cells;
4. scores each graded cell: its points if it ran without error, otherwise 0 and the reason.

The reference is normally ``exercises/``: its graded cells are identical to those of
``solutions/`` (the generator guarantees it) and it is what the students were given.

Each run is isolated with the operating system's tools where the machine offers them (bubblewrap,
cgroups, resource limits: see :mod:`coursekit.course.grading.sandbox`); the score table says, per row,
which protections the run had, and the Markdown summary lists what was and was not enforced.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# jsonschema (under nbformat) imports rfc3987_syntax, which builds a parser for URI formats that a
# notebook never uses: 1.6 s of CPU on every grading command. Marked absent, those formats are skipped.
sys.modules.setdefault("rfc3987_syntax", None)
import nbformat  # noqa: E402

from . import assignment as assignments
from . import cluster as cluster_runs
from . import lms
from . import prepare
from . import regrade
from ..authoring.graded import GradedCell, graded_cells
from .escape import one_line
from .prepare import UnreadableSubmission  # noqa: F401  (importable from here as before)
from .report import number
from .runner import kill_all, protection, run_notebook, short
from .scores import Score
# find_submissions, reference_for and FLAT_SEPARATOR moved to .submissions; importable from here as before
from .submissions import FLAT_SEPARATOR, Refused, find_submissions, read_bytes, reference_for  # noqa: F401

# Grading runs CUDA kernels with the emulator's bounds checking (AddressSanitizer in a subprocess,
# exact-size buffers): an off-by-one that the unchecked mode's buffer slack would hide costs its
# task the points, and an out-of-bounds write cannot kill the kernel and zero the later tasks.
# About 2 s more for exercise 7's solution on the development machine. An instructor's own
# COURSEKIT_CUDA_CHECK wins.
GRADING_ENV = {"COURSEKIT_CUDA_CHECK": os.environ.get("COURSEKIT_CUDA_CHECK", "memory")}
SUBMISSION_LIMIT_MB = prepare.SUBMISSION_LIMIT_MB   # the notebook file itself (COURSEKIT_GRADE_NOTEBOOK_MB)


@dataclass
class Reference:
    """A reference notebook: its stem (``05_logreg``), the parsed notebook and its graded cells."""

    name: str
    nb: object
    cells: list[GradedCell]


def load_references(reference_dir) -> list[Reference]:
    """Every notebook of ``reference_dir`` that has graded cells, in name order."""
    reference_dir = Path(reference_dir)
    if not reference_dir.is_dir():
        raise FileNotFoundError(
            f"reference folder {reference_dir} does not exist; pass --reference (normally exercises/)."
        )
    references = []
    for path in sorted(reference_dir.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        cells = graded_cells(nb)
        if cells:
            references.append(Reference(path.stem, nb, cells))
    if not references:
        raise ValueError(f"no notebook in {reference_dir} has a graded cell; nothing to grade.")
    return references


def restore_graded(submission, reference: Reference):
    """Return ``(notebook, {graded id: cell index or None})`` with every graded cell restored from
    ``reference`` (see :func:`coursekit.course.grading.prepare.restore_graded`; grading does this in the
    run's child, inside the run's limits)."""
    return prepare.restore_graded(submission, reference.nb, reference.cells)


def load_reference(path) -> Reference:
    """One reference notebook (normally ``exercises/NN_name_exercises.ipynb``) with its graded cells."""
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    return Reference(path.stem, nb, graded_cells(nb))


def read_submission(path):
    """The student's notebook, or :class:`UnreadableSubmission` saying why it cannot be graded and
    what to do (a link, a FIFO, over :data:`SUBMISSION_LIMIT_MB`, too many cells, not a notebook).
    Grading reads submissions in the run's child instead (:mod:`coursekit.course.grading.prepare`)."""
    if isinstance(path, Refused):
        raise UnreadableSubmission(path.reason)
    return prepare.read_submission(path, SUBMISSION_LIMIT_MB)


class Rows(list):
    """One notebook's :class:`Score` rows, with the scrutiny ``warnings`` its run's child found."""

    warnings: list = []


def grade_notebook(path, reference, *, student: str = "student", cell_timeout=60, notebook_timeout=600,
                   executed_path=None, reports_path=None) -> list[Score]:
    """Grade one notebook against its reference: one :class:`Score` per graded cell of the reference.

    This is the stable entry point for anything that grades (the ``grade`` command, a pytest
    plugin): ``path`` is the submission (None: not handed in), ``reference`` a :class:`Reference`
    or the path of the reference notebook. It scans the submission's raw bytes (size, cells; no parse:
    :func:`coursekit.course.grading.prepare.scan`; a refused file scores 0 with the reason), then the run's child
    parses it and restores every graded cell from the reference (:func:`restore_graded`) in the run's limits,
    and :func:`coursekit.course.grading.runner.run_notebook` runs the result in a fresh temporary folder
    with the grading environment (:data:`GRADING_ENV`: CUDA bounds checking) inside this machine's
    sandbox, and scores each graded cell: its points when it passed — for a cell written with
    :func:`coursekit.course.student.check.graded_check`, when the grader's judge accepted what it reported —
    otherwise 0 and the reason. ``executed_path`` keeps the executed notebook for reading. Never
    raises for what the submission does.
    """
    if not isinstance(reference, Reference):
        reference = load_reference(reference)
    refused = _refuse(path, reference, student)
    if refused is not None:
        return refused
    try:
        with tempfile.TemporaryDirectory(prefix="coursekit-grade-") as tmp:
            reference_path = Path(tmp) / f"{reference.name}.ipynb"
            nbformat.write(reference.nb, reference_path)
            run = run_notebook(path, cell_timeout=cell_timeout, notebook_timeout=notebook_timeout,
                               executed_path=executed_path, env=dict(GRADING_ENV, **_shared_kernel_cache()),
                               reports_path=reports_path,
                               submission={"reference": reference_path, "label": f"{student}/{reference.name}"})
    except Exception as exc:  # noqa: BLE001 -- one odd submission must not stop the grading of the class
        return _all_zero(reference, student, f"grader error: {type(exc).__name__}: {exc}"[:200])
    if run.unreadable:
        return _all_zero(reference, student, run.unreadable)
    rows = Rows()
    for cell in reference.cells:
        index = (run.where or {}).get(cell.id)
        if run.where is not None and index is None:
            rows.append(Score(student, reference.name, cell.id, 0, cell.points, "missing graded cell", run.protection))
            continue
        outcome = run.outcome(index) if index is not None else run.default   # never prepared: the run's reason
        rows.append(Score(student, reference.name, cell.id, cell.points if outcome.passed else 0,
                          cell.points, outcome.reason, run.protection))
    rows.warnings = run.warnings
    return rows


def _shared_kernel_cache() -> dict[str, str]:
    """The emulator's shared, read-only kernel cache for the runs (:mod:`.kernel_cache`), built on
    first use; none where runs have no sandbox and run as the grader's own user, since such a
    kernel could plant an object there that every later run, of any grading session, would load
    (each run then compiles into its own folder: see coursekit.course.grading.sandbox.run_folders)."""
    guard = protection()
    if not guard.bubblewrap and not guard.run_as:
        return {}
    from . import kernel_cache   # the emulator's compiler: loaded only when the cache is built

    return kernel_cache.grading_env()


NO_SANDBOX = ("SECURITY: {count} runs had no sandbox (no bubblewrap where they ran): each student's code could "
              "read and change what the grader's user can, including other students' runs and later grading "
              "sessions. Install it where the runs execute (`apt-get install bubblewrap`) or grade in a "
              "throw-away container")
_WARNED: set[str] = set()


def sandbox_warning(scores) -> list[str]:
    """The loud line for a class graded without bubblewrap (from the rows: where each run really
    executed), printed on stderr once per grading process and listed under Warnings every time."""
    count = len({(s.student, s.notebook) for s in scores if s.protection.startswith("no sandbox")})
    if not count:
        return []
    line = NO_SANDBOX.format(count=count)
    if "printed" not in _WARNED:
        _WARNED.add("printed")
        print(f"\n{'!' * 78}\n{line}\n{'!' * 78}\n", file=sys.stderr, flush=True)
    return [line]


def _all_zero(reference: Reference, student: str, reason: str) -> Rows:
    return Rows(Score(student, reference.name, c.id, 0, c.points, reason) for c in reference.cells)


def _refuse(path, reference: Reference, student: str) -> Rows | None:
    """Zero rows with the reason for a notebook that is not graded: not handed in, refused when
    found, or refused by the raw scan (size, cells) before anything parses it."""
    if path is None:
        return _all_zero(reference, student, "missing notebook")
    if isinstance(path, Refused):
        return _all_zero(reference, student, short(path.reason))
    try:
        prepare.scan(path, SUBMISSION_LIMIT_MB)
    except UnreadableSubmission as exc:
        return _all_zero(reference, student, short(f"unreadable notebook: {exc}"))
    return None


def grade_one(student, reference: Reference, path, *, cell_timeout, notebook_timeout, executed_dir=None):
    """Scores for one student's notebook (``path`` None: not submitted); see :func:`grade_notebook`."""
    executed = Path(executed_dir) / student / f"{reference.name}.ipynb" if executed_dir else None
    return grade_notebook(path, reference, student=student, cell_timeout=cell_timeout,
                          notebook_timeout=notebook_timeout, executed_path=executed)


def grade(submissions_dir, reference_dir, *, cell_timeout=60, notebook_timeout=600, jobs=1,
          executed_dir=None, progress=True, assignment=None, cluster=None, previous=None, source=None):
    """Grade every student's notebooks; return ``(scores, warnings)``, scores in table order.

    ``assignment`` (``"03,05"`` or names) grades and totals only those exercises
    (:mod:`coursekit.course.grading.assignment`); a folder with nothing to grade is an error naming it.
    ``source`` (``canvas``, ``moodle``) reads an LMS's download, students keyed by user id (:mod:`.lms`).
    ``cluster`` hands the runs to a Dask scheduler instead of ``jobs`` local threads (:mod:`.cluster`).
    ``previous`` (an earlier table's rows) makes this a regrade: a notebook whose submission and judges
    are unchanged keeps its previous rows and is not run, unless the grader failed it (``grader_fault``)
    (:mod:`.regrade`). Every row records the submission's and its judge's hash and the grader's version.

    The warnings list, from each run's child, the cells that name the grading mechanism (:mod:`.scrutiny`).
    """
    all_references = load_references(reference_dir)
    references = assignments.select(all_references, assignment)
    if source:
        found, warnings, _ = lms.find_lms_submissions(submissions_dir, source, all_references, references)
    else:
        found, warnings = find_submissions(submissions_dir, all_references)
        warnings += lms.hint(submissions_dir)
    if assignment:
        warnings += assignments.unassigned_warnings(found, references, all_references)
    names = {ref.name for ref in references}
    students = {student: {n: p for n, p in files.items() if n in names} for student, files in found.items()}
    assignments.check_class(submissions_dir, students, references, warnings)
    tasks = [(student, ref, students[student].get(ref.name)) for student in sorted(students) for ref in references]
    version = regrade.grader_version()
    prints = {(student, ref.name): regrade.fingerprint(path, ref) for student, ref, path in tasks}
    results = regrade.unchanged(previous, prints) if previous is not None else {}
    # absolute paths (never resolved: a symbolic link must reach read_submission as one), so that a
    # cluster worker started elsewhere finds the same files
    executed = os.path.abspath(executed_dir) if executed_dir else None
    calls = {(student, ref.name): (grade_one, (student, ref, _absolute(path)), dict(
                 cell_timeout=cell_timeout, notebook_timeout=notebook_timeout, executed_dir=executed))
             for student, ref, path in tasks if (student, ref.name) not in results}
    if previous is not None and progress:
        print(regrade.summary_line(previous, prints, len(calls), len(results)), file=sys.stderr, flush=True)
    by_key = {(student, ref.name): ref for student, ref, _ in tasks}

    def failed(key, exc):
        reason = short(f"grader error: the run failed {cluster_runs.RETRIES + 1} times ({type(exc).__name__}: {exc}); "
                       "grade this notebook again")
        return [Score(key[0], key[1], c.id, 0, c.points, reason) for c in by_key[key].cells]

    with cluster_runs.executor(jobs, cluster) as pool, _Progress(len(calls), progress) as bar:
        try:
            results.update(cluster_runs.dispatch(pool, calls, lambda key, rows: bar.finished("/".join(key), rows),
                                                 failed))
        except KeyboardInterrupt:
            kill_all()
            raise
    scores = []
    for student, ref, _ in tasks:
        rows = results[student, ref.name]
        fresh = (student, ref.name) in calls
        scores += regrade.stamp(rows, prints[student, ref.name], version) if fresh else rows
    warnings += [w for student, ref, _ in tasks for w in getattr(results[student, ref.name], "warnings", [])]
    warnings[:0] = sandbox_warning(scores)
    return scores, [one_line(w) for w in warnings]     # printed on a terminal and written to grades.md


def _absolute(path):
    """``path`` made absolute (None and :class:`Refused` stay what they are)."""
    return Path(os.path.abspath(path)) if path is not None and not isinstance(path, Refused) else path


class _Progress:
    """A tqdm bar on a terminal; elsewhere (CI logs, a notebook's captured output, ``| tee``) one
    flushed line per finished notebook, so progress shows wherever the grader runs."""

    def __init__(self, total: int, enabled: bool, stream=None):
        import sys

        self.stream = stream or sys.stderr
        self.total, self.done, self.enabled = total, 0, enabled
        self.bar = None
        if enabled and getattr(self.stream, "isatty", lambda: False)():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc="grading", unit="notebook", file=self.stream)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()

    def finished(self, label: str, scores) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix_str(one_line(label), refresh=False)
            self.bar.update()
        elif self.enabled:
            got, out_of = sum(s.points for s in scores), sum(s.max_points for s in scores)
            # a notebook the student never handed in is counted, not run: say so rather than "graded"
            missing = bool(scores) and all(s.reason == "missing notebook" for s in scores)
            what = f"missing {label} (not handed in)" if missing else f"graded {label}"
            print(f"{one_line(what)}: {number(got)}/{number(out_of)} [{self.done}/{self.total} notebooks]",
                  file=self.stream, flush=True)
