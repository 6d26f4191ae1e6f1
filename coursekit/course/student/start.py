"""``coursekit start [DIR]``: put the course in a folder of the student's own and open it.

Why a manifest: a student's notebooks are their work. The first start copies every lesson and exercise
into DIR and writes ``DIR/.coursekit-manifest.json`` with the SHA-256 of each file as copied. A later
start (after ``pip install -U coursekit``) can then tell three cases apart without guessing:

* the file is missing: copy it (a new lesson, or one the student deleted);
* the file is as copied and the package has a newer version: replace it with ``--update``, otherwise
  say that an update is there;
* the student changed it (its hash is not the one copied): keep it, always, and say so; with ``--update``
  the new version is written beside it as ``NAME.new.ipynb`` to compare by hand.

Nothing here imports the array compiler or JupyterLab; the lab is started as a child process.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .layout import FIRST_LESSON, course_files

MANIFEST = ".coursekit-manifest.json"
DEFAULT_DIR = "coursekit-course"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Copied:
    """What one start did to each file of the course (relative paths)."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)       # changed by the student: never overwritten
    outdated: list[str] = field(default_factory=list)   # as copied, newer version available (no --update)
    beside: list[str] = field(default_factory=list)     # new versions written next to a kept file

    def lines(self, folder: Path) -> list[str]:
        out = []
        for label, names in (("added", self.added), ("updated", self.updated)):
            if names:
                out.append(f"{label} {len(names)}: {', '.join(names)}")
        for name in self.kept:
            out.append(f"kept {name}: you changed it, so it was not overwritten")
        for name in self.beside:
            out.append(f"  the new version is beside it: {name}")
        if self.outdated:
            out.append(f"{len(self.outdated)} notebooks you have not changed have a newer version "
                       f"({', '.join(self.outdated)}): run `coursekit start {folder} --update` to get them")
        if not out:
            out.append(f"the course in {folder} is up to date ({len(self.unchanged)} notebooks)")
        return out


def read_manifest(folder: Path) -> dict[str, str]:
    path = folder / MANIFEST
    if not path.is_file():
        return {}
    try:
        return dict(json.loads(path.read_text(encoding="utf-8"))["files"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is damaged ({exc}); delete it and run `coursekit start {folder}` again "
                         "(notebooks that exist are then all kept as they are)") from None


def copy_course(folder, update: bool = False, files: dict[str, bytes] | None = None) -> Copied:
    """Bring ``folder`` up to date with the installed course, never overwriting a student's change."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"{folder} is a file, not a folder: give `coursekit start` a folder name")
    files = course_files() if files is None else files
    manifest = read_manifest(folder)
    done = Copied()
    for name, data in files.items():
        target, new = folder / name, digest(data)
        if not target.exists():
            _write(target, data)
            done.added.append(name)
            manifest[name] = new
            continue
        current = digest(target.read_bytes())
        if current == new:
            done.unchanged.append(name)
            manifest[name] = new
        elif manifest.get(name) != current:
            done.kept.append(name)  # not what we copied (or never copied by us): the student's
            if update:
                beside = target.with_name(target.stem + ".new" + target.suffix)
                _write(beside, data)
                done.beside.append(beside.relative_to(folder).as_posix())
        elif update:
            _write(target, data)
            done.updated.append(name)
            manifest[name] = new
        else:
            done.outdated.append(name)
    _write(folder / MANIFEST, (json.dumps({"files": dict(sorted(manifest.items()))}, indent=1) + "\n").encode())
    return done


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".partial")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def lab_command(folder) -> list[str]:
    """JupyterLab serving the whole course folder (so ``../exercises/`` links open) at lesson 1."""
    folder = Path(folder).resolve()
    return [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder}", FIRST_LESSON]


def open_lab(folder) -> int:
    """Run JupyterLab in the foreground until the student stops it (Ctrl+C)."""
    try:
        import jupyterlab  # noqa: F401  (only to say clearly that it is missing)
    except ImportError:
        print("error: JupyterLab is not installed in this Python; run `pip install jupyterlab`, or open "
              f"{Path(folder) / FIRST_LESSON} in the Jupyter you use.", file=sys.stderr)
        return 2
    try:
        return subprocess.call(lab_command(folder), cwd=Path(folder).resolve())
    except KeyboardInterrupt:
        return 0
