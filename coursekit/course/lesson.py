"""Small helpers the lesson notebooks share: problem sizes, honest timings, tables.

* :func:`size` reads ``COURSEKIT_SIZE`` (``small``, the default, for CI and
  laptops; ``full`` for the tutorial's sizes on a GPU machine).
* :func:`time_call` times a callable the way the lessons teach: warm up
  first (compilation), synchronise the device, take the best of several
  repeats, and label the result with the device that really ran it — a
  simulated-GPU timing is a CPU timing and says so.
* :class:`Table` renders a list of rows as HTML in Jupyter and as text elsewhere.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass


def is_full_size():
    return os.environ.get("COURSEKIT_SIZE", "small").strip().lower() == "full"


def size(small, full):
    """``full`` when COURSEKIT_SIZE=full, else ``small``."""
    return full if is_full_size() else small


def device_label():
    """Where graphs compiled now will run, in words (says 'simulated' when it is)."""
    from ..config import config
    from ..devices import current

    device = current()
    label = device.label
    if getattr(device, "simulated", False):
        label += " - simulated: its timings are CPU timings, not GPU timings"
    return f"device={config.device}: {label}"


@dataclass
class Timing:
    """Seconds per call, and where they were measured."""

    best: float
    median: float
    calls: int
    device: str

    @property
    def simulated(self):
        return "simulated" in self.device.lower() or "emulat" in self.device.lower()

    def __str__(self):
        lowered = self.device.lower()
        note = (" (emulator: CPU time, not a GPU timing)" if "emulat" in lowered else
                " (simulated GPU: CPU time)" if "simulated" in lowered else "")
        return f"{format_seconds(self.best)} per call{note}"

    __repr__ = __str__


def format_seconds(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.3f} s"


def time_call(fn, *args, number=None, repeat=5, warmup=1, device=None, sync=True):
    """Best and median seconds per call of ``fn(*args)``.

    The first ``warmup`` calls are not timed (compilation, caches).  With
    ``sync=True`` the device is synchronised before the clock stops, so GPU
    work that was only *queued* is not mistaken for finished work.
    """
    from ..devices import synchronize

    for _ in range(warmup):
        fn(*args)
    if sync:
        synchronize()
    if number is None:  # aim for about 0.05 s per repeat
        start = time.perf_counter()
        fn(*args)
        if sync:
            synchronize()
        once = max(time.perf_counter() - start, 1e-7)
        number = max(1, min(10_000, int(0.05 / once)))
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn(*args)
        if sync:
            synchronize()
        samples.append((time.perf_counter() - start) / number)
    # label with the device that ran it: a compiled function knows; anything else gets the current setting
    backend = getattr(fn, "backend", None)  # a coursekit.cuda kernel says where it runs
    kernel_label = f"CUDA kernel on the {backend}" if isinstance(backend, str) else None
    label = device or getattr(fn, "device", None) or kernel_label or device_label()
    return Timing(min(samples), statistics.median(samples), number * repeat, label)


class Table:
    """Rows of values with a header; HTML in Jupyter, aligned text in a terminal."""

    def __init__(self, header, rows, caption=None):
        self.header, self.rows, self.caption = list(header), [list(r) for r in rows], caption

    def _repr_html_(self):
        head = "".join(f"<th>{h}</th>" for h in self.header)
        body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in self.rows)
        caption = f"<caption>{self.caption}</caption>" if self.caption else ""
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def __str__(self):
        cells = [self.header] + [[_cell(v) for v in row] for row in self.rows]
        widths = [max(len(str(r[i])) for r in cells) for i in range(len(self.header))]
        lines = ["  ".join(str(v).ljust(w) for v, w in zip(r, widths)) for r in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return ((self.caption + "\n") if self.caption else "") + "\n".join(lines)

    __repr__ = __str__


def _cell(value):
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)
