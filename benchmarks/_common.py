"""Shared pieces of the benchmark harness: timing, rows, targets, machine facts.

Nothing here imports coursekit or a peer library at module level: each system is loaded on
demand by :class:`Systems` so that a missing or broken peer becomes a note in the results,
not a crash of the run.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import importlib
import itertools
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any, Callable

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --------------------------------------------------------------------------------------------
# Errors that turn into a row instead of a crash
# --------------------------------------------------------------------------------------------
class NotAvailable(Exception):
    """A system or a feature of it is missing (not installed, not implemented yet, no GPU)."""


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Timing:
    best: float            # seconds per call, best repeat
    median: float          # seconds per call, median repeat
    n: int                 # calls per repeat
    repeats: int
    first_call: float      # seconds of the very first call (compilation/caches; excluded)
    pair: "Timing | None" = None   # the baseline, timed in alternation (see time_calls)


def time_calls(fn: Callable[[], Any], n: int, repeats: int, *, sync: Callable[[], Any] | None = None,
               warmup: int = 2, pair: Callable[[], Any] | None = None) -> tuple[Timing, Any]:
    """Time ``fn()``: first call excluded, then ``repeats`` loops of ``n`` calls each.

    ``sync`` (when given) runs after each loop so asynchronous devices are really done before the
    clock stops (CUDA, JAX dispatch). ``pair`` is a baseline timed in loops alternating with
    ``fn``'s, so the ratio of the two is not skewed by the machine's load drifting between rows;
    its timing is returned as ``timing.pair``. Returns the timing and the first call's result.
    """
    t0 = time.perf_counter()
    first = fn()
    if sync is not None:
        sync()
    first_call = time.perf_counter() - t0
    for _ in range(warmup):
        fn()
        if pair is not None:
            pair()
    if sync is not None:
        sync()

    def loop(f, s):
        it = itertools.repeat(None, n)
        t0 = time.perf_counter()
        for _ in it:
            f()
        if s is not None:
            s()
        return (time.perf_counter() - t0) / n

    per_call, per_pair = [], []
    if pair is not None and n >= 40:
        # Paired: more, shorter alternating loops (same total work), so that a burst of load from
        # another process hits both sides alike instead of deciding one whole repeat.
        n, repeats = n // 4, repeats * 4
    for _ in range(repeats):
        if pair is not None:
            per_pair.append(loop(pair, None))
        per_call.append(loop(fn, sync))
    timing = Timing(min(per_call), statistics.median(per_call), n, repeats, first_call)
    if pair is not None:
        timing.pair = Timing(min(per_pair), statistics.median(per_pair), n, repeats, 0.0)
    return timing, first


def time_steps(step: Callable[[], Any], steps: int, chunks: int, *,
               sync: Callable[[], Any] | None = None, pair: Callable[[], Any] | None = None) -> Timing:
    """Time a stateful training ``step`` run exactly ``steps`` times in all.

    The first step is timed alone (compilation, caches) and excluded; the other ``steps - 1`` are
    split into ``chunks`` timed loops, whose per-step times give the best and the median.
    """
    t0 = time.perf_counter()
    step()
    if sync is not None:
        sync()
    first = time.perf_counter() - t0
    rest = steps - 1
    chunks = max(1, min(chunks, rest))
    sizes = [rest // chunks + (1 if i < rest % chunks else 0) for i in range(chunks)]
    per_step, per_pair = [], []
    if pair is not None:
        pair()
    for size in sizes:
        if pair is not None:
            t0 = time.perf_counter()
            for _ in itertools.repeat(None, size):
                pair()
            per_pair.append((time.perf_counter() - t0) / size)
        t0 = time.perf_counter()
        for _ in itertools.repeat(None, size):
            step()
        if sync is not None:
            sync()
        per_step.append((time.perf_counter() - t0) / size)
    timing = Timing(min(per_step), statistics.median(per_step), rest, chunks, first)
    if pair is not None:
        timing.pair = Timing(min(per_pair), statistics.median(per_pair), rest, chunks, 0.0)
    return timing


# --------------------------------------------------------------------------------------------
# Rows, targets, verdicts
# --------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Target:
    """``kind='ratio'``: best time ≤ value × the baseline row's best time.
    ``kind='ratio_median'``: the same for the median loops (paired rows only).
    ``kind='max'``: the row's value ≤ value (seconds for times, plain numbers otherwise).
    ``kind='true'``: the row's value must be truthy."""
    kind: str
    value: float | None = None
    text: str = ""


