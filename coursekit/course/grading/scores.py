"""One row of the score table, shared by the grader, its reports, regrades and exports.

It lives apart from :mod:`coursekit.course.grading.grader` so that the modules that read and write score
tables (:mod:`.regrade`, :mod:`.export`) need not import the grader that produces them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Score:
    """One row of the score table: one graded cell of one student's notebook."""

    student: str
    notebook: str
    cell_id: str
    points: float
    max_points: float
    reason: str
    protection: str = ""     # what isolated the run (see coursekit.course.grading.sandbox), "" if never run
    # What the grade depends on (see coursekit.course.grading.regrade): the hand-in's and the judging graded
    # cell's SHA-256, and the grader's version (git commit and code hash). "" until stamped.
    submission_sha256: str = ""
    judge_sha256: str = ""
    grader: str = ""
