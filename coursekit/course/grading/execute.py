"""The runner's child: executes one notebook in a sandboxed kernel and writes what happened to a pipe.

:func:`coursekit.course.grading.runner.run_notebook` starts this file *by path* in a fresh process, so that
running a notebook does not depend on the ``coursekit`` library importing cleanly and a student's
endless loop or crash cannot take the grader with it. It starts the kernel through
:mod:`coursekit.course.grading.sandbox`, executes every cell with nbclient (errors allowed, per-cell
timeout with an interrupt by message), and writes one JSON line per event to a pipe the kernel
never holds: ``judged`` (the graded cells whose verdict comes from a judge), ``kernel``, ``start``,
``done``, ``crashed``, ``failed``, then — after the kernel has gone — one ``verdict`` per judged cell
from :func:`coursekit.course.grading.judge.judge_cells`, run here with the grader's own Python, and
``finished``. Texts in events are cut to :data:`TEXT_LIMIT` characters here, and this process joins
the run's cgroup: a 150 MB exception message or a judge made to allocate costs the run's memory,
never the grader's.

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
# The kernel as ``python -m ipykernel_launcher`` starts it, less the debugger: ipykernel imports
# debugpy at start (0.15-0.2 s of CPU per kernel, a fifth of a short notebook's grading), and a
# grading run never debugs. Marked absent, ipykernel runs without it (the kernel says debugger: false).
KERNEL_MAIN = ("import sys\n"
               "if sys.path[0] == '':\n"
               "    del sys.path[0]      # as ipykernel_launcher does: IPython puts the working folder back\n"
               "sys.modules['debugpy'] = None\n"
               "from ipykernel.kernelapp import launch_new_instance\n"
               "launch_new_instance()")
IOPUB_QUEUE = 16          # output messages that may wait to be read (ZeroMQ's default: 1000)
METADATA_KEY = "coursekit"
RESTARTS = 3             # fresh kernels one notebook may get after its kernel died
TEXT_LIMIT = 4096         # characters of an error's name, message or verdict sent to the grader


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
    sys.modules.setdefault("rfc3987_syntax", None)   # see execute_imports.load (not needed to judge)
    import nbformat
    import zmq
    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError
    from nbclient.util import run_sync

    parser = argparse.ArgumentParser(description="Run one notebook, logging cell events (internal).")
    parser.add_argument("notebook")
    parser.add_argument("--events-fd", type=int, required=True)
    parser.add_argument("--cell-timeout", type=int, required=True)
    parser.add_argument("--sandbox", required=True)
    parser.add_argument("--kernel", default="python3")
    parser.add_argument("--executed")
    args = parser.parse_args(argv)
    config = json.loads(args.sandbox)
    for procs in config.get("cgroup") or []:   # this process (and the judge in it) counts as the run's memory
        with open(procs, "w") as handle:
            handle.write(str(os.getpid()))
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
            command = super().format_kernel_cmd(extra_arguments)
            if command[1:3] == ["-m", "ipykernel_launcher"]:
                command = [command[0], "-c", KERNEL_MAIN, *command[3:]]
            return sandbox.kernel_command(
                command, ipc_dir=config["ipc_dir"],
                workdir=None if config.get("private_home") else config["workdir"],
                report_dir=config.get("report_dir"), bwrap_flags=config.get("bwrap_flags", ()),
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
        if not state.get("replaying"):
            emit(event="start", index=cell_index)

    def on_executed(cell, cell_index, execute_reply, **_):
        state["index"] = None
        if state.get("replaying"):
            return
        content = (execute_reply or {}).get("content", {})
        emit(event="done", index=cell_index, status=str(content.get("status", "error"))[:20],
             ename=str(content.get("ename", ""))[:TEXT_LIMIT], evalue=str(content.get("evalue", ""))[:TEXT_LIMIT])

    client.on_notebook_start = on_start
    client.on_cell_execute = on_execute
    client.on_cell_executed = on_executed
    try:
        graded = {index for index, cell in enumerate(nb.cells)
                  if isinstance(cell.get("metadata", {}).get(METADATA_KEY), dict)}
        run_sync(execute_with_restarts)(client, graded, state, emit, config)
    except DeadKernelError:
        emit(event="crashed", index=state["index"], memory=False)
    except Exception as exc:  # e.g. the kernel could not start: report it instead of a bare exit code
        emit(event="failed", message=f"{type(exc).__name__}: {exc}"[:TEXT_LIMIT])
    finally:
        if args.executed:
            Path(args.executed).parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, args.executed)
    if judged:
        from coursekit.course.grading.judge import judge_cells   # the grader's coursekit (PROJECT_ROOT first on the path)

        verdicts = judge_cells(judged, config["report_dir"], config["nonce"], time_limit=args.cell_timeout)
        for index, (status, reason) in verdicts.items():
            emit(event="verdict", index=index, status=status, reason=reason[:TEXT_LIMIT])
    emit(event="finished")
    return 0


async def execute_with_restarts(client, graded: set[int], state: dict, emit, config: dict) -> None:
    """Run every cell; when the kernel dies (a memory limit, a crash), start a fresh one, run the
    cells before the dead one again (graded cells left out, outputs not kept, no events) and go on
    with the next cell: a hog costs its own task. At most :data:`RESTARTS` times per notebook, and
    not when the cells before it kill the fresh kernel too."""
    from nbclient.exceptions import DeadKernelError

    restarts = 0
    client.reset_execution_trackers()
    async with client.async_setup_kernel():
        index = 0
        while index < len(client.nb.cells):
            cell = client.nb.cells[index]
            before = memory_stops(config)
            try:
                await client.async_execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
            except DeadKernelError:
                emit(event="crashed", index=index, memory=memory_stops(config) > before,
                     memory_mb=config["limits"].get("memory_mb"))
                restarts += 1
                if restarts > RESTARTS:
                    return                      # the cells after it: "not run: kernel crashed earlier"
                try:
                    await _restart(client, graded, state, index)
                except DeadKernelError:         # a cell before it kills the fresh kernel too
                    return
                emit(event="restarted", index=index)
            index += 1


async def _restart(client, graded: set[int], state: dict, dead: int) -> None:
    import copy

    state["replaying"] = True
    try:
        await client.km.restart_kernel(now=True)
        client.kc.stop_channels()
        await client.async_start_new_kernel_client()
        for index, cell in enumerate(client.nb.cells[:dead]):
            if cell.get("cell_type") == "code" and index not in graded:
                await client.async_execute_cell(copy.deepcopy(cell), index, store_history=False)
    finally:
        state["replaying"] = False


def memory_stops(config: dict) -> int:
    """How often this run's kernel was stopped for memory so far: the cgroup's OOM kills, plus the
    runner's own stops (``memory-stops`` in this process's folder) where no cgroup limits memory."""
    count = 0
    for procs in config.get("cgroup") or []:
        folder = Path(procs).parent
        for name in ("memory.events", "memory.oom_control"):     # cgroup v2, v1
            try:
                for line in (folder / name).read_text().splitlines():
                    if line.startswith("oom_kill "):
                        count += int(line.split()[1])
            except (OSError, ValueError):
                pass
    try:
        count += int(Path("memory-stops").read_text() or 0)
    except (OSError, ValueError):
        pass
    return count


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
