"""When each intermediate buffer of a call dies, and who may inherit it.

``allow_gc=True`` promises that a call does not hold buffers it no longer
needs.  Freeing them only when the call ends means an unfused chain of 20
elementwise ops holds 20 buffers at its peak; freeing each one right after
its last reader ran holds 2.  Better still, that last reader can *inherit*
the buffer and write its result into it: an elementwise op computes
``out[i] = f(x[i], ...)`` element by element, so ``out`` may be ``x`` (every
scalar op promises to read its inputs before writing, see ScalarOp).  Then
the whole chain lives in one buffer.

A buffer lives as long as every variable that may share its memory: the
views of it (``view_map``: a transpose, a reshape, a dimshuffle) and what was
computed in place into it (``destroy_map``).  It dies after the last node
that reads any of them.  Buffers that one of those variables carries out of
the call (an output, an update value, a borrowed output) or that outlive the
call anyway (inputs, shared values, constants) are never freed here.
"""
from __future__ import annotations

from ..graph import Constant
from ..tensor.elemwise import Elemwise


def buffer_lifetimes(inputs, nodes, carried_out, borrowed=()):
    """``(frees, inherits)`` for ``nodes`` in run order.

    ``frees[k]``: variables whose storage cells can be emptied right after node k.
    ``inherits[k]``: an input variable of node k whose buffer node k's output may be
    computed into (its last reader is node k), or None.
    ``carried_out``: variables whose values leave the call (outputs, update values).
    ``borrowed``: outputs returned with ``Out(borrow=True)``: their buffer is reused call
    after call, so they never inherit one (an output otherwise may: the buffer was a temporary).
    """
    owner_of, sharers = {}, {}
    for node in nodes:
        aliases = dict(getattr(node.op, "view_map", None) or {})
        for out, ins in (getattr(node.op, "destroy_map", None) or {}).items():
            aliases.setdefault(out, list(ins))
        for k, out in enumerate(node.outputs):
            src = aliases.get(k)
            owner = owner_of.get(node.inputs[src[0]], node.inputs[src[0]]) if src else out
            owner_of[out] = owner
            sharers.setdefault(owner, []).append(out)
    last_reader = {}
    for k, node in enumerate(nodes):
        for v in node.inputs:
            last_reader[owner_of.get(v, v)] = k
    kept = {owner_of.get(v, v) for v in carried_out} | set(inputs)
    position = {node: k for k, node in enumerate(nodes)}
    frees = [[] for _ in nodes]
    for owner, variables in sharers.items():
        if owner in kept or isinstance(owner, Constant) or owner.owner not in position:
            continue
        frees[last_reader.get(owner, position[owner.owner])].extend(variables)
    inherits = [None] * len(nodes)
    for k, node in enumerate(nodes):
        if not _may_inherit(node) or node.outputs[0] in borrowed:
            continue
        dying = set(frees[k])
        out_type = node.outputs[0].type
        for v in node.inputs:
            if (v in dying and owner_of.get(v) is v and _computes_fresh_buffers(v.owner)
                    and v.type == out_type):
                inherits[k] = v
                break
    return frees, inherits


def _may_inherit(node):
    """Elementwise CPU ops write their result into the buffer in their output cell when it fits."""
    return type(node.op) is Elemwise and node.op.device == "cpu" and len(node.outputs) == 1


def _computes_fresh_buffers(node):
    """Ops known never to return (a view of) an input: their outputs are buffers of their own."""
    return node is not None and _may_inherit(node)
