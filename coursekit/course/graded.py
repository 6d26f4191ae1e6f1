"""Graded cells: what they are, how to find them, and the rules they must follow.

A graded cell is a code cell that checks the student's work with ``assert`` statements against
references computed independently of the student's code. It is marked in the cell metadata, which
JupyterLab keeps when a student edits and saves the notebook::

    "metadata": {
        "tags": ["graded"],
        "coursekit": {"id": "softplus-matches-reference", "points": 2}
    }

The id is what the grader uses to restore the cell from the reference notebook (so that an edited
check cannot win points) and what appears in the score table, so it must be unique within its
notebook and stable across edits of the notebook. Points must be positive.

A graded cell must not contain a solution region: it is the same in ``solutions/`` and
``exercises/``, and it must fail in the exercise notebook because the student's code is missing, not
because the check itself was stubbed out.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

GRADED_TAG = "graded"
METADATA_KEY = "coursekit"


@dataclass(frozen=True)
class GradedCell:
    """One graded cell of a notebook: its position, id, points and (reference) source."""

    index: int
    id: str
    points: float
    source: str


def is_graded(cell) -> bool:
    """True when the cell carries the ``graded`` tag or coursekit grading metadata.

    Either marker counts, so that a half-marked cell is reported by the validator instead of being
    silently ignored.
    """
    tags = cell.get("metadata", {}).get("tags", [])
    return GRADED_TAG in tags or METADATA_KEY in cell.get("metadata", {})


def graded_cells(nb) -> list[GradedCell]:
    """The notebook's graded cells in order, without validating them (see :func:`validate_notebook`)."""
    found = []
    for index, cell in enumerate(nb.cells):
        if not is_graded(cell):
            continue
        meta = cell.metadata.get(METADATA_KEY, {})
        if not isinstance(meta, dict):
            meta = {}
        found.append(
            GradedCell(
                index=index,
                id=str(meta.get("id", "")),
                points=meta.get("points", 0),
                source=cell.source,
            )
        )
    return found


def validate_notebook(nb, name: str = "notebook", *, require_graded: bool = False) -> list[str]:
    """Check the graded-cell rules; return one readable message per problem (empty when valid).

    ``name`` is used in the messages (pass the notebook's path). ``require_graded`` makes a notebook
    without any graded cell an error: an exercise notebook with nothing to grade would make the
    "every graded cell fails on the stubs" test pass vacuously.
    """
    # Imported here so that graded.py has no import cycle with exercises.py.
    from .exercises import find_regions, ExerciseError

    problems: list[str] = []
    seen: dict[str, int] = {}
    count = 0
    for index, cell in enumerate(nb.cells):
        if not is_graded(cell):
            continue
        count += 1
        where = f"{name}, cell {index}"
        tags = cell.metadata.get("tags", [])
        meta = cell.metadata.get(METADATA_KEY)
        if cell.cell_type != "code":
            problems.append(f"{where}: graded cell is a {cell.cell_type} cell; only code cells can be graded.")
        if GRADED_TAG not in tags:
            problems.append(
                f"{where}: has '{METADATA_KEY}' metadata but no '{GRADED_TAG}' tag; add the tag "
                f"(or remove the metadata if the cell is not graded)."
            )
        if not isinstance(meta, dict):
            problems.append(
                f"{where}: tagged '{GRADED_TAG}' but has no metadata.{METADATA_KEY} = "
                '{"id": ..., "points": ...}; add it (JupyterLab: Property Inspector → cell metadata).'
            )
            continue
        cell_id = meta.get("id")
        if not isinstance(cell_id, str) or not cell_id.strip():
            problems.append(f"{where}: metadata.{METADATA_KEY}.id must be a non-empty string, got {cell_id!r}.")
        elif cell_id in seen:
            problems.append(
                f"{where}: graded id {cell_id!r} is already used by cell {seen[cell_id]}; ids must be unique "
                f"within a notebook."
            )
        else:
            seen[cell_id] = index
        points = meta.get("points")
        if isinstance(points, bool) or not isinstance(points, Real) or not points > 0:
            problems.append(
                f"{where}: metadata.{METADATA_KEY}.points must be a positive number, got {points!r}."
            )
        if not cell.source.strip():
            problems.append(f"{where}: graded cell is empty; it must assert something.")
        try:
            regions = find_regions(cell.source, where=where)
        except ExerciseError as exc:
            problems.append(str(exc))
        else:
            if regions:
                problems.append(
                    f"{where}: graded cell {cell_id!r} contains a solution region; move the student's "
                    f"part to a cell above it (graded cells must be identical in solutions and exercises)."
                )
    if require_graded and count == 0:
        problems.append(
            f"{name}: has no graded cell; tag at least one check cell '{GRADED_TAG}' with "
            f'metadata.{METADATA_KEY} = {{"id": ..., "points": ...}}.'
        )
    return problems