@dataclasses.dataclass
class Row:
    workload: str
    system: str
    what: str                       # the code that was timed, short
    device: str = "cpu"             # where it really ran: cpu | sim (simulated GPU, CPU time) | cuda:0 (...)
    status: str = "ok"              # ok | not available: ... | error: ... | wrong result: ...
    unit: str = "s/call"            # s/call | s/step | s | rel. error | bool
    best: float | None = None
    median: float | None = None
    n: int | None = None
    repeats: int | None = None
    first_call: float | None = None
    base: str | None = None         # key "system|what" of the baseline row in the same workload
    ratio: float | None = None      # best / baseline best
    target: Target | None = None
    verdict: str | None = None      # pass | miss | n/a
    note: str = ""
    extra: dict = dataclasses.field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.system}|{self.what}"

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["target"] = None if self.target is None else self.target.text
        d["target_kind"] = None if self.target is None else self.target.kind
        d["target_value"] = None if self.target is None else self.target.value
        return d


def finish_rows(rows: list[Row]) -> None:
    """Fill ratios against the baseline rows and the pass/miss verdicts."""
    by_key = {(r.workload, r.key): r for r in rows}
    for r in rows:
        base = by_key.get((r.workload, r.base)) if r.base else None
        paired = r.extra.get("paired_base_best")
        if r.status == "ok" and r.best is not None and paired:
            r.ratio = r.best / paired          # baseline timed in alternation with this row
            if r.median and r.extra.get("paired_base_median"):
                r.extra["ratio_median"] = r.median / r.extra["paired_base_median"]
        elif (r.status == "ok" and base is not None and base.status == "ok" and r.best is not None
                and base.best and r.unit == base.unit):
            r.ratio = r.best / base.best
        if r.target is None:
            continue
        t = r.target
        if r.status != "ok":
            r.verdict = "miss"
            continue
        if t.kind == "ratio":
            r.verdict = "n/a" if r.ratio is None else ("pass" if r.ratio <= t.value else "miss")
        elif t.kind == "ratio_median":  # the median loop's ratio: a target that needs margin, not one lucky loop
            m = r.extra.get("ratio_median")
            r.verdict = "n/a" if m is None else ("pass" if m <= t.value else "miss")
        elif t.kind == "max":
            ok = r.best is not None and math.isfinite(r.best) and r.best <= t.value
            r.verdict = "pass" if ok else "miss"
        elif t.kind == "true":
            r.verdict = "pass" if r.best else "miss"


def fmt_value(v: float | None, unit: str) -> str:
    if v is None:
        return "—"
    if unit in ("s/call", "s/step", "s"):
        if not math.isfinite(v):
            return str(v)
        if v < 1e-3:
            return f"{v * 1e6:.2f} µs"
        if v < 1:
            return f"{v * 1e3:.3f} ms"
        return f"{v:.3f} s"
    if unit == "bool":
        return "yes" if v else "no"
    return f"{v:.3g}"


