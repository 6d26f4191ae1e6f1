"""The authoring subcommands of ``python -m coursekit``: ``release``, ``setup-cells``, ``colab-table``.

One module so that the command line loads the authoring tools (nbformat among them) only when one of
these commands runs, with one lazy import (coursekit/__main__.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

from .exercises import ExerciseError
from ..student.layout import CourseNotFound, checkout_root
from . import links, setup_cell
from .release import ReleaseError, release


def run_release(args) -> int:
    try:
        folder, archive, count = release(args.out)
    except (ReleaseError, CourseNotFound, ExerciseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {folder}/ ({count} notebooks: lessons and exercises, no solutions) and {archive}")
    print("answer-line check: no line of solutions/ in either" if checkout_root() else
          "(installed package: no solutions/ here to check against; the package was checked when it was built)")
    return 0


def _root_or_error(command: str) -> Path | None:
    root = checkout_root()
    if root is None or not (root / "solutions").is_dir():
        print(f"error: `coursekit {command}` edits the course's source; run it from an editable install of a "
              "checkout (pip install -e .)", file=sys.stderr)
        return None
    return root


def run_setup_cells(args) -> int:
    root = _root_or_error("setup-cells")
    if root is None:
        return 2
    stale = setup_cell.apply(root, check=args.check)
    for path in stale:
        print(f"{path.relative_to(root)}: setup cell {'missing or different' if args.check else 'written'}")
    if args.check:
        if stale:
            print("run `python -m coursekit setup-cells && python -m coursekit exercises` and commit.", file=sys.stderr)
            return 1
        print("every lesson and solution has the current setup cell.")
        return 0
    print(f"{len(stale)} notebooks updated; now run `python -m coursekit exercises` to carry it into exercises/.")
    return 0


def run_colab_table(args) -> int:
    root = _root_or_error("colab-table")
    if root is None:
        return 2
    readme = root / "README.md"
    try:
        text = links.readme_with_table(readme.read_text(encoding="utf-8"), links.colab_table(root))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if text != readme.read_text(encoding="utf-8"):
            print("README.md's Colab table is out of date: run `python -m coursekit colab-table`.", file=sys.stderr)
            return 1
        print("README.md's Colab table is up to date.")
        return 0
    readme.write_text(text, encoding="utf-8")
    print(f"wrote the Colab table in {readme} (repository: {links.repository(root)})")
    return 0
