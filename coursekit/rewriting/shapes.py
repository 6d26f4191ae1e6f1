"""Reading a shape without computing the array: ``NumElements(f(x, y))`` needs x and y, not f.

``xent.mean()`` divides by ``NumElements(xent)``, and the gradient of a mean
fills an array shaped like ``xent``; compiled literally, the whole ``xent``
formula runs only so that its length can be read.  The shape of an
elementwise result is the shape its inputs agree on, so it can be read from
them -- *provided the agreement is still checked*: coursekit refuses, at run
time, elementwise inputs whose lengths differ in a dimension their types do
not declare broadcastable (that is what stops a gradient from silently
reshaping a parameter).  Every shortcut here keeps that check, either because
the dropped array is computed anyway, or with :class:`CheckedShape`, which
reads only shapes.
"""
from __future__ import annotations

import numpy as np

from ..devices import current
from ..graph import Apply, Op
from ..tensor.elemwise import Elemwise
from ..tensor.reduction import NumElements
from ..tensor.shape import Shape
from . import local_rewrite
from .patterns import RECOMPUTED, SECOND, scalar_op_of

SHAPE_WALK_LIMIT = 64


class CheckedShape(Op):
    """``inner`` (a shape-only op such as NumElements) of the first input, after checking that
    all inputs agree in every dimension their types do not declare broadcastable -- the check
    the elementwise op they came from would have made.  Reads shapes only (device arrays stay
    where they are)."""
    verified_outputs = True

    __props__ = ("inner",)
    shape_only = True

    def __init__(self, inner):
        self.inner = inner

    def __str__(self):
        return f"CheckedShape{{{self.inner}}}"

    def make_node(self, *arrays):
        template = self.inner.make_node(arrays[0])
        return Apply(self, list(arrays), [o.type.make_variable() for o in template.outputs])

    def perform(self, node, inputs, output_storage):
        shapes = [x.shape for x in inputs]
        for axis in range(len(shapes[0])):
            sizes = {s[axis] for s, v in zip(shapes, node.inputs) if not v.type.broadcastable[axis]}
            if len(sizes) > 1:
                detail = ", ".join(f"{v} {s}" for s, v in zip(shapes, node.inputs))
                raise ValueError(
                    f"elementwise inputs disagree in dimension {axis}: {detail}. Their types do not declare that "
                    "dimension broadcastable, so the lengths must be equal. Declare it (T.row/T.col, "
                    "shared(value, broadcastable=...), x.dimshuffle('x', ...)) or fix the shapes.")
        self.inner.perform(node, inputs[:1], output_storage)

    def make_thunk(self, node, storage_map):
        """The common case, every input of the first one's shape, costs one comparison each."""
        cells = [storage_map[v] for v in node.inputs]
        out = [storage_map[node.outputs[0]]]
        first, perform, inner = cells[0], self.perform, self.inner.perform
        dtype, array = np.dtype(getattr(self.inner, "dtype", "int64")), np.array

        every_axis = (isinstance(self.inner, NumElements)
                      and set(self.inner.axis) == set(range(node.inputs[0].type.ndim)))

        def thunk():
            x = first[0]
            shape = x.shape
            for cell in cells:
                if cell[0].shape != shape:  # broadcasting, or a mismatch: the full check says which
                    perform(node, [c[0] for c in cells], out)
                    return
            if every_axis:
                out[0][0] = array(x.size, dtype)   # a mean's N, without one more Python call per step
            else:
                inner(node, (x,), out)

        return thunk

    def L_op(self, inputs, outputs, output_grads):
        return [None] * len(inputs)


@local_rewrite("canonicalize", "algebra", "shape", tracks=[Shape, NumElements])
def shape_of_elemwise(fgraph, node):
    """NumElements(op(x, y)) -> NumElements(x) (and the same for Shape) when x alone has the
    output's length along the axes that matter and that cannot hide a shape error; when the
    elementwise result is needed for nothing but shapes, -> CheckedShape(NumElements)(x, y)."""
    if not getattr(node.op, "shape_only", False) or len(node.inputs) != 1 or isinstance(node.op, CheckedShape):
        return None
    source = node.inputs[0].owner
    if source is None or not isinstance(source.op, Elemwise) or len(source.outputs) != 1:
        return None
    out_bcast = source.outputs[0].type.broadcastable
    axes = getattr(node.op, "axis", None)
    axes = range(len(out_bcast)) if axes is None else axes

    def fits(candidate):
        bcast = candidate.type.broadcastable
        return len(bcast) == len(out_bcast) and all(bcast[a] == out_bcast[a] for a in axes)

    for candidate in source.inputs:
        if fits(candidate) and shape_still_checked(fgraph, node.inputs[0], candidate):
            return node.op.make_node(candidate).outputs
    if _values_needed(fgraph, node.inputs[0], unknown=True):
        return None
    leaves = _elementwise_leaves(fgraph, node.inputs[0], stop_where_computed=True)
    first = next((v for v in sorted(leaves or (), key=str) if fits(v)), None)
    if first is None:
        return None
    others = sorted((v for v in leaves if v is not first), key=str)
    return CheckedShape(node.op)(first, *others).owner.outputs if others else node.op.make_node(first).outputs


