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

import copy
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
from . import kernel_cache
from . import lms
from . import regrade
from ..authoring.graded import GRADED_TAG, METADATA_KEY, GradedCell, graded_cells, is_graded
from .escape import one_line
from .report import number
from .runner import kill_all, run_notebook, short
from .scores import Score
# find_submissions, reference_for and FLAT_SEPARATOR moved to .submissions; importable from here as before
from .submissions import FLAT_SEPARATOR, Refused, find_submissions, read_bytes, reference_for  # noqa: F401
from .scrutiny import warnings_for

# Grading runs CUDA kernels with the emulator's bounds checking (AddressSanitizer in a subprocess,
# exact-size buffers): an off-by-one that the unchecked mode's buffer slack would hide costs its
# task the points, and an out-of-bounds write cannot kill the kernel and zero the later tasks.
# About 2 s more for exercise 7's solution on the development machine. An instructor's own
# COURSEKIT_CUDA_CHECK wins.
GRADING_ENV = {"COURSEKIT_CUDA_CHECK": os.environ.get("COURSEKIT_CUDA_CHECK", "memory")}
SUBMISSION_LIMIT_MB = int(os.environ.get("COURSEKIT_GRADE_NOTEBOOK_MB", "64"))   # the notebook file itself


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
    """Return ``(notebook, {graded id: cell index or None})`` with every graded cell restored.

    A reference graded cell is located in the submission by its coursekit id, else by its notebook
    cell id (JupyterLab keeps those), else by identical source; the cell found is replaced by a code
    cell with the reference's source and metadata, whatever the student did to it (edited, turned into
    Markdown, retagged). Graded-looking cells with unknown ids lose their markers and run as
    ordinary cells. A graded cell that cannot be found maps to None: it scores nothing.
    """
    nb = copy.deepcopy(submission)
    placed: dict[str, int] = {}
    taken: set[int] = set()

    def place(cell_id: str, index: int) -> None:
        if cell_id not in placed and index not in taken:
            placed[cell_id] = index
            taken.add(index)

    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get(METADATA_KEY)
        if isinstance(meta, dict) and meta.get("id") in {c.id for c in reference.cells}:
            place(meta["id"], index)
    for graded in reference.cells:
        notebook_id = reference.nb.cells[graded.index].get("id")
        for index, cell in enumerate(nb.cells):
            if graded.id in placed:
                break
            if (notebook_id and cell.get("id") == notebook_id) or cell.get("source") == graded.source:
                place(graded.id, index)

    by_index = {index: cell_id for cell_id, index in placed.items()}
    reference_cells = {c.id: reference.nb.cells[c.index] for c in reference.cells}
    for index, cell in enumerate(nb.cells):
        if index in by_index:
            original = reference_cells[by_index[index]]
            restored = nbformat.v4.new_code_cell(source=original.source, metadata=copy.deepcopy(original.metadata))
            if "id" in cell:
                restored["id"] = cell["id"]
            else:
                restored.pop("id", None)
            nb.cells[index] = restored
        elif is_graded(cell):
            cell.metadata.pop(METADATA_KEY, None)
            tags = [tag for tag in cell.metadata.get("tags", []) if tag != GRADED_TAG]
            cell.metadata["tags"] = tags
    return nb, {c.id: placed.get(c.id) for c in reference.cells}


def load_reference(path) -> Reference:
    """One reference notebook (normally ``exercises/NN_name_exercises.ipynb``) with its graded cells."""
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    return Reference(path.stem, nb, graded_cells(nb))


class UnreadableSubmission(ValueError):
    """A submission the grader will not read; the message says why and what the student can do."""


