"""``coursekit release OUT``: the student course as a folder and a zip, for an LMS or a hub.

It is what ``coursekit start`` gives a student (the same files, from the same place: the package or the
checkout), without opening anything, plus ``OUT.zip``. Before it writes, a checkout's exercises must be
up to date with ``solutions/``; after, the answer-line check runs on what was written and on the zip,
and a leak deletes both and fails: the instructor never uploads an answer by accident.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from .exercises import generate
from ..student.layout import checkout_root, course_files
from ..student.start import copy_course
from .answers import answer_lines, leaks


class ReleaseError(RuntimeError):
    """The folder cannot be released as it is (stale exercises, an answer found, OUT not empty)."""


def release(out) -> tuple[Path, Path, int]:
    """Write the student folder ``out`` and ``out.zip``; return (folder, zip, number of notebooks)."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise ReleaseError(f"{out} exists and is not empty: give a new folder (a release never mixes with old files)")
    root = checkout_root()
    if root is not None and (root / "solutions").is_dir():
        stale = generate(root / "solutions", root / "exercises", check=True)
        if stale:
            raise ReleaseError(f"exercises/ is not up to date with solutions/ ({', '.join(p.name for p in stale)}): "
                               "run `python -m coursekit exercises` in the checkout first")
    files = course_files()
    copy_course(out, files=files)
    archive = Path(shutil.make_archive(str(out), "zip", root_dir=out.parent, base_dir=out.name))
    if root is not None and (root / "solutions").is_dir():
        answers = answer_lines(root)
        found = leaks(out, answers) + leaks(archive, answers)
        if found:
            shutil.rmtree(out)
            archive.unlink()
            raise ReleaseError("answer lines found in the release (deleted it):\n  " + "\n  ".join(found))
    return out, archive, len(files)