def shape_still_checked(fgraph, dropped, kept):
    """May a rewrite stop reading ``dropped`` (whose shape mattered) and read ``kept`` instead?

    Yes when ``dropped`` is computed anyway (another reader needs its values), or
    when every array ``dropped`` was built from (through elementwise ops) is also
    one that ``kept`` is built from, so the same lengths are still compared.
    Walks at most ``SHAPE_WALK_LIMIT`` nodes.
    """
    if _values_needed(fgraph, dropped, unknown=False):
        return True
    need, have = _elementwise_leaves(fgraph, dropped), _elementwise_leaves(fgraph, kept)
    return need is not None and have is not None and need <= have


def _read_for_shape_only(fgraph, var):
    """True when no reader of ``var`` needs its values: only fills (as their shape) and shape ops."""
    return not any(_reads_values(client, i) for client, i in fgraph.clients.get(var, []))


def _reads_values(client, i):
    if client == "output":
        return True
    return not (getattr(client.op, "shape_only", False) or (scalar_op_of(client) == SECOND and i == 0))


def _values_needed(fgraph, var, unknown):
    """Is ``var``'s value needed by an output (through readers that use values)?  Returns
    ``unknown`` when the answer would take more than ``SHAPE_WALK_LIMIT`` steps to find."""
    stack, seen = [var], set()
    while stack:
        v = stack.pop()
        for client, i in fgraph.clients.get(v, []):
            if not _reads_values(client, i):
                continue
            if client == "output":
                return True
            if client not in seen:
                seen.add(client)
                if len(seen) > SHAPE_WALK_LIMIT:
                    return unknown
                stack.extend(client.outputs)
    return False


def _elementwise_leaves(fgraph, var, stop_where_computed=False):
    """The arrays with a non-broadcastable dimension that ``var`` is computed from through
    Elemwise nodes (as a set), or None past the walk limit.  With ``stop_where_computed``
    the walk stops at arrays that are computed anyway: their own elementwise op checks
    the arrays they come from (and a shape check then reads them, not a Dot that a Gemv
    rewrite is about to absorb)."""
    leaves, stack, seen = set(), [var], set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if len(seen) > SHAPE_WALK_LIMIT:
            return None
        if all(v.type.broadcastable):
            continue  # length 1 everywhere: it constrains nothing
        if v.owner is not None and isinstance(v.owner.op, Elemwise) and (
                v is var or not stop_where_computed or not _values_needed(fgraph, v, unknown=True)):
            stack.extend(v.owner.inputs)
        else:
            leaves.add(v)
    return leaves


@local_rewrite("stabilize", "algebra", "shape", tracks=[CheckedShape])
def shape_check_reads_through_cheap_ops(fgraph, node):
    """CheckedShape(dot + b, y) -> CheckedShape(dot, y) when b is one element (and likewise through any cheap op:
    ``RECOMPUTED``), so fusion may recompute ``dot + b`` inside its readers' kernels instead of keeping it in
    memory for a shape read.  The inputs of an elementwise op agree where its result does (it checked them), so
    the same lengths are compared; the first input (whose element count is the answer) keeps the result's
    broadcast pattern on every axis the inner op reads.  For a GPU device, where ``dot + b`` is left to fusion
    (``rewriting.blas``); on the CPU the shape read keeps the sum, which becomes the GEMV's output."""
    if not current().is_gpu:
        return None
    inputs, changed = [], False
    axes = getattr(node.op.inner, "axis", None)
    for k, v in enumerate(node.inputs):
        source = v.owner
        if source is None or scalar_op_of(source) is None or scalar_op_of(source).name not in RECOMPUTED:
            inputs.append(v)
            continue
        arrays = [i for i in source.inputs if not all(i.type.broadcastable)]
        bcast = v.type.broadcastable
        fits = [i for i in arrays if all(i.type.broadcastable[a] == bcast[a]
                                         for a in (range(len(bcast)) if axes is None else axes))]
        if not arrays or (k == 0 and not fits) or any(i.type.ndim != v.type.ndim for i in arrays):
            inputs.append(v)
            continue
        arrays = ([fits[0]] + [i for i in arrays if i is not fits[0]]) if k == 0 else arrays
        inputs.extend(arrays)
        changed = True
    if not changed:
        return None
    unique = list(dict.fromkeys(inputs))
    return CheckedShape(node.op.inner)(*unique).owner.outputs
