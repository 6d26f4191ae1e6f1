"""How a profile records a compiled function's calls: a linker hook timing every thunk.

:class:`_FunctionRecord` is installed on each profiled function
(:mod:`coursekit.compile.hooks`); a loop op's steps report to a
:class:`_LoopRecord` that the loop's record makes on first use.  The tables
and views that read these records are :class:`coursekit.profiling.ProfileStats`'s.
"""
from __future__ import annotations

import functools
import time
import weakref

from .. import devices

KINDS = ("cpu", "gpu", "transfer")
KIND_NAMES = {"cpu": "CPU", "gpu": "GPU", "transfer": "transfer"}
_clock = time.perf_counter


def op_kind(op):
    """``"transfer"``, ``"gpu"`` or ``"cpu"``: from the op's declared attributes, never its class name."""
    if getattr(op, "is_transfer", False):
        return "transfer"
    return "gpu" if getattr(op, "device", "cpu") == "gpu" else "cpu"


class _FunctionRecord:
    """What one compiled function did under a profile: a linker hook summing per-apply times.

    It implements every event of :class:`coursekit.compile.hooks.LinkerHook` (a hook
    needs the methods, not the base class, so profiling does not import the compiler).
    """

    def __init__(self, fn):
        self.fn_ref = weakref.ref(fn)
        self.name = str(getattr(fn, "name", "?"))
        self.device_object = fn.device  # the function's Device: "simulated?" is asked of it, not of its label
        self.nodes = list(fn.nodes)
        self.kinds = [op_kind(node.op) for node in self.nodes]
        self.sync_after = [getattr(node.op, "device", "cpu") == "gpu" for node in self.nodes]
        self.synchronize = devices.synchronize
        storage = fn.storage_map
        self.input_cells = [[storage[v] for v in node.inputs] for node in self.nodes]
        self.transfer_cells = [[storage[v] for v in node.outputs]
                               for node, kind in zip(self.nodes, self.kinds) if kind == "transfer"]
        n = len(self.nodes)
        self.scratch, self.apply_time = [0.0] * n, [0.0] * n
        self.input_info = [None] * n
        self.calls = self.timed_calls = self.failed_calls = 0
        self.thunk_time = self.call_time = 0.0
        self.transfer_bytes = self.transfer_count = 0
        self._call_start = self._thunk_start = 0.0
        self._ran = False
        # loop ops (those with a step_hook; a GPU twin's is on its cpu_op): node index -> the op to hook
        self.loops = {i: loop for i, loop in ((i, _loop_op(node.op)) for i, node in enumerate(self.nodes)) if loop}
        self.loop_records = {}  # (node index, id(inner function)) -> _LoopRecord
        self.loop_bookkeeping = 0.0  # seconds the loop records spent on their own counting in this thunk
        self._watchers = {i: functools.partial(self._loop_record, i) for i in self.loops}

    @property
    def device(self):
        """Where the function ran, in words (for tables; decisions read ``device_object``)."""
        return self.device_object.label

    @property
    def simulated(self):
        return bool(self.device_object.simulated)

    # ---------------------------------------------------------- hook events
    def call_started(self, args):
        self._ran = False
        self._call_start = _clock()

    def thunk_started(self, index):
        if index in self.loops and self.calls:  # a loop in a timed call: watch its steps
            self.loops[index].step_hook = self._watchers[index]
            self.loop_bookkeeping = 0.0
        self._thunk_start = _clock()

    def thunk_finished(self, index):
        if self.sync_after[index]:  # kernels are queued: wait for this one, or the next op pays for it
            self.synchronize()
        self.scratch[index] = _clock() - self._thunk_start
        if index in self.loops:
            self.loops[index].step_hook = None
            self.scratch[index] -= self.loop_bookkeeping  # the profiler's counting per step is not loop time
            self.loop_bookkeeping = 0.0

    def call_failed(self, index, exc):
        self.failed_calls += 1
        if index in self.loops:
            self.loops[index].step_hook = None

    def _loop_record(self, index, inner_fn):
        """The record of ``inner_fn`` (the loop op at ``index`` runs it), made on first use."""
        key = (index, id(inner_fn))
        record = self.loop_records.get(key)
        if record is None:
            record = self.loop_records[key] = _LoopRecord(inner_fn, self, index)
        return record

    def call_computed(self, outputs, update_values):
        """Every thunk ran: add this call's per-thunk times (unless it is the warm-up call)."""
        start = _clock()
        self.calls += 1
        for i, cells in enumerate(self.input_cells):
            self.input_info[i] = [(getattr(c[0], "shape", None), str(getattr(c[0], "dtype", type(c[0]).__name__)))
                                  for c in cells]
        if self.calls == 1:
            return
        self._add_times()
        self._call_start += _clock() - start  # the profiler's own bookkeeping is not call time

    def _add_times(self):
        self.timed_calls += 1
        total = 0.0
        apply_time = self.apply_time
        for i, t in enumerate(self.scratch):
            apply_time[i] += t
            total += t
        self.thunk_time += total
        for cells in self.transfer_cells:
            self.transfer_count += 1
            self.transfer_bytes += sum(getattr(c[0], "nbytes", 0) for c in cells)
        self._ran = True

    def call_finished(self):
        if self._ran:
            self.call_time += _clock() - self._call_start
            self._ran = False


def _loop_op(op):
    """The object whose ``step_hook`` a loop op reads (itself, or the CPU op a GPU twin wraps), or None."""
    for candidate in (op, getattr(op, "cpu_op", None)):
        if candidate is not None and hasattr(type(candidate), "step_hook"):
            return candidate
    return None


class _LoopRecord(_FunctionRecord):
    """Every step of a loop's inner function, in the timed calls of the function around it.

    The loop hands it the events of each step (it is not installed on the
    inner function, which other functions may share); it has no warm-up of
    its own, since it only sees steps of calls that are already timed.
    """

    def __init__(self, fn, outer, index):
        super().__init__(fn)
        self.outer, self.index = outer, index

    @property
    def loop_node(self):
        return self.outer.nodes[self.index]

    def call_computed(self, outputs, update_values):
        start = _clock()
        self.calls += 1
        if self.input_info and self.input_info[0] is None:  # the shapes of the first step stand for all of them
            for i, cells in enumerate(self.input_cells):
                self.input_info[i] = [(getattr(c[0], "shape", None), str(getattr(c[0], "dtype", "?")))
                                      for c in cells]
        self._add_times()
        self.outer.loop_bookkeeping += _clock() - start
