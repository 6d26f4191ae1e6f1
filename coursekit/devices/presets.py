"""GPU presets for the cost model: datasheet figures, with their sources.

A :class:`GPUSpec` holds the handful of numbers the cost model needs.  The
built-in presets take peak throughput, memory bandwidth and SM counts from
the vendor's datasheets (cited next to each preset).  Some numbers are not on
any datasheet — how fast pageable copies really go, how long a kernel launch
takes, what ``cudaMalloc`` costs — and those are *estimates*, marked as such,
with where they come from.  ``python -m coursekit calibrate`` measures all of
them on a real card and saves a preset whose every figure is a measurement.

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


@dataclass(frozen=True)
class GPUSpec:
    """What the cost model knows about one GPU (SI units: FLOP/s, bytes/s, seconds)."""

    key: str                    # the name that selects it (gpu_model=<key>)
    name: str                   # the card, in words
    fp32_flops: float           # peak FLOP/s by dtype (no tensor cores: cuBLAS leaves them off for float32)
    fp64_flops: float
    fp16_flops: float
    memory_bandwidth: float     # device memory, bytes/s
    link_pageable: float        # host link, bytes/s, from/to ordinary (pageable) NumPy memory
    link_pinned: float          # host link, bytes/s, from/to page-locked memory
    link_latency: float         # seconds per copy, before the first byte
    launch_latency: float       # seconds per kernel launch (launch to completion of an empty kernel)
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

    def peak_flops(self, dtype):
        """Peak FLOP/s for arithmetic in ``dtype`` (integers and unknown dtypes use the float32 rate)."""
        return {"float64": self.fp64_flops, "float16": self.fp16_flops}.get(str(dtype), self.fp32_flops)

    @property
    def resident_threads(self):
        return self.sm_count * self.threads_per_sm

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def to_json(self):
        data = dataclasses.asdict(self)
        data["sources"] = list(self.sources)
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
        return cls(**data)


G, T, US = 1e9, 1e12, 1e-6

# Estimates shared by several presets (not on any datasheet):
_LAUNCH = ("kernel launch latency: estimate; an empty kernel launched and synchronised takes about 5-7 µs on "
           "Fermi/Kepler-era drivers and 2-4 µs on current ones (CUDA Best Practices Guide and vendor forum "
           "measurements); calibrate measures it")
_MALLOC = ("cudaMalloc+cudaFree per buffer: estimate; cudaMalloc alone measured under 1 µs below 256 B, ~50 µs "
           "flat from 4 KB to 512 KB and rising above it on a CUDA 2-era card (cs.virginia.edu/~mwb7w/"
           "cuda_support/memory_management_overhead.html), and cudaFree synchronises the device; a caching pool "
           "(CuPy's default) serves a repeated size in about 1 µs")
_PAGEABLE = ("pageable copies: estimate; the driver stages them through a pinned buffer, so they reach about half "
             "the pinned rate (CUDA C Best Practices Guide, 'Pinned Memory')")

PRESETS = {
    "gtx580": GPUSpec(
        "gtx580", "GeForce GTX 580 (Fermi GF110, 2010; the tutorial's card)",
        fp32_flops=1581.1 * G,          # 512 cores x 2 FLOP x 1544 MHz
        fp64_flops=197.6 * G,           # GeForce Fermi: 1/8 of float32
        fp16_flops=1581.1 * G,          # no float16 arithmetic: converted and computed in float32
        memory_bandwidth=192.4 * G,     # 384-bit GDDR5 at 4008 MT/s
        link_pageable=3.0 * G, link_pinned=6.0 * G, link_latency=10 * US,  # PCIe 2.0 x16: 8 GB/s raw
        launch_latency=7 * US, sm_count=16, threads_per_sm=1536,            # compute capability 2.0
        alloc_no_pool=200 * US, alloc_pool=1 * US,
        memory_pool=False,  # Theano 0.6 (2012) called cudaMalloc for each new buffer; CNMeM came in 2015
        sources=("nvidia.com/object/product-geforce-gtx-580-us.html (cores, clocks, 192.4 GB/s)",
                 "CUDA C Programming Guide, compute capability 2.0 (1536 threads/SM; FP64 1/8 on GeForce)",
                 "PCIe 2.0 x16: 8 GB/s per direction raw; ~6 GB/s pinned in bandwidthTest", _PAGEABLE, _LAUNCH,
                 _MALLOC)),
    "gtx-titan": GPUSpec(
        "gtx-titan", "GeForce GTX TITAN (Kepler GK110, 2013; the tutorial's logistic-regression profile)",
        fp32_flops=4.5 * T, fp64_flops=1.3 * T, fp16_flops=4.5 * T, memory_bandwidth=288.4 * G,
        link_pageable=6.0 * G, link_pinned=11.0 * G, link_latency=10 * US,  # PCIe 3.0 x16: 15.8 GB/s raw
        launch_latency=5 * US, sm_count=14, threads_per_sm=2048,
        alloc_no_pool=150 * US, alloc_pool=1 * US, memory_pool=False,
        sources=("nvidia.com GeForce GTX TITAN specifications: 2688 cores, 4.5 TFLOPS single, 1.3 TFLOPS "
                 "double (DP mode), 288.4 GB/s", "CUDA C Programming Guide, compute capability 3.5",
                 _PAGEABLE, _LAUNCH, _MALLOC)),
    "k40": GPUSpec(
        "k40", "Tesla K40 (Kepler GK110B, 2013; the slides)",
        fp32_flops=4.29 * T, fp64_flops=1.43 * T, fp16_flops=4.29 * T,  # base clocks (boost: 5.0 / 1.66)
        memory_bandwidth=288 * G, link_pageable=6.0 * G, link_pinned=11.0 * G, link_latency=10 * US,
        launch_latency=5 * US, sm_count=15, threads_per_sm=2048,
        alloc_no_pool=150 * US, alloc_pool=1 * US, memory_pool=True,
        sources=("the slides' table, from nvidia.com/object/tesla-servers.html: 2880 cores, 4.29 TF single / "
                 "1.43 TF double at base clocks, 288 GB/s (ECC off)", _PAGEABLE, _LAUNCH, _MALLOC)),
    "k80": GPUSpec(
        "k80", "Tesla K80, one of its two GK210 GPUs (2014; the slides)",
        fp32_flops=2.8 * T, fp64_flops=0.935 * T, fp16_flops=2.8 * T,  # half the board's 5.6 / 1.87 TF (base)
        memory_bandwidth=240 * G, link_pageable=6.0 * G, link_pinned=10.0 * G, link_latency=10 * US,
        launch_latency=5 * US, sm_count=13, threads_per_sm=2048,
        alloc_no_pool=150 * US, alloc_pool=1 * US, memory_pool=True,
        sources=("the slides' table, from nvidia.com/object/tesla-servers.html: per board 4992 cores, 5.6 TF "
                 "single / 1.87 TF double at base clocks, 480 GB/s (240 GB/s per GPU); a program sees one GPU",
                 "two GPUs share one PCIe 3.0 x16 link through a switch", _PAGEABLE, _LAUNCH, _MALLOC)),
    "t4": GPUSpec(
        "t4", "Tesla T4 (Turing TU104, 2018; what free notebook services lend)",
        fp32_flops=8.1 * T, fp64_flops=0.253 * T, fp16_flops=16.2 * T,  # FP64 1/32; FP16 2x without tensor cores
        memory_bandwidth=320 * G, link_pageable=6.0 * G, link_pinned=12.0 * G, link_latency=8 * US,
        launch_latency=3 * US, sm_count=40, threads_per_sm=1024,          # compute capability 7.5
        alloc_no_pool=100 * US, alloc_pool=1 * US, memory_pool=True,
        sources=("NVIDIA T4 datasheet: 2560 cores, 8.1 TFLOPS single, 320 GB/s GDDR6, PCIe 3.0 x16",
                 "CUDA C Programming Guide, compute capability 7.5 (1024 threads/SM)", _PAGEABLE, _LAUNCH,
                 _MALLOC)),
    "a100": GPUSpec(
        "a100", "A100 SXM4 40 GB (Ampere GA100, 2020)",
        fp32_flops=19.5 * T, fp64_flops=9.7 * T, fp16_flops=78 * T,     # FP64 1/2 of FP32
        memory_bandwidth=1555 * G, link_pageable=12.0 * G, link_pinned=25.0 * G, link_latency=8 * US,
        launch_latency=3 * US, sm_count=108, threads_per_sm=2048,         # PCIe 4.0 x16: 31.5 GB/s raw
        alloc_no_pool=100 * US, alloc_pool=1 * US, memory_pool=True,
        sources=("NVIDIA A100 datasheet and Ampere architecture whitepaper: 108 SMs, 19.5 TF FP32, 9.7 TF FP64, "
                 "78 TF FP16 (no tensor cores), 1555 GB/s HBM2, PCIe 4.0", _PAGEABLE, _LAUNCH, _MALLOC)),
    "h100": GPUSpec(
        "h100", "H100 SXM5 80 GB (Hopper GH100, 2022)",
        fp32_flops=67 * T, fp64_flops=34 * T, fp16_flops=134 * T,       # FP64 1/2 of FP32
        memory_bandwidth=3350 * G, link_pageable=20.0 * G, link_pinned=50.0 * G, link_latency=8 * US,
        launch_latency=3 * US, sm_count=132, threads_per_sm=2048,         # PCIe 5.0 x16: 63 GB/s raw
        alloc_no_pool=100 * US, alloc_pool=1 * US, memory_pool=True,
        sources=("NVIDIA H100 datasheet and Hopper whitepaper: 132 SMs, 67 TF FP32, 34 TF FP64, 3.35 TB/s HBM3, "
                 "PCIe 5.0", _PAGEABLE, _LAUNCH, _MALLOC)),
}

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
