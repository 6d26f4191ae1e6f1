"""A cost model of a GPU: what a node, a call, a loop *would* take on a given card.

Most students have no NVIDIA GPU, and the simulated GPU's timings are CPU
timings.  This model answers the question the lessons ask — what would a GPU
do here? — from two things that do not depend on the machine running the
notebook: the work each op declares (:mod:`coursekit.work`: bytes, FLOPs,
launches) and a card's figures (:mod:`coursekit.costmodel.presets`).

How a node's time is modelled, and why so simply:

* a **kernel** is a roofline: ``max(bytes / bandwidth, FLOPs / peak)``, with
  achievable (not datasheet) bandwidth and FLOP/s, stretched by **wave
  quantisation** (the GPU runs ``SMs x resident threads`` at once; a
  partly filled last wave takes as long as a full one, so 230,400 threads on
  an H100, under one wave, take as long as a whole wave) and preceded by a
  **launch latency**; a matrix product computes output tiles, one per SM at
  a time, and cuBLAS picks the tile size that suits the shape: the model
  takes the best of 128, 64 and 32-wide tiles (optimistic: smaller tiles
  reuse less data, which the model ignores);
* a **transfer** is ``link latency + bytes / link bandwidth`` (pageable by
  default: NumPy arrays are not page-locked);
* an **allocation** (a node that needs a fresh device buffer each call) costs
  about 1 µs from a memory pool; without one, ``cudaMalloc + cudaFree``,
  whose cost depends on the size (tiny buffers are cheap, over 512 KiB dear);
* a view (dimshuffle, reshape, basic indexing) costs nothing;
* a **launch** costs the caller ``launch_latency`` (what queuing one CuPy
  kernel costs on the host), a **synchronisation** ``sync_latency`` more;
  a profile synchronises after each op (as Theano's ``CUDA_LAUNCH_BLOCKING=1``
  profiles did), so a node's modelled time is its parts one after another.
  A whole call (:mod:`coursekit.costmodel.call`) overlaps them where CUDA does:
  a call that ends with a copy to the host waits for its kernels, one that
  leaves its results on the device does not, and in a loop the host's next
  call then runs while the GPU works.

A modelled figure is a prediction and is always labelled ``modelled (<card>)``.
A call's modelled time is its *measured* host overhead (the Python dispatch
that really ran) plus the modelled device work; lessons can show the two
separately, and the device part is deterministic, so machine load cannot
change a lesson's conclusion.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..config import config
from ..work import Work, work_of
from ..devices import current
from . import presets


@dataclass(frozen=True)
class NodeCost:
    """Modelled seconds of one application of one node (parts add up to ``total``)."""

    work: Work
    launch: float = 0.0
    kernel: float = 0.0
    transfer: float = 0.0
    alloc: float = 0.0
    waves: int = 0
    bound: str = ""        # "memory", "compute", "link", "launch" or "" (free)

    @property
    def total(self):
        return self.launch + self.kernel + self.transfer + self.alloc


class CostModel:
    """Turns work counts into seconds for one GPU preset.

    ``memory_pool`` overrides the preset's (``None``: the preset's own);
    ``pinned=True`` models page-locked host buffers for transfers.
    """

    def __init__(self, spec, memory_pool=None, pinned=False):
        self.spec = spec if isinstance(spec, presets.GPUSpec) else presets.get(spec)
        self.memory_pool = self.spec.memory_pool if memory_pool is None else bool(memory_pool)
        self.pinned = pinned
        self._cache = {}

    @property
    def label(self):
        """``modelled (gtx580)``: the words every modelled figure carries (the preset, calibrated or not, pool)."""
        pool = "" if self.memory_pool == self.spec.memory_pool else (", memory pool" if self.memory_pool
                                                                      else ", no memory pool")
        kind = "calibrated " if self.spec.measured else ""
        return f"modelled ({kind}{self.spec.key}{pool})"

    def __repr__(self):
        return f"<CostModel {self.label}: {self.spec.name}>"

    # ------------------------------------------------------------ primitives
    def waves(self, work):
        """(waves, fill): how many full-GPU waves the kernel needs and how full they are on average."""
        s = self.spec
        if work.matrix:
            return max((_wave_fill(math.ceil(work.matrix[0] / edge) * math.ceil(work.matrix[1] / edge),
                                   s.sm_count) for edge in GEMM_TILES), key=lambda wf: wf[1])
        if work.threads:
            return _wave_fill(work.threads, s.resident_threads)
        return 0, 1.0

    def kernel_time(self, work):
        """Roofline time of the kernels in ``work`` (no launch latency), and what bounds it."""
        s = self.spec
        memory = work.bytes / (s.memory_bandwidth * s.memory_efficiency)
        compute = work.flops / (s.peak_flops(work.dtype, tensor=bool(work.matrix)) * s.compute_efficiency)
        _, fill = self.waves(work)
        return max(memory, compute) / fill, ("compute" if compute > memory else "memory")

    def counted_kernel_time(self, counts, flops=0.0, dtype="float32", threads=0):
        """Roofline time of one launch priced by what its warps *moved*, from the CUDA emulator's warp
        counts (``SourceModule(..., counts=True)``, then ``kernel.counts``): every 32-byte sector a warp
        request touched is memory traffic, so an uncoalesced kernel that uses one float per sector pays
        for eight.  Caches are not modelled (a sector read by two requests is paid twice): an upper bound
        for kernels that re-read the same data, close for kernels that stream it.  Returns
        ``(seconds, bound, work)``."""
        loads = sum(t.sectors for t in counts.loads.values()) * SECTOR_BYTES
        stores = sum(t.sectors for t in counts.stores.values()) * SECTOR_BYTES
        work = Work(flops=float(flops), bytes_read=loads, bytes_written=stores, launches=1,
                    threads=int(threads), dtype=str(dtype))
        seconds, bound = self.kernel_time(work)
        return seconds, bound, work

    def transfer_time(self, nbytes, pinned=None):
        """One copy over the host link (either direction: PCIe is symmetric)."""
        if not nbytes:
            return 0.0
        s = self.spec
        pinned = self.pinned if pinned is None else pinned
        return s.link_latency + nbytes / (s.link_pinned if pinned else s.link_pageable)

    def alloc_time(self, buffers=1, nbytes=None):
        """``buffers`` fresh device buffers of ``nbytes`` each (None: a large buffer)."""
        s = self.spec
        if self.memory_pool or (nbytes is not None and nbytes <= TINY_BUFFER):
            return buffers * s.alloc_pool
        return buffers * (s.alloc_no_pool_small if nbytes is not None and nbytes <= SMALL_BUFFER
                          else s.alloc_no_pool)

    def launch_time(self, launches=1):
        return launches * self.spec.launch_latency

    def sync_time(self, syncs=1):
        """The round trip of ``syncs`` synchronisations (waiting for the queued work is not included)."""
        return syncs * self.spec.sync_latency

    @property
    def band_text(self):
        """The preset's error band from the measured corpus ('-20%/+26%'), or 'uncalibrated'."""
        return presets.band_text(self.spec)

    def cost(self, work, allocations=0):
        """A :class:`NodeCost` for ``work`` plus ``allocations`` fresh device buffers."""
        transfer = self.transfer_time(work.h2d_bytes) + self.transfer_time(work.d2h_bytes)
        kernel, bound = self.kernel_time(work) if work.launches else (0.0, "")
        launch = self.launch_time(work.launches)
        if transfer:
            bound = "link"
        elif work.launches and launch > kernel:
            bound = "launch"
        size = work.h2d_bytes or (work.bytes_written // allocations if allocations else 0)
        return NodeCost(work, launch=launch, kernel=kernel, transfer=transfer,
                        alloc=self.alloc_time(allocations, size), waves=self.waves(work)[0], bound=bound)

    # ----------------------------------------------------------------- nodes
    def node_cost(self, node, shapes, dtypes, allocates=True):
        """Modelled cost of one application of ``node`` with inputs of these shapes/dtypes.

        ``allocates``: whether the node gets a fresh device buffer for its
        outputs on each call (False when the buffer is kept and reused, e.g.
        ``Out(borrow=True)``).  Cached per (op, shapes, dtypes, allocates):
        profiling asks for the same nodes again and again.
        """
        key = (node.op, tuple(map(_shape_key, shapes)), tuple(map(str, dtypes)), bool(allocates),
               tuple(str(getattr(o.type, "dtype", "")) for o in node.outputs))
        try:
            return self._cache[key]
        except (KeyError, TypeError):
            pass
        work = work_of(node, shapes, dtypes)
        buffers = 0
        if allocates and (work.launches or work.h2d_bytes):
            # a kernel's outputs, or the device copy of a host array; an in-place output reuses its input
            buffers = len(node.outputs) - len(getattr(node.op, "destroy_map", None) or {})
        cost = self.cost(work, allocations=buffers)
        try:
            self._cache[key] = cost
        except TypeError:  # an op with unhashable props: no caching
            pass
        return cost


TINY_BUFFER, SMALL_BUFFER = 2 * 1024, 512 * 1024  # cudaMalloc's cost steps (see presets._MALLOC)
SECTOR_BYTES = 32  # the unit a warp's global-memory request is served in (coursekit.cuda.warp_counts)
GEMM_TILES = (128, 64, 32)  # output tile edges of cuBLAS-style matrix-product kernels


def _wave_fill(units, per_wave):
    if units <= 0:
        return 0, 1.0
    waves = math.ceil(units / per_wave)
    return waves, units / (waves * per_wave)


def _shape_key(shape):
    return tuple(shape) if shape is not None else None


# ------------------------------------------------------------------ choosing
_MODELS = {}


def model(name=None, memory_pool=None, pinned=False):
    """The :class:`CostModel` for preset ``name`` (a name or a GPUSpec; default: ``config.gpu_model``).

    Models are shared, so their caches are too.
    """
    spec = name if isinstance(name, presets.GPUSpec) else str(name or config.gpu_model).lower()
    key = (spec, memory_pool, pinned)
    if key not in _MODELS:
        _MODELS[key] = CostModel(spec if isinstance(spec, presets.GPUSpec) else presets.get(spec),
                                 memory_pool=memory_pool, pinned=pinned)
    return _MODELS[key]


def model_for(device=None):
    """The cost model of ``device`` (default: the current device).

    A device object may carry its own model (``device.model``: a
    :class:`CostModel`, a preset or a preset's name).  A real GPU for which
    ``python -m coursekit calibrate`` saved a preset uses that one, so that
    on a calibrated card the modelled figures describe that card.
    Otherwise: the preset named by ``config.gpu_model``.
    """
    if device is None:
        device = current()
    attached = getattr(device, "model", None)
    if attached is not None:
        return attached if isinstance(attached, CostModel) else model(attached)
    card = getattr(device, "card", None)
    if card and not device.simulated and presets.preset_name(card) in presets.saved_names():
        return model(presets.get(presets.preset_name(card)))
    return model()


def forget_saved():
    """Drop cached models (after calibrating, a saved preset's file may have changed)."""
    _MODELS.clear()
