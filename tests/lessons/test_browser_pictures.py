"""Pictures show in a lesson opened fresh in JupyterLab, in a real browser (issue 14).

A notebook someone else saved opens *untrusted*: JupyterLab then refuses SVG outputs and sanitises
HTML (inline ``<svg>`` is stripped). Graph pictures therefore also carry a PNG, and the compiled
function's HTML view embeds its picture as a PNG ``<img>``.

The check: a fresh JupyterLab server (empty Jupyter data dir, so nothing is trusted) and headless
Chromium take a screenshot of the lesson, and the pixels must contain the pictures' own fill colours.
A control notebook proves the check can fail: a picture stored as SVG only (the old outputs) shows
no such pixels, next to the same kind of picture with its PNG, which does.

Runs where Chromium is installed (``apt-get install chromium``), skipped elsewhere (CI has none).
Each lesson costs one Chromium run (10-20 s), so only lesson 2 runs by default;
``COURSEKIT_SCREENSHOTS=DIR`` runs every lesson in ``notebooks/`` (a new lesson is picked up by its
file alone) and keeps the screenshots in DIR (that is how ``docs/screenshots/`` was made). Which
lessons have graph pictures, and how tall the browser window must be to reach the first one, are read
from the lesson's stored outputs (JupyterLab draws only what is in the window).
"""
from __future__ import annotations

import base64
import io
import json
import math
import os
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
import numpy as np
import pytest
from lab_server import lab_server
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)
SAVE_DIR = os.environ.get("COURSEKIT_SCREENSHOTS")
LESSONS = sorted(path.stem for path in (ROOT / "notebooks").glob("*.ipynb"))
DEFAULT_LESSONS = ["02_exp_benchmark"]
# fills of the picture's boxes (coursekit/printing/style.py): they appear only if a picture is drawn
INPUT_FILL, CPU_FILL, GPU_FILL = (0xC8, 0xE6, 0xC9), (0xFF, 0xE0, 0xB2), (0xD1, 0xC4, 0xE9)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (apt-get install chromium)")]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server over a fresh Jupyter profile, serving the repository as ``course/``."""
    home = tmp_path_factory.mktemp("lab")
    served = home / "served"
    served.mkdir()
    (served / "course").symlink_to(ROOT)
    with lab_server(["--no-browser", f"--ServerApp.root_dir={served}"], home) as lab:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{lab.base}/api/status?token={lab.token}", timeout=2) as reply:
                    json.load(reply)
                break
            except OSError:
                if time.monotonic() > deadline or lab.process.poll() is not None:
                    pytest.fail("JupyterLab did not start within 90 s")
                time.sleep(0.5)
        yield {"base": lab.base, "token": lab.token, "served": served, "home": home}


# JupyterLab's default theme, 1280-pixel window with the file browser open (measured on the screenshots)
CODE_LINE, MARKDOWN_LINE, MARKDOWN_CHARS, TABLE_ROW, PICTURE_WIDTH = 17, 22, 100, 30, 1000


def _png_height(encoded):
    """Height a stored PNG takes in the notebook (JupyterLab shrinks wide images to the cell's width)."""
    with Image.open(io.BytesIO(base64.b64decode(encoded))) as image:
        width, height = image.size
    return height * min(1.0, PICTURE_WIDTH / width)


def first_picture_depth(nb):
    """Pixels from the top of the page to the bottom of the lesson's first graph picture (None if it
    has none), estimated from the stored sources and outputs, an overestimate rather than an under."""
    y = 120
    for cell in nb.cells:
        lines = cell.source.splitlines() or [""]
        if cell.cell_type != "code":
            y += 24 + MARKDOWN_LINE * sum(max(1, math.ceil(len(line) / MARKDOWN_CHARS)) for line in lines)
            continue
        y += 40 + CODE_LINE * len(lines)
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" in data:
                y += _png_height(data["image/png"]) + 10
            elif "text/html" in data:
                page = data["text/html"]
                y += TABLE_ROW * page.count("<tr") + CODE_LINE * page.count("<br")
                y += sum(_png_height(png) for png in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page))
            else:
                y += CODE_LINE * len((output.get("text") or data.get("text/plain", "")).splitlines())
            if data.get("text/plain", "").startswith("<GraphPicture"):
                return int(y)
    return None


