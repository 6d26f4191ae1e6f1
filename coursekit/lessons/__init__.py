"""Small helpers the lesson notebooks share: problem sizes, honest timings, tables.

* :func:`size` reads ``COURSEKIT_SIZE`` (``small``, the default, for CI and
  laptops; ``full`` for the tutorial's sizes on a GPU machine).
* :func:`time_call` times a callable the way the lessons teach: warm up
  first (compilation), synchronise the device, take the best of several
  repeats, and label the result with the device that really ran it — a
  simulated-GPU timing is a CPU timing and says so.  BLAS is pinned to one
  thread while it measures (threadpoolctl), so that a busy machine, whose
  extra BLAS threads stall, cannot make one version look faster than another.
  For a compiled function with GPU ops it also gives the *modelled* time on
  the preset GPU (``Timing.modelled``, see :mod:`coursekit.profiling.predict`), always
  labelled as modelled.
* :func:`load_digits` gives scikit-learn's 8 x 8 digits (lesson 10) without importing scikit-learn.
* :class:`Table` renders a list of rows as HTML in Jupyter and as text elsewhere;
  :func:`comparison` builds the lessons' "measured vs modelled" table.
"""
from __future__ import annotations

import contextlib
import gzip
import importlib.util
import os
import statistics
import time
import types
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config import config
from .. import costmodel
from ..costmodel import is_modelled
from ..devices import Device, current, get, synchronize
from ..profiling.predict import predict_call
from ..profiling import op_kind


def is_full_size():
    return os.environ.get("COURSEKIT_SIZE", "small").strip().lower() == "full"


def size(small, full):
    """``full`` when COURSEKIT_SIZE=full, else ``small``."""
    return full if is_full_size() else small


def load_digits():
    """scikit-learn's 1 797 handwritten digits of 8 x 8 pixels (values 0 to 16), as its
    ``load_digits()`` gives them: ``.data`` (1797 x 64, float64), ``.target`` (the labels 0-9) and
    ``.images`` (1797 x 8 x 8), read with NumPy from the same file inside the scikit-learn package.

    Importing scikit-learn imports SciPy's statistics: 1.8 s of CPU at the start of lesson 10, and
    again in every graded run of it, for a file NumPy reads in 0.01 s.
    """
    spec = importlib.util.find_spec("sklearn")      # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the digits of lesson 10 ship with scikit-learn, which is not installed here: "
                          "pip install scikit-learn (or pip install -r requirements.txt)")
    path = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"
    with gzip.open(path, "rt") as handle:
        table = np.loadtxt(handle, delimiter=",")
    data = table[:, :-1]
    return types.SimpleNamespace(data=data, target=table[:, -1].astype(int), images=data.reshape(-1, 8, 8))


def device_label():
    """Where graphs compiled now will run, in words (says 'simulated' when it is)."""
    device = current()
    label = device.label
    if getattr(device, "simulated", False):
        label += " - simulated: its timings are CPU timings, not GPU timings"
    return f"device={config.device}: {label}"


@dataclass
class Timing:
    """Seconds per call, where they were measured, and (for GPU graphs) the modelled time.

    ``best``/``median``: measured.  ``device``: where it ran, in words.
    ``ran_on``: the :class:`~coursekit.devices.device.Device` that ran it
    (None for a plain callable: it ran where its label says), and
    ``emulated``: a hand-written CUDA kernel run by the CPU emulator.
    "Simulated?" is asked of ``ran_on``, never read from the label.
    ``modelled``: a :class:`coursekit.costmodel.ModelledCall` (its ``device``
    part is modelled, its ``host`` part is this measurement minus the
    measured device ops) or None.  ``blas_threads``: the BLAS thread count
    during the measurement (None: not pinned).
    """

    best: float
    median: float
    calls: int
    device: str
    modelled: object = None
    blas_threads: int | None = None
    ran_on: object = None
    emulated: bool = False

    @property
    def simulated(self):
        return bool(self.ran_on is not None and self.ran_on.simulated)

    def __str__(self):
        note = (" (emulator: CPU time, not a GPU timing)" if self.emulated and self.simulated else
                " (simulated GPU: CPU time)" if self.simulated else "")
        blas = f", {self.blas_threads} BLAS thread" if self.blas_threads else ""
        return f"{format_seconds(self.best)} per call measured{note}{blas}"

    __repr__ = __str__

    def describe(self):
        """Every figure, each with its label (measured, where, BLAS threads; modelled, which preset)."""
        lines = [f"measured: {self} on {self.device}" + (f"; BLAS pinned to {self.blas_threads} thread"
                                                         if self.blas_threads else "")]
        if self.modelled is not None:
            lines.append(f"{self.modelled.label}: {format_seconds(self.modelled.device)} device work"
                         + (f" + {format_seconds(self.modelled.host)} measured host time = "
                            f"{format_seconds(self.modelled.total)} per call" if self.modelled.host is not None
                            else ""))
        return "\n".join(lines)


