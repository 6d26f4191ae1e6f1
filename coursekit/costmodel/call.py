"""A modelled call: one call of a compiled function, priced node by node on a preset.

:mod:`coursekit.costmodel.pricing` prices one node; :func:`price_nodes` adds up
the nodes of a call whose input shapes are known and says how the parts
overlap (:class:`ModelledCall`).  Where the shapes come from -- a traced call
or a recording profile -- is profiling's business
(:mod:`coursekit.profiling.modelled`), which also measures the host part.

A modelled call is the whole call: measured host overhead (coursekit's
Python dispatch on this machine, and CPU ops) + modelled launches and
synchronisation + modelled device work + modelled transfers.  The measured
parts are what coursekit's Python really spent; the modelled parts replace
the simulated GPU's CPU times.  How they add up is :attr:`ModelledCall.total`:
a call that copies to or from the host waits for the GPU, so its parts add;
a call that leaves everything on the device only queues its kernels, so in
a loop its host work and the GPU's work overlap.  Every figure that contains
a model says so (``ModelledCall.label``) and carries the preset's error band
(``ModelledCall.band``; "uncalibrated" for a card nobody measured) and its
launch count: the band was measured on calls of 1-4 launches, and a call of
more launches carries a wider, unmeasured band (:func:`presets.band_text`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from . import presets, pricing

NODE_PARTS = ("launch", "kernel", "transfer", "alloc")  # the parts of one node (NodeCost)


def format_time(seconds):
    """3 significant digits in s, ms or µs (students read these, not parsers)."""
    if seconds == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


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
    model = model or pricing.model_for()
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
    band = presets.band_text(model.spec, large_copies=largest >= LARGE_COPY, launches=launches)
    return ModelledCall(model.label, sum(parts.values()), None, parts, moved, transfers, launches, rows,
                        synchronises, band, largest)
