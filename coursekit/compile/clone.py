"""``clone(output, replace)``: a copy of a graph with some variables swapped (Theano's ``theano.clone``)."""
from __future__ import annotations

from ..graph import Constant, Variable, clone_replace, graph_inputs
from ..tensor.var import as_tensor_variable

__all__ = ["clone"]


def clone(output, replace=None, strict=True, share_inputs=True):
    """A copy of the graph above ``output`` (a variable or a list) with the variables in ``replace`` swapped.

    ``replace`` is a dict or a list of pairs.  ``share_inputs=False`` also copies the symbolic inputs (shared
    variables stay the same object: their storage is the point of them, as Theano's copies shared it too)."""
    if isinstance(replace, (list, tuple)):
        replace = dict(replace)
    single = isinstance(output, Variable)
    outs = [output] if single else list(output)
    swap = {k: as_tensor_variable(v) for k, v in (replace or {}).items()}
    if not share_inputs:
        for leaf in graph_inputs(outs, blockers=list(swap)):
            if leaf not in swap and not isinstance(leaf, Constant):
                swap[leaf] = leaf.clone()
    new, _ = clone_replace(outs, swap)
    return new[0] if single else new
