"""Every stored output of the course shows in a notebook opened fresh (issue 14, item 2).

A notebook someone else saved opens *untrusted* in JupyterLab and classic Notebook; nbviewer and
GitHub's renderer never trust one. Then SVG outputs are not shown at all and HTML is sanitised:
inline ``<svg>``, ``<script>`` and ``<style>`` are stripped (an SVG's words run together as text).
So each rich output the lessons and solutions store must carry a PNG beside its SVG, and its HTML
must keep to what a sanitiser lets through (tables, text, ``<img>`` with a PNG ``data:`` URL).

This reads the stored outputs only (cheap, runs everywhere, and picks up a new lesson by its file);
``tests/lessons/test_browser_pictures.py`` shows the same in a real browser where Chromium exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[2]
STORED = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
# what untrusted rendering drops: SVG, scripts, styles, embedded documents, event handlers
DROPPED_HTML = re.compile(r"<\s*(svg|script|style|iframe|object|embed|canvas)\b|\son[a-z]+\s*=\s*[\"']", re.I)
# MIME types that only a trusted notebook shows
TRUSTED_ONLY = ("application/javascript", "text/javascript")


def unviewable_outputs(nb):
    """One line per output that an untrusted viewer would show as text or not at all."""
    problems = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            what = data.get("text/plain", "").splitlines()[:1] or ["(no text/plain)"]
            if "image/svg+xml" in data and "image/png" not in data:
                problems.append(f"cell {index}: an SVG with no PNG beside it: {what[0][:80]}")
            match = DROPPED_HTML.search(data.get("text/html", ""))
            if match:
                problems.append(f"cell {index}: HTML that a sanitiser strips ({match.group(0).strip()!r}): {what[0][:80]}")
            for mime in TRUSTED_ONLY:
                if mime in data:
                    problems.append(f"cell {index}: {mime} runs only in a trusted notebook: {what[0][:80]}")
    return problems


@pytest.mark.parametrize("path", STORED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_stored_rich_output_shows_untrusted(path):
    problems = unviewable_outputs(nbformat.read(path, as_version=4))
    assert not problems, (
        f"{path.relative_to(ROOT)}: outputs that a freshly opened (untrusted) notebook cannot show; "
        "give pictures a PNG (coursekit's pictures do: re-execute the notebook):\n" + "\n".join(problems))


def test_the_check_sees_svg_only_pictures_and_inline_svg():
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>Legend</text></svg>'
    nb = new_notebook(cells=[
        new_code_cell("picture", outputs=[new_output("display_data", data={
            "image/svg+xml": svg, "text/plain": "<GraphPicture (3 ops, svg)>"})]),
        new_code_cell("view", outputs=[new_output("execute_result", execution_count=1, data={
            "text/html": f"<div>{svg}</div>", "text/plain": "<coursekit.Function f>"})]),
        new_code_cell("fine", outputs=[new_output("display_data", data={
            "image/svg+xml": svg, "image/png": "iVBORw0KGgo=", "text/html": "<table><tr><td>1</td></tr></table>",
            "text/plain": "<GraphPicture (3 ops, svg+png)>"})]),
    ])
    problems = unviewable_outputs(nb)
    assert len(problems) == 2
    assert problems[0].startswith("cell 0: an SVG with no PNG") and "<GraphPicture (3 ops, svg)>" in problems[0]
    assert problems[1].startswith("cell 1: HTML that a sanitiser strips ('<svg')")


def figures_missing(nb):
    """Cells that show a matplotlib figure (``plt.show()``) but store no picture of it: the notebook was
    executed with a non-inline backend (``MPLBACKEND=Agg`` in the shell), so its readers see no plot."""
    return [f"cell {index}: {cell.source.splitlines()[0][:60]!r}"
            for index, cell in enumerate(nb.cells)
            if cell.cell_type == "code" and "plt.show()" in cell.source
            and not any(output.output_type == "error" for output in cell.outputs)
            and not any("image/png" in output.get("data", {}) for output in cell.outputs)]


@pytest.mark.parametrize("path", STORED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_figure_a_lesson_shows_is_stored(path):
    missing = figures_missing(nbformat.read(path, as_version=4))
    assert not missing, (
        f"{path.relative_to(ROOT)}: cells show a figure but store none (executed with MPLBACKEND=Agg?); "
        "re-execute with the inline backend (unset MPLBACKEND):\n" + "\n".join(missing))


def test_the_figure_check_sees_a_plot_stored_without_its_picture():
    figure = new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure size 640x480>"})
    nb = new_notebook(cells=[new_code_cell("plt.plot([1, 2])\nplt.show()", outputs=[]),
                             new_code_cell("plt.plot([1, 2])\nplt.show()", outputs=[figure])])
    assert figures_missing(nb) == ["cell 0: 'plt.plot([1, 2])'"]


COURSE = STORED + sorted((ROOT / "exercises").glob("*.ipynb"))
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def broken_links(path):
    """Relative links in the notebook's Markdown that open no file of the repository."""
    nb = nbformat.read(path, as_version=4)
    targets = [target for cell in nb.cells if cell.cell_type == "markdown"
               for target in MARKDOWN_LINK.findall(cell.source)]
    local = [t for t in targets if not re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", t) and not t.startswith("#")]
    return [t for t in local if not (path.parent / t.split("#")[0]).exists()]


@pytest.mark.parametrize("path", COURSE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_link_between_notebooks_opens_a_file(path):
    """A lesson's link to its exercise (``../exercises/NN_name_exercises.ipynb``) must open it when the
    course is served from the repository root, as the README's start command does."""
    assert not broken_links(path), f"{path.relative_to(ROOT)} links to files that do not exist: {broken_links(path)}"
