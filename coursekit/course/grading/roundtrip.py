"""The ``grade`` command's LMS round trip: the scope a regrade reuses, the roster, what the export needs.

:mod:`coursekit.__main__` stays a thin command line; this module holds the steps around
:func:`coursekit.course.grading.grader.grade` that the LMS options add:

1. :func:`apply_scope` — a ``--regrade`` fills every scope option not given again from the scope
   stored next to the previous grades (:func:`coursekit.course.grading.regrade.reuse_scope`) and says what
   it reused; ``--assignment all`` widens a stored assignment to every exercise;
2. :func:`prepare` — reads the roster (:mod:`.roster`) and, for a Canvas export, names each
   exercise's gradebook column *before* any notebook runs, so a roster that cannot be matched costs
   seconds, not a class's grading time;
3. :func:`report` — after grading: submitters not in the roster, roster students with nothing handed
   in and what their cells get (``--missing``), points that differ from the gradebook's;
4. :func:`save` — the scope of this run, next to its grades.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import lms as downloads
from . import regrade, roster as rosters
from .assignment import select
from .export import totals
from .grader import load_references


@dataclass
class Lms:
    """What an export to an LMS needs: the download's kind, the roster, the columns, the names."""

    source: str | None
    roster: object = None                      # a roster.Roster, or None
    columns: dict = field(default_factory=dict)     # Canvas: {notebook: "Name (id)"}
    names: dict = field(default_factory=dict)       # {user id: name}
    missing: str = "blank"


def apply_scope(args) -> list[str]:
    """Fill ``args`` from the last run's scope when ``--regrade``; return what was reused (for the output)."""
    if args.regrade is not None:
        given = {key: getattr(args, key) for key in regrade.SCOPE_KEYS}
        merged, reused = regrade.reuse_scope(args.regrade or args.out, given)
        for key, value in merged.items():
            setattr(args, key, value)
    else:
        reused = []
    if args.assignment is not None and args.assignment.strip().lower() == "all":
        args.assignment = None
    args.reference = args.reference or "exercises"
    args.missing = args.missing or "blank"
    return reused


def prepare(args, formats: list[str]) -> Lms | None:
    """The LMS context of this run (None without ``--from``), checked before grading starts."""
    if args.roster and not args.source:
        raise rosters.RosterError("--roster needs --from canvas or --from moodle: the roster's user ids are that "
                                  "LMS's")
    if args.source is None:
        if args.lms_column:
            raise rosters.RosterError("--lms-column needs --from canvas and --roster (the Canvas gradebook export)")
        return None
    rosters.missing_cell(args.missing)                       # a bad --missing fails now, not after grading
    context = Lms(args.source, missing=args.missing)
    if args.roster:
        context.roster = rosters.read_roster(args.roster, args.source)
        context.names = dict(context.roster.names)
    if context.roster is not None and context.roster.kind == "canvas" and "canvas" in formats:
        assigned = [ref.name for ref in select(load_references(args.reference), args.assignment)]
        context.columns = rosters.assignment_columns(context.roster, assigned,
                                                     rosters.parse_overrides(args.lms_column))
    return context


def report(context: Lms | None, scores, download, formats=()) -> list[str]:
    """Warnings and lines about the round trip (printed and written to ``grades.md``)."""
    if context is None:
        return []
    students, notebooks, _, max_points = totals(scores)
    if context.roster is None:
        found = downloads.collect(download, context.source)[1]
        context.names = {uid: name for uid, name in found.items() if name}
        if context.source not in formats:
            return []
        return [f"no --roster: the {context.source} export is keyed by the download's user ids; its columns are "
                f"named after the exercises (pass the LMS's gradebook file as --roster to fill existing columns)"]
    lines = rosters.check(context.roster, students, notebooks, max_points, context.columns)
    absent = rosters.no_submission(context.roster, set(students))
    cell = "left blank (--missing zero writes 0)" if context.missing == "blank" else "0 (--missing zero)"
    if absent:
        lines.append(f"{len(absent)} students of the roster handed in nothing; their export cells are {cell}: "
                     f"{', '.join(absent)}")
    return lines


def save(args) -> None:
    """Store this run's scope next to its grades (absolute paths: a later regrade may run elsewhere)."""
    scope = {key: getattr(args, key) for key in regrade.SCOPE_KEYS}
    for key in ("roster", "reference"):
        if scope[key]:
            scope[key] = os.path.abspath(scope[key])
    regrade.save_scope(args.out, scope)
