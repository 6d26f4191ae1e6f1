"""The exercise generator and the graded-cell validator (fast; no kernel is started).

The fixture notebooks live in tests/course_fixtures/ as .json so that nbval never collects them.
The repository's own solutions/ and exercises/ are checked too, whenever they hold notebooks.
"""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from coursekit.__main__ import main
from coursekit.course.authoring.exercises import ExerciseError, generate, make_exercise, strip_solutions
from coursekit.course.authoring.graded import graded_cells, validate_notebook

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = Path(__file__).resolve().parents[2] / "course_fixtures" / "solution_notebook.json"


def fixture_notebook():
    return nbformat.read(FIXTURE, as_version=4)


def graded(source, cell_id="check", points=1):
    return new_code_cell(source, metadata={"tags": ["graded"], "coursekit": {"id": cell_id, "points": points}})


# --- regions -------------------------------------------------------------------------------------


def test_region_becomes_stub_at_its_indentation_with_its_hint():
    source = (
        "def f(x):\n"
        "    y = 1\n"
        "    ### BEGIN SOLUTION\n"
        "    ### HINT: add one\n"
        "    return x + y\n"
        "    ### END SOLUTION\n"
    )
    assert strip_solutions(source) == (
        'def f(x):\n    y = 1\n    raise NotImplementedError("Exercise: add one")\n'
    )


def test_default_hint_top_level_region_and_code_around_it_kept():
    source = "a = 1\n### BEGIN SOLUTION\nb = 2\n### END SOLUTION\nc = 3"
    assert strip_solutions(source) == (
        'a = 1\nraise NotImplementedError("Exercise: replace this line with your code")\nc = 3'
    )


def test_multiple_regions_and_nested_indentation():
    source = (
        "class A:\n"
        "    def f(self):\n"
        "        ### BEGIN SOLUTION\n"
        "        return 1\n"
        "        ### END SOLUTION\n"
        "\n"
        "    def g(self):\n"
        "        ### BEGIN SOLUTION\n"
        "        ### HINT: first part\n"
        "        ### HINT: second part\n"
        "        return 2\n"
        "        ### END SOLUTION\n"
    )
    out = strip_solutions(source).splitlines()
    assert out[2] == '        raise NotImplementedError("Exercise: replace this line with your code")'
    assert out[5] == '        raise NotImplementedError("Exercise: first part second part")'
    assert "return" not in "\n".join(out)
    compile("\n".join(out), "<stub>", "exec")  # still valid Python


def test_tab_indentation_is_kept():
    out = strip_solutions("def f():\n\t### BEGIN SOLUTION\n\treturn 1\n\t### END SOLUTION\n")
    assert out == 'def f():\n\traise NotImplementedError("Exercise: replace this line with your code")\n'
    compile(out, "<stub>", "exec")


def test_hint_with_quotes_and_backslashes_is_a_valid_literal():
    source = '### BEGIN SOLUTION\n### HINT: use "np.exp" \\ not math.exp\nx = 1\n### END SOLUTION'
    out = strip_solutions(source)
    with pytest.raises(NotImplementedError, match=r'use "np.exp" \\ not math.exp'):
        exec(out, {})


@pytest.mark.parametrize(
    "source, message",
    [
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "cannot nest"),
        ("### BEGIN SOLUTION\nx = 1", "never closed"),
        ("x = 1\n### END SOLUTION", "without a matching"),
        ("### HINT: too early\n### BEGIN SOLUTION\n### END SOLUTION", "outside a solution region"),
        ("x = 1  ### BEGIN SOLUTION\n### END SOLUTION", "malformed marker"),
    ],
)
def test_bad_markers_are_reported_with_their_line(source, message):
    with pytest.raises(ExerciseError, match=message) as info:
        strip_solutions(source, where="nb.ipynb, cell 3")
    assert "nb.ipynb, cell 3, line" in str(info.value)


# --- whole notebooks -----------------------------------------------------------------------------


