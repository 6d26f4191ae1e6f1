"""Elementwise fusion: a chain of elementwise ops becomes one ``Composite`` op.

This module only decides which nodes join a group; what the group becomes
(generated NumPy code, a numba loop, one CUDA kernel) is
:class:`coursekit.scalar.composite.Composite`.

Unfused, ``sigmoid(x * w + b)`` is three nodes, three Python calls and two
temporary arrays.  Fused, it is one node whose implementation is generated
Python that calls the same NumPy ufuncs but writes every intermediate result
into a buffer it owns (``out=``), so no temporary is allocated after the
first.  On a GPU the same Composite becomes ONE generated CUDA kernel (its
``c_code``), which is where fusion really pays: one launch, one pass over
memory.

Why not numexpr?  Measured on this project's logistic-regression step the
arrays are small (hundreds of elements), where numexpr's per-call set-up
costs more than it saves; the generated NumPy code is also readable, which
this course values (``print(op.scalar_op.source)``).
"""
from __future__ import annotations

from ..graph import Constant
from ..scalar import numba_kernels
from ..scalar.composite import Composite, numba_wanted
from ..tensor.elemwise import Elemwise
from ..tensor.math import cast
from . import global_rewrite
from .patterns import RECOMPUTED


def _fusable(node):
    return (node is not None and isinstance(node.op, Elemwise) and node.op.device == "cpu"
            and node.op.scalar_op.name != "identity" and len(node.outputs) == 1)


@global_rewrite("fusion", "fusion", "elemwise")
def fuse_elemwise(fgraph):
    """Fuse every maximal group of CPU Elemwise nodes into one Composite node.

    A group grows upward from a root through producers whose *every* reader is
    already in the group: a chain, but also a diamond (``s = sigmoid(z)`` read
    by two ops that both end in the root), so a value used twice inside one
    kernel is computed once and never written to memory.  Nothing here recurses
    over the graph's depth: a chain of 10,000 ops fuses like a chain of 3.  A single cheap op read by
    several elementwise readers (:func:`_recomputable`) is recomputed inside each of their kernels.
    """
    changes = 0
    numba = numba_wanted()
    order = fgraph.toposort()
    position = {node: k for k, node in enumerate(order)}
    consumed = set()
    for node in reversed(order):
        if node in consumed or not _fusable(node):
            continue
        group = _grow_group(fgraph, node)
        if len(group) < 2 and not (numba and _worth_a_loop_kernel(node)):
            continue
        members = sorted(group, key=position.__getitem__)
        new_out = _build_composite(node, members)
        if new_out is None:
            continue
        consumed.update(group)
        fgraph.replace(node.outputs[0], new_out, reason="fusion")
        fgraph.rewrite_log.append(("fusion", "fuse_elemwise", f"{len(group)} ops -> {new_out.owner.op}"))
        changes += 1
    return changes


def _worth_a_loop_kernel(node):
    """A lone transcendental op over a vector: numba's vectorised loop beats NumPy's call (W1)."""
    return (node.op.scalar_op.name in numba_kernels.LOOP_MATH
            and numba_kernels.loop_modes([v.type for v in node.inputs], node.outputs[0].type) is not None)


def _grow_group(fgraph, root):
    """The root plus every Elemwise producer all of whose readers are in the group.

    A producer read by two members joins when the second of them joins (it is
    looked at again each time one of its readers joins).  The group stays
    convex: every member but the root feeds only members, so no outside node
    can sit between two members.
    """
    group, stack = {root}, [root]
    out_ndim = root.outputs[0].type.ndim
    while stack:
        node = stack.pop()
        for inp in node.inputs:
            producer = inp.owner
            if producer in group or not _fusable(producer) or inp.type.ndim != out_ndim:
                continue
            clients = fgraph.clients.get(inp, [])
            if not clients or any(c == "output" for c, _ in clients):
                continue
            if any(c not in group for c, _ in clients):
                if _recomputable(fgraph, producer):
                    group.add(producer)     # its inputs are the group's inputs: nothing above it joins
                continue
            group.add(producer)
            stack.append(producer)
    return group


