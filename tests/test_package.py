"""The package a student installs carries the course and no answer (issue 33, item 1).

``python -m build`` makes the sdist and, from it, the wheel (as PyPI's users get them); ``twine check``
must accept both. The wheel must carry the library, the CUDA emulator's C++ sources and the student
course (11 lessons, 11 exercises) and nothing of ``solutions/`` or ``tests/``. The answer-line check
(coursekit.course.authoring.answers) then reads every file of both archives; it is shown able to fail
on a wheel and on an sdist, each with a solutions notebook slipped in.
One build, about 10 s (setuptools is fetched into build's isolated environment).
"""
from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from coursekit.course.authoring.answers import answer_lines, archive_texts, leaks, with_extra_member
from coursekit.course.student import layout

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
EXERCISES = sorted(p.name for p in (ROOT / "exercises").glob("*.ipynb"))


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    run = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], capture_output=True, text=True)
    assert run.returncode == 0, f"python -m build failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    wheel, = out.glob("coursekit-*.whl")
    sdist, = out.glob("coursekit-*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module")
def answers():
    found = answer_lines(ROOT)
    assert len(found) > 100, f"only {len(found)} answer lines in solutions/: the region parser lost them"
    return found


def test_twine_accepts_the_wheel_and_the_sdist(dist):
    run = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dist)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_wheel_carries_the_library_the_emulator_and_the_student_course(dist):
    names = set(zipfile.ZipFile(dist[0]).namelist())
    assert {"coursekit/__init__.py", "coursekit/cuda/ck_runtime.cpp", "coursekit/cuda/ck_prelude.h",
            "coursekit/course/student/start.py", "coursekit_pytest.py", "coursekit/py.typed"} <= names
    course = sorted(n.removeprefix("coursekit/course_files/") for n in names if n.startswith("coursekit/course_files/"))
    assert course == sorted([f"exercises/{n}" for n in EXERCISES] + [f"notebooks/{n}" for n in LESSONS])
    assert len(LESSONS) == 11 and len(EXERCISES) == 11
    assert not [n for n in names if "solution" in n.lower() or n.startswith("tests/")]


def test_the_sdist_has_the_course_sources_and_no_solutions_or_tests(dist):
    names = [n.split("/", 1)[1] for n in tarfile.open(dist[1]).getnames() if "/" in n]
    assert "setup.py" in names and "LICENSE" in names and "notebooks/01_tour.ipynb" in names
    assert not [n for n in names if n.startswith(("solutions/", "tests/")) or "solution" in n.lower()]


def test_no_answer_line_anywhere_in_the_wheel_or_the_sdist(dist, answers):
    assert leaks(dist[0], answers) == []
    assert leaks(dist[1], answers) == []


def test_the_answer_line_check_finds_a_solution_slipped_into_a_wheel(dist, answers, tmp_path):
    solution = (ROOT / "solutions" / "05_logistic_regression_solutions.ipynb").read_bytes()
    bad = with_extra_member(dist[0], "coursekit/course_files/exercises/05_logistic_regression_exercises_copy.ipynb",
                            solution, tmp_path / "bad.whl")
    found = leaks(bad, answers)
    assert len(found) == 1 and found[0].startswith("coursekit/course_files/exercises/05_logistic_regression_exercises_copy")


def test_the_answer_line_check_finds_a_solution_slipped_into_an_sdist(dist, answers, tmp_path):
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(dist[1]) as source, tarfile.open(bad, "w:gz") as target:
        for member in source.getmembers():
            target.addfile(member, source.extractfile(member) if member.isfile() else None)
        data = (ROOT / "solutions" / "01_tour_solutions.ipynb").read_bytes()
        info = tarfile.TarInfo("coursekit-0/solutions/01_tour_solutions.ipynb")
        info.size = len(data)
        target.addfile(info, io.BytesIO(data))
    assert [f for f in leaks(bad, answers) if "01_tour_solutions" in f]


def test_setup_py_copies_exactly_the_student_globs():
    tree = ast.parse((ROOT / "setup.py").read_text())
    value, = [ast.literal_eval(node.value) for node in tree.body
              if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "STUDENT_GLOBS"]
    assert value == layout.STUDENT_GLOBS


def test_metadata_is_a_real_projects_and_optional_pieces_are_extras():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", project["version"]) and project["license"] == "BSD-3-Clause"
    assert list(project["urls"]) == ["Repository"], "the repository address lives in one place"
    assert any(c.startswith("Programming Language :: Python :: 3.1") for c in project["classifiers"])
    base = {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower() for r in project["dependencies"]}
    assert {"numpy", "jupyterlab", "matplotlib", "ipykernel", "scikit-learn"} <= base
    heavy = {"numba", "cupy-cuda12x", "cupy-cuda13x", "nbgrader", "dask", "pytest", "nbval", "torch", "jax"}
    assert not base & heavy, f"the student install carries {sorted(base & heavy)}"
    extras = " ".join(" ".join(v) for v in project["optional-dependencies"].values())
    for name in ("numba", "cupy-cuda12x", "nbgrader", "dask[distributed]"):
        assert name in extras


def test_archive_texts_refuses_what_it_cannot_read(tmp_path):
    odd = tmp_path / "x.bin"
    odd.write_bytes(b"\x00\x01")
    with pytest.raises(ValueError, match="not a folder, a wheel/zip or a tar archive"):
        archive_texts(odd)