def test_exercise_clears_outputs_keeps_metadata_and_graded_cells():
    nb = fixture_notebook()
    original = copy.deepcopy(nb)
    ex = make_exercise(nb, "fixture")
    assert nb == original, "make_exercise must not modify its input"
    assert [c.id for c in ex.cells] == [c.id for c in nb.cells]
    assert ex.metadata == nb.metadata
    for cell in ex.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
            assert "BEGIN SOLUTION" not in cell.source and "np.logaddexp(0, x)\n" not in cell.source
    assert [(c.id, c.points, c.source) for c in graded_cells(ex)] == [
        (c.id, c.points, c.source) for c in graded_cells(nb)
    ]
    assert 'raise NotImplementedError("Exercise: np.logaddexp(0, x) is log(exp(0) + exp(x))")' in ex.cells[2].source
    assert ex.cells[6].source.count("raise NotImplementedError") == 2


def test_generation_is_deterministic_and_check_detects_drift(tmp_path):
    solutions, exercises = tmp_path / "solutions", tmp_path / "exercises"
    solutions.mkdir()
    shutil.copy(FIXTURE, solutions / "01_fixture_solutions.ipynb")
    target = exercises / "01_fixture_exercises.ipynb"
    # The fixture's graded cells are unmarked: the first run marks the solution and writes the exercise.
    assert generate(solutions, exercises, check=True) == [solutions / "01_fixture_solutions.ipynb", target]
    assert not target.exists(), "--check must not write"
    assert generate(solutions, exercises) == [solutions / "01_fixture_solutions.ipynb", target]
    first = target.read_bytes()
    assert generate(solutions, exercises) == []
    assert generate(solutions, exercises, check=True) == []
    assert target.read_bytes() == first

    nb = nbformat.read(solutions / "01_fixture_solutions.ipynb", as_version=4)
    nb.cells[1].source += "\nEXTRA = 1"
    nbformat.write(nb, solutions / "01_fixture_solutions.ipynb")
    assert generate(solutions, exercises, check=True) == [target]
    assert target.read_bytes() == first, "--check must not write"
    assert main(["exercises", "--check", "--solutions", str(solutions), "--exercises", str(exercises)]) == 1
    assert main(["exercises", "--solutions", str(solutions), "--exercises", str(exercises)]) == 0
    assert main(["exercises", "--check", "--solutions", str(solutions), "--exercises", str(exercises)]) == 0

    (exercises / "02_orphan.ipynb").write_text(first.decode())
    assert generate(solutions, exercises, check=True) == [exercises / "02_orphan.ipynb"]
    assert main(["exercises", "--check", "--solutions", str(solutions), "--exercises", str(exercises)]) == 1
    (exercises / "02_orphan.ipynb").unlink()

    nb = nbformat.read(solutions / "01_fixture_solutions.ipynb", as_version=4)
    graded_index = next(i for i, c in enumerate(nb.cells) if "graded" in c.metadata.get("tags", []))
    nb.cells[graded_index].source = nb.cells[graded_index].source.split("\n", 1)[1]   # header line lost
    nbformat.write(nb, solutions / "01_fixture_solutions.ipynb")
    assert generate(solutions, exercises, check=True) == [solutions / "01_fixture_solutions.ipynb"]
    assert main(["exercises", "--check", "--solutions", str(solutions), "--exercises", str(exercises)]) == 1


def test_invalid_solutions_notebook_stops_generation(tmp_path, capsys):
    nb = new_notebook(cells=[new_code_cell("### BEGIN SOLUTION\nx = 1"), graded("assert x == 1")])
    (tmp_path / "s").mkdir()
    nbformat.write(nb, tmp_path / "s" / "01_bad.ipynb")
    assert main(["exercises", "--solutions", str(tmp_path / "s"), "--exercises", str(tmp_path / "e")]) == 2
    assert "01_bad.ipynb, cell 0, line 1" in capsys.readouterr().err
    assert not (tmp_path / "e").exists()


# --- the validator -------------------------------------------------------------------------------


def test_validator_accepts_the_fixture():
    assert validate_notebook(fixture_notebook(), "fixture", require_graded=True) == []