def read_submission(path):
    """The student's notebook, or an error that says why it cannot be graded and what to do.

    A symbolic link is refused, not followed: it could hand in another student's notebook or a
    solution the grader can read. A file over :data:`SUBMISSION_LIMIT_MB` is refused before it is
    read (its outputs, never graded, would fill the grader's memory). Cells that Jupyter would not
    have written (a code cell without ``outputs``) are an invalid notebook, not a grader error.
    """
    if isinstance(path, Refused):
        raise UnreadableSubmission(path.reason)
    try:
        data = read_bytes(path, SUBMISSION_LIMIT_MB * 2**20)
    except ValueError as exc:
        raise UnreadableSubmission(str(exc)) from None
    nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    for index, cell in enumerate(nb.cells):
        if not isinstance(cell.get("source"), str) or (cell.get("cell_type") == "code" and "outputs" not in cell):
            raise UnreadableSubmission(f"cell {index} is not a valid notebook cell (source or outputs missing): "
                             "open the notebook in Jupyter, save it and hand it in again")
    return nb


def grade_notebook(path, reference, *, student: str = "student", cell_timeout=60, notebook_timeout=600,
                   executed_path=None, reports_path=None) -> list[Score]:
    """Grade one notebook against its reference: one :class:`Score` per graded cell of the reference.

    This is the stable entry point for anything that grades (the ``grade`` command, a pytest
    plugin): ``path`` is the submission (None: not handed in), ``reference`` a :class:`Reference`
    or the path of the reference notebook. It reads the submission (an unreadable file scores 0
    with the reason), restores every graded cell from the reference (:func:`restore_graded`),
    runs the result with :func:`coursekit.course.grading.runner.run_notebook` in a fresh temporary folder
    with the grading environment (:data:`GRADING_ENV`: CUDA bounds checking) inside this machine's
    sandbox, and scores each graded cell: its points when it passed — for a cell written with
    :func:`coursekit.course.student.check.graded_check`, when the grader's judge accepted what it reported —
    otherwise 0 and the reason. ``executed_path`` keeps the executed notebook for reading. Never
    raises for what the submission does.
    """
    if not isinstance(reference, Reference):
        reference = load_reference(reference)

    def all_zero(reason):
        return [Score(student, reference.name, c.id, 0, c.points, reason) for c in reference.cells]

    if path is None:
        return all_zero("missing notebook")
    if isinstance(path, Refused):
        return all_zero(short(path.reason))
    try:   # not JSON, not a notebook, a link: the student still gets a row per cell, with the reason
        restored, where = restore_graded(read_submission(path), reference)
        text = nbformat.writes(restored)
    except Exception as exc:
        detail = str(exc) if isinstance(exc, UnreadableSubmission) else f"{type(exc).__name__}: {exc}"
        return all_zero(short(f"unreadable notebook: {detail}"))
    try:
        with tempfile.TemporaryDirectory(prefix="coursekit-grade-") as tmp:
            run_path = Path(tmp) / f"{reference.name}.ipynb"
            run_path.write_text(text, encoding="utf-8")
            run = run_notebook(run_path, cell_timeout=cell_timeout, notebook_timeout=notebook_timeout,
                               executed_path=executed_path, env=dict(GRADING_ENV, **kernel_cache.grading_env()),
                               reports_path=reports_path)
    except Exception as exc:  # one odd submission must not stop the grading of the class
        return all_zero(f"grader error: {type(exc).__name__}: {exc}"[:200])
    scores = []
    for cell in reference.cells:
        if where[cell.id] is None:
            scores.append(Score(student, reference.name, cell.id, 0, cell.points, "missing graded cell",
                                run.protection))
            continue
        outcome = run.outcome(where[cell.id])
        scores.append(Score(student, reference.name, cell.id, cell.points if outcome.passed else 0,
                            cell.points, outcome.reason, run.protection))
    return scores


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

    The warnings also list each non-graded cell that names the grading mechanism
    (:mod:`coursekit.course.grading.scrutiny`): a hint for a person, never a change of score.
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
    return scores, [one_line(w) for w in warnings + _scrutiny(tasks)]    # printed and written to grades.md


def _scrutiny(tasks) -> list[str]:
    """Cells that name the grading mechanism, for a person to read (:mod:`.scrutiny`)."""
    warnings = []
    for student, ref, path in tasks:
        try:
            # the notebook as it runs: a cell dressed up as graded with an unknown id runs as ordinary code
            warnings += warnings_for(f"{student}/{ref.name}", restore_graded(read_submission(path), ref)[0]) \
                if path else []
        except Exception:                 # unreadable: already scored 0 with its reason
            pass
    return warnings


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
