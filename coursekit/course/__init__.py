"""The course machinery: exercise generation, graded cells and the instructor's grader.

The course keeps one source of truth per exercise notebook, ``solutions/NN_name_solutions.ipynb``. Everything a
student or an instructor touches is derived from it:

* :mod:`coursekit.course.exercises` turns each solutions notebook into ``exercises/NN_name_exercises.ipynb``
  (solution regions become ``raise NotImplementedError(...)`` stubs) and can check that the two have
  not drifted apart;
* :mod:`coursekit.course.graded` defines what a *graded cell* is and validates notebooks;
* :mod:`coursekit.course.runner` executes one notebook in its own process with per-cell and
  per-notebook time limits and reports what happened to every cell (it survives infinite loops and
  dead kernels);
* :mod:`coursekit.course.grader` grades a folder of submissions against the reference notebooks and
  writes the score table (:mod:`coursekit.course.report`).

None of these modules imports the array compiler: the machinery works (and is tested) on plain NumPy
notebooks, so it does not break when the library does.
"""

from .exercises import ExerciseError, generate, make_exercise
from .graded import GradedCell, graded_cells, validate_notebook

__all__ = [
    "ExerciseError",
    "GradedCell",
    "generate",
    "graded_cells",
    "make_exercise",
    "validate_notebook",
]