def window_height(depth):
    """A window tall enough to hold a picture ``depth`` pixels down (with a margin for the estimate)."""
    return min(16000, int(depth * 1.25) + 800)


def screenshot(lab, path_in_server, height, out):
    profile = lab["home"] / f"chrome-{out.stem}"
    url = f"{lab['base']}/lab/tree/{path_in_server}?token={lab['token']}"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--hide-scrollbars", f"--user-data-dir={profile}", f"--window-size=1280,{height}",
         "--virtual-time-budget=30000", f"--screenshot={out}", url],
        check=True, timeout=180, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(profile, ignore_errors=True)
    with Image.open(out) as image:
        return image.convert("RGB")


def count_colour(image, colour, tolerance=6):
    """Pixels within ``tolerance`` of ``colour`` in each channel."""
    pixels = np.asarray(image, dtype=np.int16)
    return int(np.all(np.abs(pixels - np.array(colour)) <= tolerance, axis=-1).sum())


def test_untrusted_lab_refuses_svg_only_pictures_and_shows_the_png(lab, tmp_path):
    import coursekit as theano
    import coursekit.tensor as T

    x = T.fvector("x")
    with theano.config.change(device="sim"):
        gpu_picture = theano.printing.pydotprint(theano.function([x], T.exp(x) * 2, name="gpu"))
    with theano.config.change(device="cpu"):
        cpu_picture = theano.printing.pydotprint(theano.function([x], T.exp(x) * 2, name="cpu"))
    svg_only = nbformat.v4.new_output("display_data", data={"image/svg+xml": gpu_picture.svg,
                                                            "text/plain": repr(gpu_picture)})
    bundle = cpu_picture._repr_mimebundle_()
    bundle["image/png"] = base64.b64encode(bundle["image/png"]).decode("ascii")
    with_png = nbformat.v4.new_output("display_data", data=bundle)
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("svg_only_picture", outputs=[svg_only], execution_count=1),
        nbformat.v4.new_code_cell("picture_with_png", outputs=[with_png], execution_count=2)])
    # the lessons' kernelspec, so that JupyterLab opens it without a "Select Kernel" dialog over it
    nb.metadata = nbformat.read(ROOT / "notebooks" / "01_tour.ipynb", as_version=4).metadata
    nbformat.write(nb, lab["served"] / "control.ipynb")
    image = screenshot(lab, "control.ipynb", 1400, tmp_path / "control.png")
    assert count_colour(image, CPU_FILL) > 2000, "the picture that carries a PNG must show"
    # the shown picture's legend has one small GPU-op swatch (about 500 px); a drawn GPU box is far bigger
    assert count_colour(image, GPU_FILL) < 1000, (
        "an SVG-only picture showed in an untrusted notebook: this check cannot tell PNG from SVG")


@pytest.mark.parametrize("lesson", sorted(LESSONS) if SAVE_DIR else DEFAULT_LESSONS)
def test_lesson_pictures_show_on_first_open(lab, tmp_path, lesson):
    depth = first_picture_depth(nbformat.read(ROOT / "notebooks" / f"{lesson}.ipynb", as_version=4))
    out = Path(SAVE_DIR or tmp_path) / f"{lesson}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    image = screenshot(lab, f"course/notebooks/{lesson}.ipynb", 2400 if depth is None else window_height(depth), out)
    if depth is not None:
        drawn = count_colour(image, INPUT_FILL) + count_colour(image, CPU_FILL) + count_colour(image, GPU_FILL)
        assert drawn > 3000, f"{lesson}: no graph picture visible on first open (see {out})"
    if SAVE_DIR:   # keep the committed screenshots small: 64 colours, the top 6000 px or down to the picture
        keep = max(6000, int((depth or 0) * 1.1) + 300)
        image.crop((0, 0, 1280, min(image.height, keep))).quantize(colors=64).save(out, optimize=True)
