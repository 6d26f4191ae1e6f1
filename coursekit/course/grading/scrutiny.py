"""Cells for a person to read: a student's own code that names the grading mechanism.

The probe/judge split (:mod:`coursekit.course.student.check`) keeps the comparison out of the student's
kernel, but the observations remain the student's process's word: a notebook that sets out to
forge them reaches for the machinery — the report folder's environment variables,
``graded_check``, IPython's input transformers and event hooks, the runner's event log, another
process's ``/proc`` entry. The grader lists every non-graded code cell whose source names one of
these, as a warning in ``grades.md``, so that an instructor knows which notebooks to open.

It is a hint, not a defence: it changes no score, and code that builds the names from pieces
(``getattr``, string concatenation, ``exec`` of encoded text) is not seen. Graded cells are left
out (the grader restores them from the reference, and they name ``graded_check`` themselves), and
no course notebook's own cells name any of these (tests/course/grading/test_course_scrutiny.py keeps it so), so an
untouched exercise is never listed.
"""

from __future__ import annotations

import re

from ..authoring.graded import is_graded

#: what a cell's source is searched for: a name, and the pattern that finds it
GRADING_NAMES = {
    "COURSEKIT_REPORT": r"COURSEKIT_REPORT",                    # a grading run's report folder and nonce
    "graded_check": r"graded_check",                            # the probe/judge mechanism
    "coursekit.course": r"coursekit\.course(?:\.(?:student|grading))?(?:\.| +import +)(?:check|judge|grader|runner|sandbox)\b",
    "input_transformers": r"input_transformers",                # IPython: rewrite cells before they run
    "ast_transformers": r"ast_transformers",
    "events.register": r"events\.register",                     # IPython: run code around every cell
    "events.jsonl": r"events\.jsonl",                          # the runner's event log
    "/proc/": r"/proc/",                                        # other processes' command lines and files
}
_PATTERNS = {name: re.compile(pattern) for name, pattern in GRADING_NAMES.items()}


def names_in(source: str) -> list[str]:
    """The grading names that ``source`` mentions, in :data:`GRADING_NAMES` order."""
    return [name for name, pattern in _PATTERNS.items() if pattern.search(source)]


def cells_naming_the_grader(notebook) -> list[tuple[int, list[str]]]:
    """``(cell index, names)`` for each non-graded code cell of ``notebook`` that names the mechanism."""
    return [(index, names) for index, cell in enumerate(notebook.cells)
            if cell.cell_type == "code" and not is_graded(cell) and (names := names_in(cell.source))]


def warnings_for(label: str, notebook) -> list[str]:
    """One line per such cell, for the Warnings section of grades.md (``label``: ``student/notebook``)."""
    lines = []
    for index, names in cells_naming_the_grader(notebook):
        first = next((line.strip() for line in notebook.cells[index].source.splitlines() if line.strip()), "")
        first = first if len(first) <= 60 else first[:57] + "..."
        lines.append(f"{label}: code cell {index + 1} (`{first}`) names {', '.join(names)} — read it before trusting "
                     f"this notebook's points (this note changes no score)")
    return lines
