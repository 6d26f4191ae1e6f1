"""The authoring subcommands of ``python -m coursekit``: ``release``, ``setup-cells``, ``colab-table``,
``text-pairs``, ``mutate``.

One module so that the command line loads the authoring tools (nbformat among them) only when one of
these commands runs, with one lazy import (coursekit/__main__.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

from .exercises import ExerciseError
from ..student.layout import CourseNotFound, checkout_root
from . import links, setup_cell, text_pairs
from .release import ReleaseError, release
from .mutation import report as mutation_report


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
    relinked = links.relink_notebooks(root, check=args.check)
    for path in relinked:
        print(f"{path.relative_to(root)}: Colab links {'out of date' if args.check else 'written'}")
    readme = root / "README.md"
    try:
        text = links.readme_with_table(readme.read_text(encoding="utf-8"), links.colab_table(root))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if text != readme.read_text(encoding="utf-8") or relinked:
            print("the Colab table or links are out of date: run `python -m coursekit colab-table && python -m "
                  "coursekit exercises`.", file=sys.stderr)
            return 1
        print("README.md's Colab table and the notebooks' Colab links are up to date.")
        return 0
    readme.write_text(text, encoding="utf-8")
    print(f"wrote the Colab table in {readme} (repository: {links.repository(root)})")
    if relinked:
        print("now run `python -m coursekit exercises` to carry the links into exercises/.")
    return 0


def run_text_pairs(args) -> int:
    root = _root_or_error("text-pairs")
    if root is None:
        return 2
    if args.check:
        problems = text_pairs.out_of_date(root / "notebooks")
        for line in problems:
            print(line, file=sys.stderr)
        if problems:
            print("run `python -m coursekit text-pairs` and commit notebooks/text/.", file=sys.stderr)
            return 1
        print("every lesson's text pair (notebooks/text/) is up to date.")
        return 0
    changed = text_pairs.write_pairs(root / "notebooks")
    print(f"{len(changed)} text pairs written or removed in notebooks/text/")
    return 0


def run_mutate(args) -> int:
    """``coursekit mutate``: grade mutants of each task's solution with its judge (see :mod:`.mutation`)."""
    return mutation_report.run(args)
