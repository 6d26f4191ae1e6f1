"""``python -m coursekit calibrate``: measure this machine's GPU and save it as a cost-model preset.

Datasheets give peaks; a program gets less, and some figures the model needs
are on no datasheet at all (pageable copy speed, launch latency, the cost of
``cudaMalloc``).  This module measures each one with a CuPy micro-benchmark:

===================  ==========================================================
memory bandwidth     device-to-device copies of 4 MiB ... 256 MiB, fitted
host link            ``cupy.asarray`` / ``.get()`` of NumPy (pageable) and
                     page-locked (pinned) buffers, 64 KiB ... 64 MiB, fitted
launch latency       an empty kernel, launched and synchronised, many times;
                     and 100 queued before one synchronisation (the difference
                     is the synchronisation's own cost)
peak FLOP/s          large float32 / float64 / float16 matrix products
allocation           ``cudaMalloc`` + ``cudaFree`` of 256 KiB and 4 MiB; CuPy's pool
SMs, threads/SM      the device's properties
===================  ==========================================================

Copies are fitted as ``time = latency + bytes / bandwidth`` by least squares
on the best of several repeats per size (:func:`fit_link`); that fitting is
pure arithmetic and is unit-tested with synthetic measurements, since the
micro-benchmarks themselves can only run on a GPU.  The result is a
:class:`~coursekit.costmodel.presets.GPUSpec` with ``measured=True`` and
efficiencies of 1 (measured rates are already achievable rates), saved by
:func:`coursekit.costmodel.presets.save`.
"""
from __future__ import annotations

import time

import numpy as np

from ..devices import cupy_status
from . import presets, pricing

MiB = 2 ** 20


class NoGPU(RuntimeError):
    """Calibration needs a real GPU."""


def fit_link(sizes, seconds):
    """``(latency, bandwidth)`` of ``seconds ≈ latency + size / bandwidth`` (least squares).

    ``seconds`` may hold several repeats per size (a list per size): the best
    of each is used, since a copy is never faster than the hardware allows
    but often slower (other traffic, page faults).
    """
    x = np.asarray(sizes, dtype=float)
    y = np.array([np.min(s) for s in seconds], dtype=float)
    if len(x) < 2 or np.ptp(x) == 0:
        raise ValueError("fit_link needs copies of at least two different sizes")
    slope, intercept = np.polyfit(x, y, 1)
    if slope <= 0:
        raise ValueError(f"copy times do not grow with size ({list(zip(x, y))}): the measurement is broken")
    return max(float(intercept), 0.0), 1.0 / float(slope)


def rate(work, seconds):
    """Work per second from the best of several timings."""
    return work / float(np.min(seconds))


preset_name = presets.preset_name


def build_spec(measured, key=None):
    """A :class:`GPUSpec` from a dict of measurements (see :func:`measure` for the keys)."""
    link_lat_pageable, pageable = fit_link(measured["link_sizes"], measured["pageable_seconds"])
    link_lat_pinned, pinned = fit_link(measured["link_sizes"], measured["pinned_seconds"])
    _, bandwidth = fit_link(measured["copy_sizes"], measured["copy_seconds"])
    flops = measured["gemm_flops"]  # {dtype: (flops of one product, [seconds...])}
    peaks = {dtype: rate(work, secs) for dtype, (work, secs) in flops.items()}
    name = measured["name"]
    return presets.GPUSpec(
        key=key or preset_name(name), name=f"{name} (calibrated {measured.get('date', '')})".replace(" )", ")"),
        fp32_flops=peaks["float32"], fp64_flops=peaks.get("float64", peaks["float32"]),
        fp16_flops=peaks.get("float16", peaks["float32"]),
        memory_bandwidth=bandwidth, link_pageable=pageable, link_pinned=pinned,
        link_latency=(link_lat_pageable + link_lat_pinned) / 2,
        launch_latency=_launch_and_sync(measured)[0], sync_latency=_launch_and_sync(measured)[1],
        sm_count=int(measured["sm_count"]), threads_per_sm=int(measured["threads_per_sm"]),
        alloc_no_pool=float(np.min(measured["malloc_seconds"])), alloc_pool=float(np.min(measured["pool_seconds"])),
        alloc_no_pool_small=float(np.min(measured["malloc_small_seconds"])),
        memory_pool=True, memory_efficiency=1.0, compute_efficiency=1.0, measured=True,
        sources=(f"measured by `python -m coursekit calibrate` on {name}, {measured.get('date', '')}",
                 "bandwidths: least-squares fit of latency + bytes/bandwidth on the best of repeats per size",
                 "peak FLOP/s: large matrix products through cuBLAS (float16 may use tensor cores)"))


def _launch_and_sync(measured):
    """(launch, sync): a queued launch, and what synchronising adds (older measurements: all launch)."""
    synced = float(np.min(measured["launch_seconds"]))
    if "launch_queued_seconds" not in measured:
        return synced, 0.0
    queued = min(float(np.min(measured["launch_queued_seconds"])), synced)
    return queued, synced - queued


# ----------------------------------------------------------------- measuring (needs CuPy and a GPU)
def _cupy():
    cupy, reason = cupy_status()
    if cupy is None:
        raise NoGPU(f"calibrate measures a real NVIDIA GPU, and here {reason}. Run it on a machine with a GPU "
                    "(and CuPy); until then choose a built-in preset with COURSEKIT_FLAGS=gpu_model=<name> "
                    f"({', '.join(presets.PRESETS)}).")
    return cupy


def _event_seconds(cupy, fn, repeats):
    """Seconds of ``fn()`` on the GPU, measured with CUDA events, one sample per repeat."""
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    samples = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return samples


def _host_seconds(fn, repeats):
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return samples


