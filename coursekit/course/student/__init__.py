"""What runs in a student's kernel or on a student's machine.

:mod:`~coursekit.course.student.check` is what a graded cell calls. Modules here import NumPy and the
standard library only: a student's kernel pays no more than that for them, and they import nothing
from the grader (:mod:`coursekit.course.grading`) or the author's tools (:mod:`coursekit.course.authoring`).
``coursekit start`` (:mod:`~coursekit.course.student.start`, the course found by
:mod:`~coursekit.course.student.layout`) and ``coursekit doctor`` (:mod:`~coursekit.course.student.doctor`)
follow the same rule. The one exception is :mod:`~coursekit.course.student.setup`, which the setup cell
of every notebook calls: it chooses the device, so it reads coursekit's config and the cost model's
GPU presets (a lesson imports both anyway).
"""
