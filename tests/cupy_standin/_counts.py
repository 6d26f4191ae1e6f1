"""What the stand-in counts: the device work a real GPU would be asked to do, never its time.

One ``Counts`` object lives for the process; ``counting()`` gives the
difference over a block, so a test reads "this call launched 1 kernel".
"""
from __future__ import annotations

import contextlib
import dataclasses


@dataclasses.dataclass
class Counts:
    """Device events since the counter started (see the package docstring for what each one means)."""

    launches: int = 0          # kernels queued: CuPy calls that compute, ElementwiseKernel/RawKernel launches
    graph_launches: int = 0    # Graph.launch(): one launch that replays a captured call
    syncs: int = 0             # the host waited for the device (synchronize, a D2H copy, float(x) of a device value)
    h2d: int = 0               # host -> device copies
    h2d_bytes: int = 0
    d2h: int = 0               # device -> host copies
    d2h_bytes: int = 0
    allocations: int = 0       # new device buffers (memory-pool allocations)
    compiles: int = 0          # kernels compiled (through coursekit's CUDA emulator, cached by source)
    kernels: list = dataclasses.field(default_factory=list)  # what each launch was: "exp", "dot", "raw:k" ...

    def since(self, mark: "Counts") -> "Counts":
        """What happened after ``mark`` (a ``mark()`` of this object)."""
        numbers = {f.name: getattr(self, f.name) - getattr(mark, f.name)
                   for f in dataclasses.fields(self) if f.name != "kernels"}
        return Counts(**numbers, kernels=self.kernels[mark.kernels:])

    def mark(self) -> "Counts":
        """The numbers now, with ``kernels`` holding only how many there were (copying the list would grow)."""
        return dataclasses.replace(self, kernels=len(self.kernels))

    def device_work(self) -> int:
        """Launches, syncs, copies and allocations together: 0 means the device was never touched."""
        return self.launches + self.graph_launches + self.syncs + self.h2d + self.d2h + self.allocations

    def launch(self, kind):
        self.launches += 1
        self.kernels.append(kind)


TOTAL = Counts()


class _Diff:
    """Filled in when the ``counting()`` block ends (and readable inside it as the running difference)."""

    def __init__(self):
        self._start = TOTAL.mark()
        self._final = None

    def __getattr__(self, name):
        counts = self._final if self._final is not None else TOTAL.since(self._start)
        return getattr(counts, name)

    def __repr__(self):
        return repr(self._final if self._final is not None else TOTAL.since(self._start))


@contextlib.contextmanager
def counting():
    """``with counting() as c: f()`` then ``c.launches``, ``c.syncs``, ``c.h2d_bytes`` ..."""
    diff = _Diff()
    try:
        yield diff
    finally:
        diff._final = TOTAL.since(diff._start)
