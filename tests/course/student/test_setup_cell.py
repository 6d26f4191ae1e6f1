"""Every lesson and exercise opens alone: its setup cell (issue 33, item 3).

One source (coursekit.course.authoring.setup_cell.SOURCE), written by ``coursekit setup-cells`` into
lessons and solutions and carried into exercises by ``coursekit exercises``: a notebook whose setup
cell differs fails here. The cell's branches are tested without a GPU and without a network: the GPU
branch with the CuPy stand-in posing as Colab's T4 and a fake calibration, the install failure in a
Python that cannot import coursekit. The notebooks read no data file by path (nothing to find
outside the package). The README's Colab table equals what the notebooks and pyproject.toml give.
"""
from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import cupy_standin
from coursekit.config import config
from coursekit.course.authoring import links, setup_cell
from coursekit.course.authoring.graded import is_graded
from coursekit.course.student import setup as student_setup
from coursekit.costmodel import presets

ROOT = Path(__file__).resolve().parents[3]
STUDENT_NOTEBOOKS = sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("exercises/*.ipynb")])
ALL = STUDENT_NOTEBOOKS + sorted(ROOT.glob("solutions/*.ipynb"))


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_each_notebook_has_the_one_setup_cell_first(path):
    nb = nbformat.read(path, as_version=4)
    assert setup_cell.is_current(nb), f"{path.name}: run `python -m coursekit setup-cells && python -m coursekit exercises`"
    cell = setup_cell.setup_cell_of(nb)
    assert not is_graded(cell) and "BEGIN SOLUTION" not in cell.source
    assert "nbval-ignore-output" in cell.metadata["tags"]


def test_all_22_student_notebooks_are_checked():
    assert len(STUDENT_NOTEBOOKS) == 22


def test_a_changed_setup_cell_is_found(tmp_path):
    nb = nbformat.read(ROOT / "notebooks" / "01_tour.ipynb", as_version=4)
    setup_cell.setup_cell_of(nb).source += "\nprint('extra')"
    assert not setup_cell.is_current(nb)
    setup_cell.with_setup_cell(nb)
    assert setup_cell.is_current(nb) and sum(map(setup_cell.is_setup_cell, nb.cells)) == 1


