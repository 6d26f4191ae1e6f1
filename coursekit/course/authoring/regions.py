"""Solution regions: the ``### BEGIN SOLUTION`` / ``### HINT:`` / ``### END SOLUTION`` markers of a solutions cell.

Both halves of the author's tools read them: :mod:`.exercises` replaces each region by a stub, and
:mod:`.graded` refuses a graded cell that holds one. So the parser sits below both.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

BEGIN_RE = re.compile(r"^(?P<indent>[ \t]*)###\s*BEGIN SOLUTION\s*$")
END_RE = re.compile(r"^[ \t]*###\s*END SOLUTION\s*$")
HINT_RE = re.compile(r"^[ \t]*###\s*HINT:\s?(?P<text>.*?)\s*$")
ANY_MARKER_RE = re.compile(r"###\s*(BEGIN SOLUTION|END SOLUTION|HINT:)")


class ExerciseError(ValueError):
    """A solutions notebook cannot be turned into an exercise (bad markers, invalid graded cells)."""


@dataclass(frozen=True)
class Region:
    """One solution region: line numbers (0-based, inclusive) of its markers, indentation, hint."""

    begin: int
    end: int
    indent: str
    hint: str | None


def find_regions(source: str, where: str = "cell") -> list[Region]:
    """Parse the solution regions of one cell's source; raise :class:`ExerciseError` on bad markers."""
    regions: list[Region] = []
    open_at: int | None = None
    indent = ""
    hints: list[str] = []
    for number, line in enumerate(source.splitlines()):
        begin = BEGIN_RE.match(line)
        if begin:
            if open_at is not None:
                raise ExerciseError(
                    f"{where}, line {number + 1}: '### BEGIN SOLUTION' inside the region opened on line "
                    f"{open_at + 1}; close it with '### END SOLUTION' first (regions cannot nest)."
                )
            open_at, indent, hints = number, begin.group("indent"), []
        elif END_RE.match(line):
            if open_at is None:
                raise ExerciseError(
                    f"{where}, line {number + 1}: '### END SOLUTION' without a matching '### BEGIN SOLUTION'."
                )
            regions.append(Region(open_at, number, indent, " ".join(hints) or None))
            open_at = None
        elif HINT_RE.match(line):
            if open_at is None:
                raise ExerciseError(
                    f"{where}, line {number + 1}: '### HINT:' outside a solution region; put it between "
                    f"'### BEGIN SOLUTION' and '### END SOLUTION'."
                )
            hints.append(HINT_RE.match(line).group("text"))
        elif ANY_MARKER_RE.search(line):
            raise ExerciseError(
                f"{where}, line {number + 1}: malformed marker {line.strip()!r}; markers must be alone on "
                f"their line: '### BEGIN SOLUTION', '### HINT: text', '### END SOLUTION'."
            )
    if open_at is not None:
        raise ExerciseError(
            f"{where}, line {open_at + 1}: '### BEGIN SOLUTION' is never closed; add '### END SOLUTION'."
        )
    return regions
