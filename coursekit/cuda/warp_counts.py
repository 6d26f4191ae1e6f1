"""What a launch's warps asked of memory, counted: ``SourceModule(..., counts=True)``.

On a GPU the 32 threads of a warp issue a load or store together, and the memory system serves that
*request* in units: 32-byte **sectors** of global memory (an L1 line is 4 of them, 128 bytes), one
**wavefront** per pass over shared memory's 32 four-byte banks, one update at a time for lanes whose
**atomics** hit the same address. Coalescing, bank conflicts and contention are counts of those units,
so the emulator counts them (``ck_warp.h``): a warp request is the lanes that run the same load or
store instruction for the same time, as they would in step on a GPU.

    mod = cuda.SourceModule(source, backend="emulator", counts=True)
    kernel = mod.get_function("transpose")
    kernel(..., block=(32, 8, 1), grid=(...))
    kernel.counts.loads["src"].sectors        # 32-byte sectors its loads from `src` touched
    kernel.counts.shared_loads.conflicts      # extra wavefronts caused by bank conflicts
    print(kernel.counts)                      # a table

These are counts of the emulator's model of a warp, exact for it; what they cost in time is a
question for a model of a GPU (they are never a timing). Global memory here means the launch's array
arguments, addressed as if each began on a 256-byte boundary (as ``cudaMalloc``'s do); shared memory
is the kernel's ``__shared__`` arrays and ``extern __shared__`` memory, with banks counted from their
start. Not modelled: caches (a sector read twice by two requests counts twice), the L2 and DRAM
behind them, and warps of a block that diverge and reconverge elsewhere than a GPU would. Not
counted: ``__device__`` global variables, and ``__shared__`` arrays declared inside a *template*
kernel (g++ places those outside the section where the emulator finds shared memory).
"""
from __future__ import annotations

import ctypes
from dataclasses import asdict, dataclass

LABEL = "counted on the CPU emulator's model of a 32-thread warp"
SECTOR_BYTES = 32
LINE_BYTES = 128
BANKS = 32
GLOBAL_FIELDS = 11
SHARED_FIELDS = 7


@dataclass(frozen=True)
class Traffic:
    """Global-memory requests of one kind (loads or stores) and the units that served them."""

    requests: int = 0       # warp-wide load/store instructions
    sectors: int = 0        # distinct 32-byte sectors, summed over requests
    lines: int = 0          # distinct 128-byte lines, summed over requests
    bytes: int = 0          # bytes the lanes asked for

    @property
    def efficiency(self) -> float:
        """Bytes asked for / bytes moved (1.0: every sector byte was used; 1/8: one float per sector)."""
        return self.bytes / (SECTOR_BYTES * self.sectors) if self.sectors else 1.0

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.requests if self.requests else 0.0

    def __add__(self, other: Traffic) -> Traffic:
        return Traffic(*(a + b for a, b in zip(astuple(self), astuple(other))))


@dataclass(frozen=True)
class SharedTraffic:
    """Shared-memory requests of one kind and the wavefronts (passes over the 32 banks) they took."""

    requests: int = 0
    wavefronts: int = 0

    @property
    def conflicts(self) -> int:
        """Wavefronts beyond one per request: what bank conflicts cost (replays)."""
        return self.wavefronts - self.requests


@dataclass(frozen=True)
class Atomics:
    """Atomic requests: lanes that took part, and the serialized steps (most lanes on one address, per request)."""

    requests: int = 0
    lanes: int = 0
    serialized: int = 0

    def __add__(self, other: Atomics) -> Atomics:
        return Atomics(*(a + b for a, b in zip(astuple(self), astuple(other))))


def astuple(record) -> tuple:
    return tuple(asdict(record).values())


