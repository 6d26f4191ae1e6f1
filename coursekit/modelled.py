"""Modelled GPU times for compiled functions and their profiles.

:mod:`coursekit.devices.costmodel` prices one node; this module prices a
whole call, from what really ran:

* :func:`predict_call` runs a compiled function once under a private profile
  to learn each node's input shapes and which nodes get a fresh buffer each
  call, then prices the GPU and transfer nodes with the model;
* :func:`model_profile` does the same from a :class:`~coursekit.profiling.ProfileStats`
  that was already recording (no extra call; nothing added to the profiled
  call itself: the model runs when a report is made, and caches per node and
  shape signature).

A modelled call is the whole call: measured host overhead (coursekit's
Python dispatch on this machine, and CPU ops) + modelled launches and
synchronisation + modelled device work + modelled transfers.  The measured
parts are what coursekit's Python really spent; the modelled parts replace
the simulated GPU's CPU times.  How they add up is :attr:`ModelledCall.total`:
a call that copies to or from the host waits for the GPU, so its parts add;
a call that leaves everything on the device only queues its kernels, so in
a loop its host work and the GPU's work overlap.  Every figure that contains
a model says so (``ModelledCall.label``) and carries the preset's error band
from the measured corpus (``ModelledCall.band``; "uncalibrated" for a card
nobody measured).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .devices import costmodel, presets
from .profiling import ProfileStats, format_time

NODE_PARTS = ("launch", "kernel", "transfer", "alloc")  # the parts of one node (NodeCost)
PARTS = NODE_PARTS + ("sync",)                         # and of a call: a call synchronises once, at most
LARGE_COPY = 32 * 2 ** 20  # glibc's largest mmap threshold: host buffers this big are fresh pages each call


@dataclass
class ModelledCall:
    """One call of a function: modelled device seconds plus measured host seconds.

    ``device``: modelled GPU and transfer work (deterministic: work counts and
    the preset only).  ``host``: measured overhead outside the device ops
    (Python dispatch, input checks, CPU ops), or None when not measured.
    """

    label: str
    device: float
    host: float | None = None
    parts: dict = field(default_factory=dict)      # seconds per part of the device work (PARTS)
    transfer_bytes: int = 0
    transfers: int = 0
    launches: int = 0
    rows: list = field(default_factory=list)       # (node, NodeCost) for every modelled node
    synchronises: bool = True                      # does the call wait for the GPU (a copy to or from the host)?
    band: str = "uncalibrated"                     # the preset's error band for a call like this one
    largest_copy: int = 0                          # bytes of the call's largest host copy

    @property
    def total(self):
        """Seconds per call in a loop, as :func:`~coursekit.lessons.time_call` times it.

        A call that synchronises: host work, then the device path, one after the other.  A call that
        only queues work: the host's part (dispatch, launches, allocations) and the GPU's kernels
        overlap, and the slower one sets the pace.
        """
        host = self.host or 0.0
        if self.synchronises or self.host is None:
            return host + self.device
        issue = host + sum(self.parts.get(name, 0.0) for name in ("launch", "alloc", "transfer"))
        return max(issue, self.parts.get("kernel", 0.0) + self.parts.get("transfer", 0.0))

    def with_host(self, host):
        """The same device work with another measured host part (e.g. measured on another machine)."""
        return dataclasses.replace(self, host=host)

    def figure(self, seconds=None):
        """'118.3 µs modelled (h100, -20%/+26%)': a modelled figure with its label and error band."""
        seconds = self.total if seconds is None else seconds
        return f"{format_time(seconds)} {self.label[:-1]}, {self.band})"

    def __str__(self):
        if self.host is None:
            return f"{format_time(self.device)} per call, {self.label} ({self.band}): device work only"
        how = "one after the other" if self.synchronises else "overlapping (launches queue, no wait)"
        return (f"{format_time(self.total)} per call, {self.label} ({self.band}): {format_time(self.device)} "
                f"modelled device path + {format_time(self.host)} measured host time (dispatch and CPU ops), "
                f"{how}")

    __repr__ = __str__

    def describe(self):
        """Where the modelled device time goes, in one line."""
        parts = ", ".join(f"{name} {format_time(self.parts.get(name, 0.0))}" for name in PARTS)
        return (f"{self.label[:-1]}, {self.band}): {parts}; {self.launches} kernel launch(es), {self.transfers} transfer(s) "
                f"moving {self.transfer_bytes:,} bytes per call")


def is_modelled(node):
    """GPU and transfer ops are modelled; CPU ops really run on the CPU and are measured."""
    return getattr(node.op, "device", "cpu") == "gpu"


def _allocates(fn, node):
    """Does this node get a fresh buffer on each call?  Yes when the call left its output cell empty."""
    storage = getattr(fn, "storage_map", None) if fn is not None else None
    if storage is None:
        return True
    return any(storage.get(out, [None])[0] is None for out in node.outputs)


def price_nodes(nodes, input_info, fn=None, model=None):
    """A :class:`ModelledCall` (no host part) for nodes with recorded ``[(shape, dtype), ...]`` inputs."""
    model = model or costmodel.model_for()
    parts = dict.fromkeys(PARTS, 0.0)
    rows, moved, transfers, launches, largest = [], 0, 0, 0, 0
    for node, info in zip(nodes, input_info):
        if not is_modelled(node) or info is None:
            continue
        shapes = [s for s, _ in info]
        dtypes = [d for _, d in info]
        cost = model.node_cost(node, shapes, dtypes, allocates=_allocates(fn, node))
        rows.append((node, cost))
        for name in NODE_PARTS:
            parts[name] += getattr(cost, name)
        moved += cost.work.h2d_bytes + cost.work.d2h_bytes
        transfers += bool(cost.work.h2d_bytes or cost.work.d2h_bytes)
        largest = max(largest, cost.work.h2d_bytes, cost.work.d2h_bytes)
        launches += cost.work.launches
    synchronises = bool(transfers)  # a copy over the host link waits for the queued kernels
    if synchronises:
        parts["sync"] = model.sync_time()
    band = presets.band_text(model.spec, large_copies=largest >= LARGE_COPY)
    return ModelledCall(model.label, sum(parts.values()), None, parts, moved, transfers, launches, rows,
                        synchronises, band, largest)


def trace_call(fn, *args, calls=3):
    """Run ``fn(*args)`` ``calls`` times under a private profile; returns its record.

    This is how a function compiled without ``profile=True`` reveals the
    shapes its nodes see.  Like any call it applies the function's updates.
    """
    profile = ProfileStats(name=f"trace of {getattr(fn, 'name', 'a function')}", atexit_print=False)
    record = profile.attach(fn)  # installs the profile's linker hook on fn
    try:
        for _ in range(max(2, calls)):  # the profiler ignores the first call (warm-up)
            fn(*args)
    finally:
        fn.remove_hook(record)
    return record


def _device_seconds(record):
    """Measured seconds per call in the record's GPU and transfer ops (simulated or real)."""
    if not record.timed_calls:
        return 0.0
    total = sum(t for node, t in zip(record.nodes, record.apply_time) if is_modelled(node))
    return total / record.timed_calls


