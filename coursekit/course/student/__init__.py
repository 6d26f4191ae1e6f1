"""What runs in a student's kernel or on a student's machine.

:mod:`~coursekit.course.student.check` is what a graded cell calls. Modules here import NumPy and the
standard library only: a student's kernel pays no more than that for them, and they import nothing
from the grader (:mod:`coursekit.course.grading`) or the author's tools (:mod:`coursekit.course.authoring`).
"""
