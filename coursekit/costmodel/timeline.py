"""An asynchronous simulated GPU: the simulated device's work laid out on a *modelled* timeline.

The simulated GPU computes every kernel with NumPy before the call returns, so
nothing on it is ever queued, and the course's first GPU timing habit —
synchronise before you stop the clock — cannot be seen on it.  A
:class:`Timeline` adds what it lacks, without changing what is computed: it
watches compiled functions (a linker hook: ``f.add_hook``)
and, for every GPU or transfer op they run, advances a virtual clock the way
a GPU would:

* a **kernel launch** costs the host ``launch_latency`` and returns; the
  kernel runs on its stream when the stream is free, for the model's time
  (:mod:`coursekit.costmodel.pricing`);
* a **copy** from ordinary (pageable) host memory waits for its stream and
  keeps the host waiting until it is done; with ``pinned=True`` a copy is
  asynchronous like a kernel;
* work on different **streams** (``with timeline.stream("copies"): ...``)
  overlaps; work on one stream runs in order;
* :meth:`Timeline.synchronize` (also ``coursekit.devices.synchronize()`` while
  the timeline is attached to the ``sim`` device) waits for every stream and
  pays ``sync_latency``.

The clock is the model's, never the wall clock: ``timeline.now()`` is the
host's virtual time in seconds, so an experiment on it gives the same numbers
whatever the machine's load.  Every figure it produces is modelled, and says so
(``timeline.label``).  Host work outside the GPU ops (Python dispatch) costs
nothing on this clock; that makes its figures a lower bound on a real call.

    timeline = Timeline("t4")
    with timeline.attached(devices.get("sim")):   # devices.synchronize() now waits on the timeline
        timeline.watch(f)                   # f's GPU ops advance the clock
        start = timeline.now()
        for _ in range(100):
            f()
        queued = timeline.now() - start     # the loop is over, the GPU is not
        timeline.synchronize()
        finished = timeline.now() - start
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

from . import presets, pricing

DEFAULT_STREAM = "default"


@dataclass(frozen=True)
class Span:
    """One piece of modelled device work: where (stream), when (seconds on the virtual clock), what."""

    stream: str
    start: float
    end: float
    kind: str      # "kernel", "copy"
    name: str


class Timeline:
    """A virtual host clock and one clock per stream, advanced by the cost model (see the module docs)."""

    def __init__(self, model=None, pinned=False):
        model = model if isinstance(model, pricing.CostModel) else pricing.model(model)
        if pinned and not model.pinned:  # page-locked buffers: the pinned link rate as well as asynchrony
            model = pricing.model(model.spec, memory_pool=model.memory_pool, pinned=True)
        self.model, self.pinned = model, pinned
        self.host = 0.0
        self.streams = {DEFAULT_STREAM: 0.0}
        self.current = DEFAULT_STREAM
        self.spans = []
        self.launches = self.copies = self.syncs = 0

    @property
    def label(self):
        return f"{self.model.label[:-1]}, {presets.band_text(self.model.spec)}), asynchronous timeline"

    # ------------------------------------------------------------------ the clock
    def now(self):
        """The host's virtual time (seconds): what a wall clock read by the program would show."""
        return self.host

    def busy_until(self):
        """When the last queued piece of work ends."""
        return max([self.host, *self.streams.values()])

    def launch(self, kernel_seconds, name="kernel", launch_seconds=None):
        """Queue a kernel on the current stream; the host pays only the launch."""
        self.host += self.model.spec.launch_latency if launch_seconds is None else launch_seconds
        self._run("kernel", kernel_seconds, name)
        self.launches += 1

    def copy(self, seconds, name="copy", blocking=None):
        """A copy over the host link on the current stream; pageable copies keep the host waiting."""
        end = self._run("copy", seconds, name)
        self.copies += 1
        if (not self.pinned) if blocking is None else blocking:
            self.host = end

    def host_work(self, seconds):
        """Time the host spends itself (allocations, bookkeeping)."""
        self.host += seconds

    def synchronize(self):
        """Wait until every stream is idle, then pay the round trip."""
        self.host = self.busy_until() + self.model.spec.sync_latency
        self.syncs += 1

    def _run(self, kind, seconds, name):
        start = max(self.host, self.streams.get(self.current, 0.0))
        end = start + seconds
        self.streams[self.current] = end
        self.spans.append(Span(self.current, start, end, kind, name))
        return end

    @contextmanager
    def stream(self, name):
        """Work queued inside the block goes to stream ``name`` (created on first use)."""
        previous, self.current = self.current, str(name)
        self.streams.setdefault(self.current, 0.0)
        try:
            yield self
        finally:
            self.current = previous

    # -------------------------------------------------------- compiled functions
    def watch(self, fn):
        """Let compiled function ``fn`` advance this timeline from now on (returns ``fn``)."""
        fn.add_hook(_Watcher(self))
        return fn

    def unwatch(self, fn):
        for hook in [h for h in getattr(fn, "hooks", ()) if isinstance(h, _Watcher) and h.timeline is self]:
            fn.remove_hook(hook)

    @contextmanager
    def attached(self, device):
        """While the block runs, ``device`` (the ``sim`` device) synchronises on this timeline."""
        previous, device.timeline = getattr(device, "timeline", None), self
        try:
            yield self
        finally:
            device.timeline = previous


class _Watcher:
    """The linker hook behind :meth:`Timeline.watch`: prices each GPU/transfer op as it runs.

    A hook needs only the events it uses (:mod:`coursekit.compile.hooks`); not subclassing
    ``LinkerHook`` keeps the devices package below the compiler."""

    def __init__(self, timeline):
        self.timeline = timeline
        self._fresh = False

    def attached(self, fn):
        self.fn = fn

    def thunk_started(self, index):
        node = self.fn.nodes[index]
        self._fresh = any(self.fn.storage_map[out][0] is None for out in node.outputs)

    def thunk_finished(self, index):
        node = self.fn.nodes[index]
        if getattr(node.op, "device", "cpu") != "gpu":
            return  # host ops: not on the GPU's clock
        values = [self.fn.storage_map[v][0] for v in node.inputs]
        shapes = [getattr(v, "shape", None) for v in values]
        dtypes = [str(getattr(v, "dtype", type(v).__name__)) for v in values]
        cost = self.timeline.model.node_cost(node, shapes, dtypes, allocates=self._fresh)
        name = f"{index}: {node.op}"
        self.timeline.host_work(cost.alloc)
        if cost.transfer:
            self.timeline.copy(cost.transfer, name)
        if cost.work.launches:
            self.timeline.launch(cost.kernel, name, launch_seconds=cost.launch)
