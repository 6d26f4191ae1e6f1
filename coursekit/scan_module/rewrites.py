"""Rewrites of Scan nodes.

``scan_dot_to_gemm``: a loop whose every step is one matrix-vector product
with the same matrix, ``out[t] = dot(W, x[t])`` (or ``dot(x[t], W)``), is
one matrix-matrix product over all rows at once: ``dot(X, W.T)`` (or
``dot(X, W)``).  The slides' remark about exactly this loop: "this should be
just a GEMM call".  One BLAS call instead of n Python steps and n GEMV calls.
"""
from __future__ import annotations

from ..rewriting import local_rewrite
from ..tensor import math as M
from ..tensor.blas import Dot
from .op import Scan


@local_rewrite("specialize", "fast_run", "scan", "scan_dot_to_gemm")
def scan_dot_to_gemm(fgraph, node):
    """Scan{out[t] = dot(W, x[t])} -> dot(X[:n], W.T); Scan{out[t] = dot(x[t], W)} -> dot(X[:n], W)"""
    op = node.op
    if not isinstance(op, Scan):
        return None
    info = op.info
    if info.n_seqs != 1 or info.n_outs != 1 or info.taps[0] or info.n_shared or info.until:
        return None
    out = op.inner_outputs[0]
    if out.owner is None or not isinstance(out.owner.op, Dot):
        return None
    seq_inner = op.inner_inputs[0]
    nonseq_inner = op.inner_inputs[1:]
    a, b = out.owner.inputs
    n_steps, (seq,), _, _, nonseqs = op.split_inputs(node.inputs)
    if seq.type.ndim != 2 or seq_inner.type.ndim != 1:
        return None
    outer_of = dict(zip(map(id, nonseq_inner), nonseqs))
    rows = seq[:n_steps]
    if a is seq_inner and id(b) in outer_of and b.type.ndim == 2:
        result = M.dot(rows, outer_of[id(b)])
    elif b is seq_inner and id(a) in outer_of and a.type.ndim == 2:
        result = M.dot(rows, outer_of[id(a)].T)
    else:
        return None
    if result.type.dtype != node.outputs[0].type.dtype:
        return None
    return [result]
