"""Each lesson is also kept as text (notebooks/text/NN_name.py, jupytext's percent format), and CI fails
when a pair is out of date: run ``python -m coursekit text-pairs`` after editing a lesson."""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("jupytext", reason="jupytext (requirements-dev.txt) makes the text pairs")

from coursekit.course.authoring import text_pairs  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"


def test_every_lesson_has_its_text_pair_up_to_date():
    problems = text_pairs.out_of_date(NOTEBOOKS)
    assert not problems, "\n".join(problems) + "\nrun `python -m coursekit text-pairs` and commit notebooks/text/"


def test_a_pair_holds_the_prose_and_the_code_but_no_outputs():
    lesson = NOTEBOOKS / "01_tour.ipynb"
    text = text_pairs.pair_path(lesson).read_text(encoding="utf-8")
    nb = nbformat.read(lesson, as_version=4)
    first_code = next(cell for cell in nb.cells if cell.cell_type == "code" and cell.outputs)
    assert "# %% [markdown]" in text and first_code.source.splitlines()[0] in text
    assert '"outputs"' not in text and "kernelspec" not in text


def test_an_edited_lesson_a_missing_pair_and_an_orphan_pair_are_each_found(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name in ("01_tour.ipynb", "07_cuda_kernels.ipynb"):
        shutil.copy(NOTEBOOKS / name, folder / name)
    assert len(text_pairs.write_pairs(folder)) == 2 and text_pairs.out_of_date(folder) == []
    nb = nbformat.read(folder / "01_tour.ipynb", as_version=4)
    nb.cells[0].source += "\n\nOne more sentence."
    nbformat.write(nb, folder / "01_tour.ipynb")
    (folder / "text" / "07_cuda_kernels.py").rename(folder / "text" / "99_gone.py")
    assert text_pairs.out_of_date(folder) == [
        f"{folder / 'text' / '01_tour.py'}: out of date with 01_tour.ipynb",
        f"{folder / 'text' / '07_cuda_kernels.py'}: missing (the text pair of 07_cuda_kernels.ipynb)",
        f"{folder / 'text' / '99_gone.py'}: no notebook 99_gone.ipynb beside it (delete it)",
    ]
    text_pairs.write_pairs(folder)
    assert text_pairs.out_of_date(folder) == [] and not (folder / "text" / "99_gone.py").exists()
