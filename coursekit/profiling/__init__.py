"""Where did the time go?  Theano-style profiles of compiled functions.

Turn it on with ``function(..., profile=True)``, by passing one
``ProfileStats`` to several functions (their numbers are then summed), or
for every function with ``config.profile = True`` /
``COURSEKIT_FLAGS=profile=True`` (then every profile is printed when the
interpreter exits).

How it measures, and why:

* the profile installs a linker hook (:mod:`coursekit.compile.hooks`) on
  each function it profiles; each thunk is timed with ``time.perf_counter``,
  and after an op that runs on the GPU the device is synchronised first
  (kernels are queued asynchronously: without that the time of a kernel
  would land on whichever op happens to wait for it next);
* the **first call of each function is excluded** from every time: it is a
  warm-up (buffers are allocated, caches filled) and would distort per-call
  numbers of short loops.  It is still counted in ``calls``;
* "overhead" is call time minus thunk time: input checks, output copies and
  the profiler's own timing loop (its per-call bookkeeping is subtracted);
* every table (Class, Ops, Apply) is a different grouping of the *same*
  per-apply times, so each sums to the time in thunks; the final line splits
  that total between CPU ops, GPU ops and transfer ops, with the bytes the
  transfers moved — the number the GPU lessons are about.

* a loop op (``Scan``) runs a compiled inner function once per step; its
  apply row holds the whole loop, and the profile also records every step of
  the timed calls, per inner op (``ProfileStats.loop_rows()``, the "Inside
  loops" table), without ``scan(profile=True)``.  The loop op asks for it
  through its ``step_hook`` attribute, set only while the loop node runs in a
  timed call, so an unprofiled run of the same loop pays nothing.

On the *simulated* GPU all times are CPU times of NumPy code; profiles say so.
"""
from __future__ import annotations

import atexit
import sys
import weakref

from .. import wiring
from ..config import config
from ..costmodel import format_time, model_for  # noqa: F401 (format_time: importers read it here)
from . import modelled as _modelled
from .records import KIND_NAMES, KINDS, _FunctionRecord, op_kind  # noqa: F401 (op_kind: importers read it here)

def format_bytes(n):
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


