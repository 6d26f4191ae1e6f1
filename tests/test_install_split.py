"""Students install requirements.txt, instructors and CI requirements-dev.txt (issue 29).

nbgrader in a student's environment adds its JupyterLab extension (menus, validation warnings) to
every notebook they open, and pytest/nbval/Dask are the instructor's tools. So the student install
must not bring them in, directly or through the extras it installs, while the README's test command
(the one .ci/run runs) must install everything the tests import.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTRUCTOR_ONLY = {"nbgrader", "nbval", "pytest", "dask", "hypothesis"}


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement.strip(), maxsplit=1)[0].lower()


def installed_by(requirements: Path) -> set[str]:
    """Package names a requirements file installs: its lines, the files it includes (-r) and the
    pyproject extras of its editable install (-e .[a,b])."""
    extras_table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names: set[str] = set()
    for line in requirements.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-r "):
            names |= installed_by(requirements.parent / line[3:].strip())
        elif line.startswith("-e "):
            extras = re.search(r"\[([^\]]*)\]", line)
            for extra in (extras.group(1).split(",") if extras else []):
                names |= {_name(r) for r in extras_table[extra.strip()]}
        else:
            names.add(_name(line))
    return names


def test_student_install_has_no_instructor_tools():
    students = installed_by(ROOT / "requirements.txt")
    assert not students & INSTRUCTOR_ONLY, f"requirements.txt installs {sorted(students & INSTRUCTOR_ONLY)}"
    assert {"jupyterlab", "numpy", "matplotlib", "nbclient", "ipykernel"} <= students


def test_dev_install_has_what_the_tests_need():
    assert INSTRUCTOR_ONLY <= installed_by(ROOT / "requirements-dev.txt")


def test_readme_test_command_installs_the_dev_requirements():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = readme.split("<!-- ci:test-command", 1)[1].split("```bash", 1)[1].splitlines()[1]
    assert "pip install -r requirements-dev.txt" in command and "pytest" in command


def test_submissions_folder_is_ignored_by_git():
    """A class's hand-ins put next to the course (docs/teaching.md's layout) never get committed."""
    import subprocess

    result = subprocess.run(["git", "check-ignore", "-q", "submissions/alice/05_x_exercises.ipynb"], cwd=ROOT)
    assert result.returncode == 0, "submissions/ is not ignored by git (.gitignore)"
