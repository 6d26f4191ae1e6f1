"""Map, sum and tail as one reduction kernel on a GPU device (:class:`~coursekit.tensor.mapreduce.FusedSum`).

After elementwise fusion, a full ``Sum`` whose input is a fused elementwise node read by nothing else
takes that node's scalar op as its *map*, and a one-element elementwise node that is the sum's only reader
(``sum / N + 0.01 * penalty``, ``b - lr * sum``) becomes its *tail*: three launches become one.  Only for
a GPU device, where each launch costs microseconds; on the CPU NumPy's separate calls cost the same as
any fused Python would, and the graph keeps the ops the lessons show.
"""
from __future__ import annotations

from ..devices import current
from ..scalar.composite import Composite
from ..tensor.elemwise import Elemwise
from ..tensor.mapreduce import FusedSum
from ..tensor.reduction import Sum
from . import global_rewrite
from .patterns import single_client

FLOATS = ("float32", "float64")


@global_rewrite("fusion", "fusion", "fused_reduce")
def fused_reduce(fgraph):
    """Sum(map(x, ...)) [-> tail(sum, scalars)]  ->  FusedSum(map, tail)(x, ..., scalars)"""
    if fgraph.placed or not current().is_gpu:
        return 0
    changes = 0
    for node in fgraph.toposort():
        if not _full_float_sum(node) or node.outputs[0] not in fgraph.clients:
            continue
        (x,) = node.inputs
        producer = x.owner
        if _elementwise(producer) and single_client(fgraph, x) and producer.op.gpu_supported(producer):
            map_op, arrays = producer.op.scalar_op, list(producer.inputs)
        else:
            map_op, arrays = None, [x]
        total = node.outputs[0]
        tail, post_op, scalars = _tail(fgraph, total)
        if map_op is None and post_op is None:
            continue   # a plain sum: it is one kernel already
        result = FusedSum(map_op, len(arrays), post_op, (tail or node).outputs[0].type.dtype)(*arrays, *scalars)
        old = (tail or node).outputs[0]
        if result.type != old.type:
            continue
        fgraph.replace(old, result, reason="fused_reduce")
        fgraph.rewrite_log.append(("fusion", "fused_reduce", str(result.owner.op)))
        changes += 1
    return changes


def _full_float_sum(node):
    return (isinstance(node.op, Sum) and not all(node.inputs[0].type.broadcastable)   # a one-element sum: no pass
            and set(node.op.axis) == set(range(node.inputs[0].type.ndim))
            and node.inputs[0].type.dtype == node.outputs[0].type.dtype in FLOATS)


def _elementwise(node):
    return node is not None and isinstance(node.op, Elemwise) and len(node.outputs) == 1


def _tail(fgraph, total):
    """(tail node, its scalar op with the sum as input 0, the tail's other inputs) or (None, None, [])."""
    if not single_client(fgraph, total):
        return None, None, []
    tail = fgraph.clients[total][0][0]
    if (not _elementwise(tail) or tail.outputs[0].type.ndim != 0 or tail.outputs[0].type.dtype != total.type.dtype
            or not tail.op.gpu_supported(tail) or any(v.type.ndim != 0 for v in tail.inputs)):
        return None, None, []
    others = [v for v in dict.fromkeys(tail.inputs) if v is not total]
    slot = {total: 0, **{v: k + 1 for k, v in enumerate(others)}}
    position = [slot[v] for v in tail.inputs]        # tail input k -> input position in the post op
    scalar_op = tail.op.scalar_op
    if isinstance(scalar_op, Composite):
        program = [(op, tuple(("in", position[i]) if kind == "in" else (kind, i) for kind, i in refs), dtype)
                   for op, refs, dtype in scalar_op.program]
        constants = scalar_op.constants
    else:
        program = [(scalar_op, tuple(("in", p) for p in position), tail.outputs[0].type.dtype)]
        constants = ()
    dtypes = [total.type.dtype] + [v.type.dtype for v in others]
    return tail, Composite(program, constants, len(dtypes), dtypes, None, zero_d=True), others
