"""Theano's scan shorthands: ``map``, ``reduce``, ``foldl`` and ``foldr`` (``theano.map`` ...).

Each is one :func:`~coursekit.scan_module.builder.scan` call, as in Theano, so each has scan's gradient
and device placement.  ``map`` feeds nothing back; ``reduce`` feeds its outputs back and keeps only the
last step's values; ``foldl``/``foldr`` are ``reduce`` from the first / the last element.
"""
from __future__ import annotations

from .builder import scan


def map(fn, sequences, non_sequences=None, truncate_gradient=-1, go_backwards=False, mode=None,  # noqa: A001
        name=None):
    """``fn`` applied to each step of ``sequences``: ``(outputs stacked over steps, updates)``."""
    return scan(fn, sequences=sequences, outputs_info=None, non_sequences=non_sequences,
                truncate_gradient=truncate_gradient, go_backwards=go_backwards, mode=mode, name=name)


def reduce(fn, sequences, outputs_info, non_sequences=None, go_backwards=False, mode=None, name=None):  # noqa: A001
    """``fn(step values..., accumulators..., non_sequences...)`` folded over ``sequences`` from
    ``outputs_info``: ``(the accumulators after the last step, updates)``."""
    outputs, updates = scan(fn, sequences=sequences, outputs_info=outputs_info, non_sequences=non_sequences,
                            go_backwards=go_backwards, mode=mode, name=name)
    if isinstance(outputs, (list, tuple)):
        return [out[-1] for out in outputs], updates
    return outputs[-1], updates


def foldl(fn, sequences, outputs_info, non_sequences=None, mode=None, name=None):
    """:func:`reduce` from the first element to the last."""
    return reduce(fn, sequences, outputs_info, non_sequences, go_backwards=False, mode=mode, name=name)


def foldr(fn, sequences, outputs_info, non_sequences=None, mode=None, name=None):
    """:func:`reduce` from the last element to the first."""
    return reduce(fn, sequences, outputs_info, non_sequences, go_backwards=True, mode=mode, name=name)
