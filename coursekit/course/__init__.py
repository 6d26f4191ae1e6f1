"""The course machinery: exercise generation, graded cells and the instructor's grader.

The course keeps one source of truth per exercise notebook, ``solutions/NN_name_solutions.ipynb``. Everything a
student or an instructor touches is derived from it:

* :mod:`coursekit.course.exercises` turns each solutions notebook into ``exercises/NN_name_exercises.ipynb``
  (solution regions become ``raise NotImplementedError(...)`` stubs) and can check that the two have
  not drifted apart;
* :mod:`coursekit.course.graded` defines what a *graded cell* is and validates notebooks;
* :mod:`coursekit.course.check` is what a graded cell calls: a probe of the student's code in the
  kernel and a judge that the grader runs outside it (:mod:`coursekit.course.judge`);
* :mod:`coursekit.course.runner` executes one notebook in its own process, in a sandbox
  (:mod:`coursekit.course.sandbox`, :mod:`coursekit.course.execute`), with per-cell and
  per-notebook time limits, and reports what happened to every cell (:mod:`coursekit.course.outcomes`);
* :mod:`coursekit.course.grader` grades a folder of submissions against the reference notebooks and
  writes the score table (:mod:`coursekit.course.report`); :func:`coursekit.course.grader.grade_notebook`
  grades one notebook.

None of these modules imports the array compiler: the machinery works (and is tested) on plain NumPy
notebooks, so it does not break when the library does. The names below are imported on first use:
a graded cell imports ``coursekit.course.check`` in the student's kernel, and that must not cost the
second it takes to import nbformat.
"""

import importlib

_EXPORTS = {
    "ExerciseError": "exercises", "generate": "exercises", "make_exercise": "exercises",
    "GradedCell": "graded", "graded_cells": "graded", "validate_notebook": "graded",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
