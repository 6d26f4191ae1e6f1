"""Where the time went, modelled: a profile's or a traced call's GPU and transfer ops priced on a preset.

:mod:`coursekit.costmodel` prices nodes whose input shapes are known; this
module supplies the shapes and the measured host part from what really ran:
:func:`model_profile` prices a profile that was already recording (nothing is
added to the profiled call itself: the model runs when a report is made, and
caches per node and shape signature); :mod:`coursekit.profiling.predict` does
the same for a function compiled without a profile, by running it.
"""
from __future__ import annotations

from .. import costmodel
from ..costmodel import format_time, is_modelled, price_nodes


def _device_seconds(record):
    """Measured seconds per call in the record's GPU and transfer ops (simulated or real)."""
    if not record.timed_calls:
        return 0.0
    total = sum(t for node, t in zip(record.nodes, record.apply_time) if is_modelled(node))
    return total / record.timed_calls


def _host_seconds(record):
    if not record.timed_calls:
        return None
    return max(record.call_time / record.timed_calls - _device_seconds(record), 0.0)


def model_profile(profile, model=None):
    """Per-function :class:`ModelledCall` for a recording profile (host part from its measured times)."""
    results = []
    for record in profile.records:
        fn = record.fn_ref()
        call = price_nodes(record.nodes, record.input_info, fn, model)
        call.host = _host_seconds(record)
        results.append((record, call))
    return results


def modelled_apply_times(profile, model=None):
    """{(record, node index): modelled seconds over all timed calls} for GPU and transfer nodes."""
    times = {}
    for record, call in model_profile(profile, model):
        index = {id(node): i for i, node in enumerate(record.nodes)}
        for node, cost in call.rows:
            times[(id(record), index[id(node)])] = cost.total * record.timed_calls
    return times


def modelled_device_line(profile, model=None):
    """The CPU/GPU/transfer line again, with GPU and transfer ops modelled (labelled)."""
    model = model or costmodel.model_for()
    per_kind = {"cpu": 0.0, "gpu": 0.0, "transfer": 0.0}
    for record, call in model_profile(profile, model):
        for node, t, kind in zip(record.nodes, record.apply_time, record.kinds):
            if kind == "cpu":
                per_kind["cpu"] += t
        for node, cost in call.rows:
            kind = "transfer" if getattr(node.op, "is_transfer", False) else "gpu"
            per_kind[kind] += cost.total * record.timed_calls
    total = sum(per_kind.values()) or 1.0
    split = " | ".join(f"{name} {format_time(per_kind[k])} ({100 * per_kind[k] / total:.1f}%)"
                       for k, name in (("cpu", "CPU ops (measured)"), ("gpu", "GPU ops"),
                                       ("transfer", "transfer ops")))
    return f"Time by where ops ran, {model.label}: {split}"
