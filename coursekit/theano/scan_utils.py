"""``theano.scan_module.scan_utils``: the graph comparison tests of Theano-based libraries call."""
from __future__ import annotations

from .gof import is_same_graph


def equal_computations(xs, ys, in_xs=None, in_ys=None):
    """Whether each graph in ``xs`` computes what the matching one in ``ys`` does (leaves ``in_xs[i]`` of
    ``xs`` standing for ``in_ys[i]`` of ``ys``)."""
    if len(xs) != len(ys):
        return False
    givens = dict(zip(in_xs or [], in_ys or []))
    return all(is_same_graph(x, y, givens=givens) for x, y in zip(xs, ys))