def _recomputable(fgraph, node):
    """May ``node`` be computed again inside each reader's kernel?  A single cheap op (``dot + b``) whose
    readers are all elementwise: each fused reader recomputes it, so its result is never written to memory and
    the node disappears once the last reader is fused (``dot + b`` read by the cost and by the gradient)."""
    if node.op.scalar_op.name not in RECOMPUTED:
        return False
    return all(c != "output" and _fusable(c) for c, _ in fgraph.clients.get(node.outputs[0], []))


def _build_composite(root, members):
    """One Elemwise(Composite) computing ``root``'s output from the group's outside inputs.

    ``members`` are in topological order, so every step's arguments exist before
    it (no recursion).  Equal steps are computed once (common subexpressions
    inside the kernel, including those that inlining earlier fusions exposes).
    """
    inputs, input_slot, constants, program, slot, seen_steps = [], {}, [], [], {}, {}
    group = set(members)

    def ref(var):
        if var.owner in group:
            return ("tmp", slot[var])
        if isinstance(var, Constant) and var.data.size == 1:
            return constant_ref(var.data)
        if var not in input_slot:
            input_slot[var] = len(inputs)
            inputs.append(var)
        return ("in", input_slot[var])

    def constant_ref(data):
        for i, c in enumerate(constants):
            if c.dtype == data.dtype and c.shape == data.shape and c.tobytes() == data.tobytes():
                return ("const", i)
        constants.append(data)
        return ("const", len(constants) - 1)

    def step(op, refs, dtype):
        key = (op, refs, dtype)
        if key not in seen_steps:
            program.append((op, refs, dtype))
            seen_steps[key] = len(program) - 1
        return seen_steps[key]

    for node in members:
        outer_refs = [ref(i) for i in node.inputs]
        scalar_op = node.op.scalar_op
        if isinstance(scalar_op, Composite):  # inline an earlier fusion instead of nesting it
            inner = []
            for op, refs, dtype in scalar_op.program:
                new_refs = tuple(outer_refs[i] if kind == "in" else
                                 constant_ref(scalar_op.constants[i]) if kind == "const" else
                                 ("tmp", inner[i]) for kind, i in refs)
                inner.append(step(op, new_refs, dtype))
            slot[node.outputs[0]] = inner[-1]
        else:
            slot[node.outputs[0]] = step(scalar_op, tuple(outer_refs), node.outputs[0].type.dtype)
    if not inputs:  # all constants: leave it to constant folding
        return None
    final = slot[root.outputs[0]]
    program = _live_steps(program, final)
    modes = numba_kernels.loop_modes([v.type for v in inputs], root.outputs[0].type)
    composite = Composite(program, constants, len(inputs), [v.type.dtype for v in inputs], modes,
                          zero_d=root.outputs[0].type.ndim == 0)
    out = Elemwise(composite)(*inputs)
    if out.type != root.outputs[0].type:
        out = cast(out, root.outputs[0].type.dtype) if out.type.dtype != root.outputs[0].type.dtype else out
    return out


def _live_steps(program, final):
    """The steps the final one needs, renumbered, the final one last."""
    live, stack = set(), [final]
    while stack:
        j = stack.pop()
        if j in live:
            continue
        live.add(j)
        stack.extend(i for kind, i in program[j][1] if kind == "tmp")
    if len(live) == len(program) and final == len(program) - 1:
        return program
    keep = sorted(live)
    renumber = {old: new for new, old in enumerate(keep)}
    return [(op, tuple(("tmp", renumber[i]) if kind == "tmp" else (kind, i) for kind, i in refs), dtype)
            for op, refs, dtype in (program[j] for j in keep)]