def predict_call(fn, *args, model=None, calls=6):
    """Modelled time of one call of the compiled function ``fn`` with ``args``.

    Runs ``fn`` ``calls`` times under a private profile (the first is a
    warm-up): the device part is priced from the shapes its nodes saw; the
    host part is measured in the same calls, as the call time spent outside
    GPU and transfer ops (Python dispatch, input checks, CPU ops).
    """
    record = trace_call(fn, *args, calls=calls)
    call = price_nodes(record.nodes, record.input_info, fn, model)
    call.host = _host_seconds(record)
    return call


def predict_calls(fn, *args, models, calls=6):
    """``{name: ModelledCall}`` for several presets from ONE traced run: the same shapes and the same
    measured host time for every card, so that columns side by side differ only by the card."""
    record = trace_call(fn, *args, calls=calls)
    host = _host_seconds(record)
    return {name: price_nodes(record.nodes, record.input_info, fn, costmodel.model(name)).with_host(host)
            for name in models}


def predict_scaled(fn, *args, sizes, model=None):
    """Modelled device work of ``fn`` as if the axes of ``args`` were larger: run small, price big.

    ``sizes`` maps an axis length of the run to the length to price, e.g.
    ``{256: 1000}`` prices a call on 1000 x 1000 matrices after running it on
    256 x 256 ones: every axis of length 256 that any node sees becomes 1000.
    Use lengths that occur only where you mean them (256, not 1).  Nothing is
    measured at the priced size, so the result has no host part.
    """
    record = trace_call(fn, *args, calls=2)
    info = [None if entry is None else [(None if shape is None else tuple(sizes.get(d, d) for d in shape), dtype)
                                        for shape, dtype in entry] for entry in record.input_info]
    return price_nodes(record.nodes, info, fn, model)


def _host_seconds(record):
    if not record.timed_calls:
        return None
    return max(record.call_time / record.timed_calls - _device_seconds(record), 0.0)


def model_profile(profile, model=None):
    """Per-function :class:`ModelledCall` for a recording profile (host part from its measured times)."""
    results = []
    for record in profile.records:
        fn = record.fn_ref()
        call = price_nodes(record.nodes, record.input_info, fn, model)
        call.host = _host_seconds(record)
        results.append((record, call))
    return results


def modelled_apply_times(profile, model=None):
    """{(record, node index): modelled seconds over all timed calls} for GPU and transfer nodes."""
    times = {}
    for record, call in model_profile(profile, model):
        index = {id(node): i for i, node in enumerate(record.nodes)}
        for node, cost in call.rows:
            times[(id(record), index[id(node)])] = cost.total * record.timed_calls
    return times


def modelled_device_line(profile, model=None):
    """The CPU/GPU/transfer line again, with GPU and transfer ops modelled (labelled)."""
    model = model or costmodel.model_for()
    per_kind = {"cpu": 0.0, "gpu": 0.0, "transfer": 0.0}
    for record, call in model_profile(profile, model):
        for node, t, kind in zip(record.nodes, record.apply_time, record.kinds):
            if kind == "cpu":
                per_kind["cpu"] += t
        for node, cost in call.rows:
            kind = "transfer" if getattr(node.op, "is_transfer", False) else "gpu"
            per_kind[kind] += cost.total * record.timed_calls
    total = sum(per_kind.values()) or 1.0
    split = " | ".join(f"{name} {format_time(per_kind[k])} ({100 * per_kind[k] / total:.1f}%)"
                       for k, name in (("cpu", "CPU ops (measured)"), ("gpu", "GPU ops"),
                                       ("transfer", "transfer ops")))
    return f"Time by where ops ran, {model.label}: {split}"
