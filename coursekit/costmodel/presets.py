"""GPU presets for the cost model: every figure with where it came from.

A :class:`GPUSpec` holds the handful of numbers the cost model needs.  Each
figure of a built-in preset carries its source in ``figure_sources``, one of
four kinds (:data:`SOURCE_KINDS`):

* ``datasheet``: the vendor's specification (peaks, bandwidths, SM counts);
* ``published``: a measurement someone published (cited);
* ``calibration``: the project's own run of ``python -m coursekit calibrate``
  or of ``benchmarks/`` on a lent card (the file under ``benchmarks/results/``);
* ``guess``: no source; a reasoned estimate, said so.

``python -m coursekit gpu-models <name>`` prints them; docs/gpu-model.md has the
same table (:func:`source_table` writes it, and a test keeps the two equal).

A preset may also carry its **error band**: the spread of measured / modelled
over the project's model-vs-measured corpus (benchmarks/model_accuracy.py on a
real card).  Only a card the project measured has one; every other preset's
figures are *uncalibrated* and say so.

Calibrated presets live in ``$COURSEKIT_CONFIG_DIR`` or else
``$XDG_CONFIG_HOME/coursekit`` (``~/.config/coursekit``), as
``gpu_models/<name>.json``; select one like a built-in preset, by its name:
``COURSEKIT_FLAGS=gpu_model=<name>`` or ``config.change(gpu_model=<name>)``.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
SOURCE_KINDS = ("datasheet", "published", "calibration", "guess")


@dataclass(frozen=True)
class GPUSpec:
    """What the cost model knows about one GPU (SI units: FLOP/s, bytes/s, seconds)."""

    key: str                    # the name that selects it (gpu_model=<key>)
    name: str                   # the card, in words
    fp32_flops: float           # peak FLOP/s of the vector units by dtype (no tensor cores)
    fp64_flops: float
    fp16_flops: float
    memory_bandwidth: float     # device memory, bytes/s
    link_pageable: float        # host link, bytes/s, from/to ordinary (pageable) NumPy memory
    link_pinned: float          # host link, bytes/s, from/to page-locked memory
    link_latency: float         # seconds per copy, before the first byte
    launch_latency: float       # seconds the caller spends per kernel launch when launches queue up
    sm_count: int               # streaming multiprocessors
    threads_per_sm: int         # resident threads per SM (one wave = sm_count * threads_per_sm threads)
    alloc_no_pool: float        # seconds per device buffer over 512 KiB with cudaMalloc + cudaFree each time
    alloc_pool: float           # seconds per device buffer from a memory pool (CuPy's default)
    memory_pool: bool = True    # does the software of this preset use a pool?
    alloc_no_pool_small: float = 50e-6  # cudaMalloc + cudaFree of 2-512 KiB (up to 2 KiB: as cheap as a pool)
    memory_efficiency: float = 0.8   # achievable share of peak bandwidth (datasheet peaks are never reached)
    compute_efficiency: float = 0.75  # achievable share of peak FLOP/s
    sources: tuple = field(default=(), compare=False)
    measured: bool = False      # True for a calibrated preset: every figure measured on the card
    sync_latency: float = 0.0   # seconds a synchronisation adds once the last launch is queued (the round trip)
    tf32_tensor_flops: float = 0.0  # tensor-core peaks (dense; 0: no tensor cores for that precision)
    fp16_tensor_flops: float = 0.0
    fp64_tensor_flops: float = 0.0
    band: tuple = ()            # (low, high) of measured / modelled, HELD OUT on the corpus; () = uncalibrated
    band_large_copies: tuple = ()  # calls with a host copy of >= 32 MiB (fresh host pages): in-sample only
    band_source: str = ""
    band_in_sample: tuple = ()  # the corpus's own spread (fitted and judged on the same rows): not an error
    band_launches: int = 0      # most kernel launches per call in the corpus: the band was measured up to here
    band_many_launches: tuple = ()  # a wider band for calls of more launches, until such calls are measured
    figure_sources: tuple = field(default=(), compare=False)  # ((field, kind, where), ...)

    def peak_flops(self, dtype, tensor=False):
        """Peak FLOP/s for arithmetic in ``dtype``; ``tensor=True``: a matrix product's (tensor cores
        where cuBLAS uses them by default: float16 and float64; float32 stays on the vector units,
        as CuPy leaves TF32 off).  Integers and unknown dtypes use the float32 rate."""
        dtype = str(dtype)
        if tensor and dtype == "float16" and self.fp16_tensor_flops:
            return self.fp16_tensor_flops
        if tensor and dtype == "float64" and self.fp64_tensor_flops:
            return self.fp64_tensor_flops
        return {"float64": self.fp64_flops, "float16": self.fp16_flops}.get(dtype, self.fp32_flops)

    @property
    def resident_threads(self):
        return self.sm_count * self.threads_per_sm

    def source_of(self, name):
        """``(kind, where)`` of one figure, or ``("", "")`` when the preset does not say."""
        for figure, kind, where in self.figure_sources:
            if figure == name:
                return kind, where
        return ("calibration", self.sources[0]) if self.measured and self.sources else ("", "")

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def to_json(self):
        data = dataclasses.asdict(self)
        data["sources"] = list(self.sources)
        data["figure_sources"] = [list(s) for s in self.figure_sources]
        for name in ("band", "band_large_copies", "band_in_sample", "band_many_launches"):
            data[name] = list(getattr(self, name))
        return json.dumps(data, indent=2)

    @classmethod
    def from_json(cls, text, where="preset"):
        data = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown, missing = set(data) - names, {f.name for f in dataclasses.fields(cls)
                                               if f.default is dataclasses.MISSING and
                                               f.default_factory is dataclasses.MISSING} - set(data)
        if unknown or missing:
            raise ValueError(f"{where}: not a coursekit GPU preset (unknown fields {sorted(unknown)}, "
                             f"missing {sorted(missing)}); re-run `python -m coursekit calibrate`")
        data["sources"] = tuple(data.get("sources", ()))
        data["figure_sources"] = tuple(tuple(s) for s in data.get("figure_sources", ()))
        for name in ("band", "band_large_copies", "band_in_sample", "band_many_launches"):
            data[name] = tuple(data.get(name, ()))
        return cls(**data)


G, T, US = 1e9, 1e12, 1e-6
H100_RUN = "benchmarks/results/2026-11-24-h100-lent-model-accuracy.md (calibrate on the lent H100)"
H100_QUICK = "benchmarks/results/2026-11-24-intel-xeon-16c-gpu-h100-80gb-hbm3-quick.md"


def _figures(datasheet="", **other):
    """``figure_sources`` from one datasheet citation for the usual datasheet figures plus per-field
    ``(kind, where)`` pairs; every figure a preset uses gets a source."""
    sheet = ("fp32_flops", "fp64_flops", "fp16_flops", "memory_bandwidth", "sm_count", "threads_per_sm",
             "tf32_tensor_flops", "fp16_tensor_flops", "fp64_tensor_flops")
    rows = {name: ("datasheet", datasheet) for name in sheet}
    rows.update(_COMMON)
    rows.update(other)
    return tuple((name, kind, where) for name, (kind, where) in rows.items())


# Sources shared by several presets (figures no datasheet gives):
_LAUNCH_OLD = ("guess", "Theano's C launches on a Fermi/Kepler-era driver: an empty kernel launched and "
               "synchronised took about 5-7 µs then (CUDA Best Practices Guide; vendor forum measurements)")
_LAUNCH_CUPY = ("calibration", f"{H100_QUICK}: cupy.exp(x) queued on the device, 8.55 µs per call (the "
                "caller's cost of one CuPy elementwise launch, pool allocation included); this is host "
                "Python work, so the H100 host's figure stands in for other current cards")
_SYNC_CUPY = ("calibration", f"{H100_RUN}: an empty kernel launched and synchronised, 11.2 µs, minus a queued "
              f"launch (8.55 µs, {H100_QUICK}) = 2.65 µs")
_SYNC_OLD = ("guess", "the same round trip as today's (about 3 µs) plus the older driver's slower launch "
             "path: 5 µs")
_MALLOC = ("published", "cudaMalloc alone measured under 1 µs below 256 B, ~50 µs flat from 4 KB to 512 KB and "
           "rising above it on a CUDA 2-era card (cs.virginia.edu/~mwb7w/cuda_support/"
           "memory_management_overhead.html); cudaFree synchronises the device")
_POOL = ("guess", "a caching pool (CuPy's default) serves a repeated size with bookkeeping only, about 1 µs; "
         f"calibrate's 4.2 µs for cupy.empty ({H100_RUN}) is mostly building the array object, which a "
         "queued launch already pays")
_PAGEABLE = ("published", "pageable copies are staged through a pinned buffer, so they reach about half the "
             "pinned rate (CUDA C Best Practices Guide, 'Pinned Memory')")
_LATENCY = ("guess", "8-10 µs per copy before the first byte (driver call and DMA setup)")
_COMMON = dict(memory_efficiency=("guess", "80% of the datasheet bandwidth is what streaming kernels reach"),
               compute_efficiency=("guess", "75% of the datasheet FLOP/s is what large matrix products reach"),
               alloc_no_pool=_MALLOC, alloc_no_pool_small=_MALLOC, alloc_pool=_POOL, link_latency=_LATENCY,
               link_pageable=_PAGEABLE)

# The H100 bands, measured / modelled over the corpus of benchmarks/model_accuracy.py (2 runs x 10 rows on the
# lent H100; docs/gpu-model.md); `model_accuracy.py --held-out` re-derives them, tests/costmodel/test_model_accuracy.py checks.
# BAND, the one quoted, is HELD OUT (one workload left out at a time: 14 of 18 rows inside; the spread widened by
# the worst miss, W4's GEMM x1.22 above, the 16 MiB copy x1.05 below); IN_SAMPLE is the corpus's own spread
# (agreement by construction, not an error); LARGE has one workload, so it is in-sample only.  Every corpus call
# is one kernel launch: more launches get MANY_LAUNCHES until measured, topped by the one many-launch call ever
# measured (lesson 5's step as written: 1.104 ms vs 317 µs modelled, x3.5; H100_QUICK's W3 row).
H100_BAND = (0.76, 1.79)
H100_BAND_IN_SAMPLE = (0.79, 1.46)
H100_BAND_LARGE = (2.04, 2.41)
H100_BAND_LAUNCHES = 1
H100_BAND_MANY_LAUNCHES = (0.76, 3.5)

PRESETS = {
    "gtx580": GPUSpec(
        "gtx580", "GeForce GTX 580 (Fermi GF110, 2010; the tutorial's card)",
        fp32_flops=1581.1 * G,          # 512 cores x 2 FLOP x 1544 MHz
        fp64_flops=197.6 * G,           # GeForce Fermi: 1/8 of float32
        fp16_flops=1581.1 * G,          # no float16 arithmetic: converted and computed in float32
        memory_bandwidth=192.4 * G,     # 384-bit GDDR5 at 4008 MT/s
        link_pageable=3.0 * G, link_pinned=6.0 * G, link_latency=10 * US,  # PCIe 2.0 x16: 8 GB/s raw
        launch_latency=7 * US, sync_latency=5 * US, sm_count=16, threads_per_sm=1536,  # compute capability 2.0
        alloc_no_pool=200 * US, alloc_pool=1 * US,
        memory_pool=False,  # Theano 0.6 (2012) called cudaMalloc for each new buffer; CNMeM came in 2015
        sources=("nvidia.com/object/product-geforce-gtx-580-us.html (cores, clocks, 192.4 GB/s)",
                 "CUDA C Programming Guide, compute capability 2.0 (1536 threads/SM; FP64 1/8 on GeForce)",
                 "PCIe 2.0 x16: 8 GB/s per direction raw; ~6 GB/s pinned in bandwidthTest"),
        figure_sources=_figures(
            "nvidia.com GTX 580 specifications (512 cores at 1544 MHz, 192.4 GB/s); CUDA C Programming Guide, "
            "compute capability 2.0 (1536 threads/SM, FP64 1/8 on GeForce, no tensor cores)",
            link_pinned=("published", "PCIe 2.0 x16 (8 GB/s raw per direction): ~6 GB/s in CUDA's bandwidthTest"),
            launch_latency=_LAUNCH_OLD, sync_latency=_SYNC_OLD,
            alloc_no_pool=("guess", "the published 4 KB-512 KB plateau (50 µs) and its rise above, for the "
                           "tutorial's 0.9 MB buffers: 200 µs"))),
    "gtx-titan": GPUSpec(
        "gtx-titan", "GeForce GTX TITAN (Kepler GK110, 2013; the tutorial's logistic-regression profile)",
        fp32_flops=4.5 * T, fp64_flops=1.3 * T, fp16_flops=4.5 * T, memory_bandwidth=288.4 * G,
        link_pageable=6.0 * G, link_pinned=11.0 * G, link_latency=10 * US,  # PCIe 3.0 x16: 15.8 GB/s raw
        launch_latency=5 * US, sync_latency=5 * US, sm_count=14, threads_per_sm=2048,
        alloc_no_pool=150 * US, alloc_pool=1 * US, memory_pool=False,
        sources=("nvidia.com GeForce GTX TITAN specifications: 2688 cores, 4.5 TFLOPS single, 1.3 TFLOPS "
                 "double (DP mode), 288.4 GB/s", "CUDA C Programming Guide, compute capability 3.5"),
        figure_sources=_figures(
            "nvidia.com GTX TITAN specifications (2688 cores, 4.5 TF single, 1.3 TF double in DP mode, "
            "288.4 GB/s); compute capability 3.5 (2048 threads/SM); no tensor cores",
            link_pinned=("published", "PCIe 3.0 x16 (15.8 GB/s raw): 10-12 GB/s pinned in bandwidthTest"),
            launch_latency=_LAUNCH_OLD, sync_latency=_SYNC_OLD,
            alloc_no_pool=("guess", "between the published plateau and the GTX 580 guess: 150 µs"))),
    "k40": GPUSpec(
        "k40", "Tesla K40 (Kepler GK110B, 2013; the slides)",
        fp32_flops=4.29 * T, fp64_flops=1.43 * T, fp16_flops=4.29 * T,  # base clocks (boost: 5.0 / 1.66)
        memory_bandwidth=288 * G, link_pageable=6.0 * G, link_pinned=11.0 * G, link_latency=10 * US,
        launch_latency=5 * US, sync_latency=5 * US, sm_count=15, threads_per_sm=2048,
        alloc_no_pool=150 * US, alloc_pool=1 * US, memory_pool=True,
        sources=("the slides' table, from nvidia.com/object/tesla-servers.html: 2880 cores, 4.29 TF single / "
                 "1.43 TF double at base clocks, 288 GB/s (ECC off)",),
        figure_sources=_figures(
            "the slides' table, from nvidia.com/object/tesla-servers.html (2880 cores, 4.29 TF single / 1.43 TF "
            "double at base clocks, 288 GB/s with ECC off); no tensor cores",
            link_pinned=("published", "PCIe 3.0 x16: 10-12 GB/s pinned in bandwidthTest"),
            launch_latency=_LAUNCH_OLD, sync_latency=_SYNC_OLD,
            alloc_no_pool=("guess", "as the GTX TITAN: 150 µs"))),
    "k80": GPUSpec(
        "k80", "Tesla K80, one of its two GK210 GPUs (2014; the slides)",
        fp32_flops=2.8 * T, fp64_flops=0.935 * T, fp16_flops=2.8 * T,  # half the board's 5.6 / 1.87 TF (base)
        memory_bandwidth=240 * G, link_pageable=6.0 * G, link_pinned=10.0 * G, link_latency=10 * US,
        launch_latency=5 * US, sync_latency=5 * US, sm_count=13, threads_per_sm=2048,
        alloc_no_pool=150 * US, alloc_pool=1 * US, memory_pool=True,
        sources=("the slides' table, from nvidia.com/object/tesla-servers.html: per board 4992 cores, 5.6 TF "
                 "single / 1.87 TF double at base clocks, 480 GB/s (240 GB/s per GPU); a program sees one GPU",
                 "two GPUs share one PCIe 3.0 x16 link through a switch"),
        figure_sources=_figures(
            "the slides' table (per board 5.6 TF single / 1.87 TF double at base clocks, 480 GB/s); one of the "
            "board's two GPUs gets half; no tensor cores",
            link_pinned=("guess", "the two GPUs share one PCIe 3.0 x16 link: a little under the K40's 11 GB/s"),
            launch_latency=_LAUNCH_OLD, sync_latency=_SYNC_OLD,
            alloc_no_pool=("guess", "as the GTX TITAN: 150 µs"))),
    "t4": GPUSpec(
        "t4", "Tesla T4 (Turing TU104, 2018; what free notebook services lend)",
        fp32_flops=8.1 * T, fp64_flops=0.253 * T, fp16_flops=16.2 * T,  # FP64 1/32; FP16 2x on the vector units
        fp16_tensor_flops=65 * T,
        memory_bandwidth=320 * G, link_pageable=6.0 * G, link_pinned=12.0 * G, link_latency=8 * US,
        launch_latency=8.55 * US, sync_latency=2.65 * US, sm_count=40, threads_per_sm=1024,  # cc 7.5
        alloc_no_pool=100 * US, alloc_pool=1 * US, memory_pool=True,
        sources=("NVIDIA T4 datasheet: 2560 cores, 8.1 TFLOPS single, 65 TFLOPS mixed precision (tensor "
                 "cores), 320 GB/s GDDR6, PCIe 3.0 x16", "CUDA C Programming Guide, compute capability 7.5"),
        figure_sources=_figures(
            "NVIDIA T4 datasheet (2560 cores, 8.1 TF single, 65 TF FP16 tensor, 320 GB/s GDDR6); compute "
            "capability 7.5 (1024 threads/SM, FP64 1/32, no TF32 or FP64 tensor cores)",
            link_pinned=("published", "PCIe 3.0 x16: 11-12 GB/s pinned in bandwidthTest"),
            launch_latency=_LAUNCH_CUPY, sync_latency=_SYNC_CUPY,
            alloc_no_pool=("guess", "between the published plateau and the measured H100 4 MiB figure"))),
    "a100": GPUSpec(
        "a100", "A100 SXM4 40 GB (Ampere GA100, 2020)",
        fp32_flops=19.5 * T, fp64_flops=9.7 * T, fp16_flops=78 * T,     # FP64 1/2 of FP32
        tf32_tensor_flops=156 * T, fp16_tensor_flops=312 * T, fp64_tensor_flops=19.5 * T,
        memory_bandwidth=1555 * G, link_pageable=9.1 * G, link_pinned=25.0 * G, link_latency=8 * US,
        launch_latency=8.55 * US, sync_latency=2.65 * US, sm_count=108, threads_per_sm=2048,  # PCIe 4.0 x16
        alloc_no_pool=100 * US, alloc_pool=1 * US, memory_pool=True,
        sources=("NVIDIA A100 datasheet and Ampere architecture whitepaper: 108 SMs, 19.5 TF FP32, 9.7 TF FP64, "
                 "78 TF FP16 (no tensor cores); tensor cores 156 TF TF32, 312 TF FP16, 19.5 TF FP64 (dense); "
                 "1555 GB/s HBM2, PCIe 4.0",),
        figure_sources=_figures(
            "NVIDIA A100 datasheet and Ampere whitepaper (108 SMs x 2048 threads; 19.5 / 9.7 / 78 TF FP32 / FP64 "
            "/ FP16 vector; tensor 156 TF32, 312 FP16, 19.5 FP64, dense; 1555 GB/s HBM2)",
            link_pinned=("published", "PCIe 4.0 x16 (31.5 GB/s raw): ~25 GB/s pinned in bandwidthTest"),
            link_pageable=("calibration", f"the H100 host's measured pageable rate ({H100_RUN}): staging "
                           "through host memory, not the link, limits pageable copies, so PCIe 4.0 is no slower"),
            launch_latency=_LAUNCH_CUPY, sync_latency=_SYNC_CUPY,
            alloc_no_pool=("guess", "as the T4"))),
    "h100": GPUSpec(
        "h100", "H100 SXM5 80 GB (Hopper GH100, 2022)",
        fp32_flops=67 * T, fp64_flops=34 * T, fp16_flops=134 * T,       # FP64 1/2 of FP32
        tf32_tensor_flops=494.7 * T, fp16_tensor_flops=989.4 * T, fp64_tensor_flops=67 * T,
        memory_bandwidth=3350 * G, memory_efficiency=2978 / 3350, compute_efficiency=51.87 / 67,
        link_pageable=9.1 * G, link_pinned=54.5 * G, link_latency=15 * US,  # PCIe 5.0 x16: 63 GB/s raw
        launch_latency=8.55 * US, sync_latency=2.65 * US, sm_count=132, threads_per_sm=2048,
        alloc_no_pool=90.1 * US, alloc_no_pool_small=4.3 * US, alloc_pool=1 * US, memory_pool=True,
        band=H100_BAND, band_large_copies=H100_BAND_LARGE, band_in_sample=H100_BAND_IN_SAMPLE,
        band_launches=H100_BAND_LAUNCHES, band_many_launches=H100_BAND_MANY_LAUNCHES,
        band_source="benchmarks/results/2026-11-24-h100-lent-model-accuracy*.json: 2 runs x 10 rows on the "
                    "lent H100, re-modelled with this preset; held out by leaving one workload out "
                    "(benchmarks/model_accuracy.py --held-out)",
        sources=("NVIDIA H100 datasheet and Hopper whitepaper: 132 SMs, 67 TF FP32, 34 TF FP64, 134 TF FP16; "
                 "tensor cores 494.7 TF TF32, 989.4 TF FP16, 67 TF FP64 (dense); 3.35 TB/s HBM3, PCIe 5.0",
                 f"measured on the lent H100 (2026-11-24): {H100_RUN}; {H100_QUICK}"),
        figure_sources=_figures(
            "NVIDIA H100 SXM5 datasheet and Hopper whitepaper (132 SMs x 2048 threads; 67 / 34 / 134 TF FP32 / "
            "FP64 / FP16 vector; tensor 494.7 TF32, 989.4 FP16, 67 FP64, dense; 3.35 TB/s HBM3)",
            memory_efficiency=("calibration", f"{H100_RUN}: 2978 GB/s measured = 89% of 3350"),
            compute_efficiency=("calibration", f"{H100_RUN}: float32 GEMM 51.87 TF measured = 77% of 67"),
            link_pageable=("calibration", f"{H100_RUN}: 9.1 GB/s pageable (64 KiB-64 MiB fit)"),
            link_pinned=("calibration", f"{H100_RUN}: 54.5 GB/s pinned"),
            link_latency=("calibration", f"{H100_RUN}: 15.0 µs per copy (fit intercept)"),
            launch_latency=_LAUNCH_CUPY, sync_latency=_SYNC_CUPY,
            alloc_no_pool=("calibration", f"{H100_RUN}: cudaMalloc+cudaFree of 4 MiB, 90.1 µs"),
            alloc_no_pool_small=("calibration", f"{H100_RUN}: cudaMalloc+cudaFree of 256 KiB, 4.3 µs"))),
}

FIGURES = ("fp32_flops", "fp64_flops", "fp16_flops", "tf32_tensor_flops", "fp16_tensor_flops", "fp64_tensor_flops",
           "memory_bandwidth", "memory_efficiency", "compute_efficiency", "link_pageable", "link_pinned",
           "link_latency", "launch_latency", "sync_latency", "alloc_no_pool", "alloc_no_pool_small", "alloc_pool")


def _figure_text(spec, name):
    value = getattr(spec, name)
    if name.endswith("flops"):
        return f"{value / T:.4g} TF" if value else "none"
    if name in ("memory_bandwidth", "link_pageable", "link_pinned"):
        return f"{value / G:g} GB/s"
    if name.endswith("efficiency"):
        return f"{value:.0%}"
    return f"{value / US:g} µs"


def source_table(keys=None):
    """A Markdown table: every figure of the presets ``keys`` (default: all) with its kind of source."""
    keys = list(keys or PRESETS)
    lines = ["| figure | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    for name in FIGURES:
        cells = []
        for key in keys:
            spec = PRESETS[key]
            kind, _ = spec.source_of(name)
            cells.append(f"{_figure_text(spec, name)} ({kind})" if getattr(spec, name) or kind else "none")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _percent(band):
    low, high = (round(100 * (b - 1)) for b in band)
    return f"±{high}%" if low == -high else f"{low:+d}%/{high:+d}%"


def band_text(spec, large_copies=False, launches=None):
    """How far a real run may be from this preset's figure: '-24%/+79%' (held out), '+104%/+141% in-sample'
    (a copy of 32 MiB or more: one workload), '-24%/+250% at 13 launches, unmeasured' (more kernel launches than
    any measured call: the wider band until such calls are measured), or 'uncalibrated'."""
    if not spec.band:
        return "uncalibrated"
    if large_copies and spec.band_large_copies:
        return f"{_percent(spec.band_large_copies)} in-sample"
    if launches is not None and spec.band_many_launches and launches > spec.band_launches:
        return f"{_percent(spec.band_many_launches)} at {launches} launches, unmeasured"
    return _percent(spec.band)


DEFAULT = "t4"  # see coursekit.config: the card a student without a GPU is most likely to be lent


def preset_name(card):
    """The key a calibrated preset of a card is saved under: 'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'."""
    key = re.sub(r"[^a-z0-9]+", "-", card.lower()).strip("-") or "gpu"
    return key if key not in PRESETS else f"{key}-calibrated"


def config_dir():
    """Where calibrated presets are saved: $COURSEKIT_CONFIG_DIR, else $XDG_CONFIG_HOME/coursekit."""
    explicit = os.environ.get("COURSEKIT_CONFIG_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "coursekit"


def _saved_path(key):
    return config_dir() / "gpu_models" / f"{key}.json"


def saved_names():
    folder = config_dir() / "gpu_models"
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def available():
    """Every name ``gpu_model`` accepts: the built-in presets, then the calibrated ones."""
    return list(PRESETS) + [n for n in saved_names() if n not in PRESETS]


def get(key):
    """The preset called ``key`` (built-in first, then a calibrated one saved under that name)."""
    key = str(key).strip().lower()
    if key in PRESETS:
        return PRESETS[key]
    path = _saved_path(key)
    if NAME_RE.match(key) and path.is_file():
        return GPUSpec.from_json(path.read_text(), where=str(path))
    raise ValueError(f"gpu_model={key!r} is not a known GPU preset; choose one of {', '.join(available())} "
                     "(or calibrate this machine's GPU with `python -m coursekit calibrate`)")


def save(spec):
    """Write a (calibrated) preset where :func:`get` finds it; returns the path."""
    if not NAME_RE.match(spec.key) or spec.key in PRESETS:
        raise ValueError(f"cannot save a preset as {spec.key!r}: use lowercase letters, digits, '-', '_' or '.', "
                         f"and not a built-in name ({', '.join(PRESETS)})")
    path = _saved_path(spec.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec.to_json())
    return path