@pytest.mark.parametrize(
    "cells, message",
    [
        ([graded("assert 1", "a"), graded("assert 2", "a")], "already used by cell 0"),
        ([graded("assert 1", "a", 0)], "positive number"),
        ([graded("assert 1", "a", -2)], "positive number"),
        ([graded("assert 1", "a", True)], "positive number"),
        ([graded("assert 1", "")], "non-empty string"),
        ([new_code_cell("assert 1", metadata={"tags": ["graded"]})], "no metadata.coursekit"),
        ([new_code_cell("assert 1", metadata={"coursekit": {"id": "a", "points": 1}})], "no 'graded' tag"),
        ([graded("### BEGIN SOLUTION\nassert 1\n### END SOLUTION", "a")], "contains a solution region"),
        ([graded("   ", "a")], "empty"),
        ([graded("graded_check('b', inputs, probe, judge, seed=1)", "a")], "another id than its own"),
        ([new_markdown_cell("x", metadata={"tags": ["graded"], "coursekit": {"id": "a", "points": 1}})],
         "only code cells"),
        ([new_code_cell("x = 1")], "has no graded cell"),
    ],
)
def test_validator_errors_name_the_cell_and_the_fix(cells, message):
    problems = validate_notebook(new_notebook(cells=cells), "nb.ipynb", require_graded=True)
    assert any(message in p for p in problems), problems
    assert all(p.startswith("nb.ipynb") for p in problems)


def test_make_exercise_refuses_invalid_graded_cells():
    nb = new_notebook(cells=[graded("assert 1", "a"), graded("assert 2", "a")])
    with pytest.raises(ExerciseError, match="already used"):
        make_exercise(nb, "nb.ipynb")


# --- the repository's own notebooks --------------------------------------------------------------


def course_pairs():
    """(solutions dir, exercises dir) of the repository when it has any, plus always the fixture."""
    pairs = [pytest.param("fixture", id="fixture")]
    if sorted((ROOT / "solutions").glob("*.ipynb")):
        pairs.insert(0, pytest.param("repo", id="repo"))
    return pairs


@pytest.mark.parametrize("which", course_pairs())
def test_exercises_are_up_to_date_with_solutions(which, tmp_path):
    if which == "repo":
        solutions, exercises = ROOT / "solutions", ROOT / "exercises"
    else:
        solutions, exercises = tmp_path / "solutions", tmp_path / "exercises"
        solutions.mkdir()
        shutil.copy(FIXTURE, solutions / "01_fixture_solutions.ipynb")
        generate(solutions, exercises)
    stale = generate(solutions, exercises, check=True)
    assert not stale, (
        f"exercises out of date with solutions: {[str(p) for p in stale]}; "
        "run `python -m coursekit exercises` and commit the result"
    )
    for path in sorted(solutions.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert validate_notebook(nb, str(path), require_graded=True) == []


# --- the instructors' table in docs/teaching.md -------------------------------------------------


def teaching_table_rows():
    """``{NN_name: (number, [(cell id, points)], total)}`` from docs/teaching.md's exercise table."""
    text = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    rows = {}
    for number, stem, cells, total in re.findall(r"^\| (\d+) \| `(\w+)` \| (.*) \| (\d+) \|$", text, re.MULTILINE):
        listed = [(cell_id, int(points)) for cell_id, points in re.findall(r"`([\w-]+)`: (\d+)", cells)]
        rows[stem] = (int(number), listed, int(total))
    return rows


def test_docs_teaching_lists_every_exercise_with_its_graded_cells_and_points():
    rows = teaching_table_rows()
    stems = sorted(path.name[: -len("_solutions.ipynb")] for path in (ROOT / "solutions").glob("*_solutions.ipynb"))
    for stem in stems:
        cells = [(cell.id, cell.points) for cell in graded_cells(nbformat.read(
            ROOT / "solutions" / f"{stem}_solutions.ipynb", as_version=4))]
        row = f"| {int(stem[:2])} | `{stem}` | " + ", ".join(f"`{i}`: {p}" for i, p in cells) + \
            f" | {sum(p for _, p in cells)} |"
        assert stem in rows, f"docs/teaching.md's table of exercises has no row for {stem}; add:\n{row}"
        assert rows[stem] == (int(stem[:2]), cells, sum(p for _, p in cells)), \
            f"docs/teaching.md's row for {stem} disagrees with its graded cells; it should read:\n{row}"
    assert sorted(rows) == stems, f"docs/teaching.md lists exercises that do not exist: {sorted(set(rows) - set(stems))}"
