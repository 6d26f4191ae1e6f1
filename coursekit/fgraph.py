"""FunctionGraph: the compiler's own copy of a graph, with client lists.

Rewrites work on a FunctionGraph, never on the user's variables: the graph
is cloned first, so compiling ``f`` cannot change what ``g`` computes.
``clients[var]`` lists the (node, input index) pairs that read ``var``;
``replace(old, new)`` rewires every client of ``old`` to read ``new``.

Its fields are declared (``__slots__``): everything the compiler learns
about a graph while compiling it has a named place here, so no stage has to
guess with ``getattr(fgraph, ..., default)`` whether another stage ran.
"""
from __future__ import annotations

from .graph import apply_nodes_between


class FunctionGraph:
    """``outputs[:n_outputs]`` are the function's outputs; the rest are the new values of
    ``update_targets`` (shared variables), in order.

    Fields filled in while compiling:

    * ``rewrite_log``: ``(stage, rewrite name, what it changed)`` for every rewrite that fired;
    * ``device_label``: where the graph was placed (``None`` until placement ran: the CPU);
    * ``placed``: whether GPU placement ran (it runs once per graph);
    * ``reference``: DebugMode's unrewritten copy of the graph (``None`` otherwise).
    """

    __slots__ = ("inputs", "outputs", "n_user_inputs", "n_outputs", "update_targets", "rewrite_log",
                 "device_label", "placed", "reference", "clients", "apply_nodes", "_order")

    def __init__(self, inputs, outputs, n_outputs=None, update_targets=(), n_user_inputs=None):
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.n_outputs = len(self.outputs) if n_outputs is None else n_outputs
        self.update_targets = list(update_targets)
        if self.n_outputs + len(self.update_targets) != len(self.outputs):
            raise ValueError(f"FunctionGraph: {len(self.outputs)} outputs cannot be {self.n_outputs} outputs "
                             f"and {len(self.update_targets)} update values")
        self.n_user_inputs = len(self.inputs) if n_user_inputs is None else n_user_inputs
        self.rewrite_log = []
        self.device_label = None
        self.placed = False
        self.reference = None
        self._order = None
        self.rebuild()

    def rebuild(self):
        """Recompute the node list and the client map from the outputs."""
        self._order = apply_nodes_between(self.inputs, self.outputs)
        clients = {}
        for node in self._order:
            for i, var in enumerate(node.inputs):
                clients.setdefault(var, []).append((node, i))
        for i, var in enumerate(self.outputs):
            clients.setdefault(var, []).append(("output", i))
        self.clients = clients
        self.apply_nodes = set(self._order)

    def toposort(self):
        """The Apply nodes in an order where each comes after its inputs."""
        return list(self._order)

    def variables(self):
        seen = dict.fromkeys(self.inputs)
        for node in self._order:
            seen.update(dict.fromkeys(node.inputs))
            seen.update(dict.fromkeys(node.outputs))
        return list(seen)

    def replace(self, old, new, reason=None, rebuild=True):
        """Make every reader of ``old`` read ``new`` instead."""
        if old is new:
            return
        if old.type != new.type:
            new = _coerce(old, new)
        for client, i in self.clients.get(old, []):
            if client == "output":
                self.outputs[i] = new
            else:
                client.inputs[i] = new
        if rebuild:
            self.rebuild()

    def __str__(self):
        return f"FunctionGraph({', '.join(map(str, self.outputs))})"


def _coerce(old, new):
    """Allow a replacement that differs only in broadcastable pattern."""
    if old.type.dtype != new.type.dtype or getattr(old.type, "ndim", None) != getattr(new.type, "ndim", None):
        raise TypeError(f"a rewrite tried to replace {old} ({old.type}) by {new} ({new.type}): types differ")
    return new
