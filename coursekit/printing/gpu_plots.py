"""Pictures of the modelled GPU: a roofline with the presets' roofs, and a timeline of one call.

Both draw *modelled* figures (see :mod:`coursekit.costmodel`) and say so in their titles.

* :func:`plot_roofline`: FLOP/s against arithmetic intensity (FLOPs per byte of device memory
  traffic).  Each preset's roof is ``min(peak, intensity x bandwidth)``; each op of a modelled call is
  a point at its intensity and the FLOP/s the model gives it, launch latency and wave quantisation
  included, which is why small kernels sit far below the roof.
* :func:`plot_timeline`: one modelled call as bars in time order (allocations, launches, kernels,
  copies), the way a profiler's timeline shows a GPU that synchronises after every op.

matplotlib is imported only when a picture is drawn.
"""
from __future__ import annotations

import numpy as np

from .. import costmodel
from ..costmodel import presets

PART_COLOURS = {"alloc": "#8d6e63", "launch": "#9e9e9e", "kernel": "#4527a0", "transfer": "#c62828",
                "sync": "#f9a825"}


def roofline_points(call):
    """``[{name, intensity, flops_per_s, bound}]`` for the kernels of a :class:`~coursekit.costmodel.ModelledCall`."""
    points = []
    for node, cost in call.rows:
        seconds = cost.launch + cost.kernel
        if not cost.work.launches or not cost.work.flops or not seconds:
            continue
        points.append(dict(name=str(node.op), intensity=cost.work.intensity, flops_per_s=cost.work.flops / seconds,
                           bound=cost.bound))
    return points


def roof(spec, intensity, dtype="float32"):
    """The attainable FLOP/s of a preset at an arithmetic intensity (FLOPs per byte)."""
    return np.minimum(spec.peak_flops(dtype), np.asarray(intensity, dtype=float) * spec.memory_bandwidth)


def tensor_roof(spec, intensity, dtype="float16"):
    """The roof of a matrix product on the tensor cores (``None`` when the card has none for ``dtype``)."""
    peak = spec.peak_flops(dtype, tensor=True)
    if peak == spec.peak_flops(dtype):
        return None
    return np.minimum(peak, np.asarray(intensity, dtype=float) * spec.memory_bandwidth)


def plot_roofline(points=(), gpu_models=("gtx580", "t4", "h100"), ax=None, dtype="float32", label=None,
                  tensor_dtype="float16"):
    """Roofs of ``gpu_models`` and ``points`` (from :func:`roofline_points`, or dicts with the same keys).

    Cards with tensor cores get a second, dashed roof: matrix products in ``tensor_dtype`` (None: no
    tensor roofs) run on them, up to several times the vector units' peak; nothing else does.
    """
    import matplotlib.pyplot as plt

    made_figure = ax is None
    if made_figure:
        _, ax = plt.subplots(figsize=(7, 4.5))
    x = np.logspace(-2, 4, 200)
    for key in gpu_models:
        spec = presets.get(key)
        line, = ax.loglog(x, roof(spec, x, dtype), label=f"{spec.key}: {spec.memory_bandwidth / 1e9:.0f} GB/s, "
                                                            f"{spec.peak_flops(dtype) / 1e12:.1f} TFLOP/s")
        ridge = spec.peak_flops(dtype) / spec.memory_bandwidth
        ax.axvline(ridge, color=line.get_color(), lw=0.6, ls=":")
        tensor = tensor_roof(spec, x, tensor_dtype) if tensor_dtype else None
        if tensor is not None:
            ax.loglog(x, tensor, "--", color=line.get_color(), lw=1,
                      label=f"{spec.key}: {tensor_dtype} matrix products on tensor cores, "
                            f"{spec.peak_flops(tensor_dtype, tensor=True) / 1e12:.0f} TFLOP/s")
    for p in points:
        ax.loglog([p["intensity"]], [p["flops_per_s"]], "o", color="black")
        ax.annotate(p["name"], (p["intensity"], p["flops_per_s"]), fontsize=7, xytext=(4, -10),
                    textcoords="offset points")
    ax.set_xlabel("arithmetic intensity (FLOPs per byte of device memory traffic)")
    ax.set_ylabel(f"{dtype} FLOP/s (dashed: {tensor_dtype} tensor cores)" if tensor_dtype else f"{dtype} FLOP/s")
    ax.set_title(label or f"Roofline (datasheet peaks); points: {costmodel.model_for().label}", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    if made_figure:
        ax.figure.tight_layout()
    return ax


def timeline(call):
    """``[(start, end, part, op name)]`` in seconds from the call's start: the modelled ops one after another,
    then the call's synchronisation if it has one (a profile's view: nothing overlaps)."""
    spans, now = [], 0.0
    for i, (node, cost) in enumerate(call.rows):
        for part in ("alloc", "launch", "kernel", "transfer"):
            seconds = getattr(cost, part)
            if seconds:
                spans.append((now, now + seconds, part, f"{i}: {node.op}"))
                now += seconds
    if call.parts.get("sync"):  # the call waits for the GPU once (its copy to the host)
        spans.append((now, now + call.parts["sync"], "sync", "synchronise"))
    return spans


def plot_timeline(call, ax=None):
    """One modelled call as a bar per op, coloured by part (the measured host time is not drawn)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    spans = timeline(call)
    names = list(dict.fromkeys(name for *_, name in spans))
    made_figure = ax is None
    if made_figure:
        _, ax = plt.subplots(figsize=(8, 0.45 * max(len(names), 2) + 1.5))
    for start, end, part, name in spans:
        ax.barh(names.index(name), (end - start) * 1e6, left=start * 1e6, color=PART_COLOURS[part])
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("µs from the start of the call (device work only)")
    ax.set_title(f"One call, {call.label}", fontsize=10)
    ax.legend(handles=[Patch(color=c, label=p) for p, c in PART_COLOURS.items()], fontsize=8, ncol=4,
              loc="upper center", bbox_to_anchor=(0.5, -0.25))
    if made_figure:
        ax.figure.tight_layout()
    return ax
