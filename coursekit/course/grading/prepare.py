"""A submission from file to runnable notebook: bounded before it is parsed, parsed only in its run.

A notebook of 500,000 empty cells (22 MB) took the grader's own process to 1.5 GB and a two-student
class from 30 s to 414 s: it was parsed, validated, deep-copied and written again in the grader,
which every student of the class shares and no cgroup limits, and parsed once more for the warnings.
So the work is split in two:

* in the grader, :func:`scan` reads the raw bytes in 1 MB pieces (never the whole file at once, never
  a parse) and refuses, with a reason the student can act on, a file over the size cap or with more
  cells than :data:`CELL_LIMIT` (counted as ``"cell_type"`` keys: inside a JSON string a quote is
  escaped, so only keys and plain string values match, and the count is an upper bound);
* in the run's child, inside the run's cgroup and limits (:mod:`coursekit.course.grading.execute`),
  :func:`prepare` parses the notebook once, refuses sources larger than :data:`SOURCE_LIMIT_MB` in
  all, restores the graded cells from the reference (:func:`restore_graded`), writes the notebook
  that runs and lists the cells that name the grading mechanism (:mod:`.scrutiny`). A notebook
  that costs more than its run's memory ends its own run, never the grader.
"""

from __future__ import annotations

import copy
import os
import sys

from ..authoring.graded import GRADED_TAG, METADATA_KEY, graded_cells, is_graded
from .scrutiny import warnings_for
from .submissions import open_submission, read_bytes

SUBMISSION_LIMIT_MB = int(os.environ.get("COURSEKIT_GRADE_NOTEBOOK_MB", "64"))   # the file itself
CELL_LIMIT = int(os.environ.get("COURSEKIT_GRADE_CELLS", "5000"))              # cells of one notebook
SOURCE_LIMIT_MB = int(os.environ.get("COURSEKIT_GRADE_SOURCE_MB", "8"))        # all cells' sources together
WARNINGS_LIMIT = 50            # scrutiny lines kept per notebook (one per cell naming the grader)
KEY = b'"cell_type"'


class UnreadableSubmission(ValueError):
    """A submission the grader will not read; the message says why and what the student can do."""


def scan(path, limit_mb: int | None = None, cell_limit: int | None = None) -> None:
    """Refuse ``path`` before any parse: a link, not a regular file, over ``limit_mb`` megabytes,
    or more than ``cell_limit`` cells. Reads 1 MB at a time; raises :class:`UnreadableSubmission`."""
    limit = (SUBMISSION_LIMIT_MB if limit_mb is None else limit_mb) * 2**20
    cell_limit = CELL_LIMIT if cell_limit is None else cell_limit
    try:
        with open_submission(path, limit) as handle:
            _count_cells(handle, cell_limit)
    except UnreadableSubmission:
        raise
    except ValueError as exc:                      # what open_submission refuses, in the grader's words
        raise UnreadableSubmission(str(exc)) from None


def _count_cells(handle, cell_limit: int) -> None:
    """Count the cells' ``"cell_type"`` keys in the raw bytes, 1 MB at a time, without parsing."""
    cells, tail = 0, b""
    while chunk := handle.read(2**20):
        piece = tail + chunk
        cells += piece.count(KEY)
        tail = piece[-(len(KEY) - 1):]      # a key cut in two is counted in the next piece, once
        if cells > cell_limit:
            raise UnreadableSubmission(
                f"the notebook has more than {cell_limit} cells, the grader's limit (COURSEKIT_GRADE_CELLS): "
                "delete the empty and scratch cells, save and hand it in again")


