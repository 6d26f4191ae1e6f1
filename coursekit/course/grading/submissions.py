"""Reading a submissions folder without following anything a student put there.

A submission is read, never followed: a symbolic link anywhere between the submissions folder and
a notebook (the student's own folder included) could hand in another student's work, or a
reference solution the grader can read, under the attacker's name. So the folder is walked with
``lstat`` (no link is entered), every path found must resolve to a place inside the submissions
folder, and a notebook is read through a descriptor opened with ``O_NOFOLLOW`` that must be a
regular file (not a FIFO or a device). The grader then works
on the bytes it read: the run gets its own copy, never the student's file.

:class:`Refused` stands for a submission the grader will not read; its reason goes into the
report. :func:`find_submissions` maps each student to the notebooks they handed in, by the course's
naming rules (a folder per student or ``<student>__<NN_name>.ipynb`` files; an ``NN_`` prefix
matches its exercise). Standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from .escape import printable_name

FLAT_SEPARATOR = "__"                 # <student>__<NN_name>.ipynb: one folder of flat files
PREFIX_RE = re.compile(r"^(\d+)_")


@dataclass(frozen=True)
class Refused:
    """A submission (a student's folder or a file) that was not read, and why."""

    name: str
    reason: str


def link_in_path(root: Path, path: Path) -> str | None:
    """The first component of ``path`` below ``root`` that is a symbolic link, or None.

    ``root`` itself is the instructor's (a link to it is fine); everything under it is the students'.
    """
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return printable_name(current.relative_to(root))
        except OSError:
            return printable_name(current.relative_to(root))
    return None


def inside(root: Path, path: Path) -> bool:
    """True when ``path`` resolves to a place inside ``root`` (resolved too)."""
    resolved_root = Path(os.path.realpath(root))
    resolved = Path(os.path.realpath(path))
    return resolved == resolved_root or resolved_root in resolved.parents


def walk_files(folder: Path) -> tuple[list[Path], list[str]]:
    """``(regular files, links)`` under ``folder``, never entering a link (``os.walk`` without
    ``followlinks``). Hidden entries and ``.ipynb_checkpoints`` are skipped. Links are returned as
    printable paths relative to ``folder``, for a warning."""
    files, links = [], []
    for top, dirs, names in os.walk(folder, followlinks=False):
        top_path = Path(top)
        keep = []
        for name in dirs:
            path = top_path / name
            if name.startswith(".") or name == ".ipynb_checkpoints":
                continue
            if os.path.islink(path):
                links.append(printable_name(path.relative_to(folder)))
            else:
                keep.append(name)
        dirs[:] = sorted(keep)
        for name in sorted(names):
            path = top_path / name
            if name.startswith("."):
                continue
            if os.path.islink(path):
                links.append(printable_name(path.relative_to(folder)))
                if path.suffix == ".ipynb":
                    files.append(path)     # matched to its reference, then refused with the reason
            elif os.path.isfile(path):
                files.append(path)
    return files, links


@contextlib.contextmanager
def open_submission(path, limit: int):
    """``path`` opened for reading through ``O_NOFOLLOW``, after refusing a link, a FIFO, a device or a
    file of more than ``limit`` bytes with :class:`ValueError` saying why and what the student can do."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if os.path.islink(path):
            raise ValueError("the file is a symbolic link: hand in the notebook itself") from None
        raise ValueError(f"the file cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("the file is not a regular file: hand in the notebook itself")
        if info.st_size > limit:
            raise ValueError(f"the file has {info.st_size / 2**20:.0f} MB, over the grader's {limit // 2**20} MB: "
                             "clear its outputs (Edit > Clear Outputs of All Cells), save and hand it in again")
        yield handle


def read_bytes(path, limit: int) -> bytes:
    """The bytes of ``path``, opened by :func:`open_submission` (which refuses what is not a regular
    file of at most ``limit`` bytes)."""
    with open_submission(path, limit) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"the file grew past the grader's {limit // 2**20} MB while it was read")
    return data


def file_sha256(path) -> str:
    """SHA-256 of a submission's bytes, read like :func:`read_bytes` (never through a link, never a
    FIFO or a device, which would block); "" for None (not handed in), a :class:`Refused` one or a
    file that cannot be read that way."""
    if path is None or isinstance(path, Refused):
        return ""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return ""
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return ""
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------------------------
# Which file is whose, and for which exercise.


def find_submissions(submissions_dir, references: list):
    """Map each student to ``{reference name: submission path}``; also return warnings.

    Students are the sub-folders of ``submissions_dir`` plus the ``<student>__`` prefixes of flat
    files. Files that match no reference are reported in the warnings, never silently graded.
    """
    submissions_dir = Path(submissions_dir)
    if not submissions_dir.is_dir():
        raise FileNotFoundError(f"submissions folder {submissions_dir} does not exist.")
    names = [ref.name for ref in references]
    found: dict[str, list[Path]] = {}
    refused: dict[str, str] = {}
    warnings: list[str] = []
    for entry in sorted(submissions_dir.iterdir()):
        if entry.name.startswith("."):
            continue
        shown_name = printable_name(entry.name)
        if entry.is_symlink():     # never followed: it could be another student's folder or solutions/
            what = "folder" if entry.is_dir() else "file"
            student = shown_name.split(FLAT_SEPARATOR, 1)[0] if what == "file" else shown_name
            refused[student] = (f"refused: the submitted {what} {shown_name} is a symbolic link; hand in "
                                f"the work itself")
            warnings.append(f"{student}: {refused[student]}")
        elif entry.is_dir():
            files, links = walk_files(entry)
            found.setdefault(shown_name, []).extend(p for p in files if p.suffix == ".ipynb")
            others = [printable_name(p.relative_to(entry)) for p in files if p.suffix != ".ipynb"]
            if others:
                shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
                warnings.append(f"{shown_name}: ignored {len(others)} non-notebook file"
                                f"{'s' if len(others) > 1 else ''}: {shown}")
            if links:
                warnings.append(f"{shown_name}: symbolic links not followed: {', '.join(links[:5])}")
        elif entry.suffix == ".ipynb" and FLAT_SEPARATOR in entry.stem:
            found.setdefault(shown_name.split(FLAT_SEPARATOR, 1)[0], []).append(entry)
        else:
            warnings.append(
                f"ignored {shown_name}: expected a folder per student or <student>{FLAT_SEPARATOR}<NN_name>.ipynb"
            )
    for student, reason in refused.items():
        found.pop(student, None)
    students = {student: _by_exercise(submissions_dir, student, files, names, warnings)
                for student, files in found.items()}
    for student, reason in refused.items():
        students[student] = {name: Refused(student, reason) for name in names}
    return students, warnings


def _by_exercise(submissions_dir: Path, student: str, files: list, names: list[str], warnings: list[str]) -> dict:
    """``{reference name: path or Refused}`` for one student's notebooks; what is ignored goes to ``warnings``."""
    chosen: dict = {}
    # Exact names first, so that 05_logreg.ipynb wins over 05_logreg-Copy1.ipynb.
    for path in sorted(files, key=lambda p: (_exact(_notebook_name(p), names) is None, str(p))):
        name = _match(_notebook_name(path), names)
        if name is None:
            warnings.append(f"{student}: ignored {printable_name(path.name)}: it matches no reference notebook "
                            f"({', '.join(names)})")
        elif name in chosen:
            kept = printable_name(chosen[name].name)
            warnings.append(f"{student}: two submissions for {name} ({kept}, {printable_name(path.name)}); "
                            f"graded {kept}")
        elif not inside(submissions_dir, path) or link_in_path(submissions_dir, path.parent):
            chosen[name] = Refused(printable_name(path.name), "refused: the path leaves the "
                                   "submissions folder through a symbolic link")
        else:
            chosen[name] = path
    return chosen


def reference_for(path, references: list) -> "object | None":
    """The reference the submission file ``path`` is graded against, or None: the rules of
    :func:`find_submissions` for one file (flat ``<student>__`` names, pre-rename names such as
    ``05_logreg.ipynb``, an unambiguous ``NN_`` prefix). Public for the pytest plugin."""
    name = _match(_notebook_name(Path(path)), [ref.name for ref in references])
    return next((ref for ref in references if ref.name == name), None)


def _notebook_name(path: Path) -> str:
    stem = path.stem
    return stem.split(FLAT_SEPARATOR, 1)[1] if FLAT_SEPARATOR in stem else stem


def _exact(stem: str, names: list[str]) -> str | None:
    """The reference named ``stem``, or ``stem_exercises`` (``01_tour`` is the pre-rename name)."""
    for name in (stem, f"{stem}_exercises"):
        if name in names:
            return name
    return None


def _match(stem: str, names: list[str]) -> str | None:
    """Exact name first; else the unique reference with the same ``NN_`` number prefix."""
    exact = _exact(stem, names)
    if exact:
        return exact
    prefix = PREFIX_RE.match(stem)
    if prefix:
        same = [name for name in names if name.startswith(prefix.group(0))]
        if len(same) == 1:
            return same[0]
    return None
