"""The course machinery, in three rooms named for whose they are.

The course keeps one source of truth per exercise notebook, ``solutions/NN_name_solutions.ipynb``. Everything a
student or an instructor touches is derived from it:

* :mod:`coursekit.course.student` — what runs in a student's kernel or on a student's machine:
  :mod:`~coursekit.course.student.check` is what a graded cell calls (a probe of the student's code in
  the kernel; the same function judges when the grader replays the cell outside it);
* :mod:`coursekit.course.authoring` — the course author's tools: :mod:`~coursekit.course.authoring.exercises`
  turns each solutions notebook into ``exercises/NN_name_exercises.ipynb`` (solution regions become
  ``raise NotImplementedError(...)`` stubs) and checks that the two have not drifted apart;
  :mod:`~coursekit.course.authoring.graded` defines what a *graded cell* is and validates notebooks;
* :mod:`coursekit.course.grading` — the instructor's grader, a pipeline: find the submissions, run each
  notebook in its own sandboxed process, judge the reported observations, report the scores.

Rooms import downwards only: grading uses authoring (what a graded cell is) and student (the report
format a graded cell writes); authoring and student use neither.

None of these modules imports the array compiler: the machinery works (and is tested) on plain NumPy
notebooks, so it does not break when the library does. The names below are imported on first use:
a graded cell imports ``coursekit.course.student.check`` in the student's kernel, and that must not cost
the second it takes to import nbformat.
"""

import importlib
import importlib.abc
import importlib.util
import sys

_EXPORTS = {
    "ExerciseError": "authoring.exercises", "generate": "authoring.exercises",
    "make_exercise": "authoring.exercises",
    "GradedCell": "authoring.graded", "graded_cells": "authoring.graded", "validate_notebook": "authoring.graded",
}

__all__ = sorted(_EXPORTS)

# Old module paths that files outside this repository still name: an exercise notebook handed out
# before the course was split into rooms has ``from coursekit.course.check import graded_check`` in its
# graded cells, and a saved lesson has ``from coursekit.course.lesson import ...``. Each resolves to the
# module that replaced it (the same module object, so nothing is loaded twice).
MOVED = {f"{__name__}.check": f"{__name__}.student.check", f"{__name__}.lesson": "coursekit.lessons"}


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path in :data:`MOVED` and loads it as the module at its new path."""

    def find_spec(self, fullname, path=None, target=None):
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec):
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module):
        """Nothing to run: the module at the new path was executed when it was imported."""


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules())
