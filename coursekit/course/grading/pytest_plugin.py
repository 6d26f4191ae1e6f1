"""Check students' notebooks with pytest the way the grader grades them: ``--coursekit-reference DIR``.

nbval on a student's notebook runs the student's own cells, graded cells included: a student who
weakened a check to ``pass`` passes it. With ``--coursekit-reference``::

    python -m pytest --nbval-lax --coursekit-reference exercises/ submissions/alice/

every notebook pytest collects is treated as a submission and goes through
:func:`coursekit.course.grading.grader.grade_notebook`, the grader's own entry point: it is matched to its
reference by the grader's rules (:func:`coursekit.course.grading.submissions.reference_for`: old file names
included), its graded cells are restored from the reference, it runs in its own process inside this
machine's sandbox with the grading environment, and judged cells get the grader's verdict (see
:mod:`coursekit.course.student.check`). Each graded cell of the reference becomes one pytest item, named by
its id and points, which passes when the grader would give it full marks and otherwise fails with
the grader's reason. Nothing else of the notebook becomes a test: nbval's items for these files are
dropped, because running the notebook as the student left it is exactly what must not count.

The option is declared by the small ``coursekit_pytest`` module (the installed ``pytest11`` entry
point), which loads this module only when the option is given.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .grader import Reference, Score, grade_notebook, load_references
from .submissions import FLAT_SEPARATOR, reference_for
from ..authoring.graded import GradedCell
from .report import number
from .runner import protection


def _points(value) -> str:
    return f"{number(value)} point" + ("" if float(value) == 1 else "s")


class ReferenceCheck:
    """The plugin object registered for one pytest run that was given ``--coursekit-reference``."""

    def __init__(self, config):
        self.folder = Path(config.getoption("coursekit_reference"))
        self.cell_timeout = config.getoption("coursekit_cell_timeout")
        if not self.folder.is_dir():
            raise pytest.UsageError(
                f"--coursekit-reference {self.folder}: no such folder; give the folder of reference "
                f"notebooks the students were handed (normally exercises/)."
            )
        try:
            self.references = load_references(self.folder)
        except ValueError as exc:
            raise pytest.UsageError(f"--coursekit-reference {self.folder}: {exc} Give the folder of the "
                                    f"exercise notebooks (normally exercises/).") from None
        self.checked: list[GradedNotebook] = []

    def pytest_report_header(self, config):
        names = ", ".join(ref.name for ref in self.references)
        return [f"coursekit: notebooks checked against {self.folder} ({names}) as `python -m coursekit grade` "
                f"grades them; each run isolated by {protection().label}"]

    @pytest.hookimpl(wrapper=True)
    def pytest_collect_file(self, file_path, parent):
        collected = yield
        if file_path.suffix != ".ipynb":
            return collected
        # Any other collector of this notebook (nbval's) would run the student's cells as they are.
        reference = reference_for(file_path, self.references)
        if reference is None:
            return [UnmatchedNotebook.from_parent(parent, path=file_path, check=self)]
        notebook = GradedNotebook.from_parent(parent, path=file_path, reference=reference, check=self)
        self.checked.append(notebook)
        return [notebook]

    def pytest_terminal_summary(self, terminalreporter):
        graded = [notebook for notebook in self.checked if notebook.scores is not None]
        if not graded:
            return
        terminalreporter.section("coursekit: points as `python -m coursekit grade` would give them")
        for notebook in sorted(graded, key=lambda notebook: notebook.nodeid):
            scores = notebook.scores.values()
            got, out_of = sum(s.points for s in scores), sum(s.max_points for s in scores)
            where = os.path.relpath(notebook.path, notebook.config.invocation_params.dir)
            terminalreporter.line(f"{where}: {number(got)}/{number(out_of)} against "
                                  f"{notebook.reference.name} ({next(iter(scores)).protection or 'not run'})")


class UnmatchedNotebook(pytest.File):
    """A collected notebook with no reference: one item that errors, saying what to do.

    An error of its own rather than a collection error, which would stop pytest before it checks
    the other notebooks (the grader, likewise, warns about such a file and grades the rest).
    """

    def __init__(self, *, check: ReferenceCheck, **kwargs):
        super().__init__(**kwargs)
        self.check = check

    def collect(self):
        yield NoReferenceItem.from_parent(self, name="no-reference")


class NoReferenceItem(pytest.Item):
    def setup(self):
        names = ", ".join(ref.name for ref in self.parent.check.references)
        pytest.fail(
            f"{self.path}: no reference notebook in {self.parent.check.folder} matches this file's name "
            f"(references: {names}). Name it after its exercise (05_name_exercises.ipynb, the older "
            f"05_name.ipynb, <student>__05_name.ipynb, or any name starting with the exercise's own "
            f"NN_ number), or point --coursekit-reference at the folder that holds its reference; "
            f"pass only student notebooks to pytest with this option.", pytrace=False)

    def runtest(self):
        pass

    def reportinfo(self):
        return self.path, None, f"{self.parent.nodeid}: no reference"


class GradedNotebook(pytest.File):
    """One student notebook: one item per graded cell of its reference, all from one grading run."""

    def __init__(self, *, reference: Reference, check: ReferenceCheck, **kwargs):
        super().__init__(**kwargs)
        self.reference, self.check = reference, check
        self.scores: dict[str, Score] | None = None

    def collect(self):
        for cell in self.reference.cells:
            yield GradedCellItem.from_parent(self, name=f"{cell.id}[{_points(cell.points)}]", cell=cell)

    def score(self, cell_id: str) -> Score:
        """The grader's score of one graded cell; the notebook is run once, by its first item."""
        if self.scores is None:
            stem = self.path.stem
            student = stem.split(FLAT_SEPARATOR, 1)[0] if FLAT_SEPARATOR in stem else self.path.parent.name
            scores = grade_notebook(self.path, self.reference, student=student,
                                    cell_timeout=self.check.cell_timeout)
            self.scores = {s.cell_id: s for s in scores}
        return self.scores[cell_id]


class GradedCellItem(pytest.Item):
    """One graded cell of the reference, as the grader scores it in this student's notebook."""

    def __init__(self, *, cell: GradedCell, **kwargs):
        super().__init__(**kwargs)
        self.cell = cell
        self.user_properties.append(("points", number(cell.points)))

    def runtest(self):
        score = self.parent.score(self.cell.id)
        self.user_properties.append(("scored", number(score.points)))
        if score.points < score.max_points:
            pytest.fail(
                f"graded cell {score.cell_id} ({_points(score.max_points)}): "
                f"{number(score.points)}/{number(score.max_points)}, {score.reason}\n"
                f"(graded cells restored from {self.parent.check.folder / self.parent.reference.name}.ipynb, "
                f"run as `python -m coursekit grade` runs it; isolation: {score.protection or 'not run'})",
                pytrace=False)

    def reportinfo(self):
        # What failure headers show; not a suffix of the node id, which `-v` would then rewrite.
        return self.path, None, f"{self.name} in {self.parent.nodeid}"
