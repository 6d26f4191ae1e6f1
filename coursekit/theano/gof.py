"""``theano.gof`` and ``theano.gof.graph``: the graph classes and the graph walks libraries call.

coursekit keeps its graph classes in :mod:`coursekit.graph`; Theano kept them in ``theano.gof``.
Lasagne collects a network's parameters with ``theano.gof.graph.inputs`` and its tests compare graphs
with ``is_same_graph``; both walk the graph in the order Theano's did, so results come in the same order.
"""
from __future__ import annotations

import sys
from collections import deque

from ..fgraph import FunctionGraph  # noqa: F401
from ..graph import Apply, Constant, Op, Type, Variable, apply_nodes_between, clone_replace  # noqa: F401
from ..rewriting.registration import LocalOptimizer, OpRemove, local_optimizer  # noqa: F401  (theano.gof.opt)

__all__ = ["Apply", "Constant", "Op", "Type", "Variable", "FunctionGraph", "ancestors", "inputs",
           "io_toposort", "is_same_graph", "clone", "variables", "LocalOptimizer", "OpRemove", "local_optimizer"]


def ancestors(variable_list, blockers=None):
    """Every variable the given ones depend on (themselves included), depth first as Theano walked:
    the last variable of the list first, each node's first input before its second."""
    blocked = set(map(id, blockers or ()))
    stack, seen, order = deque(variable_list), set(), []
    while stack:
        var = stack.pop()
        if id(var) in seen:
            continue
        seen.add(id(var))
        order.append(var)
        if var.owner is not None and id(var) not in blocked:
            stack.extend(reversed(var.owner.inputs))
    return order


def inputs(variable_list, blockers=None):
    """The leaves (variables with no owner, or blockers) of the graph above ``variable_list``."""
    blocked = set(map(id, blockers or ()))
    return [v for v in ancestors(variable_list, blockers) if v.owner is None or id(v) in blocked]


def variables(i, o):
    """Every variable on a path from inputs ``i`` to outputs ``o``."""
    found = list(i)
    for node in apply_nodes_between(i, o):
        found += [v for v in node.inputs + node.outputs if v not in found]
    return found


def io_toposort(inputs, outputs, orderings=None):
    """The apply nodes between ``inputs`` and ``outputs``, each after the nodes it needs."""
    return apply_nodes_between(inputs, outputs)


def clone(inputs, outputs, copy_inputs=True):
    """Copies of ``inputs`` and ``outputs`` with the graph between them copied too."""
    new_inputs = [v.clone() for v in inputs] if copy_inputs else list(inputs)
    new_outputs, _ = clone_replace(outputs, dict(zip(inputs, new_inputs)))
    return new_inputs, new_outputs


def is_same_graph(var1, var2, givens=None, debug=False):
    """Whether ``var1`` and ``var2`` compute the same thing from the same leaves: equal ops applied to
    pairwise-same inputs, equal constants, identical leaves (``givens`` maps leaves of ``var1`` to the
    leaves of ``var2`` they stand for)."""
    pairs = {id(a): b for a, b in (givens or {}).items()}
    memo = {}

    def same(a, b):
        key = (id(a), id(b))
        if key not in memo:
            memo[key] = _same(a, b)
        return memo[key]

    def _same(a, b):
        if a is b or pairs.get(id(a)) is b:
            return True
        if isinstance(a, Constant) and isinstance(b, Constant):
            return a.type == b.type and a.signature() == b.signature()
        if a.owner is None or b.owner is None:
            return False
        if a.index != b.index or a.owner.op != b.owner.op or len(a.owner.inputs) != len(b.owner.inputs):
            return False
        return all(same(x, y) for x, y in zip(a.owner.inputs, b.owner.inputs))

    return same(var1, var2)


graph = sys.modules[__name__]  # theano.gof.graph: this same module (Theano kept these in a submodule)
