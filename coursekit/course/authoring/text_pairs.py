"""Each lesson also as text: ``notebooks/text/NN_name.py``, the notebook in jupytext's percent format.

A lesson is an executed ``.ipynb``: JSON with stored outputs, so a change to its prose or code is
reviewed as a JSON diff. Its text pair holds the same cells, markdown as ``#`` comments under
``# %% [markdown]`` and code under ``# %%``, with no outputs and no metadata: what a reviewer reads.
The notebook stays the source; ``python -m coursekit text-pairs`` writes the pairs from it, ``--check``
(and ``tests/course/authoring/test_lesson_text_pairs.py``) fails when one is out of date, missing, or has no notebook.

jupytext is an author's tool (requirements-dev.txt), imported only when a pair is made.
"""
from __future__ import annotations

from pathlib import Path

import nbformat

TEXT_FOLDER = "text"          # under notebooks/
FORMAT = "py:percent"
# the pair carries cells only: no kernelspec, no jupytext version, no cell tags (they live in the notebook)
NO_METADATA = {"notebook_metadata_filter": "-all", "cell_metadata_filter": "-all"}


def pair_path(notebook: Path) -> Path:
    """``notebooks/01_tour.ipynb`` -> ``notebooks/text/01_tour.py``."""
    return notebook.parent / TEXT_FOLDER / f"{notebook.stem}.py"


def pair_text(notebook: Path) -> str:
    """The text pair of ``notebook``, as it should be now."""
    import jupytext   # an author's tool: only when a pair is made

    nb = nbformat.read(notebook, as_version=4)
    nb.metadata["jupytext"] = dict(NO_METADATA)
    return jupytext.writes(nb, fmt=FORMAT)


def out_of_date(notebooks_dir: Path) -> list[str]:
    """One line per pair that is missing, different from its notebook, or left without a notebook."""
    problems = []
    notebooks = sorted(notebooks_dir.glob("*.ipynb"))
    for notebook in notebooks:
        pair = pair_path(notebook)
        if not pair.exists():
            problems.append(f"{pair}: missing (the text pair of {notebook.name})")
        elif pair.read_text(encoding="utf-8") != pair_text(notebook):
            problems.append(f"{pair}: out of date with {notebook.name}")
    wanted = {pair_path(notebook) for notebook in notebooks}
    problems += [f"{pair}: no notebook {pair.stem}.ipynb beside it (delete it)"
                 for pair in sorted((notebooks_dir / TEXT_FOLDER).glob("*.py")) if pair not in wanted]
    return problems


def write_pairs(notebooks_dir: Path) -> list[Path]:
    """Write every lesson's pair that differs from its notebook, remove pairs left without one; return the changed."""
    changed = []
    for notebook in sorted(notebooks_dir.glob("*.ipynb")):
        pair, text = pair_path(notebook), pair_text(notebook)
        if not pair.exists() or pair.read_text(encoding="utf-8") != text:
            pair.parent.mkdir(exist_ok=True)
            pair.write_text(text, encoding="utf-8")
            changed.append(pair)
    for pair in sorted((notebooks_dir / TEXT_FOLDER).glob("*.py")):
        if not (notebooks_dir / f"{pair.stem}.ipynb").exists():
            pair.unlink()
            changed.append(pair)
    return changed
