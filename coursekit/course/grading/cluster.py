"""Where the grader's runs execute: local threads, or the workers of a Dask distributed cluster.

A class of 10,000 students with 10 notebooks each is about 55 core-hours of grading, more than one
machine does overnight. ``coursekit grade ... --cluster tcp://host:8786`` hands the runs to a Dask
distributed scheduler instead of local threads (Dask is an existing, well-kept engine for exactly
this; dask-jobqueue starts its workers as Slurm or PBS jobs, see docs/teaching.md). Each task is the
same call a local job makes, :func:`coursekit.course.grading.grader.grade_one`, so each worker runs the same
sandboxed run (its own process, bubblewrap, cgroup and limits of *that* machine) and returns the same
rows; progress and the reports are made here, as for local jobs.

What the cluster must provide: workers with this coursekit installed (same version: every row records
the grader's version) and the submissions, reference and ``--executed`` folders at the same paths
(a shared filesystem, as clusters have). Start workers with one thread each (``--nthreads 1``):
each task is a notebook kernel that keeps a core busy.

Two Dask settings make a worker grade as fast as a local job (:data:`SETTINGS`; set them where the
scheduler and workers start, e.g. ``DASK_DISTRIBUTED__WORKER__DAEMON=False`` and
``DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION=1.0``; :func:`local_cluster` applies them):

* ``distributed.worker.daemon: False``: a daemonic worker process may not start processes through
  :mod:`multiprocessing`, so each run's notebook client would start as a fresh interpreter and import
  Jupyter's client libraries again (:mod:`coursekit.course.grading.child`: 0.2-0.45 s of CPU per notebook);
* ``distributed.scheduler.worker-saturation: 1.0``: with Dask's default 1.1, a one-thread worker is
  sent a second notebook while it runs one, and near the end of a class that notebook waits behind a
  busy worker while another worker idles.

A worker that dies (killed, out of memory, its node lost) costs a retry, never a grade: the scheduler
re-runs the tasks it held on another worker (Dask's own rule, up to its ``allowed-failures``), and
:func:`dispatch` submits a task that still failed again, :data:`RETRIES` times, before it scores the
notebook 0 with a ``grader error`` reason a person must look at. A result is taken once per task, so
a task that ran twice still gives one set of rows.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

RETRIES = 2                 # resubmissions of a task whose future failed (after Dask's own retries)
CONNECT_TIMEOUT = "20s"


SETTINGS = {"distributed.worker.daemon": False, "distributed.scheduler.worker-saturation": 1.0}


class ClusterError(RuntimeError):
    """The cluster cannot be reached or used; the message says what to check."""


@contextlib.contextmanager
def executor(jobs: int = 1, cluster=None):
    """A ``concurrent.futures`` executor for the runs: ``jobs`` local threads (each run is its own
    process, so threads suffice), or, with ``cluster``, Dask's executor on that scheduler.

    ``cluster`` is a scheduler address (``tcp://host:8786``), a scheduler file (``*.json``, as
    ``dask-jobqueue``/``dask scheduler --scheduler-file`` write), or a ``distributed.Client``.
    """
    if cluster is None:
        with ThreadPoolExecutor(max_workers=max(1, int(jobs))) as pool:
            yield pool
        return
    client, owned = _connect(cluster)
    try:
        # pure=False: every submission is a new task, never a cached result of an earlier one
        yield client.get_executor(pure=False)
    finally:
        if owned:
            client.close()


def local_cluster(workers: int, **options):
    """A Dask cluster of ``workers`` one-thread worker processes on this machine, with :data:`SETTINGS`
    (for trying ``--cluster`` out, the tests and benchmarks); use it as a context manager.

    The settings are set for this whole process, not only while the cluster starts: its nannies read
    ``distributed.worker.daemon`` again whenever they restart a worker that died, and a restarted
    worker started daemonic would fall back to fresh interpreters for the rest of the class.
    """
    import dask
    from distributed import LocalCluster

    dask.config.set(SETTINGS)
    return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, **options)


def _connect(cluster):
    try:   # Dask is an instructor's tool, not a student's: imported only when a cluster is asked for
        from distributed import Client
    except ImportError:
        raise ClusterError("--cluster needs Dask's distributed scheduler: pip install 'dask[distributed]' "
                           "(or pip install -r requirements-dev.txt)") from None
    if isinstance(cluster, Client):
        return cluster, False
    where = str(cluster)
    try:
        if where.endswith(".json"):
            if not Path(where).is_file():
                raise ClusterError(f"--cluster {where}: no such scheduler file")
            return Client(scheduler_file=where, timeout=CONNECT_TIMEOUT), True
        return Client(where, timeout=CONNECT_TIMEOUT), True
    except ClusterError:
        raise
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterError(f"--cluster {where}: cannot reach a Dask scheduler there ({type(exc).__name__}: {exc}); "
                           "start one with `dask scheduler` (or dask-jobqueue) and pass its tcp://host:port") from None


def dispatch(pool, calls: dict, finished, failed, retries: int = RETRIES) -> dict:
    """Run ``calls`` (``{key: (fn, args, kwargs)}``) on ``pool``; return ``{key: result}``.

    ``finished(key, result)`` is called once per key as results arrive (the progress bar).
    A call whose future fails (on a cluster: its worker died more often than the scheduler retries)
    is submitted again up to ``retries`` times; then ``failed(key, exception)`` gives its result.
    On Ctrl-C every pending future is cancelled and the KeyboardInterrupt goes on.
    """
    pending = {pool.submit(fn, *args, **kwargs): (key, 0) for key, (fn, args, kwargs) in calls.items()}
    results = {}
    try:
        while pending:
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for future in done:
                key, tries = pending.pop(future)
                try:
                    result = future.result()
                except Exception as exc:  # noqa: BLE001 -- a lost worker, a task the scheduler gave up on
                    if tries < retries:
                        fn, args, kwargs = calls[key]
                        pending[pool.submit(fn, *args, **kwargs)] = (key, tries + 1)
                        continue
                    result = failed(key, exc)
                if key not in results:
                    results[key] = result
                    finished(key, result)
    except KeyboardInterrupt:
        for future in pending:
            future.cancel()
        raise
    return results
