"""Start the runner's child (:mod:`coursekit.course.grading.execute`) forked from a server that has already
imported what it needs.

Every graded notebook gets one child, which drives the sandboxed kernel with nbclient. Started as a
fresh interpreter, the child spent about 0.45 s of CPU importing nbformat, jupyter_client, zmq and
nbclient before it asked for a kernel (and NumPy again to judge), on every notebook: a third of what
grading a short notebook costs on a 2-core machine. Python's own forkserver (:mod:`multiprocessing`)
imports them once per grading process (:data:`PRELOAD`) and forks a ready copy for each notebook.

The copy is still a process of its own, set up as the fresh interpreter was: its own session (so the
runner kills it and everything it started with one ``killpg``), the environment and working folder
the runner gives it, standard output and error into the run's log file, and the event pipe on a
known descriptor. Only the imported modules are inherited, and they are the grader's own, never a
student's: the server is started by the grader and forks before any notebook runs in the copy.

Where :mod:`multiprocessing` may not have children (a daemonic process such as a Dask worker), or
with ``COURSEKIT_GRADE_FORKSERVER=0``, the child starts as a fresh interpreter instead
(:class:`FreshChild`): the same arguments, the same behaviour, the imports paid again.
"""

from __future__ import annotations

import importlib
import multiprocessing
import multiprocessing.connection
import os
import subprocess
import sys
from pathlib import Path

CHILD = Path(__file__).resolve().parent / "execute.py"
PRELOAD = ["coursekit.course.grading.execute_imports"]   # what the server imports once (see that module)
SWITCH = "COURSEKIT_GRADE_FORKSERVER"


def start(args: list[str], *, env: dict[str, str], cwd: str, output_path: str, events_fd: int):
    """Start the child with the command-line ``args`` of :mod:`coursekit.course.grading.execute` (``{fd}``
    stands for the event pipe's descriptor there) and return it (a :class:`ForkedChild` or a
    :class:`FreshChild`)."""
    if env.get(SWITCH, os.environ.get(SWITCH, "1")) == "0" or multiprocessing.current_process().daemon:
        return FreshChild(args, env=env, cwd=cwd, output_path=output_path, events_fd=events_fd)
    return ForkedChild(args, env=env, cwd=cwd, output_path=output_path, events_fd=events_fd)


class ForkedChild:
    """The child forked from the grader's forkserver. ``pid``, ``wait(timeout)`` and ``returncode``
    as :class:`subprocess.Popen` has them (``returncode`` is ``-signal`` for a killed child)."""

    _context = None

    def __init__(self, args, *, env, cwd, output_path, events_fd):
        if ForkedChild._context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(PRELOAD)
            ForkedChild._context = context
        # The event pipe travels as a Connection: the forkserver passes its descriptor to the fork.
        pipe = multiprocessing.connection.Connection(os.dup(events_fd), readable=False)
        self._process = ForkedChild._context.Process(
            target=_child_main, args=(args, env, cwd, output_path, pipe), name="coursekit-run", daemon=False)
        try:
            self._process.start()
        finally:
            pipe.close()
        self.pid = self._process.pid

    def wait(self, timeout=None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired("coursekit-run", timeout)
        return self._process.exitcode

    @property
    def returncode(self):
        return self._process.exitcode


def _child_main(args, env, cwd, output_path, pipe) -> None:
    """In the fork: become what a fresh ``python execute.py args`` would have been, then run it."""
    os.setsid()
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    log = os.open(output_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    events_fd = os.dup(pipe.fileno())
    pipe.close()
    forget_coursekit()
    execute = importlib.import_module("coursekit.course.grading.execute")
    sys.exit(execute.main([str(events_fd) if arg == "{fd}" else arg for arg in args]))


def forget_coursekit() -> None:
    """Drop coursekit's modules from this process, so that the next import reads them afresh.

    coursekit's modules read the environment when imported (``coursekit.config`` reads THEANO_FLAGS
    and COURSEKIT_FLAGS), and the server imported some under the grader's environment; the fork
    forgets them, so that it and its judges import coursekit under the run's environment (0.04 s).
    """
    for name in [name for name in sys.modules if name == "coursekit" or name.startswith("coursekit.")]:
        del sys.modules[name]


class FreshChild(subprocess.Popen):
    """The child as a fresh interpreter (``python execute.py args``), started by path so that it
    imports only the standard library and its stdlib-only sibling ``sandbox`` until it needs more."""

    def __init__(self, args, *, env, cwd, output_path, events_fd):
        command = [sys.executable, str(CHILD), *[str(events_fd) if arg == "{fd}" else arg for arg in args]]
        with open(output_path, "ab") as output_file:   # a file, not a pipe: a forked daemon holding it
            super().__init__(                           # cannot make the grader wait for its EOF
                command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=output_file,
                stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(events_fd,))
