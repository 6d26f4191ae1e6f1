"""The course author's tools: exercise notebooks generated from solutions, and the rules of a graded cell.

:mod:`~coursekit.course.authoring.exercises` makes ``exercises/`` from ``solutions/`` (``python -m coursekit
exercises``, ``--check``); :mod:`~coursekit.course.authoring.graded` says what a graded cell is and
validates a notebook's graded cells. The grader reads the same rules, so they live below it.
"""