@dataclass(frozen=True)
class WarpCounts:
    """The warp-level counts of one launch; per array argument for global memory."""

    kernel: str
    loads: dict          # argument name -> Traffic
    stores: dict         # argument name -> Traffic
    atomics: dict        # argument name -> Atomics (global memory)
    shared_loads: SharedTraffic
    shared_stores: SharedTraffic
    shared_atomics: Atomics
    label: str = LABEL

    @property
    def global_loads(self) -> Traffic:
        return sum(self.loads.values(), Traffic())

    @property
    def global_stores(self) -> Traffic:
        return sum(self.stores.values(), Traffic())

    @property
    def global_atomics(self) -> Atomics:
        return sum(self.atomics.values(), Atomics())

    @property
    def sectors(self) -> int:
        """All 32-byte sectors of global memory the launch's loads, stores and atomics' lanes moved."""
        return self.global_loads.sectors + self.global_stores.sectors

    @property
    def bank_conflicts(self) -> int:
        return self.shared_loads.conflicts + self.shared_stores.conflicts

    def as_dict(self) -> dict:
        """Plain numbers (for a graded check's observations, or JSON)."""
        return {"kernel": self.kernel,
                "loads": {k: asdict(v) for k, v in self.loads.items()},
                "stores": {k: asdict(v) for k, v in self.stores.items()},
                "atomics": {k: asdict(v) for k, v in self.atomics.items()},
                "shared_loads": asdict(self.shared_loads), "shared_stores": asdict(self.shared_stores),
                "shared_atomics": asdict(self.shared_atomics)}

    def table(self) -> str:
        rows = [f"kernel {self.kernel} ({self.label})",
                f"  {'global':<22}{'requests':>10}{'sectors':>10}{'sect/req':>10}{'bytes used':>12}"]
        for kind, per_arg in (("load", self.loads), ("store", self.stores)):
            for name, t in per_arg.items():
                if t.requests:
                    rows.append(f"  {kind + ' ' + name:<22}{t.requests:>10}{t.sectors:>10}"
                                f"{t.sectors_per_request:>10.1f}{t.efficiency:>12.0%}")
        for name, a in self.atomics.items():
            if a.requests:
                rows.append(f"  atomic {name:<15}{a.requests:>10} requests, {a.lanes} lanes, "
                            f"{a.serialized} serialized steps")
        if self.shared_loads.requests or self.shared_stores.requests or self.shared_atomics.requests:
            rows.append(f"  {'shared':<22}{'requests':>10}{'wavefronts':>12}{'conflicts':>11}")
            for kind, s in (("load", self.shared_loads), ("store", self.shared_stores)):
                if s.requests:
                    rows.append(f"  {kind:<22}{s.requests:>10}{s.wavefronts:>12}{s.conflicts:>11}")
            a = self.shared_atomics
            if a.requests:
                rows.append(f"  {'atomic':<22}{a.requests:>10} requests, {a.lanes} lanes, "
                            f"{a.serialized} serialized steps")
        return "\n".join(rows)

    def __str__(self) -> str:
        return self.table()

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.table())


def begin(lib, dyn_shared: int) -> None:
    """Zero the warp counters of a counting library before a launch (after its arguments are watched)."""
    lib.lib.ck_warp_begin(ctypes.c_size_t(dyn_shared))


def end(lib, names, kernel: str) -> WarpCounts:
    """Stop counting and read what the launch did, argument by argument (``names`` in watch order)."""
    n = len(names)
    raw = (ctypes.c_ulonglong * (n * GLOBAL_FIELDS + SHARED_FIELDS))()
    layout = lib.lib.ck_warp_end(raw)
    if layout != GLOBAL_FIELDS * 100 + SHARED_FIELDS:
        raise RuntimeError(f"the emulator's warp counters have layout {layout}; this coursekit expects "
                           f"{GLOBAL_FIELDS * 100 + SHARED_FIELDS}: delete the cuda/ folder of the kernel cache")
    values = list(raw)
    loads, stores, atomics = {}, {}, {}
    for i, name in enumerate(names):
        g = values[i * GLOBAL_FIELDS:(i + 1) * GLOBAL_FIELDS]
        loads[name], stores[name], atomics[name] = Traffic(*g[0:4]), Traffic(*g[4:8]), Atomics(*g[8:11])
    s = values[n * GLOBAL_FIELDS:]
    return WarpCounts(kernel, loads, stores, atomics, SharedTraffic(*s[0:2]), SharedTraffic(*s[2:4]), Atomics(*s[4:7]))
