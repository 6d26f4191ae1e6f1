"""The notebook step of the prepared GPU run (benchmarks/gpu_run.sh): every lesson and solution, device=gpu.

    python benchmarks/gpu_run.py notebooks --dest notebooks/gpu-runs --deadline SECONDS [--only 01,02]
    python benchmarks/gpu_run.py card            # one line: the card, driver and versions (or the stand-in)

Each notebook is executed in its own kernel with ``COURSEKIT_FLAGS=device=gpu`` (the environment this
process was given) and written to ``--dest`` with the card's name, the date and how the run went in its
metadata (``metadata.coursekit_gpu_run``); the lessons print the device label in their outputs too.  The
lessons run one after another, since they time things on the card; the solutions follow, also in
order.  A notebook whose cell fails is still written (with the error in its output) and the run goes on.
A notebook is not started once ``--deadline`` seconds have passed, so a time-out of the whole call
loses at most the notebook in flight; ``--tar`` rewrites an archive of ``--dest`` after every notebook
(atomically), which is what comes back from the device machine.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)


def card():
    """The card in words, from CuPy (real or stand-in), with the driver and library versions."""
    from coursekit import devices
    cupy, reason = devices.cupy_status()
    if cupy is None:
        return f"no GPU: {reason}"
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    if getattr(cupy, "STANDIN", False):
        return f"{name} (dry run: no GPU, nothing here is a GPU figure)"
    driver = cupy.cuda.runtime.driverGetVersion()
    return f"{name}; CUDA driver {driver // 1000}.{driver % 1000 // 10}; CuPy {cupy.__version__}"


def notebooks(only=None):
    """Lessons first, then solutions (``NN`` prefixes in ``only`` pick some)."""
    picked = []
    for folder in ("notebooks", "solutions"):
        names = sorted(n for n in os.listdir(os.path.join(REPO, folder)) if n.endswith(".ipynb"))
        picked += [os.path.join(folder, n) for n in names if not only or n[:2] in only]
    return picked


def execute(path, dest, label, timeout):
    """Run one notebook in its folder; returns (status, seconds).  Always writes what ran."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    nb = nbformat.read(os.path.join(REPO, path), as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": os.path.join(REPO, os.path.dirname(path))}})
    start, status = time.perf_counter(), "ok"
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as err:
        status = f"failed: {type(err).__name__}: {str(err).strip().splitlines()[-1][:300] if str(err).strip() else ''}"
    seconds = time.perf_counter() - start
    nb.metadata["coursekit_gpu_run"] = dict(card=label, date=datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds"), flags=os.environ.get("COURSEKIT_FLAGS", ""), status=status, seconds=round(seconds, 1))
    os.makedirs(dest, exist_ok=True)
    nbformat.write(nb, os.path.join(dest, os.path.basename(path)))
    return status, seconds


def archive(folder, tar_path):
    """``tar_path`` holds ``folder`` (written beside it, then renamed: never half a file)."""
    partial = tar_path + ".partial"
    with tarfile.open(partial, "w:gz") as tar:
        tar.add(folder, arcname=os.path.basename(folder.rstrip("/")))
    os.replace(partial, tar_path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("card")
    run = sub.add_parser("notebooks")
    run.add_argument("--dest", default=os.path.join(REPO, "notebooks", "gpu-runs"))
    run.add_argument("--deadline", type=float, default=300, help="start no notebook after this many seconds")
    run.add_argument("--cell-timeout", type=int, default=240)
    run.add_argument("--only", default="", help="comma-separated NN prefixes (default: every notebook)")
    run.add_argument("--tar", default=None, help="rewrite this .tar.gz of --dest after each notebook")
    args = parser.parse_args(argv)
    if args.command == "card":
        print(card())
        return 0
    label, start, failed = card(), time.perf_counter(), 0
    todo = notebooks(set(filter(None, args.only.split(","))))
    print(f"executing {len(todo)} notebooks on {label} (COURSEKIT_FLAGS={os.environ.get('COURSEKIT_FLAGS', '')})")
    for k, path in enumerate(todo):
        if time.perf_counter() - start > args.deadline:
            print(f"deadline of {args.deadline:.0f} s reached: {len(todo) - k} notebooks not run: {todo[k:]}")
            return 3
        status, seconds = execute(path, args.dest, label, args.cell_timeout)
        failed += status != "ok"
        print(f"{path}: {status} in {seconds:.1f} s", flush=True)
        if args.tar:
            archive(args.dest, args.tar)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
