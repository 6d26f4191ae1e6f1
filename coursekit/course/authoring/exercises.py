"""Generate the student notebooks (``exercises/``) from the single source (``solutions/``).

In a solutions notebook, the part the student must write is a *solution region* inside a code cell::

    def softplus(x):
        ### BEGIN SOLUTION
        ### HINT: np.logaddexp(0, x) is the stable form
        return np.logaddexp(0, x)
        ### END SOLUTION

:func:`make_exercise` replaces each region (markers included) with one line at the indentation of
the ``BEGIN`` marker::

    def softplus(x):
        raise NotImplementedError("Exercise: np.logaddexp(0, x) is the stable form")

and clears outputs and execution counts, so that the exercise neither leaks the answer nor shows
stale results. Metadata (tags, graded-cell ids, nbgrader marks, kernelspec) is kept: the graded cells
of an exercise are exactly those of its solution. Only the ``execution`` timing metadata that nbclient
records is dropped, because it changes on every run; graded cells become read-only in the exercise
(``editable``/``deletable`` false, which JupyterLab and Notebook honour) since grading restores them.

Names: ``solutions/NN_name_solutions.ipynb`` becomes ``exercises/NN_name_exercises.ipynb`` (see
:func:`exercise_name`), so that a lesson, its exercise and its solution never open as three tabs
with the same title.

:func:`generate` first brings each solutions notebook's graded-cell marks (first line, pass line,
nbgrader metadata: :func:`coursekit.course.authoring.graded.mark_notebook`) in line, writing the solution back
when they were not; with ``check=True`` such a solution is reported as stale instead.

Generation is deterministic (same input, byte-identical output) so that :func:`generate` with
``check=True`` can tell whether ``exercises/`` is up to date, and a test can fail when it is not.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat

from .graded import is_graded, mark_notebook, validate_notebook
from .regions import ANY_MARKER_RE, BEGIN_RE, END_RE, HINT_RE, ExerciseError, Region, find_regions  # noqa: F401
# (the solution-region parser lives in .regions, which graded.py uses too; importable from here as before)

DEFAULT_HINT = "replace this line with your code"
SOLUTIONS_SUFFIX = "_solutions"
EXERCISES_SUFFIX = "_exercises"


def stub_line(indent: str, hint: str | None) -> str:
    """The line that replaces a region. ``json.dumps`` gives a valid, double-quoted Python literal."""
    message = json.dumps(f"Exercise: {hint or DEFAULT_HINT}", ensure_ascii=False)
    return f"{indent}raise NotImplementedError({message})"


def strip_solutions(source: str, where: str = "cell") -> str:
    """Replace every solution region of ``source`` with its stub line."""
    regions = find_regions(source, where)
    if not regions:
        return source
    lines = source.splitlines()
    for region in reversed(regions):
        lines[region.begin : region.end + 1] = [stub_line(region.indent, region.hint)]
    text = "\n".join(lines)
    return text + "\n" if source.endswith("\n") else text


def make_exercise(nb, name: str = "notebook"):
    """Return the exercise version of a solutions notebook (the input is not modified).

    Raises :class:`ExerciseError` when the notebook's markers or graded cells are invalid, naming
    the notebook (``name``), cell and line, so that a broken source never yields a broken exercise.
    """
    problems = validate_notebook(nb, name)
    out = copy.deepcopy(nb)
    for index, cell in enumerate(out.cells):
        where = f"{name}, cell {index}"
        if cell.cell_type != "code":
            if ANY_MARKER_RE.search(cell.source):
                problems.append(
                    f"{where}: solution markers in a {cell.cell_type} cell; only code cells can hold "
                    f"solution regions."
                )
            continue
        try:
            cell.source = strip_solutions(cell.source, where)
        except ExerciseError as exc:
            problems.append(str(exc))
        cell.outputs = []
        cell.execution_count = None
        cell.metadata.pop("execution", None)
        if is_graded(cell):
            cell.metadata["editable"] = False
            cell.metadata["deletable"] = False
    if problems:
        raise ExerciseError("\n".join(dict.fromkeys(problems)))
    return out


def exercise_name(solution_name: str) -> str:
    """``01_tour_solutions.ipynb`` (or ``01_tour.ipynb``) -> ``01_tour_exercises.ipynb``."""
    stem = Path(solution_name).stem
    if stem.endswith(SOLUTIONS_SUFFIX):
        stem = stem[: -len(SOLUTIONS_SUFFIX)]
    return f"{stem}{EXERCISES_SUFFIX}.ipynb"


def notebook_text(nb) -> str:
    """A notebook as the bytes (as text) this module writes: nbformat's JSON and a final newline."""
    return nbformat.writes(nb) + "\n"


def marked_solution(solution_path: Path):
    """``(notebook, changed)``: the solutions notebook with its marks in line (see
    :func:`coursekit.course.authoring.graded.mark_notebook`) and whether they were not."""
    nb = nbformat.read(solution_path, as_version=4)
    problems = validate_notebook(nb, str(solution_path))
    if problems:
        raise ExerciseError("\n".join(problems))
    return nb, mark_notebook(nb)


def exercise_text(solution_path: Path) -> str:
    """The exact bytes (as text) that ``exercises/<exercise_name>`` must contain."""
    return notebook_text(make_exercise(marked_solution(solution_path)[0], str(solution_path)))


def generate(solutions_dir, exercises_dir, check: bool = False) -> list[Path]:
    """Regenerate ``exercises_dir/NN_name_exercises.ipynb`` from every ``solutions_dir/*.ipynb``.

    Returns the paths that were out of date: solutions whose marks were not in line and exercises,
    written (``check=False``) or only reported (``check=True``, nothing is written). Exercises without
    a solution source are returned too, as stale, but never deleted: removing a file someone put
    there by hand is for a human to decide. Raises :class:`ExerciseError` listing every invalid
    solutions notebook before writing anything.
    """
    solutions_dir, exercises_dir = Path(solutions_dir), Path(exercises_dir)
    sources = sorted(solutions_dir.glob("*.ipynb"))
    texts, problems, unmarked = {}, [], set()
    for source in sources:
        try:
            solution, changed = marked_solution(source)
            if changed:
                texts[source] = notebook_text(solution)
                unmarked.add(source)
            texts[exercises_dir / exercise_name(source.name)] = notebook_text(make_exercise(solution, str(source)))
        except ExerciseError as exc:
            problems.append(str(exc))
    if problems:
        raise ExerciseError("\n".join(problems))

    stale = []
    for target, text in texts.items():
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text and target not in unmarked:
            continue
        stale.append(target)
        if not check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", newline="\n")
    if exercises_dir.is_dir():
        stale += [path for path in sorted(exercises_dir.glob("*.ipynb")) if path not in texts]
    return stale


def orphans(solutions_dir, exercises_dir) -> list[Path]:
    """Exercise notebooks that have no source in ``solutions_dir``."""
    names = {exercise_name(path.name) for path in Path(solutions_dir).glob("*.ipynb")}
    return [path for path in sorted(Path(exercises_dir).glob("*.ipynb")) if path.name not in names]