def parse(data: bytes):
    """The notebook in ``data``, or :class:`UnreadableSubmission` naming what is wrong: not a
    notebook, a cell Jupyter would not write (a code cell without ``outputs``), sources over
    :data:`SOURCE_LIMIT_MB` megabytes together."""
    sys.modules.setdefault("rfc3987_syntax", None)   # see coursekit.course.grading.execute_imports
    import nbformat

    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception as exc:  # noqa: BLE001 -- whatever makes a notebook unreadable scores it 0 with the reason
        raise UnreadableSubmission(f"{type(exc).__name__}: {exc}") from None
    total = 0
    for index, cell in enumerate(nb.cells):
        if not isinstance(cell.get("source"), str) or (cell.get("cell_type") == "code" and "outputs" not in cell):
            raise UnreadableSubmission(f"cell {index} is not a valid notebook cell (source or outputs missing): "
                                       "open the notebook in Jupyter, save it and hand it in again")
        total += len(cell["source"])
        if total > SOURCE_LIMIT_MB * 2**20:
            raise UnreadableSubmission(f"the cells' sources have more than {SOURCE_LIMIT_MB} MB together, the "
                                       "grader's limit (COURSEKIT_GRADE_SOURCE_MB): hand in the notebook without "
                                       "the pasted data")
    return nb


def read_submission(path, limit_mb: int | None = None):
    """The student's notebook read and parsed (:func:`scan`'s refusals, then :func:`parse`'s)."""
    scan(path, limit_mb)
    try:
        data = read_bytes(path, (SUBMISSION_LIMIT_MB if limit_mb is None else limit_mb) * 2**20)
    except ValueError as exc:
        raise UnreadableSubmission(str(exc)) from None
    return parse(data)


def _placements(nb, reference_nb, cells) -> dict[str, int]:
    """Where each reference graded cell is in ``nb``: by its coursekit id, else its notebook cell
    id, else identical source; one cell per graded id and one graded id per cell."""
    placed: dict[str, int] = {}
    taken: set[int] = set()
    ids = {c.id for c in cells}
    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get(METADATA_KEY)
        if isinstance(meta, dict) and meta.get("id") in ids and meta["id"] not in placed and index not in taken:
            placed[meta["id"]] = index
            taken.add(index)
    for graded in cells:
        notebook_id = reference_nb.cells[graded.index].get("id")
        for index, cell in enumerate(nb.cells):
            if graded.id in placed:
                break
            if index not in taken and ((notebook_id and cell.get("id") == notebook_id)
                                       or cell.get("source") == graded.source):
                placed[graded.id] = index
                taken.add(index)
    return placed


def restore_graded(submission, reference_nb, cells=None):
    """Return ``(notebook, {graded id: cell index or None})`` with every graded cell restored.

    A reference graded cell is located in the submission by :func:`_placements`; the cell found is
    replaced by a code cell with the reference's source and metadata, whatever the student did to it
    (edited, turned into Markdown, retagged). Graded-looking cells with unknown ids lose their markers
    and run as ordinary cells. A graded cell that cannot be found maps to None: it scores nothing.
    """
    import nbformat

    cells = graded_cells(reference_nb) if cells is None else cells
    nb = copy.deepcopy(submission)
    placed = _placements(nb, reference_nb, cells)
    by_index = {index: cell_id for cell_id, index in placed.items()}
    reference_cells = {c.id: reference_nb.cells[c.index] for c in cells}
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
            cell.metadata["tags"] = [tag for tag in cell.metadata.get("tags", []) if tag != GRADED_TAG]
    return nb, {c.id: placed.get(c.id) for c in cells}


def prepare(submission, reference, label: str, target) -> dict:
    """In the run's child: read and parse ``submission``, restore its graded cells from the
    ``reference`` notebook file, write the notebook that runs to ``target``; return ``{"where":
    {graded id: index or None}, "warnings": [...]}`` (at most :data:`WARNINGS_LIMIT` lines).
    Raises :class:`UnreadableSubmission` with the student's reason."""
    import nbformat

    nb, where = restore_graded(read_submission(submission), nbformat.read(reference, as_version=4))
    nbformat.write(nb, target)
    warnings = warnings_for(label, nb)
    if len(warnings) > WARNINGS_LIMIT:
        warnings = warnings[:WARNINGS_LIMIT] + [f"{label}: {len(warnings) - WARNINGS_LIMIT} more cells name the "
                                                "grading mechanism (not listed)"]
    return {"where": where, "warnings": warnings}