# --------------------------------------------------------------------------------------------
# Systems (loaded lazily, each failure recorded once)
# --------------------------------------------------------------------------------------------
class Systems:
    """Loads each library once; ``get(name)`` returns the module or raises :class:`NotAvailable`."""

    IMPORTS = {
        "numpy": "numpy",
        "coursekit": "coursekit",
        "pytensor": "pytensor",
        "jax": "jax",
        "torch": "torch",
        "cupy": "cupy",
    }

    def __init__(self, wanted: list[str]):
        self.wanted = wanted
        self._mods: dict[str, Any] = {}
        self._errors: dict[str, str] = {}
        self.notes: dict[str, str] = {}

    def enabled(self, name: str) -> bool:
        return name in self.wanted

    def get(self, name: str):
        if name not in self.wanted:
            raise NotAvailable(f"{name} not selected (--systems)")
        if name in self._mods:
            return self._mods[name]
        if name in self._errors:
            raise NotAvailable(self._errors[name])
        try:
            mod = importlib.import_module(self.IMPORTS[name])
        except Exception as e:  # ImportError, or a broken install raising anything
            msg = f"{name} not importable ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
            self._errors[name] = msg
            self.notes[name] = f"skipped: {msg}"
            raise NotAvailable(msg) from None
        self._mods[name] = mod
        return mod

    def available(self, name: str) -> bool:
        try:
            self.get(name)
            return True
        except NotAvailable:
            return False


def version_of(dist: str, module: str | None = None) -> str | None:
    try:
        from importlib import metadata
        return metadata.version(dist)
    except Exception:
        pass
    mod = sys.modules.get(module or dist)
    return getattr(mod, "__version__", None) if mod is not None else None


# --------------------------------------------------------------------------------------------
# Machine facts
# --------------------------------------------------------------------------------------------
def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def cpu_model() -> str:
    m = re.search(r"^model name\s*:\s*(.+)$", _read("/proc/cpuinfo"), re.M)
    if m:
        return m.group(1).strip()
    return platform.processor() or platform.machine()


def cpu_flags() -> list[str]:
    m = re.search(r"^flags\s*:\s*(.+)$", _read("/proc/cpuinfo"), re.M)
    flags = m.group(1).split() if m else []
    return [f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f") if f in flags]


def ram_gib() -> float | None:
    m = re.search(r"^MemTotal:\s*(\d+)\s*kB", _read("/proc/meminfo"), re.M)
    return round(int(m.group(1)) / 2**20, 1) if m else None


def os_name() -> str:
    m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', _read("/etc/os-release"), re.M)
    base = platform.platform()
    return f"{m.group(1)} ({base})" if m else base


def numpy_blas() -> str | None:
    try:
        import numpy as np
        cfg = np.show_config(mode="dicts")
        blas = cfg["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')}"
    except Exception:
        return None


def git_revision() -> str | None:
    git = shutil.which("git")
    if not git:
        return None
    try:
        out = subprocess.run([git, "-C", REPO_ROOT, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except Exception:
        return None


def machine_info() -> dict:
    cores_total = os.cpu_count()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = cores_total
    return {
        "cpu_model": cpu_model(),
        "cpu_flags": cpu_flags(),
        "cores": cores_total,
        "cores_usable": usable,
        "ram_gib": ram_gib(),
        "os": os_name(),
        "python": sys.version.split()[0] + f" ({platform.python_implementation()})",
        "numpy_blas": numpy_blas(),
        "hostname": platform.node(),
        "loadavg_1_5_15": _loadavg(),
    }


def _loadavg():
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def machine_slug(info: dict) -> str:
    model = info["cpu_model"]
    model = re.sub(r"\((R|TM|tm|r)\)", "", model)
    model = re.sub(r"@.*$", "", model)
    model = re.sub(r"\b(CPU|Processor|\d+-Core|Core\(s\))\b", "", model, flags=re.I)
    slug = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-") or "machine"
    return f"{slug}-{info['cores_usable']}c"


def today() -> str:
    return _dt.date.today().isoformat()


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds")


def dump_json(path: str, payload: dict) -> None:
    def default(o):
        if hasattr(o, "item"):
            return o.item()
        return str(o)
    with open(path, "w") as f:
        json.dump(payload, f, indent=2, default=default, allow_nan=True)
        f.write("\n")
