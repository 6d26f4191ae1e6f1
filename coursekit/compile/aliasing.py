"""Alias analysis: which values may share memory, read from ``view_map`` and ``destroy_map``.

An op declares ``view_map = {output: [inputs]}`` when an output is a view of
those inputs (``x.T``, a reshape) and ``destroy_map = {output: [inputs]}``
when it writes its result into an input's buffer (``Gemm{inplace}``).  From
those declarations every variable gets its *buffer roots*: the variables
whose own allocation its memory may belong to.  Two values may share memory
exactly when their roots meet.

The linker uses that to keep the promises of ``linker.py``:

* :func:`protect_destroyed_inputs` gives an in-place op a private copy
  (``DeepCopyOp``) of an input it would destroy when that buffer is an
  input, a shared value or a constant, or is still to be read after the op;
* :func:`plan_results` decides, for each output and update value, whether
  it must be copied (it shares memory with an input, a shared value, a
  constant, or something already handed out in this call) and which cells
  must be emptied after the call so no op writes into a returned buffer
  next time (ops reuse their old output buffer when it fits).  That holds
  whatever ``allow_gc`` says; ``Out(borrow=True)`` outputs keep their
  buffers, so the next call really reuses them.
"""
from __future__ import annotations

from ..graph import Apply, Constant, Op


class DeepCopyOp(Op):
    """A copy of its input (inserted by the linker so an in-place op does not destroy a value others read)."""
    verified_outputs = True

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type.make_variable()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0].copy()

    def __str__(self):
        return "DeepCopyOp"


def _mapped_inputs(op, index, with_destroy=True):
    found = list((getattr(op, "view_map", None) or {}).get(index, ()))
    if with_destroy:
        found += list((getattr(op, "destroy_map", None) or {}).get(index, ()))
    return found


def buffer_roots(nodes, with_destroy=True):
    """``{id(var): frozenset of id(root var)}`` for every variable computed by ``nodes`` (in order)."""
    roots = {}

    def of(var):
        return roots.get(id(var)) or frozenset((id(var),))

    for node in nodes:
        for k, out in enumerate(node.outputs):
            mapped = _mapped_inputs(node.op, k, with_destroy)
            roots[id(out)] = frozenset().union(*(of(node.inputs[i]) for i in mapped)) if mapped \
                else frozenset((id(out),))
    return of


def _persistent_ids(fgraph, nodes):
    """Variables whose memory outlives a call: inputs, shared values and constants."""
    ids = {id(v) for v in fgraph.inputs}
    ids.update(id(v) for node in nodes for v in node.inputs if isinstance(v, Constant))
    ids.update(id(v) for v in fgraph.outputs if isinstance(v, Constant))
    return ids


def protect_destroyed_inputs(fgraph, mutable=()):
    """Insert a ``DeepCopyOp`` before every input an in-place op may not destroy; returns how many.

    ``mutable``: input variables the caller allowed to be overwritten (``In(x, mutable=True)``).
    """
    inserted = 0
    while True:
        found = _first_unsafe_destroy(fgraph, {id(v) for v in mutable})
        if found is None:
            return inserted
        node, i = found
        node.inputs[i] = DeepCopyOp()(node.inputs[i])
        fgraph.rebuild()
        inserted += 1


def _first_unsafe_destroy(fgraph, mutable_ids):
    nodes = fgraph.toposort()
    if not any(getattr(n.op, "destroy_map", None) for n in nodes):
        return None
    position = {n: k for k, n in enumerate(nodes)}
    roots = buffer_roots(nodes, with_destroy=False)  # an in-place result is a new value from here on
    persistent = _persistent_ids(fgraph, nodes) - mutable_ids
    for node in nodes:
        for i in sorted({i for ins in (getattr(node.op, "destroy_map", None) or {}).values() for i in ins}):
            target = roots(node.inputs[i])
            if target & persistent:
                return node, i
            for var, readers in fgraph.clients.items():
                if not roots(var) & target:
                    continue
                for client, j in readers:
                    if client == "output" or (client is node and j != i) or \
                            (client is not node and position[client] > position[node]):
                        return node, i  # read later (or as an output, or twice by this op): keep a copy
    return None


def plan_results(fgraph, outs, storage, allow_gc):
    """How the call hands out its results.

    Returns ``(outputs, updates, release, gc)``: ``outputs`` is
    ``(cell, must_copy)`` per output, ``updates`` is ``(cell, must_copy)``
    per update value, ``release`` the cells to empty once every result was
    read (their buffers now belong to the caller or a shared variable), and
    ``gc`` the intermediate cells freed after each call when ``allow_gc``.
    """
    nodes = fgraph.toposort()
    roots = buffer_roots(nodes)
    persistent = _persistent_ids(fgraph, nodes)
    computed = [v for node in nodes for v in node.outputs]
    sharing = {}  # root -> the computed variables whose memory may be that root's
    for var in computed:
        for root in roots(var):
            sharing.setdefault(root, []).append(var)
    n_out = fgraph.n_outputs
    out_vars, upd_vars = fgraph.outputs[:n_out], fgraph.outputs[n_out:]
    kept = frozenset().union(*(roots(v) for v, o in zip(out_vars, outs) if o.borrow))
    claimed = set(kept)  # memory already handed out (borrowed outputs keep theirs for the next call)
    release = {}

    def hand_out(var):
        own = roots(var)
        must_copy = bool(own & persistent or own & claimed)
        claimed.update(own)
        if not must_copy:
            for root in own:
                for v in sharing.get(root, ()):
                    release[id(storage[v])] = storage[v]
        return must_copy

    outputs = [(storage[v], False if o.borrow else hand_out(v)) for v, o in zip(out_vars, outs)]
    updates = [(storage[v], hand_out(v)) for v in upd_vars]
    keep = {id(v) for root in kept for v in sharing.get(root, ())}
    gc = [storage[v] for v in computed if id(v) not in keep] if allow_gc else []
    gc_ids = {id(c) for c in gc}
    return outputs, updates, [c for k, c in release.items() if k not in gc_ids], gc
