"""The LMS's own gradebook file as the roster, and exports that the LMS imports into existing columns.

``coursekit grade DIR --from canvas|moodle --roster FILE --export canvas|moodle`` reads the file
the LMS gave the instructor and writes the same file back with the points filled in:

* **Canvas**: the gradebook export (*Grades → Export → Export Entire Gradebook*): ``Student, ID,
  SIS User ID, SIS Login ID, [Integration ID,] Section``, then a column per assignment named
  ``Name (assignment id)``, then computed totals; its second row is ``Points Possible``. Canvas's
  import matches a row to a student by its ids and a column to an assignment by that exact
  ``Name (id)``; a column it does not know becomes a *new* assignment. So the export keeps the
  roster's identity columns as they are, and names each exercise's column exactly like the
  gradebook's assignment it belongs to (:func:`assignment_columns`): a column that
  contains the exercise's number as a word (``Exercise 5 (12345)`` for ``05_…``) or its name's
  words; none or several is an error listing the columns, resolved with ``--lms-column 05="Name (id)"``.
* **Moodle**: the assignment's grading worksheet (*View all submissions → Grading action →
  Download grading worksheet*, needs the "Offline grading worksheet" feedback type): ``Identifier``
  (``Participant 123456``, the id in the download's folder names), ``Full name``, ``Email
  address`` …, ``Grade``, ``Maximum Grade``, ``Last modified (grade)``. Moodle's *Upload grading
  worksheet* needs ``Identifier``, ``Grade`` and ``Last modified (grade)`` (``mod/assign/feedback/
  offline/importgradeslib.php``), so the export is the worksheet itself with ``Grade`` filled: the
  total of the exercises graded in this run. (The course gradebook's export has no participant id,
  so it cannot be matched to a download; it is not read.)

Students of the roster who handed in nothing get a blank cell or 0, as ``--missing`` says (blank by
default, and the summary says so). A submission whose user id is not in the roster is graded, left
out of the export, and named in a warning. Every cell written passes through :func:`csv_cell`: the
roster is text others typed.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

from .escape import csv_cell
from .report import number

CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_NEEDED = ["Identifier", "Full name", "Grade", "Last modified (grade)"]
ASSIGNMENT_RE = re.compile(r"^(?P<title>.*\S)\s*\((?P<id>\d+)\)$")
MISSING = ("blank", "zero")


class RosterError(ValueError):
    """The roster cannot be used; the message names the file, the line and what was expected."""


@dataclass
class Roster:
    """A gradebook file as read: ``rows`` by user id (in the file's order), ``names`` by user id."""

    kind: str                                  # "canvas" or "moodle"
    path: Path
    header: list[str]
    rows: dict = field(default_factory=dict)
    names: dict = field(default_factory=dict)
    points_possible: list[str] = field(default_factory=list)    # Canvas's second row
    identity: int = 0                          # Canvas: how many identity columns (through Section)

    def assignments(self) -> list[str]:
        """Canvas's assignment columns (``Name (id)``), in the file's order."""
        return [h for h in self.header[self.identity:] if ASSIGNMENT_RE.match(h)]


def read_roster(path, kind: str) -> Roster:
    """Read a Canvas gradebook export or a Moodle grading worksheet (``kind``), or raise RosterError."""
    path = Path(path)
    if not path.is_file():
        raise RosterError(f"--roster {path}: no such file; download it from the LMS (see docs/teaching.md, "
                          f"'The LMS round trip')")
    with open(path, newline="", encoding="utf-8-sig") as handle:
        lines = list(csv.reader(handle))
    if not lines:
        raise RosterError(f"--roster {path}: the file is empty; expected the LMS's gradebook CSV")
    return _read_canvas(path, lines) if kind == "canvas" else _read_moodle(path, lines)


def _missing_columns(path, header, needed, what) -> None:
    absent = [name for name in needed if name not in header]
    if absent:
        raise RosterError(f"--roster {path}, line 1: no {', '.join(repr(a) for a in absent)} column; expected {what} "
                          f"(its header starts {', '.join(needed)}), found {', '.join(header[:8]) or 'nothing'}")


def _read_canvas(path: Path, lines: list) -> Roster:
    header = [h.strip() for h in lines[0]]
    _missing_columns(path, header, CANVAS_IDENTITY, "Canvas's gradebook export")
    roster = Roster("canvas", path, header, identity=header.index("Section") + 1)
    at = {name: header.index(name) for name in CANVAS_IDENTITY}
    for number_, row in enumerate(lines[1:], start=2):
        row = row + [""] * (len(header) - len(row))
        first, uid = row[0].strip(), row[at["ID"]].strip()
        if first == "Points Possible":
            roster.points_possible = row
        elif not uid:                          # Canvas's other header rows (e.g. its posting policy row)
            continue
        elif not uid.isdigit():
            raise RosterError(f"--roster {path}, line {number_}: ID {uid!r} is not a Canvas user id (digits)")
        else:
            roster.rows[uid] = row
            roster.names[uid] = first
    return roster


def _read_moodle(path: Path, lines: list) -> Roster:
    header = [h.strip() for h in lines[0]]
    _missing_columns(path, header, MOODLE_NEEDED, "Moodle's grading worksheet")
    roster = Roster("moodle", path, header)
    at = header.index("Identifier")
    for number_, row in enumerate(lines[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        row = row + [""] * (len(header) - len(row))
        found = re.search(r"(\d+)\s*$", row[at])
        if not found:
            raise RosterError(f"--roster {path}, line {number_}: Identifier {row[at]!r} does not end with a "
                              f"participant id (Moodle writes 'Participant 123456')")
        roster.rows[found.group(1)] = row
        roster.names[found.group(1)] = row[header.index("Full name")]
    return roster


def parse_overrides(entries) -> dict:
    """``["05=Lab 5 (123)"]`` -> ``{"05": "Lab 5 (123)"}``; a malformed entry is a RosterError."""
    result = {}
    for entry in entries or ():
        key, sep, column = entry.partition("=")
        if not sep or not key.strip() or not column.strip():
            raise RosterError(f"--lms-column {entry!r}: write NN=\"Assignment name (id)\", e.g. 05=\"Lab 5 (12345)\"")
        result[key.strip()] = column.strip()
    return result


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _fits(notebook: str, column: str, by_number: bool) -> bool:
    """True when a gradebook column's title names the exercise: its number as a word (``by_number``),
    else the words of its name (``logistic regression`` for ``05_logistic_regression``)."""
    words = _words(ASSIGNMENT_RE.match(column)["title"])
    stem = notebook.removesuffix("_exercises")
    prefix = re.match(r"^(\d+)_(.*)$", stem)
    if by_number:
        return bool(prefix) and any(w.isdigit() and int(w) == int(prefix.group(1)) for w in words)
    own = _words(prefix.group(2) if prefix else stem)
    return bool(own) and f" {' '.join(own)} " in f" {' '.join(words)} "


def _candidates(notebook: str, columns: list[str]) -> list[str]:
    """The columns naming ``notebook`` by number; if none does, those naming it by its words."""
    return [c for c in columns if _fits(notebook, c, True)] or [c for c in columns if _fits(notebook, c, False)]


def assignment_columns(roster: Roster, notebooks: list[str], overrides: dict) -> dict:
    """``{notebook: gradebook column}`` for Canvas, or a RosterError that lists the columns to choose from."""
    columns = roster.assignments()
    choice, problems = {}, []
    for notebook in notebooks:
        override = next((v for k, v in overrides.items() if notebook.startswith(k) or notebook == k), None)
        fitting = [override] if override else _candidates(notebook, columns)
        if override and override not in columns:
            problems.append(f"--lms-column {override!r} is not a column of {roster.path}")
        elif len(fitting) != 1:
            what = "no column" if not fitting else f"{len(fitting)} columns ({'; '.join(fitting)})"
            problems.append(f"{notebook}: {what} of {roster.path} names it")
        else:
            choice[notebook] = fitting[0]
    taken = [c for c in choice.values() if list(choice.values()).count(c) > 1]
    if taken:
        problems.append(f"two exercises would fill the same column {taken[0]!r}")
    if problems:
        raise RosterError("; ".join(problems) + f". The gradebook's assignments: {'; '.join(columns) or 'none'}. "
                          "Name each with --lms-column NN=\"Name (id)\" (Canvas makes a new assignment for any "
                          "column it does not know)")
    return choice


def missing_cell(policy: str) -> str:
    if policy not in MISSING:
        raise RosterError(f"--missing {policy!r}: choose blank or zero")
    return "" if policy == "blank" else "0"


def write_canvas(roster: Roster, columns: dict, points: dict, max_points: dict, path, missing: str) -> Path:
    """The roster's identity columns and each exercise's gradebook column, one row per roster student."""
    notebooks = list(columns)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(roster.header[:roster.identity] + [columns[n] for n in notebooks])
        possible = roster.points_possible or ["    Points Possible"]
        possible = possible + [""] * (len(roster.header) - len(possible))
        writer.writerow([csv_cell(c) for c in possible[:roster.identity]]
                        + [possible[roster.header.index(columns[n])] or number(max_points[n]) for n in notebooks])
        for uid, row in roster.rows.items():
            cells = [_points(points, uid, n, missing) for n in notebooks]
            writer.writerow([csv_cell(c) for c in row[:roster.identity]] + cells)
    return Path(path)


def write_moodle(roster: Roster, points: dict, notebooks: list[str], path, missing: str) -> Path:
    """The grading worksheet as read, with ``Grade`` the total of ``notebooks`` for each participant."""
    grade = roster.header.index("Grade")
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(roster.header)
        for uid, row in roster.rows.items():
            cells = [csv_cell(c) for c in row]
            handed_in = any((uid, n) in points for n in notebooks)
            cells[grade] = number(sum(points.get((uid, n), 0) for n in notebooks)) if handed_in \
                else missing_cell(missing)
            writer.writerow(cells)
    return Path(path)


def _points(points: dict, uid: str, notebook: str, missing: str) -> str:
    return number(points[uid, notebook]) if (uid, notebook) in points else missing_cell(missing)


def check(roster: Roster, students, notebooks: list[str], max_points: dict, columns: dict) -> list[str]:
    """Warnings about the round trip: submitters not in the roster, points possible that differ."""
    warnings = [f"user {uid} ({roster.kind} download) is not in the roster {roster.path}: graded, but left out "
                f"of the {roster.kind} export" for uid in students if uid not in roster.rows]
    if roster.kind == "canvas" and roster.points_possible:
        for notebook, column in columns.items():
            theirs = roster.points_possible[roster.header.index(column)].strip()
            if theirs and _float(theirs) != max_points[notebook]:
                warnings.append(f"{column} is worth {theirs} points in Canvas but {notebook} has "
                                f"{number(max_points[notebook])}: the points are written as graded")
    if roster.kind == "moodle" and "Maximum Grade" in roster.header:
        total = sum(max_points[n] for n in notebooks)
        theirs = {r[roster.header.index("Maximum Grade")].strip() for r in roster.rows.values()} - {""}
        if theirs and any(_float(t) != total for t in theirs):
            warnings.append(f"the worksheet's Maximum Grade is {', '.join(sorted(theirs))} but the exercises graded "
                            f"have {number(total)} points: the Grade column holds the points as graded")
    return warnings


def _float(text: str):
    try:
        return float(text)
    except ValueError:
        return None


def no_submission(roster: Roster, students) -> list[str]:
    """``["Name (uid)", ...]``: roster students with nothing handed in, in the roster's order."""
    return [f"{roster.names[uid]} ({uid})" for uid in roster.rows if uid not in students]
