"""Grade a folder of student submissions against the reference notebooks.

For every (student, notebook) pair the grader

1. finds the submission (``SUBMISSIONS/<student>/<NN_name>.ipynb`` or the flat
   ``SUBMISSIONS/<student>__<NN_name>.ipynb``; a renamed copy such as ``05_logreg-Copy1.ipynb`` is
   matched by its ``NN_`` prefix when that is unambiguous);
2. restores every graded cell from the reference notebook (see :func:`restore_graded`), so that a
   student cannot win points by editing or weakening a check;
3. runs the result with :func:`coursekit.course.runner.run_notebook`: its own process, a fresh
   temporary working directory, ``COURSEKIT_SIZE=small``, per-cell and per-notebook time limits,
   errors allowed so that one failure does not hide the later cells;
4. scores each graded cell: its points if it ran without error, otherwise 0 and the reason.

The reference is normally ``exercises/``: its graded cells are identical to those of
``solutions/`` (the generator guarantees it) and it is what the students were given.

Each run is isolated with the operating system's tools where the machine offers them (bubblewrap,
cgroups, resource limits: see :mod:`coursekit.course.sandbox`); the score table says, per row,
which protections the run had, and the Markdown summary lists what was and was not enforced.
"""

from __future__ import annotations

import copy
import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .graded import GRADED_TAG, METADATA_KEY, GradedCell, graded_cells, is_graded
from .report import number
from .runner import kill_all, run_notebook, short
from .scrutiny import warnings_for

FLAT_SEPARATOR = "__"
# Grading runs CUDA kernels with the emulator's bounds checking (AddressSanitizer in a subprocess,
# exact-size buffers): an off-by-one that the unchecked mode's buffer slack would hide costs its
# task the points, and an out-of-bounds write cannot kill the kernel and zero the later tasks.
# About 2 s more for exercise 7's solution on the development machine. An instructor's own
# COURSEKIT_CUDA_CHECK wins.
GRADING_ENV = {"COURSEKIT_CUDA_CHECK": os.environ.get("COURSEKIT_CUDA_CHECK", "memory")}
PREFIX_RE = re.compile(r"^(\d+)_")
SUBMISSION_LIMIT_MB = int(os.environ.get("COURSEKIT_GRADE_NOTEBOOK_MB", "64"))   # the notebook file itself


@dataclass(frozen=True)
class Score:
    """One row of the score table: one graded cell of one student's notebook."""

    student: str
    notebook: str
    cell_id: str
    points: float
    max_points: float
    reason: str
    protection: str = ""     # what isolated the run (see coursekit.course.sandbox), "" if never run


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