def format_seconds(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.3f} s"


@contextlib.contextmanager
def one_blas_thread(threads=1):
    """Pin BLAS (OpenBLAS, MKL...) to ``threads`` threads inside the block (``None``: leave it alone).

    On a shared or busy machine a multi-threaded BLAS call waits for its
    slowest thread, and the wait lands on whichever version is being timed:
    that is how a simulated GPU once looked "15x faster" than the CPU. One
    thread makes timings steady and comparable.
    """
    if threads is None:
        yield None
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads, user_api="blas"):
        yield threads


def time_call(fn, *args, number=None, repeat=5, warmup=1, device=None, sync=True, blas_threads=1, model=True):
    """Best and median seconds per call of ``fn(*args)``.

    The first ``warmup`` calls are not timed (compilation, caches).  With
    ``sync=True`` the device is synchronised before the clock stops, so GPU
    work that was only *queued* is not mistaken for finished work.  BLAS runs
    on ``blas_threads`` threads while timing (``None`` leaves it alone).

    ``model=True`` and ``fn`` a compiled function with GPU ops: also the
    modelled time on ``config.gpu_model`` (or the preset named by ``model``),
    in ``Timing.modelled``.  Finding the shapes takes a few more calls of
    ``fn`` (with their updates, like any call).
    """
    with one_blas_thread(blas_threads):
        timing = _time(fn, args, number, repeat, warmup, device, sync)
        timing.blas_threads = blas_threads
        if model and _has_gpu_ops(fn):
            preset = costmodel.model(model) if isinstance(model, str) else costmodel.model_for()
            timing.modelled = predict_call(fn, *args, model=preset)
    return timing


def _has_gpu_ops(fn):
    nodes = getattr(fn, "nodes", None)
    return bool(nodes) and hasattr(fn, "storage_map") and any(is_modelled(node) for node in nodes)


def _time(fn, args, number, repeat, warmup, device, sync):
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
    label, ran_on, emulated = _where_it_ran(fn, device)
    return Timing(min(samples), statistics.median(samples), number * repeat, label, ran_on=ran_on,
                  emulated=emulated)


def _where_it_ran(fn, device=None):
    """(label, Device or None, emulated?) of a timing: where ``fn`` really ran, whatever ``config.device`` says.

    A compiled function carries its Device (and a function compiled for a GPU whose ops all stayed on
    the host, e.g. float64, ran on the CPU); a coursekit.cuda kernel carries the Device that runs it.
    A plain callable takes the caller's ``device`` (a Device, a kernel the callable launches, or a
    label naming where it runs: no device was involved), else the current device. The function's own answer wins over ``device=``:
    a label passed from ``device_label()`` under COURSEKIT_FLAGS=device=gpu would call a CPU
    function's row a GPU row.
    """
    nodes = getattr(fn, "nodes", None)
    own = getattr(fn, "device", None)
    if isinstance(own, Device) and nodes is not None and hasattr(fn, "storage_map"):
        if not any(op_kind(node.op) in ("gpu", "transfer") for node in nodes):
            own = get("cpu")
        return own.label, own, False
    for kernel in (fn, device):  # a coursekit.cuda kernel (timed itself, or named as what a lambda runs)
        if isinstance(getattr(kernel, "device", None), Device) and isinstance(getattr(kernel, "backend", None), str):
            return f"CUDA kernel on the {kernel.backend}", kernel.device, kernel.device.raw_kernels == "emulator"
    if isinstance(device, Device):
        return device.label, device, False
    if device:
        return device, None, False
    return device_label(), current(), False


def comparison(timings, baseline=None, caption=None):
    """The lessons' table: measured per call (and where), modelled device work, modelled call, speed-ups.

    ``timings``: ``{version: Timing}``; ``baseline``: the version speed-ups are
    relative to (default: the first).  Measured and modelled figures sit in
    separate, labelled columns; a version without GPU ops has no modelled figure.
    """
    names = list(timings)
    base = timings[baseline or names[0]]
    labels = sorted({t.modelled.label for t in timings.values() if t.modelled is not None})
    model_name = labels[0] if len(labels) == 1 else "modelled"
    header = ["version", "measured per call", "measured on", f"device path, {model_name}",
              f"whole call, {model_name} + measured host (error band)", "speed-up, measured",
              "speed-up, modelled"]
    rows = []
    for name in names:
        t = timings[name]
        m = t.modelled
        reference = base.modelled.total if base.modelled is not None else base.best
        rows.append([name, format_seconds(t.best), t.device, format_seconds(m.device) if m else "—",
                     f"{format_seconds(m.total)} ({m.band})" if m else "—", f"×{base.best / t.best:.2f}",
                     f"×{reference / m.total:.2f}" if m else "—"])
    blas = {t.blas_threads for t in timings.values()}
    note = "BLAS pinned to 1 thread while measuring" if blas == {1} else "BLAS threads not pinned"
    return Table(header, rows, caption=(caption + "; " if caption else "") + note)


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