class ProfileStats:
    """Per-apply timings of one or several compiled functions (see the module docs).

    ``compile_time`` (seconds) is added by ``function()`` when it compiles a
    function for this profile; it is absent until then.
    """

    def __init__(self, name=None, atexit_print=None):
        self.name = name
        self.atexit_print = atexit_print
        self._functions = []      # weak references to attached functions
        self._records = {}        # id(record) -> _FunctionRecord (one per attached function)
        if atexit_print:
            _print_at_exit_later(self)

    # ------------------------------------------------------------ recording
    def attach(self, fn):
        """Called by a compiled function that reports to this profile: installs its timing hook."""
        self._functions.append(weakref.ref(fn))
        record = _FunctionRecord(fn)
        self._records[id(record)] = record
        fn.add_hook(record)
        if self.atexit_print is None:
            if config.profile:
                _print_at_exit_later(self)
        return record

    # -------------------------------------------------------------- numbers
    @property
    def records(self):
        return list(self._records.values())

    calls = property(lambda self: sum(r.calls for r in self.records), doc="all calls, the warm-ups included")
    timed_calls = property(lambda self: sum(r.timed_calls for r in self.records), doc="calls in the times")
    thunk_time = property(lambda self: sum(r.thunk_time for r in self.records), doc="seconds in thunks")
    call_time = property(lambda self: sum(r.call_time for r in self.records), doc="seconds in timed calls")
    overhead = property(lambda self: self.call_time - self.thunk_time, doc="call time outside the thunks")

    @property
    def devices(self):
        return sorted({r.device for r in self.records})

    @property
    def simulated(self):
        """True when any profiled function ran on the simulated GPU (its times are CPU times)."""
        return any(r.simulated for r in self.records)

    def apply_rows(self):
        """One row per Apply node (every function), slowest first."""
        rows, many = [], len(self.records) > 1
        modelled = self.modelled_times()
        for r in self.records:
            for i, node in enumerate(r.nodes):
                label = f"{r.name}:{i}" if many else str(i)
                rows.append(dict(name=str(node), key=label, index=i, function=r.name, time=r.apply_time[i],
                                 calls=r.timed_calls, applies=1, kind=r.kinds[i], inputs=r.input_info[i] or [],
                                 modelled=modelled.get((id(r), i))))
        return self._finish_rows(rows)

    def class_rows(self):
        """Apply times summed per op class (``Elemwise``, ``GpuFromHost`` ...)."""
        return self._group(lambda node: type(node.op).__name__)

    def op_rows(self):
        """Apply times summed per distinct op (``Elemwise{exp}`` ...)."""
        return self._group(lambda node: str(node.op))

    def _group(self, key_of):
        groups, modelled = {}, self.modelled_times()
        for r in self.records:
            for i, node in enumerate(r.nodes):
                row = groups.setdefault(key_of(node), dict(name=key_of(node), time=0.0, calls=0, applies=0,
                                                           kinds={}, modelled=None))
                row["time"] += r.apply_time[i]
                if (id(r), i) in modelled:
                    row["modelled"] = (row["modelled"] or 0.0) + modelled[(id(r), i)]
                row["calls"] += r.timed_calls
                row["applies"] += 1
                time_count = row["kinds"].get(r.kinds[i], (0.0, 0))
                row["kinds"][r.kinds[i]] = (time_count[0] + r.apply_time[i], time_count[1] + 1)
        for row in groups.values():  # a group's colour: the kind that took most of its time
            row["kind"] = max(row.pop("kinds").items(), key=lambda kv: kv[1])[0]
        return self._finish_rows(list(groups.values()))

    def _finish_rows(self, rows):
        total, running = self.thunk_time, 0.0
        rows.sort(key=lambda row: -row["time"])
        for row in rows:
            if row.get("modelled") is not None:  # modelled seconds per call, like per_call
                row["modelled"] = row["modelled"] / row["calls"] if row["calls"] else 0.0
            running += row["time"]
            row["percent"] = 100.0 * row["time"] / total if total else 0.0
            row["cumulative"] = 100.0 * running / total if total else 0.0
            row["per_call"] = row["time"] / row["calls"] if row["calls"] else 0.0
        return rows

    def device_split(self):
        """Time (and share) in CPU ops, GPU ops and transfer ops; bytes and count of transfers."""
        split = {k: dict(time=0.0, applies=0) for k in KINDS}
        for r in self.records:
            for kind, t in zip(r.kinds, r.apply_time):
                split[kind]["time"] += t
                split[kind]["applies"] += 1
        total = self.thunk_time
        for entry in split.values():
            entry["percent"] = 100.0 * entry["time"] / total if total else 0.0
        split["transfer"]["bytes"] = sum(r.transfer_bytes for r in self.records)
        split["transfer"]["count"] = sum(r.transfer_count for r in self.records)
        return split

    def device_line(self):
        """Measured time in CPU, GPU and transfer ops; says when the "GPU" was simulated (CPU times)."""
        s = self.device_split()
        t = s["transfer"]
        per_call = f", {t['count'] / self.timed_calls:g} per call" if self.timed_calls else ""
        where = " (measured on a SIMULATED GPU: CPU times)" if self.simulated else " (measured)"
        return (f"Time by where ops ran{where}: "
                + " | ".join(f"{KIND_NAMES[k]} ops {format_time(s[k]['time'])} ({s[k]['percent']:.1f}%)"
                             for k in KINDS)
                + f" — {t['count']} transfers{per_call}, {format_bytes(t['bytes'])} moved")

    # ------------------------------------------------------ modelled GPU
    @property
    def has_device_ops(self):
        """True when some profiled op ran on a GPU device or was a transfer (those get modelled times)."""
        return any(kind != "cpu" for r in self.records for kind in r.kinds)

    def modelled_times(self, model=None):
        """{(id(record), node index): modelled seconds over the timed calls}, for GPU and transfer ops.

        Computed when asked (a report), never during a profiled call; see coursekit.profiling.modelled.
        """
        if not self.has_device_ops:
            return {}
        return _modelled.modelled_apply_times(self, model)

    def modelled_line(self, model=None):
        """The CPU/GPU/transfer line with GPU and transfer ops *modelled* on ``config.gpu_model``."""
        return _modelled.modelled_device_line(self, model)

    def notes(self):
        """Sentences every view prints: the device, the warm-up rule, the simulation caveat."""
        lines = [f"Ran on: {', '.join(self.devices) or 'nothing yet (no call recorded)'}",
                 "The first call of each function is a warm-up: it is counted in 'calls' but excluded "
                 "from every time."]
        if self.simulated:
            lines.append("SIMULATED GPU: these are CPU times of a simulation (NumPy on the CPU), "
                         "not GPU timings.")
        if self.has_device_ops:
            model = model_for()
            lines.append(f"'{model.label}' figures are predictions of a cost model for {model.spec.name} "
                         "from each op's bytes, FLOPs and launches (shapes of the last call), not measurements.")
        return lines

    def loop_records(self):
        """The inner functions of loop ops (``Scan``) that ran in timed calls, nested loops included."""
        found, frontier = [], list(self.records)
        while frontier:
            inner = [r for record in frontier for r in record.loop_records.values()]
            found += inner
            frontier = inner
        return found

    def loop_rows(self):
        """Per loop: where its steps' time went, per inner op (see the "Inside loops" table)."""
        result = []
        for r in self.loop_records():
            loop_time = r.outer.apply_time[r.index]
            steps = [dict(name=str(node), time=t, per_step=t / r.timed_calls if r.timed_calls else 0.0,
                          percent=100.0 * t / r.thunk_time if r.thunk_time else 0.0, kind=kind)
                     for node, t, kind in zip(r.nodes, r.apply_time, r.kinds)]
            result.append(dict(loop=str(r.loop_node.op), function=r.outer.name, index=r.index, steps=r.timed_calls,
                               calls=r.outer.timed_calls, step_time=r.thunk_time, loop_time=loop_time,
                               transfers=r.transfer_count, transfer_bytes=r.transfer_bytes,
                               rows=sorted(steps, key=lambda row: -row["time"])))
        return result

    def loop_text(self):
        """The "Inside loops" table as text ('' when no loop ran in a timed call)."""
        lines = []
        for loop in self.loop_rows():
            steps, calls = loop["steps"], loop["calls"] or 1
            lines += ["", f"  {loop['loop']} (apply {loop['index']} of {loop['function']}): {steps / calls:g} steps "
                          f"per call, {steps} steps timed; {format_time(loop['step_time'])} in its step's ops, "
                          f"{format_time(loop['loop_time'] - loop['step_time'])} in the loop around them",
                      "    <% of step> <time per step> <where> <op of the step>"]
            lines += [f"    {row['percent']:8.1f}%  {format_time(row['per_step']):>9}  {KIND_NAMES[row['kind']]:>8}   "
                      f"{row['name']}" for row in loop["rows"]]
            per_step = loop["transfers"] / steps if steps else 0
            lines.append(f"    transfers inside the loop: {loop['transfers']} ({per_step:g} per step), "
                         f"{format_bytes(loop['transfer_bytes'])} moved")
        if not lines:
            return ""
        title = "Inside loops (every step of the timed calls; part of the loop op's time above)"
        return "\n".join(["", title, "-" * len(title), *lines[1:]]) + "\n"

    # ---------------------------------------------------------------- views
    def summary_text(self, n_ops_to_print=20, n_apply_to_print=20):
        return wiring.get("profile_view").summary_text(self, n_ops_to_print, n_apply_to_print) + self.loop_text()

    def summary(self, file=None, n_ops_to_print=20, n_apply_to_print=20):
        """Print Theano's summary (Function, Class, Ops, Apply, CPU/GPU/transfer line).

        ``file``: ``None`` for stdout, ``"str"`` to get the text back, or a file object.
        """
        text = self.summary_text(n_ops_to_print, n_apply_to_print)
        if file == "str":
            return text
        (sys.stdout if file is None else file).write(text)
        return None

    def _repr_html_(self):
        from html import escape

        profile_html = wiring.get("profile_view").profile_html
        loops = self.loop_text()
        return profile_html(self) + (f"<pre style='font-size:90%'>{escape(loops)}</pre>" if loops else "")

    def plot(self, ax=None, by="class", top=15):
        """Horizontal bar chart of where the time went (``by``: class, op or apply); returns the Axes."""
        return wiring.get("profile_view").plot_profile(self, ax=ax, by=by, top=top)

    def __repr__(self):
        return (f"<ProfileStats {self.name or ''}: {len(self.records)} function(s), {self.calls} calls, "
                f"{format_time(self.thunk_time)} in thunks>")

    @classmethod
    def merged(cls, profiles, name="all profiled functions"):
        """One profile over the records of several (used by the at-exit summary)."""
        total = cls(name, atexit_print=False)
        for p in profiles:
            total._records.update(p._records)
            total._functions.extend(p._functions)
        times = [p.compile_time for p in profiles if getattr(p, "compile_time", None) is not None]
        if times:
            total.compile_time = sum(times)
        return total


# ------------------------------------------------------------------ at exit
_AT_EXIT = []
_registered = False


def _print_at_exit_later(profile):
    global _registered
    if not any(p is profile for p in _AT_EXIT):
        _AT_EXIT.append(profile)
    if not _registered:
        atexit.register(print_pending_profiles)
        _registered = True


def print_pending_profiles(file=None):
    """Print every profile registered for printing at exit (and their sum, when several)."""
    used = [p for p in _AT_EXIT if p.calls]
    out = sys.stdout if file is None else file
    for p in used:
        p.summary(file=out)
    if len(used) > 1:
        ProfileStats.merged(used).summary(file=out)
