"""The runner's child's Jupyter side: a kernel manager that starts the kernel in its sandbox, a client
whose sockets and outputs are bounded, the cell callbacks that write events, and the restarts.

Imported only in the runner's child (:mod:`coursekit.course.grading.execute`), after it has joined the run's
cgroup: Jupyter's client libraries are the child's, never the grader's. Each piece is testable
alone: :func:`kernel_manager` builds the command without starting anything, :class:`Callbacks` turns
nbclient's hooks into events, :func:`memory_stops` reads counters.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import nbformat
import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from . import sandbox

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
RESTARTS = 3             # fresh kernels one notebook may get after its kernel died
TEXT_LIMIT = 4096         # characters of an error's name, message or verdict sent to the grader


class SandboxedKernelManager(AsyncKernelManager):
    """Starts the kernel through the sandbox's launcher (:func:`sandbox.kernel_command`, with the
    run's ``sandbox_config``); interrupts it by message (no signal crosses the sandbox's PID namespace)."""

    sandbox_config: dict = {}

    def format_kernel_cmd(self, extra_arguments=None):
        config = self.sandbox_config
        self.kernel_spec.interrupt_mode = "message"
        command = super().format_kernel_cmd(extra_arguments)
        if command[1:3] == ["-m", "ipykernel_launcher"]:
            command = [command[0], "-c", KERNEL_MAIN, *command[3:]]
        return sandbox.kernel_command(
            command, ipc_dir=config["ipc_dir"], workdir=None if config.get("private_home") else config["workdir"],
            report_dir=config.get("report_dir"), bwrap_flags=config.get("bwrap_flags", ()),
            env=sandbox.sandbox_env(dict(os.environ), config["bubblewrap"]), limits=config["limits"],
            cgroup_procs=config["cgroup"], bubblewrap=config["bubblewrap"], run_as=config.get("run_as"),
            home=None if config["bubblewrap"] else config["workdir"])


class BoundedQueueClient(AsyncKernelClient):
    """Receives output messages of at most ``output_limit`` (plus 1 MB), IOPUB_QUEUE of them
    waiting at most: the socket drops the rest (a PUB socket never blocks the kernel), so a
    cell printing gigabytes cannot fill this process's memory (400 MB printed took this
    process to 1.1 GB before; 67 MB now). A dropped message leaves no note. Replies, which
    the verdicts come from, arrive on the shell channel and are not limited."""

    output_limit = 16 * 2**20

    def _create_connected_socket(self, channel, identity=None):
        if channel != "iopub":
            return super()._create_connected_socket(channel, identity)
        defaults = dict(self.context.sockopts)
        self.context.setsockopt(zmq.RCVHWM, IOPUB_QUEUE)
        self.context.setsockopt(zmq.MAXMSGSIZE, self.output_limit + 2**20)
        try:
            return super()._create_connected_socket(channel, identity)
        finally:
            self.context.sockopts = defaults


def kernel_manager(config: dict, kernel_name: str) -> SandboxedKernelManager:
    """A kernel manager for this run (nothing started): sockets in the run's ``ipc_dir``, the
    kernel started through the sandbox, outputs bounded by ``limits.output_mb``."""
    km = SandboxedKernelManager(kernel_name=kernel_name, transport="ipc", ip=str(Path(config["ipc_dir"]) / "kernel"))
    km.sandbox_config = config
    km.connection_file = str(Path(config["ipc_dir"]) / "connection.json")
    km.client_factory = type("RunQueueClient", (BoundedQueueClient,), {"output_limit": output_limit(config)})
    return km


def output_limit(config: dict) -> int:
    """Bytes of outputs kept per notebook (``COURSEKIT_GRADE_OUTPUT_MB``)."""
    return int(config["limits"].get("output_mb", 16)) * 2**20


class BoundedClient(NotebookClient):
    """Keeps at most ``output_limit`` bytes of outputs per notebook and drops the rest with one
    note per cell: a cell that prints gigabytes must not fill this process's memory or the
    executed notebook's disk (outputs are never graded; verdicts come from replies and judges)."""

    def __init__(self, *args, output_limit: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.output_limit, self.kept, self.noted = output_limit, 0, set()

    def output(self, outs, msg, display_id, cell_index):
        size = len(json.dumps(msg.get("content", {}), default=str))
        if self.kept + size <= self.output_limit:
            self.kept += size
            return super().output(outs, msg, display_id, cell_index)
        if cell_index not in self.noted:
            self.noted.add(cell_index)
            outs.append(nbformat.v4.new_output("stream", name="stderr", text=(
                f"[grader: outputs past {self.output_limit // 2**20} MB per notebook were dropped]\n")))
        return None


def notebook_client(nb, km, config: dict, cell_timeout: int, kernel_name: str) -> BoundedClient:
    """nbclient set up as grading needs: errors allowed, a timeout that interrupts the cell and goes on."""
    return BoundedClient(
        nb, km=km, timeout=cell_timeout, interrupt_on_timeout=True, allow_errors=True,
        error_on_timeout={"ename": TIMEOUT_ENAME, "evalue": f"cell ran longer than {cell_timeout}s", "traceback": []},
        kernel_name=kernel_name, resources={"metadata": {"path": config["workdir"]}}, shutdown_kernel="immediate",
        output_limit=output_limit(config))


class Callbacks:
    """nbclient's hooks as events: ``kernel`` when it starts, ``start`` and ``done`` per cell (not
    while a fresh kernel replays the cells before a crash); ``index`` is the cell running now."""

    def __init__(self, emit):
        self.emit, self.index, self.replaying = emit, None, False

    def attach(self, client) -> None:
        client.on_notebook_start = lambda **_: self.emit(event="kernel", pid=getattr(client.km.provisioner, "pid",
                                                                                     None))
        client.on_cell_execute = self.on_execute
        client.on_cell_executed = self.on_executed

    def on_execute(self, cell, cell_index, **_):
        self.index = cell_index
        if not self.replaying:
            self.emit(event="start", index=cell_index)

    def on_executed(self, cell, cell_index, execute_reply, **_):
        self.index = None
        if self.replaying:
            return
        content = (execute_reply or {}).get("content", {})
        self.emit(event="done", index=cell_index, status=str(content.get("status", "error"))[:20],
                  ename=str(content.get("ename", ""))[:TEXT_LIMIT], evalue=str(content.get("evalue", ""))[:TEXT_LIMIT])


async def execute_with_restarts(client, graded: set[int], callbacks: Callbacks, config: dict) -> None:
    """Run every cell; when the kernel dies (a memory limit, a crash), start a fresh one, run the
    cells before the dead one again (graded cells left out, outputs not kept, no events) and go on
    with the next cell: a hog costs its own task. At most :data:`RESTARTS` times per notebook, and
    not when the cells before it kill the fresh kernel too."""
    restarts = 0
    client.reset_execution_trackers()
    async with client.async_setup_kernel():
        index = 0
        while index < len(client.nb.cells):
            before = memory_stops(config)
            try:
                await client.async_execute_cell(client.nb.cells[index], index,
                                                execution_count=client.code_cells_executed + 1)
            except DeadKernelError:
                callbacks.emit(event="crashed", index=index, memory=memory_stops(config) > before,
                               memory_mb=config["limits"].get("memory_mb"))
                restarts += 1
                if restarts > RESTARTS:
                    return                      # the cells after it: "not run: kernel crashed earlier"
                try:
                    await _restart(client, graded, callbacks, index)
                except DeadKernelError:         # a cell before it kills the fresh kernel too
                    return
                callbacks.emit(event="restarted", index=index)
            index += 1


async def _restart(client, graded: set[int], callbacks: Callbacks, dead: int) -> None:
    callbacks.replaying = True
    try:
        await client.km.restart_kernel(now=True)
        client.kc.stop_channels()
        await client.async_start_new_kernel_client()
        for index, cell in enumerate(client.nb.cells[:dead]):
            if cell.get("cell_type") == "code" and index not in graded:
                await client.async_execute_cell(copy.deepcopy(cell), index, store_history=False)
    finally:
        callbacks.replaying = False


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
