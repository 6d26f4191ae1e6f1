"""The grader's side of a graded check: judge reported observations in a trusted process.

:func:`judge_cells` runs after a notebook has been executed, in the runner's own process (outside
the sandbox, never in the student's kernel). For each graded cell written with
:func:`coursekit.course.student.check.graded_check` it executes the cell's *restored* source — the
reference's, which the grader put back before the run — with the check switched to judging, so
the cell's ``inputs`` and ``judge`` functions run here, on this process's NumPy and coursekit, on
the observations the kernel wrote in the safe format. See :mod:`coursekit.course.student.check` for the
threat model. The runner's child calls it after the kernel has gone, inside the run's cgroup
(or the runner's memory polling), so a judge made to allocate meets the run's memory limit; each
cell's judge gets ``time_limit`` seconds.
"""

from __future__ import annotations

import contextlib
import io
import signal
import threading

from ..student.check import NotReported, judging

JUDGED_CALL = "graded_check("


def is_judged(source: str) -> bool:
    """True for a graded cell whose verdict comes from :func:`judge_cells` (it calls graded_check)."""
    return JUDGED_CALL in source


class JudgeTimeout(Exception):
    """A judge ran past its time limit (observations made to make it slow)."""


@contextlib.contextmanager
def _time_limit(seconds: float | None):
    """Raise :class:`JudgeTimeout` in this (main) thread after ``seconds`` of wall-clock time."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(*_):
        raise JudgeTimeout(f"the judge took longer than {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def judge_cells(cells, report_dir: str, nonce: str, time_limit: float | None = None) -> dict[int, tuple[str, str]]:
    """``{cell index: (status, reason)}`` for ``cells``, a list of ``(index, cell id, source)``.

    ``status`` is ``"passed"``, ``"failed"`` (the reason says what the judge found) or
    ``"unreported"`` (the cell left no observations of this run: the kernel's own outcome explains
    why, or, if the kernel says the cell passed, the cell did not run as restored).
    """
    verdicts = {}
    for index, cell_id, source in cells:
        namespace = {"__name__": "__coursekit_judge__"}
        printed = io.StringIO()
        try:
            code = compile(source, f"<graded cell {cell_id}>", "exec")
            with judging(report_dir, nonce) as state, contextlib.redirect_stdout(printed), \
                    contextlib.redirect_stderr(printed), _time_limit(time_limit):
                exec(code, namespace)
            if cell_id not in state.judged:
                verdicts[index] = ("failed", f"grader error: the reference cell never called graded_check({cell_id!r}, ...)")
            else:
                verdicts[index] = ("passed", "passed")
        except NotReported as exc:
            verdicts[index] = ("unreported", str(exc))
        except AssertionError as exc:
            message = " ".join(str(exc).split())
            verdicts[index] = ("failed", f"failed assertion: {message}" if message else "failed assertion (no message)")
        except JudgeTimeout as exc:
            verdicts[index] = ("failed", f"error: {exc}")
        except Exception as exc:  # noqa: BLE001 -- observations the judge cannot use (a wrong type, a missing name)
            verdicts[index] = ("failed", f"error: {type(exc).__name__}: {' '.join(str(exc).split())}")
    return verdicts
