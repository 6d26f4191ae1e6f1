"""Rewrites of Scan nodes (both in the ``specialize`` stage, tagged ``scan``).

``scan_dot_to_gemm``: a loop whose every step is one matrix-vector product
with the same matrix, ``out[t] = dot(W, x[t])`` (or ``dot(x[t], W)``), is
one matrix-matrix product over all rows at once: ``dot(X, W.T)`` (or
``dot(X, W)``).  The slides' remark about exactly this loop: "this should be
just a GEMM call".  One BLAS call instead of n Python steps and n GEMV calls.
"""
from __future__ import annotations

from dataclasses import replace

from ..graph import apply_nodes_between, clone_replace
from ..rewriting import local_rewrite
from ..tensor import math as M
from ..tensor.blas import Dot
from ..tensor.type import TensorType
from .op import Scan


@local_rewrite("specialize", "fast_run", "scan", "scan_dot_to_gemm", tracks=[Scan])
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
    return [_traced(result, [rows, *nonseqs], out.tag.trace)]


@local_rewrite("specialize", "fast_run", "scan", "scan_pushout_seq_dot", tracks=[Scan])
def scan_pushout_seq_dot(fgraph, node):
    """dot(x[t], W) inside a loop, with x a sequence and W a non-sequence, is row t of dot(X, W):
    compute that one GEMM before the loop and hand the loop its rows (Theano's push-out of sequence ops).

    An RNN step ``tanh(dot(x_t, W) + dot(h, U))`` then does one matrix-vector product per step instead of two.
    """
    op = node.op
    if not isinstance(op, Scan) or op.info.n_seqs == 0:
        return None
    info = op.info
    seq_inner = op.inner_inputs[:info.n_seqs]
    n_front = info.n_seqs + sum(len(info.taps[k]) for k in info.recurrent) + info.n_shared
    nonseq_inner = op.inner_inputs[n_front:]
    n_steps, seqs, inits, states, nonseqs = op.split_inputs(node.inputs)
    found = _seq_dot(op.inner_outputs, seq_inner, nonseq_inner)
    if found is None:
        return None
    dot_var, seq_index, w_index, seq_first = found
    rows = seqs[seq_index][:n_steps]
    w = nonseqs[w_index]
    pushed = M.dot(rows, w) if seq_first else M.dot(rows, w.T)  # row t of X W, or of X W^T = (W x_t)^T
    pushed = _traced(pushed, [rows, *nonseqs], dot_var.tag.trace)
    new_ph = TensorType(dot_var.type.dtype, dot_var.type.broadcastable).make_variable("pushed_dot[t]")
    inner_out, _ = clone_replace(op.inner_outputs, {dot_var: new_ph})
    inner_in = seq_inner + [new_ph] + op.inner_inputs[info.n_seqs:]
    new_info = replace(info, n_seqs=info.n_seqs + 1)
    new_op = Scan(inner_in, inner_out, new_info, trace=op.trace)
    outs = new_op(n_steps, *seqs, pushed, *inits, *states, *nonseqs)
    return outs if isinstance(outs, list) else [outs]


def _traced(result, inputs, trace):
    """Give the nodes a rewrite built the user's line of the inner op they replace.

    Built inside ``function()``, they would otherwise name the line that
    compiled the function, and an error in the pushed-out product (a shape
    mismatch) would not point at the step function's ``dot``.
    """
    for apply in apply_nodes_between(inputs, [result]):
        for out in apply.outputs:
            out.tag.trace = trace
    return result


def _seq_dot(outputs, seq_inner, nonseq_inner):
    """(dot variable, sequence index, non-sequence index, sequence first?) of one dot(x_t, W) in the step."""
    seq_ids = {id(v): k for k, v in enumerate(seq_inner)}
    nonseq_ids = {id(v): k for k, v in enumerate(nonseq_inner)}
    for apply in apply_nodes_between(seq_inner + nonseq_inner, outputs):
        if not isinstance(apply.op, Dot):
            continue
        a, b = apply.inputs
        if id(a) in seq_ids and id(b) in nonseq_ids and a.type.ndim == 1 and b.type.ndim == 2:
            return apply.outputs[0], seq_ids[id(a)], nonseq_ids[id(b)], True
        if id(b) in seq_ids and id(a) in nonseq_ids and b.type.ndim == 1 and a.type.ndim == 2:
            return apply.outputs[0], seq_ids[id(b)], nonseq_ids[id(a)], False
    return None
