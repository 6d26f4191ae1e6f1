"""Where the student course is: inside the installed package, or in the checkout it was installed from.

A wheel carries the lessons and exercises under ``coursekit/course_files/`` (setup.py's build step
copies them there; solutions never). An editable install (``pip install -e .`` in a clone) has no such
copy, so the checkout's own ``notebooks/`` and ``exercises/`` are the course. Everything that hands the
course out (``coursekit start``, ``coursekit release``) reads it through :func:`course_files`, so both
installs give a student the same folder.
"""
from __future__ import annotations

import importlib.resources
from pathlib import Path

# The student course, relative to the course root; setup.py copies the same patterns (a test checks).
STUDENT_GLOBS = ("notebooks/*.ipynb", "exercises/*.ipynb")
FIRST_LESSON = "notebooks/01_tour.ipynb"
PACKAGED = "course_files"


class CourseNotFound(FileNotFoundError):
    """Neither the package nor a checkout has the course's notebooks."""


def checkout_root() -> Path | None:
    """The repository this package was installed from (editable install), or None."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "notebooks").is_dir() and (root / "pyproject.toml").is_file() else None


def course_files() -> dict[str, bytes]:
    """``{"notebooks/01_tour.ipynb": bytes, ...}``: every file of the student course, packaged or checked out."""
    packaged = importlib.resources.files("coursekit") / PACKAGED
    if packaged.is_dir():
        found = {f"{folder.name}/{item.name}": item.read_bytes()
                 for folder in packaged.iterdir() if folder.is_dir()
                 for item in folder.iterdir() if item.name.endswith(".ipynb")}
    else:
        root = checkout_root()
        found = {} if root is None else {path.relative_to(root).as_posix(): path.read_bytes()
                                         for pattern in STUDENT_GLOBS for path in sorted(root.glob(pattern))}
    if not found:
        raise CourseNotFound(
            f"this coursekit ({Path(__file__).resolve().parents[2]}) has no course notebooks: it is neither a wheel "
            "with coursekit/course_files/ nor a checkout with notebooks/. Reinstall it with `pip install "
            "--force-reinstall coursekit` (or `pip install -e .` in a clone).")
    if any("solution" in name for name in found):
        raise CourseNotFound(f"refusing to hand out {sorted(n for n in found if 'solution' in n)}: solutions never ship")
    return dict(sorted(found.items()))
