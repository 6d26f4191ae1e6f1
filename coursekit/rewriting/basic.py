"""Merge (common subexpressions) and constant folding.

*Merge* is what makes ``__props__`` matter: two Apply nodes with equal ops
and the same inputs compute the same thing, so one of them is dropped.
Equal constants are merged first, so ``x + 1`` written twice becomes one node.
*Constant folding* computes, at compile time, every node whose inputs are all
constants.
"""
from __future__ import annotations

from ..graph import Constant
from ..tensor.var import TensorConstant
from . import global_rewrite, local_rewrite


def merge(fgraph):
    """Replace duplicate constants and duplicate nodes by a single one."""
    changes = 0
    seen_constants = {}
    for node in fgraph.toposort():
        for i, inp in enumerate(node.inputs):
            if isinstance(inp, Constant):
                key = inp.signature()
                first = seen_constants.setdefault(key, inp)
                if first is not inp:
                    node.inputs[i] = first
                    changes += 1
    if changes:
        fgraph.rebuild()
    seen_nodes = {}
    replaced = False
    for node in fgraph.toposort():
        key = (node.op, tuple(id(i) for i in node.inputs))
        first = seen_nodes.setdefault(key, node)
        if first is not node:
            for old, new in zip(node.outputs, first.outputs):
                fgraph.replace(old, new, reason="merge", rebuild=False)
            fgraph.rewrite_log.append(("merge", "merge", str(node)))
            replaced = True
            changes += 1
    if replaced:
        fgraph.rebuild()
    return changes


# merge runs at the start of every stage that can create duplicates
for _stage in ("canonicalize", "stabilize", "specialize"):
    global_rewrite(_stage, "merge", "fast_compile", name=f"merge_{_stage}")(lambda fgraph: merge(fgraph))

MAX_FOLD_SIZE = 1_000_000


@local_rewrite("canonicalize", "constant_folding")
def constant_folding(fgraph, node):
    """A node whose inputs are all constants becomes a constant."""
    if not node.inputs or not all(isinstance(i, Constant) for i in node.inputs):
        return None
    if not getattr(node.op, "fold_constants", True):
        return None
    storage = [[None] for _ in node.outputs]
    node.op.perform(node, [i.data for i in node.inputs], storage)
    results = []
    for out, (value,) in zip(node.outputs, storage):
        if getattr(value, "size", 1) > MAX_FOLD_SIZE:
            return None
        results.append(TensorConstant(out.type, value))
    return results