def measure(repeats=5, progress=print):
    """Run the micro-benchmarks on GPU 0; returns the measurements :func:`build_spec` takes."""
    cupy = _cupy()
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    out = dict(name=name, date=time.strftime("%Y-%m-%d"), sm_count=props["multiProcessorCount"],
               threads_per_sm=props["maxThreadsPerMultiProcessor"])
    progress(f"calibrating {name}: {out['sm_count']} SMs x {out['threads_per_sm']} threads")

    out["copy_sizes"] = [s * MiB for s in (4, 16, 64, 256)]
    out["copy_seconds"] = []
    for size in out["copy_sizes"]:  # a device copy reads and writes: 2 bytes of traffic per byte copied
        src, dst = cupy.empty(size // 4, "float32"), cupy.empty(size // 4, "float32")
        secs = _event_seconds(cupy, lambda: cupy.copyto(dst, src), repeats + 1)[1:]
        out["copy_seconds"].append([s / 2 for s in secs])
    out["copy_sizes"] = list(out["copy_sizes"])
    progress("  device memory bandwidth: done")

    out["link_sizes"] = [s * MiB for s in (0.0625, 1, 16, 64)]
    out["pageable_seconds"], out["pinned_seconds"] = [], []
    for size in out["link_sizes"]:
        n = int(size) // 4
        host, dev = np.ones(n, "float32"), cupy.empty(n, "float32")
        pinned = cupy.cuda.alloc_pinned_memory(n * 4)
        pinned_host = np.frombuffer(pinned, "float32", n)
        both = _host_seconds(lambda: (dev.set(host), dev.get(out=host), cupy.cuda.Device().synchronize()), repeats)
        out["pageable_seconds"].append([s / 2 for s in both])
        both = _host_seconds(lambda: (dev.set(pinned_host), dev.get(out=pinned_host),
                                      cupy.cuda.Device().synchronize()), repeats)
        out["pinned_seconds"].append([s / 2 for s in both])
    progress("  host link (pageable, pinned): done")

    empty = cupy.RawKernel('extern "C" __global__ void ck_empty() {}', "ck_empty")
    empty((1,), (1,), ())
    cupy.cuda.Device().synchronize()
    out["launch_seconds"] = _host_seconds(lambda: (empty((1,), (1,), ()), cupy.cuda.Device().synchronize()),
                                          repeats * 20)
    queued = 100  # launches queued back to back, one synchronisation at the end: the caller's cost per launch
    out["launch_queued_seconds"] = [s / queued for s in _host_seconds(
        lambda: ([empty((1,), (1,), ()) for _ in range(queued)], cupy.cuda.Device().synchronize()), repeats)]
    progress("  kernel launch latency (synchronised, queued): done")

    out["gemm_flops"] = {}
    for dtype, n in (("float32", 4096), ("float64", 2048), ("float16", 4096)):
        a = cupy.ones((n, n), dtype)
        cupy.matmul(a, a)
        secs = _event_seconds(cupy, lambda: cupy.matmul(a, a), repeats)
        out["gemm_flops"][dtype] = (2.0 * n ** 3, secs)
    progress("  peak FLOP/s (float32, float64, float16): done")

    runtime = cupy.cuda.runtime
    out["malloc_seconds"] = _host_seconds(lambda: runtime.free(runtime.malloc(4 * MiB)), repeats * 4)
    out["malloc_small_seconds"] = _host_seconds(lambda: runtime.free(runtime.malloc(MiB // 4)), repeats * 4)
    pool = cupy.get_default_memory_pool()
    cupy.empty(MiB // 4, "float32")
    out["pool_seconds"] = _host_seconds(lambda: cupy.empty(MiB // 4, "float32"), repeats * 4)
    progress(f"  allocation (cudaMalloc, CuPy pool holding {pool.total_bytes() / MiB:.0f} MiB): done")
    return out


def calibrate(key=None, repeats=5, progress=print):
    """Measure, build and save a preset; returns (spec, path)."""
    spec = build_spec(measure(repeats, progress), key)
    path = presets.save(spec)
    pricing.forget_saved()
    return spec, path


def describe(spec):
    """The preset's figures, one per line, in the units people quote."""
    return "\n".join([
        f"  memory bandwidth   {spec.memory_bandwidth / 1e9:8.1f} GB/s",
        f"  host link          {spec.link_pageable / 1e9:8.1f} GB/s pageable, {spec.link_pinned / 1e9:.1f} GB/s "
        f"pinned, {spec.link_latency * 1e6:.1f} µs latency",
        f"  kernel launch      {spec.launch_latency * 1e6:8.1f} µs queued, "
        f"+{spec.sync_latency * 1e6:.1f} µs to synchronise",
        f"  peak FLOP/s        {spec.fp32_flops / 1e12:8.2f} TF float32, {spec.fp64_flops / 1e12:.2f} TF float64, "
        f"{spec.fp16_flops / 1e12:.2f} TF float16"
        + (f"; tensor cores {spec.fp16_tensor_flops / 1e12:.0f} TF float16" if spec.fp16_tensor_flops else ""),
        f"  allocation         {spec.alloc_no_pool * 1e6:8.1f} µs cudaMalloc+cudaFree of 4 MiB, "
        f"{spec.alloc_no_pool_small * 1e6:.1f} µs of 256 KiB, {spec.alloc_pool * 1e6:.1f} µs from the pool",
        f"  SMs                {spec.sm_count:8d} x {spec.threads_per_sm} resident threads",
        f"  error band         {presets.band_text(spec)}"
        + (f" (measured / modelled on the project's corpus; {presets.band_text(spec, True)} with host copies "
           ">= 32 MiB)" if spec.band else " (no measured corpus for this preset)")])
