"""Judges tested by mutation: does each graded cell catch the plausible bugs of its task?

``python -m coursekit mutate [--task ID] [--limit N]`` takes every graded task of ``solutions/``,
makes mutants of the solution regions the task runs (:mod:`.operators`), grades each mutant with the
task's own graded cell (:mod:`.worker`: the grader's environment, inputs and verdict), and reports per
task how many mutants there were, how many are *equivalent* (their observations equal the solution's,
value, shape and dtype, on every input the judge drew: no judge could tell them apart on those
inputs), how many the judge *killed* (the graded cell failed, raised, timed out or reported nothing:
0 points under the grader) and the share of the non-equivalent ones killed. Survivors are listed
with the change each made, for a person to read: each is a bug the judge lets through, or a change
that computes the same answer by another route.

Which solution regions a task runs: those in the cells after the previous graded cell and up to this
one; a graded cell with none there (a second check of the same function) takes the previous task's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from coursekit.course.authoring.exercises import find_regions
from coursekit.course.authoring.graded import graded_cells, is_graded

from .operators import Mutant, mutants_of

NONCE = "mutation-testing"        # a fixed grading nonce: the same inputs in every run of the tool


@dataclass
class GradedTask:
    notebook: Path
    cell_id: str
    graded_index: int
    solution_cells: list[int]


@dataclass
class TaskResult:
    """What one task's judge did with its mutants."""

    task: GradedTask
    mutants: int = 0
    equivalent: int = 0
    killed: int = 0
    survivors: list[str] = field(default_factory=list)
    baseline: str = "passed"
    reproducible: bool = True

    @property
    def judged(self) -> int:
        return self.mutants - self.equivalent

    @property
    def kill_rate(self) -> float | None:
        return self.killed / self.judged if self.judged else None


def region_lines(source: str) -> set[int]:
    """1-based line numbers strictly inside the cell's solution regions (markers and hints excluded)."""
    lines = set()
    for region in find_regions(source):
        lines.update(range(region.begin + 2, region.end + 1))
    return lines


def find_tasks(notebook: Path) -> list[GradedTask]:
    """The graded tasks of a solutions notebook with the cells holding the regions each one runs."""
    nb = nbformat.read(notebook, as_version=4)
    tasks, previous, inherited = [], -1, []
    for cell in graded_cells(nb):
        own = [k for k in range(previous + 1, cell.index)
               if nb.cells[k].cell_type == "code" and not is_graded(nb.cells[k]) and region_lines(nb.cells[k].source)]
        inherited = own or inherited
        if inherited:
            tasks.append(GradedTask(notebook, cell.id, cell.index, list(inherited)))
        previous = cell.index
    return tasks


def make_mutants(task: GradedTask) -> list[tuple[int, Mutant]]:
    """``(cell index, mutant)`` for every mutant of the task's regions, in a fixed order. Mutants whose
    source does not compile (an operator swap that makes no Python) are left out."""
    nb = nbformat.read(task.notebook, as_version=4)
    found = []
    for index in task.solution_cells:
        source = nb.cells[index].source
        for mutant in mutants_of(source, region_lines(source)):
            try:
                compile(mutant.source, "<mutant>", "exec")
            except SyntaxError:
                continue
            found.append((index, Mutant(f"cell {index} {mutant.what}", mutant.source)))
    return found


def sample(items: list, limit: int | None) -> list:
    """At most ``limit`` items spread evenly over the list (the same ones every time)."""
    if not limit or len(items) <= limit:
        return list(items)
    return [items[(k * len(items)) // limit] for k in range(limit)]


def _worker(spec: dict, out: Path, folder: Path) -> None:
    spec_path = folder / "spec.json"
    spec_path.write_text(json.dumps(spec))
    try:
        subprocess.run([sys.executable, "-m", "coursekit.course.authoring.mutation.worker", str(spec_path), str(out)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                       timeout=spec["cell_timeout"] * (4 + 3 * len(spec["mutants"])))
    except subprocess.TimeoutExpired:
        pass        # the mutant it was on counts as killed (a grader's notebook limit), see run_task


def run_task(task: GradedTask, limit: int | None = None, cell_timeout: float = 60, match: str | None = None) -> TaskResult:
    """Grade the task's mutants (those whose description holds ``match``; a sample of ``limit`` when
    given) in a worker process of its own.

    A mutant during which the worker dies (a fault that takes the process down, as it would take a
    student's Jupyter kernel down) is killed; the worker is started again for the mutants after it.
    """
    mutants = sample([m for m in make_mutants(task) if match is None or match in m[1].what], limit)
    result = TaskResult(task, mutants=len(mutants))
    with tempfile.TemporaryDirectory(prefix="coursekit-mutate-") as tmp:
        folder, out = Path(tmp), Path(tmp) / "out.jsonl"
        todo = [{"id": k, "cell": index, "source": m.source} for k, (index, m) in enumerate(mutants)]
        spec = {"notebook": str(task.notebook), "graded_index": task.graded_index, "cell_id": task.cell_id,
                "first_solution_index": min(task.solution_cells), "nonce": NONCE, "cell_timeout": cell_timeout,
                "baseline_path": str(folder / "baseline.npz")}
        records = {}
        while True:
            _worker({**spec, "mutants": todo}, out, folder)
            records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())} if out.exists() else {}
            if "baseline" not in records:
                result.baseline = "the worker died before the solution was graded"
                return result
            left = [m for m in todo if m["id"] not in records]
            if not left:
                break
            records[left[0]["id"]] = {"id": left[0]["id"], "verdict": "the process died", "equal": False}
            with out.open("a") as handle:
                handle.write(json.dumps(records[left[0]["id"]]) + "\n")
            todo = left[1:]
            if not todo:
                break
    base = records["baseline"]
    result.baseline = base["verdict"] if base["verdict"] != "passed" else base["again"]
    result.reproducible = base["reproducible"]
    for k, (_, mutant) in enumerate(mutants):
        record = records[k]
        if record["verdict"] != "passed":
            result.killed += 1
        elif record["equal"]:
            result.equivalent += 1
        else:
            result.survivors.append(mutant.what)
    return result


def solution_notebooks(folder: Path) -> list[Path]:
    return sorted(Path(folder).glob("*_solutions.ipynb"))


def all_tasks(folder: Path, only: set[str] | None = None) -> list[GradedTask]:
    """Every graded task of the notebooks in ``folder``; ``only`` keeps the named cell ids, or
    ``NN:cell-id`` / ``NN`` forms."""
    tasks = [t for nb in solution_notebooks(folder) for t in find_tasks(nb)]
    if not only:
        return tasks

    def wanted(task):
        number = task.notebook.name.split("_")[0]
        return task.cell_id in only or number in only or f"{number}:{task.cell_id}" in only
    return [t for t in tasks if wanted(t)]


def environment_note() -> str:
    return f"python {sys.version.split()[0]}, {os.cpu_count()} cores"