def find_submissions(submissions_dir, references: list[Reference]):
    """Map each student to ``{reference name: submission path}``; also return warnings.

    Students are the sub-folders of ``submissions_dir`` plus the ``<student>__`` prefixes of flat
    files. Files that match no reference are reported in the warnings, never silently graded.
    """
    submissions_dir = Path(submissions_dir)
    if not submissions_dir.is_dir():
        raise FileNotFoundError(f"submissions folder {submissions_dir} does not exist.")
    names = [ref.name for ref in references]
    found: dict[str, list[Path]] = {}
    warnings: list[str] = []
    for entry in sorted(submissions_dir.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            files = [p for p in sorted(entry.rglob("*")) if p.is_file() and ".ipynb_checkpoints" not in p.parts
                     and not any(part.startswith(".") for part in p.relative_to(entry).parts)]
            found.setdefault(entry.name, []).extend(p for p in files if p.suffix == ".ipynb")
            others = [str(p.relative_to(entry)) for p in files if p.suffix != ".ipynb"]
            if others:
                shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
                warnings.append(f"{entry.name}: ignored {len(others)} non-notebook file"
                                f"{'s' if len(others) > 1 else ''}: {shown}")
        elif entry.suffix == ".ipynb" and FLAT_SEPARATOR in entry.stem:
            found.setdefault(entry.stem.split(FLAT_SEPARATOR, 1)[0], []).append(entry)
        else:
            warnings.append(
                f"ignored {entry.name}: expected a folder per student or <student>{FLAT_SEPARATOR}<NN_name>.ipynb"
            )
    students = {}
    for student, files in found.items():
        students[student] = {}
        # Exact names first, so that 05_logreg.ipynb wins over 05_logreg-Copy1.ipynb.
        for path in sorted(files, key=lambda p: (_exact(_notebook_name(p), names) is None, str(p))):
            name = _match(_notebook_name(path), names)
            if name is None:
                warnings.append(f"{student}: ignored {path.name}: it matches no reference notebook ({', '.join(names)})")
            elif name in students[student]:
                warnings.append(
                    f"{student}: two submissions for {name} ({students[student][name].name}, {path.name}); "
                    f"graded {students[student][name].name}"
                )
            else:
                students[student][name] = path
    return students, warnings


def reference_for(path, references: list[Reference]) -> Reference | None:
    """The reference the submission file ``path`` is graded against, or None: the rules of
    :func:`find_submissions` for one file (flat ``<student>__`` names, pre-rename names such as
    ``05_logreg.ipynb``, an unambiguous ``NN_`` prefix). Public for the pytest plugin."""
    name = _match(_notebook_name(Path(path)), [ref.name for ref in references])
    return next((ref for ref in references if ref.name == name), None)


def _notebook_name(path: Path) -> str:
    stem = path.stem
    return stem.split(FLAT_SEPARATOR, 1)[1] if FLAT_SEPARATOR in stem else stem


def _exact(stem: str, names: list[str]) -> str | None:
    """The reference named ``stem``, or ``stem_exercises`` (``01_tour`` is the pre-rename name)."""
    for name in (stem, f"{stem}_exercises"):
        if name in names:
            return name
    return None


def _match(stem: str, names: list[str]) -> str | None:
    """Exact name first; else the unique reference with the same ``NN_`` number prefix."""
    exact = _exact(stem, names)
    if exact:
        return exact
    prefix = PREFIX_RE.match(stem)
    if prefix:
        same = [name for name in names if name.startswith(prefix.group(0))]
        if len(same) == 1:
            return same[0]
    return None


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
    path = Path(path)
    if path.is_symlink():
        raise UnreadableSubmission("the file is a symbolic link: hand in the notebook itself")
    size = path.stat().st_size
    if size > SUBMISSION_LIMIT_MB * 2**20:
        raise UnreadableSubmission(f"the file has {size / 2**20:.0f} MB, over the grader's {SUBMISSION_LIMIT_MB} MB: "
                         "clear its outputs (Edit > Clear Outputs of All Cells), save and hand it in again")
    nb = nbformat.read(path, as_version=4)
    for index, cell in enumerate(nb.cells):
        if not isinstance(cell.get("source"), str) or (cell.get("cell_type") == "code" and "outputs" not in cell):
            raise UnreadableSubmission(f"cell {index} is not a valid notebook cell (source or outputs missing): "
                             "open the notebook in Jupyter, save it and hand it in again")
    return nb


def grade_notebook(path, reference, *, student: str = "student", cell_timeout=60, notebook_timeout=600,
                   executed_path=None) -> list[Score]:
    """Grade one notebook against its reference: one :class:`Score` per graded cell of the reference.

    This is the stable entry point for anything that grades (the ``grade`` command, a pytest
    plugin): ``path`` is the submission (None: not handed in), ``reference`` a :class:`Reference`
    or the path of the reference notebook. It reads the submission (an unreadable file scores 0
    with the reason), restores every graded cell from the reference (:func:`restore_graded`),
    runs the result with :func:`coursekit.course.runner.run_notebook` in a fresh temporary folder
    with the grading environment (:data:`GRADING_ENV`: CUDA bounds checking) inside this machine's
    sandbox, and scores each graded cell: its points when it passed — for a cell written with
    :func:`coursekit.course.check.graded_check`, when the grader's judge accepted what it reported —
    otherwise 0 and the reason. ``executed_path`` keeps the executed notebook for reading. Never
    raises for what the submission does.
    """
    if not isinstance(reference, Reference):
        reference = load_reference(reference)

    def all_zero(reason):
        return [Score(student, reference.name, c.id, 0, c.points, reason) for c in reference.cells]

    if path is None:
        return all_zero("missing notebook")
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
                               executed_path=executed_path, env=GRADING_ENV)
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
          executed_dir=None, progress=True):
    """Grade every student's notebooks; return ``(scores, warnings)``, scores in table order.

    The warnings also list each non-graded cell that names the grading mechanism
    (:mod:`coursekit.course.scrutiny`): a hint for a person, never a change of score.

    Runs up to ``jobs`` notebooks at once (each in its own process, so threads suffice here).
    """
    references = load_references(reference_dir)
    students, warnings = find_submissions(submissions_dir, references)
    tasks = [(student, ref, students[student].get(ref.name)) for student in sorted(students) for ref in references]
    results = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool, _Progress(len(tasks), progress) as bar:
        futures = {
            pool.submit(grade_one, student, ref, path, cell_timeout=cell_timeout,
                        notebook_timeout=notebook_timeout, executed_dir=executed_dir): (student, ref.name)
            for student, ref, path in tasks
        }
        try:
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                bar.finished("/".join(futures[future]), results[futures[future]])
        except KeyboardInterrupt:
            for future in futures:
                future.cancel()
            kill_all()
            raise
    scores = [score for student, ref, _ in tasks for score in results[(student, ref.name)]]
    for student, ref, path in tasks:      # cells that name the grading mechanism: for a person to read
        try:
            warnings += warnings_for(f"{student}/{ref.name}", read_submission(path)) if path else []
        except Exception:                 # unreadable: already scored 0 with its reason
            pass
    return scores, warnings


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
            self.bar.set_postfix_str(label, refresh=False)
            self.bar.update()
        elif self.enabled:
            got, out_of = sum(s.points for s in scores), sum(s.max_points for s in scores)
            # a notebook the student never handed in is counted, not run: say so rather than "graded"
            missing = bool(scores) and all(s.reason == "missing notebook" for s in scores)
            what = f"missing {label} (not handed in)" if missing else f"graded {label}"
            print(f"{what}: {number(got)}/{number(out_of)} [{self.done}/{self.total} notebooks]",
                  file=self.stream, flush=True)
