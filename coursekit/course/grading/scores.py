"""One row of the score table, shared by the grader, its reports, regrades and exports.

It lives apart from :mod:`coursekit.course.grading.grader` so that the modules that read and write score
tables (:mod:`.regrade`, :mod:`.export`) need not import the grader that produces them.

``grader_fault`` says that the grader, not the student, caused the row's outcome: a regrade always
runs such a notebook again, even when nothing it depends on changed (:mod:`.regrade`). Every reason
the grader writes was sorted (see :data:`GRADER_REASONS`); these are the grader's:

* ``grader error: …`` — an exception in the grader, a run that failed on every retry (a lost cluster
  worker), a reference graded cell that never called its check (the instructor's reference);
* ``not run: the grader's temporary folder … has N MB free`` — the grading machine's disk;
* ``runner failed: …`` / ``not run: runner failed: …`` — the runner process (kernel start-up, the
  judging step) failed, not the notebook.

Everything else is the student's: ``passed``, ``failed assertion``, ``error: …``, ``timeout after
Ns``, ``timeout: notebook exceeded``, ``not run: notebook timeout``, ``kernel crashed`` and ``not run:
kernel crashed earlier``, the memory and disk limits (``… limit exceeded``, ``not run: the run was
stopped at the … limit``; each run has its own cgroup or its own polled limit), ``not judged: …``
(alone it follows the student's own stop; when the runner failed, the notebook's other rows say so),
``missing graded cell``, ``missing notebook``, ``unreadable notebook``, ``refused: …``. A machine-wide
out-of-memory kill or a neighbour that slows a cell past its limit would read as ``kernel crashed`` or a
timeout: the reasons cannot tell those apart yet, so the run path must write a ``grader error`` for them.
"""

from __future__ import annotations

from dataclasses import dataclass

GRADER_REASONS = ("grader error:", "not run: the grader's temporary folder", "runner failed:",
                  "not run: runner failed:")


def grader_fault_of(reason: str) -> bool:
    """True when ``reason`` is one the grader's own failure writes (see the module docstring)."""
    return str(reason).startswith(GRADER_REASONS)


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
    grader_fault: bool = False     # the grader, not the student, caused this outcome (see above)
