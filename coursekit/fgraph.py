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
    * ``device``: the :class:`~coursekit.devices.device.Device` placement compiled the graph for
      (``None`` until placement ran: the CPU); the compiled function carries it, and every
      "GPU? simulated?" question about the function asks it;
    * ``placed``: whether GPU placement ran (it runs once per graph);
    * ``host_scalar_nodes``: the scalar work placement keeps on the host (``None``: that rule did not run);
    * ``reference``: DebugMode's unrewritten copy of the graph (``None`` otherwise).
    """

    __slots__ = ("inputs", "outputs", "n_user_inputs", "n_outputs", "update_targets", "rewrite_log",
                 "device", "placed", "host_scalar_nodes", "reference", "clients", "apply_nodes", "_order", "_input_set", "changes")

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
        self.device = None
        self.placed = False
        self.host_scalar_nodes = None
        self.reference = None
        self._input_set = set(self.inputs)
        self._order = None
        self.changes = []  # nodes added or rewired since a rewrite pass last looked (see replace)
        self.rebuild()

    def rebuild(self):
        """Recompute the node list and the client map from the outputs (O(size of the graph)).

        Only needed after someone edited ``node.inputs`` behind the graph's back;
        :meth:`replace` keeps everything up to date locally."""
        self._order = apply_nodes_between(self.inputs, self.outputs)
        clients = {}
        for node in self._order:
            for i, var in enumerate(node.inputs):
                clients.setdefault(var, []).append((node, i))
        for i, var in enumerate(self.outputs):
            clients.setdefault(var, []).append(("output", i))
        self.clients = clients
        self.apply_nodes = set(self._order)
        self.changes = []

    def toposort(self):
        """The Apply nodes in an order where each comes after its inputs (recomputed only after a change)."""
        if self._order is None:
            self._order = apply_nodes_between(self.inputs, self.outputs)
        return list(self._order)


    def variables(self):
        seen = dict.fromkeys(self.inputs)
        for node in self.toposort():
            seen.update(dict.fromkeys(node.inputs))
            seen.update(dict.fromkeys(node.outputs))
        return list(seen)

    def replace(self, old, new, reason=None, rebuild=None):
        """Make every reader of ``old`` read ``new`` instead.

        Local work only: the readers are rewired, the nodes that compute ``new``
        and are not in the graph yet are added (their inputs gain a client), and the
        nodes that nobody reads any more are dropped.  What changed is appended to
        ``changes`` (new nodes, and readers whose inputs changed) so that a rewrite
        pass can look at just those.  ``rebuild`` is accepted for old callers and ignored.
        """
        if old is new:
            return
        if old.type != new.type:
            new = _coerce(old, new)
        readers = self.clients.pop(old, [])
        for client, i in readers:  # rewire first: ``new`` may be computed from ``old``
            if client == "output":
                self.outputs[i] = new
            else:
                client.inputs[i] = new
        self._add_above(new)
        new_readers = self.clients.setdefault(new, [])
        new_readers.extend(readers)
        self.changes.extend(c for c, _ in readers if c != "output")
        if old.owner is not None:
            self._drop_if_unread(old.owner)
        self._order = None

    def _add_above(self, var):
        """Add the nodes computing ``var`` that are not in the graph yet (iteratively: no recursion)."""
        known_inputs = set(self.inputs) if len(self._input_set) != len(self.inputs) else self._input_set
        stack, added = [var], []
        while stack:
            v = stack.pop()
            node = v.owner
            if node is None or node in self.apply_nodes or v in known_inputs:
                continue
            self.apply_nodes.add(node)
            added.append(node)
            for i, inp in enumerate(node.inputs):
                self.clients.setdefault(inp, []).append((node, i))
                stack.append(inp)
        self.changes.extend(reversed(added))  # producers before consumers

    def _drop_if_unread(self, node):
        """Remove ``node`` if none of its outputs is read, then its producers that become unread."""
        stack = [node]
        while stack:
            node = stack.pop()
            if node not in self.apply_nodes or any(self.clients.get(o) for o in node.outputs):
                continue
            self.apply_nodes.discard(node)
            for o in node.outputs:
                self.clients.pop(o, None)
            for i, inp in enumerate(node.inputs):
                readers = self.clients.get(inp)
                if readers is None:
                    continue
                readers.remove((node, i))
                if not readers:
                    del self.clients[inp]
                    if inp.owner is not None:
                        stack.append(inp.owner)
                elif inp.owner is not None:
                    self.changes.append(inp.owner)  # one reader fewer: single-reader rewrites may apply now

    def __str__(self):
        return f"FunctionGraph({', '.join(map(str, self.outputs))})"


def _coerce(old, new):
    """Allow a replacement that differs only in broadcastable pattern."""
    if old.type.dtype != new.type.dtype or getattr(old.type, "ndim", None) != getattr(new.type, "ndim", None):
        raise TypeError(f"a rewrite tried to replace {old} ({old.type}) by {new} ({new.type}): types differ")
    return new
