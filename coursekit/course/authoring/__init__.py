"""The course author's tools: exercise notebooks generated from solutions, the rules of a graded cell, and
what builds the course students get.

:mod:`~coursekit.course.authoring.exercises` makes ``exercises/`` from ``solutions/`` (``python -m coursekit
exercises``, ``--check``); :mod:`~coursekit.course.authoring.graded` says what a graded cell is and
validates a notebook's graded cells. The grader reads the same rules, so they live below it.
:mod:`~coursekit.course.authoring.release` writes the student folder and zip (``coursekit release``),
checked by :mod:`~coursekit.course.authoring.answers` (no answer line of ``solutions/`` in it);
:mod:`~coursekit.course.authoring.setup_cell` writes every notebook's setup cell and
:mod:`~coursekit.course.authoring.links` the README's Colab table, from the one repository address.
"""
