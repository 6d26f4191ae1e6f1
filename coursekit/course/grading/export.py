"""Gradebook exports: Canvas and Moodle CSVs an instructor uploads as they are, and JSON for the rest.

``coursekit grade ... --export canvas,moodle,json`` writes, next to ``grades.csv``:

* ``grades-canvas.csv`` — Canvas's gradebook import layout: ``Student, ID, SIS User ID,
  SIS Login ID, Section``, then one column per exercise (its points), after a ``Points Possible``
  row. Canvas matches a row to a student by ``SIS Login ID`` here (the student's folder name, which
  the collection step names after the LMS login, see docs/teaching.md), so ``ID`` and ``SIS User ID``
  stay empty; a column whose name Canvas does not know becomes a new assignment on import.
* ``grades-moodle.csv`` — Moodle's *Import → CSV file* layout: ``Username`` then one column per
  exercise. On import, map ``Username`` to the user field the folder names are (username, email or
  ID number) and each exercise column to its grade item.
* ``grades.json`` — every student's points per exercise and per graded cell with the reasons, the
  exercises assigned and the grader's version, for any other system.

With ``--from canvas|moodle`` (an LMS download, students keyed by the LMS's user ids) the two CSVs
are what that LMS imports into its *existing* columns: with ``--roster`` the roster's own file
filled in (:mod:`.roster`: Canvas's gradebook columns ``Name (id)``, Moodle's grading worksheet), and
without it the LMS's layout keyed by the download's user ids (:func:`write_canvas_ids`,
:func:`write_moodle_worksheet`).

The points are per exercise notebook (the sum of its graded cells), only the exercises graded in
this run (``--assignment``). Cells are written as the score table's are: every text that came from a
submission (student names, reasons) is neutralised for spreadsheets by :func:`csv_cell`.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from . import roster as rosters
from .escape import csv_cell
from .report import number

FORMATS = ("canvas", "moodle", "json")
def parse_formats(spec: str | None) -> list[str]:
    """``"canvas,json"`` -> ``["canvas", "json"]``; an unknown name is a ValueError listing the known."""
    if not spec:
        return []
    names = [name.strip().lower() for name in spec.split(",") if name.strip()]
    unknown = [name for name in names if name not in FORMATS]
    if unknown:
        raise ValueError(f"--export {spec!r}: unknown format {', '.join(unknown)}; choose from {', '.join(FORMATS)} "
                         "(several separated by commas)")
    return list(dict.fromkeys(names))


def totals(scores):
    """``(students, notebooks, points, max_points)``: ``points[student, notebook]`` summed over cells,
    ``max_points[notebook]``; students and notebooks in table order."""
    students = list(dict.fromkeys(s.student for s in scores))
    notebooks = list(dict.fromkeys(s.notebook for s in scores))
    points: dict = {}
    max_points = dict.fromkeys(notebooks, 0.0)
    first = {}
    for s in scores:
        points[s.student, s.notebook] = points.get((s.student, s.notebook), 0.0) + s.points
        if first.setdefault(s.notebook, s.student) == s.student:
            max_points[s.notebook] += s.max_points
    return students, notebooks, points, max_points


def column_name(notebook: str) -> str:
    """The gradebook column of an exercise: ``05_logistic_regression`` (without ``_exercises``)."""
    return notebook.removesuffix("_exercises")


def _write_canvas_layout(scores, path, identity) -> Path:
    """Canvas's gradebook layout: its five identity columns (``identity(student)`` gives them), a
    "Points Possible" row, then one column per exercise."""
    students, notebooks, points, max_points = totals(scores)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] + [column_name(n) for n in notebooks])
        writer.writerow(["    Points Possible", "", "", "", ""] + [number(max_points[n]) for n in notebooks])
        for student in students:
            writer.writerow(identity(student) + [number(points[student, n]) for n in notebooks])
    return Path(path)


def write_canvas(scores, path) -> Path:
    return _write_canvas_layout(scores, path, lambda student: [csv_cell(student), "", "", csv_cell(student), ""])


def write_moodle(scores, path) -> Path:
    students, notebooks, points, _ = totals(scores)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Username"] + [column_name(n) for n in notebooks])
        for student in students:
            writer.writerow([csv_cell(student)] + [number(points[student, n]) for n in notebooks])
    return Path(path)


def as_json(scores, assigned=(), grader: str = "") -> dict:
    students, notebooks, points, max_points = totals(scores)
    cells: dict = {}
    for s in scores:
        cells.setdefault(s.student, {}).setdefault(s.notebook, {})[s.cell_id] = {
            "points": s.points, "max_points": s.max_points, "reason": s.reason,
            "submission_sha256": s.submission_sha256, "judge_sha256": s.judge_sha256, "grader_fault": s.grader_fault}
    return {
        "grader": grader,
        "assigned": list(assigned) or notebooks,
        "max_points": {n: max_points[n] for n in notebooks},
        "students": {
            student: {"total": sum(points[student, n] for n in notebooks),
                      "notebooks": {n: {"points": points[student, n], "cells": cells[student][n]} for n in notebooks}}
            for student in students},
    }


def write_canvas_ids(scores, names: dict, path) -> Path:
    """Canvas's layout for a Canvas download graded without its roster: ``ID`` is the user id from the
    download's file names (Canvas matches rows by it); the columns are new assignments to Canvas."""
    return _write_canvas_layout(scores, path, lambda uid: [csv_cell(names.get(uid, "")), csv_cell(uid), "", "", ""])


def write_moodle_worksheet(scores, names: dict, path) -> Path:
    """Moodle's grading-worksheet layout for a Moodle download graded without its worksheet:
    ``Identifier`` is ``Participant <id>`` from the download's folder names, ``Grade`` the total."""
    students, notebooks, points, max_points = totals(scores)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)"])
        for uid in students:
            writer.writerow([csv_cell(f"Participant {uid}"), csv_cell(names.get(uid, "")),
                             number(sum(points[uid, n] for n in notebooks)), number(sum(max_points.values())), ""])
    return Path(path)


def _write_lms(name: str, scores, path, lms) -> None:
    """One LMS format: the roster's own file filled in when there is a roster of that LMS, else the LMS's
    layout keyed by the download's user ids, else (a download of another kind) the plain layout."""
    if lms is not None and lms.roster is not None and lms.roster.kind == name:
        _, notebooks, points, max_points = totals(scores)
        if name == "canvas":
            rosters.write_canvas(lms.roster, lms.columns, points, max_points, path, lms.missing)
        else:
            rosters.write_moodle(lms.roster, points, notebooks, path, lms.missing)
    elif lms is not None and lms.source == name:
        (write_canvas_ids if name == "canvas" else write_moodle_worksheet)(scores, lms.names, path)
    else:
        (write_canvas if name == "canvas" else write_moodle)(scores, path)


def write_exports(scores, out_csv, formats, assigned=(), grader: str = "", lms=None) -> list[Path]:
    """Write each format of ``formats`` next to ``out_csv``; return the paths written. ``lms`` (an
    object with ``source``, ``roster``, ``columns``, ``names``, ``missing``: see the ``grade``
    command) makes the Canvas and Moodle files the ones that LMS imports into its existing columns."""
    out_csv = Path(out_csv)
    written = []
    for name in formats:
        if name == "json":
            path = out_csv.with_suffix(".json")
            path.write_text(json.dumps(as_json(scores, assigned, grader), indent=1, sort_keys=False) + "\n",
                            encoding="utf-8")
        else:
            path = out_csv.with_name(f"{out_csv.stem}-{name}.csv")
            _write_lms(name, scores, path, lms)
        written.append(path)
    return written