def test_setup_cells_check_passes_on_the_repository():
    run = subprocess.run([sys.executable, "-m", "coursekit", "setup-cells", "--check"], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("path", STUDENT_NOTEBOOKS, ids=lambda p: p.name)
def test_no_code_cell_reads_a_file_by_a_relative_path(path):
    """Opened alone, a notebook has no ../ folder and no data next to it."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            for line in cell.source.splitlines():
                code = line.split("#", 1)[0]
                assert not re.search(r"\.\./|\bopen\(|read_csv|np\.load\(|loadtxt|Path\(['\"]", code), \
                    f"{path.name}: {line.strip()!r} reads a file next to the notebook"


def test_without_a_gpu_it_says_it_uses_the_simulated_gpu(monkeypatch):
    monkeypatch.delenv("COURSEKIT_FLAGS", raising=False)
    monkeypatch.delenv("THEANO_FLAGS", raising=False)
    monkeypatch.setattr(student_setup, "cupy_status", lambda: (None, "CuPy is not installed"))
    said = []
    with config.change():
        assert student_setup.notebook_setup(say=said.append) == config.device
    assert "uses the simulated GPU" in said[0] and "CuPy is not installed" in said[0]


@pytest.fixture
def colab_t4(monkeypatch, tmp_path):
    """The CuPy stand-in answering as Colab's card, and an empty folder of calibrated presets."""
    monkeypatch.setenv("COURSEKIT_CONFIG_DIR", str(tmp_path))
    monkeypatch.delenv("COURSEKIT_FLAGS", raising=False)
    monkeypatch.delenv("THEANO_FLAGS", raising=False)
    with cupy_standin.installed() as cupy:
        monkeypatch.setattr(cupy.cuda.runtime, "getDeviceProperties", lambda index: {"name": b"Tesla T4"})
        with config.change():
            yield


def test_on_a_t4_it_picks_the_gpu_and_calibrates_the_model_once(colab_t4):
    calls = []

    def calibrate(key):
        """What a calibration leaves behind: a saved preset under the card's name (figures: the t4's)."""
        calls.append(key)
        spec = dataclasses.replace(presets.PRESETS["t4"], key=key, measured=True)
        return spec, presets.save(spec)

    said = []
    assert student_setup.notebook_setup(calibrate=calibrate, say=said.append) == "gpu"
    assert calls == ["tesla-t4"] and config.device == "gpu" and config.gpu_model == "tesla-t4"
    assert "GPU Tesla T4: device=gpu; calibrated the cost model on it (gpu_model=tesla-t4)" in said[0]
    config.gpu_model = "t4"
    assert student_setup.notebook_setup(calibrate=calibrate, say=said.append) == "gpu"
    assert calls == ["tesla-t4"], "the next notebook reuses the saved calibration"
    assert config.gpu_model == "tesla-t4" and "calibrated on this card" in said[1]


def test_on_a_t4_a_failed_calibration_keeps_the_t4_preset(colab_t4):
    def calibrate(key):
        raise RuntimeError("no time")

    said = []
    assert student_setup.notebook_setup(calibrate=calibrate, say=said.append) == "gpu"
    assert config.device == "gpu" and config.gpu_model == "t4"
    assert "calibrating it failed (RuntimeError: no time)" in said[0] and "coursekit calibrate" in said[0]


def test_a_device_chosen_by_the_student_is_kept(monkeypatch):
    monkeypatch.setenv("COURSEKIT_FLAGS", "device=sim")
    said = []
    with config.change(device="sim"):
        assert student_setup.notebook_setup(calibrate=None, say=said.append) == "sim"
    assert "COURSEKIT_FLAGS sets device=sim" in said[0]


def test_a_failed_install_is_one_sentence_with_its_fix(tmp_path):
    """``python -I -S``: no site-packages, so no coursekit (and no pip): the cell must say what to do."""
    run = subprocess.run([sys.executable, "-I", "-S", "-c", setup_cell.SOURCE], cwd=tmp_path, capture_output=True,
                         text=True, env={"COURSEKIT_PIP_SOURCE": str(tmp_path / "missing.whl"), "PATH": "/usr/bin"})
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: Setup could not install coursekit from "), run.stderr
    assert "missing.whl" in last and "set COURSEKIT_PIP_SOURCE to a wheel, and run it again." in last


def test_the_readme_colab_table_is_the_notebooks_and_the_one_address():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert links.colab_table(ROOT) in readme, "run `python -m coursekit colab-table`"
    urls = re.findall(r"\((https://colab\.research\.google\.com/github/[^)]+)\)", readme)
    assert len(urls) == 22
    repo = links.repository(ROOT).removeprefix("https://github.com/")
    for url in urls:
        path = url.split(f"/github/{repo}/blob/{links.BRANCH}/", 1)[1]
        assert (ROOT / path).is_file(), url


@pytest.mark.parametrize("path", STUDENT_NOTEBOOKS, ids=lambda p: p.name)
def test_each_link_to_another_notebook_has_its_colab_twin(path):
    """A notebook opened alone has no ../ folder: each relative link is followed by the same notebook in Colab."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for match in re.finditer(r"\]\(\.\./([^)]+)\)", cell.source):
                twin = f"]({links.colab_url(match.group(1), ROOT)})"
                assert twin in cell.source[match.end():match.end() + len(twin) + 20], \
                    f"{path.name}: {match.group(0)} has no Colab link: run `python -m coursekit colab-table`"


def test_colab_links_follow_the_one_address(tmp_path):
    text = "see [x](../exercises/01_tour_exercises.ipynb) now"
    once = links.with_colab_links(text, ROOT)
    assert links.with_colab_links(once, ROOT) == once
    fork = tmp_path / "pyproject.toml"
    fork.write_text('[project]\nname = "x"\n[project.urls]\nRepository = "https://github.com/someone/fork"\n')
    assert "github/someone/fork/blob/main/exercises/01_tour_exercises.ipynb" in links.with_colab_links(once, tmp_path)
    fork.write_text('[project]\nname = "x"\n[project.urls]\nRepository = "gitlab.example/x"\n')
    with pytest.raises(ValueError, match=r"Repository is 'gitlab.example/x': set it to the course's GitHub address"):
        links.repository(tmp_path)
