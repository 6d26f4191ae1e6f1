"""Reading a submissions folder without following anything a student put there.

A submission is read, never followed: a symbolic link anywhere between the submissions folder and
a notebook (the student's own folder included) could hand in another student's work, or a
reference solution the grader can read, under the attacker's name. So the folder is walked with
``lstat`` (no link is entered), every path found must resolve to a place inside the submissions
folder, and a notebook is read through a descriptor opened with ``O_NOFOLLOW`` that must be a
regular file (not a FIFO or a device). The grader then works
on the bytes it read: the run gets its own copy, never the student's file.

:class:`Refused` stands for a submission the grader will not read; its reason goes into the
report. Standard library only.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .escape import printable_name


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


def read_bytes(path, limit: int) -> bytes:
    """The bytes of ``path``, read through ``O_NOFOLLOW``: a link, a FIFO, a device or a file of
    more than ``limit`` bytes is refused with
    :class:`ValueError` saying why and what the student can do."""
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
