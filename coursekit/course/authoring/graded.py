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
notebook and stable across edits of the notebook (letters, digits, ``-`` and ``_``, as nbgrader
requires). Points must be positive.

:func:`mark_notebook` derives everything else from that metadata, so that a person sees what a
tag alone does not show (JupyterLab 4 has no "show cell tags" view) and nbgrader reads the same
notebook as coursekit does:

* the first line of a graded cell says it is graded, its task, id and points, and "do not edit";
* its last line prints one uniform pass line, reached only when every check above it passed;
* ``metadata.nbgrader`` as nbgrader's schema version 3 writes it: graded cells are nbgrader
  "autograder tests" (``grade``, ``locked``, ``points``), code cells holding a solution region are
  nbgrader "solution" cells. ``### BEGIN SOLUTION`` / ``### END SOLUTION`` are nbgrader's own
  markers, so an instructor can put ``solutions/`` into nbgrader's ``source/`` as it is.

A graded cell must not contain a solution region: it is the same in ``solutions/`` and
``exercises/``, and it must fail in the exercise notebook because the student's code is missing, not
because the check itself was stubbed out.

**Verdicts the student's kernel cannot forge.** A graded cell runs in the student's kernel, after
the student's own cells: code there can rewrite the cell before it runs (an IPython input
transformer), replace the functions it calls (``np.allclose``, coursekit), or write whatever the
runner reads from the kernel. So a graded cell should be written as a *probe* and a *judge* with
:func:`coursekit.course.student.check.graded_check` (the call names the cell's id)::

    def inputs(rng, small): ...      # the check's data from a seeded generator
    def probe(**inputs): ...         # calls the student's code; returns observations (plain data)
    def judge(**inputs_and_observations): ...   # asserts against its own reference
    graded_check("running-mean", inputs, probe, judge, seed=1101)

In JupyterLab the three run in the kernel and the cell asserts and prints its PASSED line as
before. When grading, the kernel also writes the observations in a safe format (``.npy`` arrays and
JSON, never a pickle) and the grader's own process re-runs ``inputs`` and ``judge`` from the
*reference* source on them (:mod:`coursekit.course.grading.judge`); its verdict is the grade, and a cell
that reported nothing in the run scores 0 whatever the kernel says. The inputs come from a seed new
in every grading run. What stays forgeable — the observations themselves, which the student's
process reports — is spelled out in :mod:`coursekit.course.student.check`. A graded cell written with
plain asserts still works, but it judges itself inside the kernel, where all of the above can fool
it. The judge sees only the cell's own names: import what ``inputs`` and
``judge`` use inside the cell; the probe may use anything the notebook defined.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from numbers import Real

from .regions import ANY_MARKER_RE, ExerciseError, find_regions

GRADED_TAG = "graded"
METADATA_KEY = "coursekit"
NBGRADER_KEY = "nbgrader"
NBGRADER_SCHEMA_VERSION = 3
GRADE_ID_RE = re.compile(r"^[A-Za-z0-9_\-]+$")   # nbgrader's grade_id pattern (non-empty)
HEADER_PREFIX = "# GRADED"
PASS_PREFIX = 'print("PASSED '
TASK_RE = re.compile(r"^#+\s*(?:Task\s+)?(\d+)\b", re.MULTILINE)   # "## Task 2 — ..." or "## 2. ..."


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
    problems: list[str] = []
    seen: dict[str, int] = {}
    count = 0
    for index, cell in enumerate(nb.cells):
        if not is_graded(cell):
            continue
        count += 1
        where = f"{name}, cell {index}"
        meta = cell.metadata.get(METADATA_KEY)
        problems += _marking_problems(cell, where)
        if not isinstance(meta, dict):
            continue
        cell_id = meta.get("id")
        problems += _id_problems(cell_id, where, seen, index)
        points = meta.get("points")
        if isinstance(points, bool) or not isinstance(points, Real) or not points > 0:
            problems.append(
                f"{where}: metadata.{METADATA_KEY}.points must be a positive number, got {points!r}."
            )
        problems += _source_problems(cell.source, cell_id, where)
    if require_graded and count == 0:
        problems.append(
            f"{name}: has no graded cell; tag at least one check cell '{GRADED_TAG}' with "
            f'metadata.{METADATA_KEY} = {{"id": ..., "points": ...}}.'
        )
    return problems


def _marking_problems(cell, where: str) -> list[str]:
    """A graded cell is a code cell with both the tag and the metadata dict."""
    problems = []
    if cell.cell_type != "code":
        problems.append(f"{where}: graded cell is a {cell.cell_type} cell; only code cells can be graded.")
    if GRADED_TAG not in cell.metadata.get("tags", []):
        problems.append(
            f"{where}: has '{METADATA_KEY}' metadata but no '{GRADED_TAG}' tag; add the tag "
            f"(or remove the metadata if the cell is not graded)."
        )
    if not isinstance(cell.metadata.get(METADATA_KEY), dict):
        problems.append(
            f"{where}: tagged '{GRADED_TAG}' but has no metadata.{METADATA_KEY} = "
            '{"id": ..., "points": ...}; add it (JupyterLab: Property Inspector → cell metadata).'
        )
    return problems


def _id_problems(cell_id, where: str, seen: dict[str, int], index: int) -> list[str]:
    """The id is a non-empty nbgrader grade_id, unique in the notebook (``seen`` records it)."""
    if not isinstance(cell_id, str) or not cell_id.strip():
        return [f"{where}: metadata.{METADATA_KEY}.id must be a non-empty string, got {cell_id!r}."]
    if not GRADE_ID_RE.match(cell_id):
        return [f"{where}: graded id {cell_id!r} may hold only letters, digits, '-' and '_' (nbgrader's "
                f"grade_id rule); rename it, e.g. {re.sub(r'[^A-Za-z0-9_-]+', '-', cell_id)!r}."]
    if cell_id in seen:
        return [f"{where}: graded id {cell_id!r} is already used by cell {seen[cell_id]}; ids must be unique "
                f"within a notebook."]
    seen[cell_id] = index
    return []


def _source_problems(source: str, cell_id, where: str) -> list[str]:
    """The cell asserts something, checks under its own id, and holds no solution region."""
    problems = []
    if not source.strip():
        problems.append(f"{where}: graded cell is empty; it must assert something.")
    elif "graded_check(" in source and isinstance(cell_id, str) and not re.search(
            r"graded_check\(\s*[\"']" + re.escape(cell_id) + r"[\"']", source):
        problems.append(f"{where}: the cell calls graded_check with another id than its own; write "
                        f"graded_check({cell_id!r}, inputs, probe, judge, seed=...).")
    try:
        regions = find_regions(source, where=where)
    except ExerciseError as exc:
        problems.append(str(exc))
    else:
        if regions:
            problems.append(
                f"{where}: graded cell {cell_id!r} contains a solution region; move the student's "
                f"part to a cell above it (graded cells must be identical in solutions and exercises)."
            )
    return problems


# --- marks for people and for nbgrader -----------------------------------------------------------


def _points_text(points) -> str:
    value = int(points) if float(points).is_integer() else points
    return f"{value} point" + ("" if value == 1 else "s")


def _label(task: str | None, cell_id: str, points) -> str:
    return " · ".join(part for part in (task, cell_id, _points_text(points)) if part)


def header_line(task: str | None, cell_id: str, points) -> str:
    """The first line of a graded cell, e.g. ``# GRADED · Task 1 · running-mean · 2 points · ...``."""
    return f"{HEADER_PREFIX} · {_label(task, cell_id, points)} · do not edit: grading puts this cell back"


def pass_line(task: str | None, cell_id: str, points) -> str:
    """The last line of a graded cell: printed only when every check above it passed."""
    return f'{PASS_PREFIX}· {_label(task, cell_id, points)}")'


def nbgrader_metadata(kind: str, grade_id: str, points=None) -> dict:
    """``metadata.nbgrader`` as nbgrader (schema 3) marks an autograder test or a solution cell."""
    meta = {"grade": kind == "graded", "grade_id": grade_id, "locked": kind == "graded",
            "schema_version": NBGRADER_SCHEMA_VERSION, "solution": kind == "solution", "task": False}
    if kind == "graded":
        meta["points"] = points
    return meta


def _task_of(cells, index: int) -> str | None:
    """``Task N`` from the nearest Markdown heading above the cell, if there is one."""
    for cell in reversed(cells[:index]):
        if cell.cell_type == "markdown":
            found = TASK_RE.findall(cell.source)
            if found:
                return f"Task {found[-1]}"
    return None


def _with_marks(source: str, header: str, passed: str) -> str:
    lines = source.rstrip("\n").splitlines()
    if lines and lines[0].startswith(HEADER_PREFIX):
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and lines[-1].startswith(PASS_PREFIX):
        lines.pop()
    return "\n".join([header, *lines, passed])


def mark_notebook(nb) -> bool:
    """Give every graded and solution cell its marks (see the module docstring); True if anything changed.

    Idempotent, and derived only from the coursekit metadata and the solution markers, so running it
    again after an edit (``python -m coursekit exercises`` does) brings the marks back in line.
    Call it on a valid notebook (:func:`validate_notebook`).
    """
    changed = False
    for index, cell in enumerate(nb.cells):
        before = (cell.source, dict(cell.metadata))
        if is_graded(cell) and cell.cell_type == "code":
            meta = cell.metadata[METADATA_KEY]
            task = _task_of(nb.cells, index)
            cell.source = _with_marks(cell.source, header_line(task, meta["id"], meta["points"]),
                                      pass_line(task, meta["id"], meta["points"]))
            cell.metadata[NBGRADER_KEY] = nbgrader_metadata("graded", meta["id"], meta["points"])
        elif cell.cell_type == "code" and ANY_MARKER_RE.search(cell.source):
            grade_id = "solution-" + re.sub(r"[^A-Za-z0-9_-]+", "-", str(cell.get("id") or index))
            cell.metadata[NBGRADER_KEY] = nbgrader_metadata("solution", grade_id)
        elif NBGRADER_KEY in cell.metadata:
            old = cell.metadata[NBGRADER_KEY]
            if isinstance(old, dict) and (old.get("grade") or old.get("solution")):
                del cell.metadata[NBGRADER_KEY]   # a stale mark: this cell is no longer graded or a solution
        changed |= before != (cell.source, dict(cell.metadata))
    return changed
