"""Which exercises a grading run covers, and whether the folder it was given holds a class at all.

A term rarely assigns all ten exercises at once. ``coursekit grade ... --assignment 03,05`` grades
and totals only exercises 3 and 5: the score table has no columns, no ``missing notebook`` rows and
no points for the others, and the summary says which exercises were assigned. Notebooks a student
handed in for an exercise that was not assigned are listed as warnings, not graded.

:func:`check_class` turns the silent "graded 0 students" of an empty or wrong folder (the repository
root, ``exercises/``, a folder of loose notebooks) into an error that names the folder, says what it
holds and what layout the grader expected.
"""

from __future__ import annotations

import re
from pathlib import Path

NUMBER_RE = re.compile(r"^\d{1,3}$")


class AssignmentError(ValueError):
    """An ``--assignment`` entry that names no reference notebook, or a folder with no class in it."""


def select(references: list, spec: str | None) -> list:
    """The references named by ``spec`` (``"03,05"``, ``"3,5"``, ``"05_logistic_regression"`` or the
    notebook's full name), in reference order; all of them when ``spec`` is None or empty.

    Raises :class:`AssignmentError` naming every entry that matches nothing (or more than one
    notebook), with the names that would have worked.
    """
    if not spec or not spec.strip():
        return list(references)
    chosen, problems = [], []
    for entry in (part.strip() for part in spec.split(",")):
        if not entry:
            continue
        matches = [ref for ref in references if _names(entry, ref.name)]
        if len(matches) == 1:
            if matches[0] not in chosen:
                chosen.append(matches[0])
        else:
            problems.append(f"{entry!r} matches {'no' if not matches else len(matches)} reference notebooks")
    if problems or not chosen:
        available = ", ".join(ref.name for ref in references)
        raise AssignmentError(f"--assignment {spec!r}: {'; '.join(problems) or 'names no exercise'}. Give numbers "
                              f"(03,05) or names; the reference folder has: {available}")
    return [ref for ref in references if ref in chosen]


def _names(entry: str, name: str) -> bool:
    """True when ``entry`` (a number, ``NN_name`` or the full name) names the notebook ``name``."""
    if NUMBER_RE.match(entry):
        prefix = re.match(r"^(\d+)_", name)
        return bool(prefix) and int(prefix.group(1)) == int(entry)
    entry = entry.removesuffix(".ipynb")
    return name in (entry, f"{entry}_exercises")


def unassigned_warnings(students: dict, assigned: list, all_references: list) -> list[str]:
    """One warning per handed-in notebook of an exercise outside the assignment (it is not graded)."""
    keep = {ref.name for ref in assigned}
    warnings = []
    for student, found in sorted(students.items()):
        for name, path in sorted(found.items()):
            if name not in keep and not hasattr(path, "reason"):    # a Refused one is reported where graded
                warnings.append(f"{student}: not graded: {Path(path).name} ({name} is not in this assignment)")
    return warnings


def check_class(submissions_dir, students: dict, references: list, warnings: list[str]) -> None:
    """Raise :class:`AssignmentError` when ``submissions_dir`` holds no student with a notebook to grade.

    ``students`` is :func:`coursekit.course.grading.submissions.find_submissions`'s map restricted to the assigned
    ``references``; ``warnings`` what it ignored (shown, since they usually say what went wrong).
    """
    if any(found for found in students.values()):
        return
    folder = Path(submissions_dir)
    example = references[0].name
    expected = (f"expected one folder per student holding the exercise notebooks "
                f"({folder}/alice/{example}.ipynb) or flat files ({folder}/alice__{example}.ipynb)")
    entries = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
    if not entries:
        found = "the folder is empty"
    elif students:
        found = (f"its {len(students)} student folder{'s' if len(students) > 1 else ''} "
                 f"({', '.join(sorted(students)[:5])}{', ...' if len(students) > 5 else ''}) hold no notebook "
                 f"of the exercises graded ({', '.join(ref.name for ref in references)})")
    else:
        shown = ", ".join(entries[:6]) + (f" and {len(entries) - 6} more" if len(entries) > 6 else "")
        found = f"it holds {shown}"
    details = "".join(f"\n  {w}" for w in warnings[:10])
    raise AssignmentError(f"no submissions to grade in {folder}: {found}; {expected}.{details}")
