"""The setup cell: one source, written into every lesson (``notebooks/``) and solution (``solutions/``),
from which ``coursekit exercises`` carries it into every exercise.

Why one cell and not an import line: a notebook opened alone (Colab, a hub without coursekit, a
download) has nothing to import yet. The cell installs coursekit only where it is missing
(``COURSEKIT_PIP_SOURCE`` — a requirement, a wheel path or a URL, with pip options if needed — overrides
what it installs, for a fork or a test), then hands over to
:func:`coursekit.course.student.setup.notebook_setup`. Where the install fails it raises one sentence
with the fix. It is not a graded cell and holds no solution region; its output (which GPU, or the
simulated one) differs per machine, so nbval is told not to compare it (tag ``nbval-ignore-output``).

:func:`apply` writes it (idempotent: an existing setup cell is replaced in place, metadata kept), and
with ``check=True`` only lists the notebooks whose setup cell is missing or differs.
"""
from __future__ import annotations

from pathlib import Path

import nbformat

CELL_ID = "coursekit-setup"
TAGS = ["coursekit-setup", "nbval-ignore-output"]
SOURCE = '''\
# Setup: run this cell first. The same in every notebook of the course (`python -m coursekit setup-cells`
# writes it). Where coursekit is missing (Colab, a hub, a downloaded notebook) it installs it; then it
# picks the GPU, or says that this notebook uses the simulated one.
import importlib, importlib.util, os, shlex, subprocess, sys
if importlib.util.find_spec("coursekit") is None:
    _source = os.environ.get("COURSEKIT_PIP_SOURCE", "coursekit")
    _pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *shlex.split(_source)],
                          capture_output=True, text=True)
    importlib.invalidate_caches()
    if _pip.returncode != 0 or importlib.util.find_spec("coursekit") is None:
        _why = (_pip.stderr.strip().splitlines() or ["pip gave no message"])[-1]
        raise RuntimeError(f"Setup could not install coursekit from {_source!r} ({_why}): connect this "
                           "notebook to the internet, or set COURSEKIT_PIP_SOURCE to a wheel, and run it again.")
from coursekit.course.student.setup import notebook_setup
_device = notebook_setup()'''


def is_setup_cell(cell) -> bool:
    return cell.get("id") == CELL_ID or CELL_ID in cell.get("metadata", {}).get("tags", [])


def setup_cell_of(nb):
    """The notebook's setup cell, or None."""
    return next((cell for cell in nb.cells if is_setup_cell(cell)), None)


def is_current(nb) -> bool:
    """One setup cell, the first code cell, with today's source and tags."""
    found = [i for i, cell in enumerate(nb.cells) if is_setup_cell(cell)]
    first_code = next((i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"), None)
    if len(found) != 1 or found[0] != first_code:
        return False
    cell = nb.cells[found[0]]
    return cell.source == SOURCE and all(tag in cell.metadata.get("tags", []) for tag in TAGS)


def with_setup_cell(nb):
    """Put the setup cell in ``nb`` (in place): replace an old one, else insert it before the first code cell."""
    old = [i for i, cell in enumerate(nb.cells) if is_setup_cell(cell)]
    if old:
        cell = nb.cells[old[0]]
        for extra in reversed(old[1:]):
            del nb.cells[extra]
        cell.source = SOURCE
    else:
        cell = nbformat.v4.new_code_cell(SOURCE)
        cell.id = CELL_ID
        first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
        nb.cells.insert(first_code, cell)
    tags = cell.metadata.setdefault("tags", [])
    tags.extend(tag for tag in TAGS if tag not in tags)
    return nb


def apply(root, check: bool = False) -> list[Path]:
    """Write (or, with ``check``, only find) the notebooks under ``root`` whose setup cell is not current."""
    root = Path(root)
    stale = []
    for path in sorted([*root.glob("notebooks/*.ipynb"), *root.glob("solutions/*.ipynb")]):
        nb = nbformat.read(path, as_version=4)
        if is_current(nb):
            continue
        stale.append(path)
        if not check:
            nbformat.write(with_setup_cell(nb), path)
    return stale
