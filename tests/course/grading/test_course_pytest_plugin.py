"""``pytest --coursekit-reference``: a student's notebook checked as the grader grades it.

One pytest run (in its own process, as an instructor starts it) over a tiny class built from the
fixture notebook: an honest student; one who broke softplus, edited its graded cell to ``pass`` and
deleted another graded cell; and a notebook that matches no reference. Plain nbval passes bob's
notebook (his `pass` runs without error); here his softplus item fails with the judge's message.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import numpy  # noqa: F401  (before pytester's in-process runs, which forget the modules a run imported:
import pytest  # a second import of NumPy in one process fails, so this file failed when run on its own)

from coursekit.course.authoring.exercises import make_exercise

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = Path(__file__).resolve().parents[2] / "course_fixtures" / "solution_notebook.json"
SOFTPLUS, ROW_NORMS = 2, 4        # cells defining them; each one's graded check is the next cell
# Autoloading off, plugins named: the runs do not depend on how coursekit was installed here.
PLUGINS = ["-p", "nbval.plugin", "-p", "coursekit_pytest", "-p", "no:cacheprovider"]


def solution():
    return nbformat.read(FIXTURE, as_version=4)


@pytest.fixture
def course(pytester, monkeypatch):
    """reference/01_fixture_exercises.ipynb and four submissions, in the layouts the grader accepts."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    root = pytester.path
    (root / "reference").mkdir()
    nbformat.write(make_exercise(solution(), "fixture"), root / "reference" / "01_fixture_exercises.ipynb")
    submissions = root / "submissions"
    for student in ("alice", "dave"):
        (submissions / student).mkdir(parents=True)
    # alice: honest, under the exercise's pre-rename name.
    nbformat.write(solution(), submissions / "alice" / "01_fixture.ipynb")
    # bob (flat layout): a wrong softplus with its graded cell edited to `pass` (metadata kept, as
    # JupyterLab keeps it), and the row_norms check deleted.
    bob = solution()
    bob.cells[SOFTPLUS].source = "def softplus(x):\n    return x"
    bob.cells[SOFTPLUS + 1].source = "pass"
    del bob.cells[ROW_NORMS + 1]
    nbformat.write(bob, submissions / "bob__01_fixture_exercises.ipynb")
    # dave: a notebook that belongs to no exercise.
    nbformat.write(solution(), submissions / "dave" / "99_other.ipynb")
    return root


def test_each_graded_cell_is_an_item_judged_as_the_grader_judges_it(course, pytester):
    result = pytester.runpytest_subprocess(*PLUGINS, "--nbval-lax", "--coursekit-reference", "reference",
                                           "submissions", "-v", "-rA")
    result.assert_outcomes(passed=4, failed=2, errors=1)
    result.stdout.fnmatch_lines_random([
        "coursekit: notebooks checked against reference (01_fixture_exercises)*",
        "submissions/alice/01_fixture.ipynb::softplus[[]2 points[]] PASSED*",
        "submissions/alice/01_fixture.ipynb::row-norms[[]3 points[]] PASSED*",
        "submissions/alice/01_fixture.ipynb::standardize[[]1 point[]] PASSED*",
        "submissions/bob__01_fixture_exercises.ipynb::softplus[[]2 points[]] FAILED*",
        "submissions/bob__01_fixture_exercises.ipynb::row-norms[[]3 points[]] FAILED*",
        "submissions/bob__01_fixture_exercises.ipynb::standardize[[]1 point[]] PASSED*",
        # The grader's reasons: the judge's own assertion message, and the missing cell.
        "graded cell softplus (2 points): 0/2, failed assertion: softplus(x) does not match log(1 + exp(x))",
        "graded cell row-norms (3 points): 0/3, missing graded cell",
        "(graded cells restored from reference/01_fixture_exercises.ipynb, run as `python -m coursekit grade`*",
        "submissions/alice/01_fixture.ipynb: 6/6 against 01_fixture_exercises*",
        "submissions/bob__01_fixture_exercises.ipynb: 1/6 against 01_fixture_exercises*",
        # No reference: an error naming the file and what to do (the other notebooks are still checked).
        "ERROR submissions/dave/99_other.ipynb::no-reference*",
        "*submissions/dave/99_other.ipynb: no reference notebook in reference matches this file's name "
        "(references: 01_fixture_exercises). Name it after its exercise*--coursekit-reference*",
    ])
    assert "99_other.ipynb::Cell" not in result.stdout.str()      # nbval did not run it as it is


def test_bad_reference_folders_are_usage_errors(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    (pytester.path / "empty").mkdir()
    missing = pytester.runpytest(*PLUGINS, "--coursekit-reference", "nowhere")
    missing.stderr.fnmatch_lines(["*--coursekit-reference nowhere: no such folder; give the folder*exercises/*"])
    empty = pytester.runpytest(*PLUGINS, "--coursekit-reference", "empty")
    empty.stderr.fnmatch_lines(["*--coursekit-reference empty: no notebook in empty has a graded cell*"])
    assert missing.ret == empty.ret == pytest.ExitCode.USAGE_ERROR


def test_the_entry_point_imports_nothing_of_coursekit_until_the_option_is_given(tmp_path):
    """pytest loads it in every run: without the option it must not import the library (or nbformat)."""
    (tmp_path / "test_modules.py").write_text(
        "import sys\n\n"
        "def test_nothing_loaded():\n"
        "    loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('coursekit', 'nbformat'))\n"
        "    assert loaded == [], loaded\n"
    )
    env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PATH": "", "PYTHONPATH": str(ROOT)}
    pytest_command = [sys.executable, "-m", "pytest", "-p", "coursekit_pytest", "-p", "no:cacheprovider"]
    run = subprocess.run([*pytest_command, "-q", str(tmp_path)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    usage = subprocess.run([*pytest_command, "--help"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=120).stdout
    assert "--coursekit-reference=DIR" in usage


def test_pyproject_registers_the_entry_point():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pytest11"] == {"coursekit": "coursekit_pytest"}
    assert "coursekit_pytest" in project["tool"]["setuptools"]["py-modules"]
    assert (ROOT / "coursekit_pytest.py").is_file()
