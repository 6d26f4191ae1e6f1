"""``dot(x, y) + z`` (optionally scaled) -> one ``Gemm``/``Gemv`` call.

BLAS computes ``beta * z + alpha * dot(x, y)`` in a single pass; writing the
dot and the addition separately costs an extra temporary and an extra trip
through memory.  The rewrite also makes the GPU lesson's point visible: with
everything on the device, ``y = dot(m, x) + b`` compiles to one ``GpuGemm``.
"""
from __future__ import annotations

import numpy as np

from ..devices import current
from ..graph import Constant
from ..tensor.blas import Dot, Gemm, Gemv
from ..tensor.elemwise import Elemwise
from ..tensor.reduction import Sum
from ..tensor.var import constant
from . import local_rewrite
from .patterns import ADD, MUL, NEG, SQR, SUB, cpu_scalar_op, scalar_constant, single_client


def _scaled(var):
    """(scale, core) for ``c * core`` / ``core * c`` with a scalar constant c, else (1, var)."""
    node = var.owner
    if cpu_scalar_op(node) == MUL:
        a, b = node.inputs
        for c, core in ((a, b), (b, a)):
            value = scalar_constant(c)
            if value is not None:
                return value, core
    if cpu_scalar_op(node) == NEG:
        return -1, node.inputs[0]
    return 1, var


def _dot_node(fgraph, var):
    node = var.owner
    if node is not None and isinstance(node.op, Dot) and single_client(fgraph, var):
        x, y = node.inputs
        if x.type.ndim == 2:
            return node
    return None


@local_rewrite("specialize", "gemm", "blas", tracks=[Elemwise(ADD), Elemwise(SUB)])
def dot_plus_to_gemm(fgraph, node):
    """alpha*dot(x, y) + beta*z  (or minus)  ->  Gemm/Gemv(z, alpha, x, y, beta)"""
    op = cpu_scalar_op(node)
    if op not in (ADD, SUB):
        return None
    out = node.outputs[0]
    left, right = node.inputs
    s = 1 if op == ADD else -1
    # out = left + s*right: try the dot on either side
    for dot_side, z_side, dot_sign, z_sign in ((left, right, 1, s), (right, left, s, 1)):
        if not single_client(fgraph, dot_side):
            continue
        scale_d, core = _scaled(dot_side)
        dot = _dot_node(fgraph, core)
        if dot is None:
            continue
        scale_z, z = _scaled(z_side)
        if dot.outputs[0].type.broadcastable != out.type.broadcastable or z.type.ndim > out.type.ndim:
            continue  # z would enlarge the result: not a GEMM
        if _bias_fuses_into_readers(fgraph, z, out):
            continue
        dtype = out.type.dtype
        if any(v.type.dtype != dtype for v in (z, *dot.inputs)):
            continue
        op = Gemv() if dot.inputs[1].type.ndim == 1 else Gemm()
        alpha, beta = constant(np.asarray(dot_sign * scale_d, dtype)), constant(np.asarray(z_sign * scale_z, dtype))
        return [op(z, alpha, dot.inputs[0], dot.inputs[1], beta)]
    return None


def _bias_fuses_into_readers(fgraph, z, out):
    """Is ``dot + z`` better left to fusion?  When z is broadcast (a bias scalar or row) and every reader
    of the sum is elementwise: BLAS reads and writes its output in one buffer, so a GEMM/GEMV with such
    a z first copies it out in full (one more kernel on a GPU), while fusion recomputes the cheap add
    inside each reader's kernel (``Composite``) and the product needs no copy at all.  Only for a GPU device:
    on the CPU the copy is a memcpy as cheap as the add, and the graph keeps its one ``Gemv``."""
    if z.type.broadcastable == out.type.broadcastable or not current().is_gpu:
        return False
    clients = fgraph.clients.get(out, [])
    return bool(clients) and all(c != "output" and (isinstance(c.op, Elemwise) or getattr(c.op, "shape_only", False))
                                 for c, _ in clients)


@local_rewrite("specialize", "gemm", "blas", "inplace", tracks=[Gemm])
def gemm_inplace(fgraph, node):
    """Let Gemm overwrite ``z`` when nobody else reads it (saves the last copy)."""
    op = node.op
    if not isinstance(op, Gemm) or op.inplace:
        return None
    z = node.inputs[0]
    if z.owner is None or isinstance(z, Constant) or not single_client(fgraph, z):
        return None
    if getattr(z.owner.op, "view_map", None):
        return None  # z is a view of something else: writing it would corrupt that
    if z.type.broadcastable != node.outputs[0].type.broadcastable:
        return None
    return [type(op)(inplace=True)(*node.inputs)]


@local_rewrite("specialize", "gemm", "blas", tracks=[Elemwise(ADD), Elemwise(SUB)])
def fold_into_gemv(fgraph, node):
    """u - c*Gemv(u, alpha, x, y, beta)  ->  Gemv(u, -c*alpha, x, y, 1 - c*beta)   (and with +)

    A gradient step ``w - lr * (dot(X.T, d) + l2 * w)`` is a Gemv whose ``z`` is ``w``
    itself, then an elementwise pass; folding the step into the Gemv's scalars leaves
    one BLAS call and no extra pass over ``w``.
    """
    op = cpu_scalar_op(node)
    if op not in (ADD, SUB):
        return None
    left, right = node.inputs
    sign = 1 if op == ADD else -1
    for u, scaled, s in ((left, right, sign), (right, left, 1)):
        if op == SUB and u is right:
            continue  # (c*G) - u is not of the form u + s*c*G
        scale, core = _scaled(scaled)
        gemv = core.owner
        if gemv is None or type(gemv.op) not in (Gemv, Gemm) or not single_client(fgraph, core):
            continue
        z, alpha, x, y, beta = gemv.inputs
        a, b = scalar_constant(alpha), scalar_constant(beta)
        if z is not u or a is None or b is None or core.type != node.outputs[0].type:
            continue
        dtype = core.type.dtype
        return [type(gemv.op)()(z, constant(np.asarray(s * scale * a, dtype)), x, y,
                                constant(np.asarray(1 + s * scale * b, dtype)))]
    return None


@local_rewrite("specialize", "blas", tracks=[Sum])
def sum_of_squares_to_dot(fgraph, node):
    """sum(sqr(x)) (or sum(x * x)) of a float vector  ->  dot(x, x)

    The L2 penalty of a training step squares a weight vector and sums it: two kernels on a GPU (the square
    written to memory, then read back by the reduction), or one BLAS dot that reads ``x`` once.
    """
    if not isinstance(node.op, Sum) or node.op.axis != (0,):
        return None
    (sq,) = node.inputs
    inner = sq.owner
    op = cpu_scalar_op(inner)
    if op == SQR:
        x = inner.inputs[0]
    elif op == MUL and len(inner.inputs) == 2 and inner.inputs[0] is inner.inputs[1]:
        x = inner.inputs[0]
    else:
        return None
    if (x.type.ndim != 1 or x.type.broadcastable[0] or not x.type.dtype.startswith("float")
            or sq.type.dtype != x.type.dtype or node.outputs[0].type.dtype != x.type.dtype
            or not single_client(fgraph, sq)):
        return None
    return [Dot()(x, x)]
