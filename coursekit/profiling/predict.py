"""Modelled GPU times of a compiled function, learnt by running it: ``predict_call(f, *args)``.

A function compiled without ``profile=True`` reveals the shapes its nodes see
when it runs under a private profile (:func:`trace_call`); the cost model then
prices its GPU and transfer nodes (:func:`coursekit.costmodel.price_nodes`),
and the same calls measure the host part (dispatch, input checks, CPU ops).
"""
from __future__ import annotations

from .. import costmodel
from ..costmodel import price_nodes
from . import ProfileStats
from .modelled import _host_seconds


def trace_call(fn, *args, calls=3):
    """Run ``fn(*args)`` ``calls`` times under a private profile; returns its record.

    This is how a function compiled without ``profile=True`` reveals the
    shapes its nodes see.  Like any call it applies the function's updates.
    """
    profile = ProfileStats(name=f"trace of {getattr(fn, 'name', 'a function')}", atexit_print=False)
    record = profile.attach(fn)  # installs the profile's linker hook on fn
    try:
        for _ in range(max(2, calls)):  # the profiler ignores the first call (warm-up)
            fn(*args)
    finally:
        fn.remove_hook(record)
    return record



def predict_call(fn, *args, model=None, calls=6):
    """Modelled time of one call of the compiled function ``fn`` with ``args``.

    Runs ``fn`` ``calls`` times under a private profile (the first is a
    warm-up): the device part is priced from the shapes its nodes saw; the
    host part is measured in the same calls, as the call time spent outside
    GPU and transfer ops (Python dispatch, input checks, CPU ops).
    """
    record = trace_call(fn, *args, calls=calls)
    call = price_nodes(record.nodes, record.input_info, fn, model)
    call.host = _host_seconds(record)
    return call



def predict_calls(fn, *args, models, calls=6):
    """``{name: ModelledCall}`` for several presets from ONE traced run: the same shapes and the same
    measured host time for every card, so that columns side by side differ only by the card."""
    record = trace_call(fn, *args, calls=calls)
    host = _host_seconds(record)
    return {name: price_nodes(record.nodes, record.input_info, fn, costmodel.model(name)).with_host(host)
            for name in models}



def predict_scaled(fn, *args, sizes, model=None):
    """Modelled device work of ``fn`` as if the axes of ``args`` were larger: run small, price big.

    ``sizes`` maps an axis length of the run to the length to price, e.g.
    ``{256: 1000}`` prices a call on 1000 x 1000 matrices after running it on
    256 x 256 ones: every axis of length 256 that any node sees becomes 1000.
    Use lengths that occur only where you mean them (256, not 1).  Nothing is
    measured at the priced size, so the result has no host part.
    """
    record = trace_call(fn, *args, calls=2)
    info = [None if entry is None else [(None if shape is None else tuple(sizes.get(d, d) for d in shape), dtype)
                                        for shape, dtype in entry] for entry in record.input_info]
    return price_nodes(record.nodes, info, fn, model)
