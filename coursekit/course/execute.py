"""The runner's child: executes one notebook in a sandboxed kernel and writes what happened to a pipe.

:func:`coursekit.course.runner.run_notebook` starts this file *by path* in a fresh process, so that
running a notebook does not depend on the ``coursekit`` library importing cleanly and a student's
endless loop or crash cannot take the grader with it. It starts the kernel through
:mod:`coursekit.course.sandbox`, executes every cell with nbclient (errors allowed, per-cell
timeout with an interrupt by message), and writes one JSON line per event to a pipe the kernel
never holds: ``judged`` (the graded cells whose verdict comes from a judge), ``kernel``, ``start``,
``done``, ``crashed``, ``failed``, then — after the kernel has gone — one ``verdict`` per judged cell
from :func:`coursekit.course.judge.judge_cells`, run here with the grader's own Python, and
``finished``.

At module level this file imports only the standard library and its stdlib-only sibling
``sandbox``; nbformat, nbclient and the judge are imported when the child starts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

if __package__:
    from . import sandbox
else:  # started by path: import the stdlib-only sibling by path too
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import sandbox  # type: ignore[no-redef]

TIMEOUT_ENAME = "CoursekitCellTimeout"
IOPUB_QUEUE = 16          # output messages that may wait to be read (ZeroMQ's default: 1000)
METADATA_KEY = "coursekit"


def judged_cells(nb) -> list[tuple[int, str, str]]:
    """``(index, id, source)`` of the graded cells that call graded_check (the runner's own copy of
    the notebook, read before the kernel started: the kernel cannot change these sources)."""
    found = []
    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get(METADATA_KEY)
        if cell.get("cell_type") == "code" and isinstance(meta, dict) and isinstance(meta.get("id"), str) \
                and "graded_check(" in cell.get("source", ""):
            found.append((index, meta["id"], cell["source"]))
    return found


def main(argv: list[str]) -> int:
    # nbformat imports jsonschema, which imports rfc3987_syntax when it is installed (jupyter-events
    # brings it) for URI formats a notebook never uses; it builds a parser at import: 0.7 s of every
    # run at load 1, 3.3 s at load 7 on 2 cores. Marked absent, jsonschema skips those formats.
    sys.modules.setdefault("rfc3987_syntax", None)
    import nbformat
    import zmq
    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    parser = argparse.ArgumentParser(description="Run one notebook, logging cell events (internal).")
    parser.add_argument("notebook")
    parser.add_argument("--events-fd", type=int, required=True)
    parser.add_argument("--cell-timeout", type=int, required=True)
    parser.add_argument("--sandbox", required=True)
    parser.add_argument("--kernel", default="python3")
    parser.add_argument("--executed")
    args = parser.parse_args(argv)
    config = json.loads(args.sandbox)
    output_limit = int(config["limits"].get("output_mb", 16)) * 1024 * 1024   # bytes of outputs kept
    log = os.fdopen(args.events_fd, "w", encoding="utf-8")

    def emit(**event) -> None:
        log.write(json.dumps(event) + "\n")
        log.flush()

    class SandboxedKernelManager(AsyncKernelManager):
        """Starts the kernel through the sandbox's launcher; interrupts it by message (no signal
        crosses the sandbox's PID namespace)."""

        def format_kernel_cmd(self, extra_arguments=None):
            self.kernel_spec.interrupt_mode = "message"
            return sandbox.kernel_command(
                super().format_kernel_cmd(extra_arguments), workdir=config["workdir"], ipc_dir=config["ipc_dir"],
                report_dir=config.get("report_dir"),
                env=sandbox.sandbox_env(dict(os.environ), config["bubblewrap"]), limits=config["limits"],
                cgroup_procs=config["cgroup"], bubblewrap=config["bubblewrap"])

    class BoundedQueueClient(AsyncKernelClient):
        """Receives output messages of at most ``output_limit`` (plus 1 MB), IOPUB_QUEUE of them
        waiting at most: the socket drops the rest (a PUB socket never blocks the kernel), so a
        cell printing gigabytes cannot fill this process's memory (400 MB printed took this
        process to 1.1 GB before; 67 MB now). A dropped message leaves no note. Replies, which
        the verdicts come from, arrive on the shell channel and are not limited."""

        def _create_connected_socket(self, channel, identity=None):
            if channel != "iopub":
                return super()._create_connected_socket(channel, identity)
            defaults = dict(self.context.sockopts)
            self.context.setsockopt(zmq.RCVHWM, IOPUB_QUEUE)
            self.context.setsockopt(zmq.MAXMSGSIZE, output_limit + 2**20)
            try:
                return super()._create_connected_socket(channel, identity)
            finally:
                self.context.sockopts = defaults

    km = SandboxedKernelManager(kernel_name=args.kernel, transport="ipc",
                                ip=str(Path(config["ipc_dir"]) / "kernel"))
    km.connection_file = str(Path(config["ipc_dir"]) / "connection.json")
    km.client_factory = BoundedQueueClient
    nb = nbformat.read(args.notebook, as_version=4)
    judged = judged_cells(nb) if config.get("report_dir") else []
    emit(event="judged", indices=[index for index, _, _ in judged])
    state = {"index": None}

    class BoundedClient(NotebookClient):
        """Keeps at most ``output_limit`` bytes of outputs per notebook and drops the rest with one
        note per cell: a cell that prints gigabytes must not fill this process's memory or the
        executed notebook's disk (outputs are never graded; verdicts come from replies and judges)."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.kept, self.noted = 0, set()

        def output(self, outs, msg, display_id, cell_index):
            size = len(json.dumps(msg.get("content", {}), default=str))
            if self.kept + size <= output_limit:
                self.kept += size
                return super().output(outs, msg, display_id, cell_index)
            if cell_index not in self.noted:
                self.noted.add(cell_index)
                outs.append(nbformat.v4.new_output("stream", name="stderr", text=(
                    f"[grader: outputs past {output_limit // 2**20} MB per notebook were dropped]\n")))
            return None

    client = BoundedClient(
        nb,
        km=km,
        timeout=args.cell_timeout,
        interrupt_on_timeout=True,
        error_on_timeout={"ename": TIMEOUT_ENAME, "evalue": f"cell ran longer than {args.cell_timeout}s",
                          "traceback": []},
        allow_errors=True,
        kernel_name=args.kernel,
        resources={"metadata": {"path": config["workdir"]}},
        shutdown_kernel="immediate",
    )

    def on_start(**_):
        emit(event="kernel", pid=getattr(client.km.provisioner, "pid", None))

    def on_execute(cell, cell_index, **_):
        state["index"] = cell_index
        emit(event="start", index=cell_index)

    def on_executed(cell, cell_index, execute_reply, **_):
        state["index"] = None
        content = (execute_reply or {}).get("content", {})
        emit(event="done", index=cell_index, status=content.get("status", "error"),
             ename=content.get("ename", ""), evalue=content.get("evalue", ""))

    client.on_notebook_start = on_start
    client.on_cell_execute = on_execute
    client.on_cell_executed = on_executed
    try:
        client.execute()
    except DeadKernelError:
        emit(event="crashed", index=state["index"])
    except Exception as exc:  # e.g. the kernel could not start: report it instead of a bare exit code
        emit(event="failed", message=f"{type(exc).__name__}: {exc}")
    finally:
        if args.executed:
            Path(args.executed).parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, args.executed)
    if judged:
        from coursekit.course.judge import judge_cells   # the grader's coursekit (PROJECT_ROOT first on the path)

        for index, (status, reason) in judge_cells(judged, config["report_dir"], config["nonce"]).items():
            emit(event="verdict", index=index, status=status, reason=reason)
    emit(event="finished")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
