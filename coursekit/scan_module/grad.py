"""The gradient of a Scan: another scan, running backwards through time.

For a loop ``y_t = f(s_t, y_{t+tau} for tau in taps, p)`` the backward loop
visits t = n-1, ..., 0 and carries, for each recurrent output, an
accumulator ``acc`` of the gradients already flowing into ``y_t, y_{t-1},
..., y_{t-K+1}`` from later steps (K = how far back the taps reach).  At
step t:

* the total gradient of ``y_t`` is the cost's own (``g_Y[t]``) plus ``acc[0]``;
* differentiating one step (the forward step's graph, rebuilt on the stored
  values) sends a gradient to each tap value ``y_{t+tau}``: it is added to
  the accumulator slot ``-tau - 1`` after the accumulator shifts by one;
* gradients of the non-sequences are summed over the steps, gradients of the
  sequences are collected per step.

After step 0 the accumulator holds the gradients of the initial values.
``truncate_gradient=k`` runs only the last k steps backwards (earlier steps
and the initial state get zero), as Theano did.
"""
from __future__ import annotations

from ..gradient import UndefinedGrad, grad
from ..graph import clone_replace
from ..tensor import math as M
from ..tensor.advanced import inc_subtensor
from ..tensor.construct import zeros
from .builder import scan


def _is_float(var):
    return var.type.dtype[0] in "fc"


def scan_grad(op, inputs, outputs, output_grads):
    info = op.info
    if info.n_shared:
        return _refuse_random(op, inputs)
    n_steps, seqs, inits, _, nonseqs = op.split_inputs(inputs)
    traces = outputs[:info.n_outs]
    g_traces = output_grads[:info.n_outs]
    n_done = traces[0].shape[0] if traces else n_steps  # with until, fewer steps may have run
    k_trunc = info.truncate_gradient
    n_back = M.minimum(n_done, k_trunc) if k_trunc is not None and k_trunc >= 0 else n_done
    start = n_done - n_back  # the first step the backward loop reaches

    recurrent = info.recurrent
    depths = {k: info.depth(k) for k in recurrent}
    # the values each tap read at every step: buffer = initial[:K] + trace
    tap_seqs = []
    for k, init in zip(recurrent, inits):
        buffer = M.concatenate([init[:depths[k]], traces[k]])
        for tap in info.taps[k]:
            offset = depths[k] + tap
            tap_seqs.append(buffer[offset + start:offset + n_done])
    seq_slices = [s[start:n_done] for s in seqs]
    g_slices = [g[start:n_done] for g in g_traces]

    float_nonseqs = [i for i, p in enumerate(nonseqs) if _is_float(p)]
    float_seqs = [i for i, s in enumerate(seqs) if _is_float(s)]
    n_seq_in = len(seq_slices) + len(g_slices) + len(tap_seqs)

    def backward_step(*args):
        seq_vals = list(args[:len(seq_slices)])
        g_vals = list(args[len(seq_slices):len(seq_slices) + len(g_slices)])
        tap_vals = list(args[len(seq_slices) + len(g_slices):n_seq_in])
        rest = list(args[n_seq_in:])
        accs, rest = rest[:len(recurrent)], rest[len(recurrent):]
        g_params, params = rest[:len(float_nonseqs)], rest[len(float_nonseqs):]
        # rebuild one forward step on this step's values
        inner_in = op.inner_inputs
        n_taps = sum(len(info.taps[k]) for k in recurrent)
        replace = dict(zip(inner_in[:info.n_seqs], seq_vals))
        replace.update(zip(inner_in[info.n_seqs:info.n_seqs + n_taps], tap_vals))
        replace.update(zip(inner_in[info.n_seqs + n_taps:], params))
        step_outs, _ = clone_replace(op.inner_outputs[:info.n_outs], replace)
        known = {}
        for k, out in enumerate(step_outs):
            total = g_vals[k]
            if k in recurrent:
                total = total + accs[recurrent.index(k)][0]
            if _is_float(out):
                known[out] = total
        wrt = [seq_vals[i] for i in float_seqs] + [v for v in tap_vals] + [params[i] for i in float_nonseqs]
        grads = grad(None, wrt, known_grads=known, disconnected_inputs="ignore") if wrt else []
        g_seq = grads[:len(float_seqs)]
        g_tap = grads[len(float_seqs):len(float_seqs) + len(tap_vals)]
        g_par = grads[len(float_seqs) + len(tap_vals):]
        new_accs, pos = [], 0
        for j, k in enumerate(recurrent):
            acc = accs[j]
            shifted = M.concatenate([acc[1:], M.zeros_like(acc[:1])]) if depths[k] > 1 else M.zeros_like(acc)
            for tap in info.taps[k]:
                shifted = inc_subtensor(shifted[-tap - 1], g_tap[pos])
                pos += 1
            new_accs.append(shifted)
        new_g_params = [gp + g for gp, g in zip(g_params, g_par)]
        return new_accs + new_g_params + g_seq

    acc_init = [zeros([depths[k]] + [init.shape[d] for d in range(1, init.type.ndim)], dtype=init.type.dtype)
                for k, init in zip(recurrent, inits)]
    g_param_init = [M.zeros_like(nonseqs[i]) for i in float_nonseqs]
    outputs_info = acc_init + g_param_init + [None] * len(float_seqs)
    results, _ = scan(backward_step, sequences=seq_slices + g_slices + tap_seqs, outputs_info=outputs_info,
                      non_sequences=nonseqs, n_steps=n_back, go_backwards=True, return_list=True,
                      name=f"grad_of_{info.name}", mode=info.mode)
    acc_traces = results[:len(recurrent)]
    g_param_traces = results[len(recurrent):len(recurrent) + len(float_nonseqs)]
    g_seq_traces = results[len(recurrent) + len(float_nonseqs):]

    reached_start = M.eq(start, 0)
    g_inits = []
    for (k, init), acc in zip(zip(recurrent, inits), acc_traces):
        final = acc[-1][::-1]  # acc[j] was the gradient of y_{-1-j}: buffer row K-1-j
        padded = M.concatenate([final, M.zeros_like(init[depths[k]:])])  # rows past the taps' reach: unused
        g_inits.append(M.switch(reached_start, padded, M.zeros_like(padded)))
    g_nonseqs = [None] * len(nonseqs)
    for i, trace in zip(float_nonseqs, g_param_traces):
        g_nonseqs[i] = trace[-1]
    g_seqs = [None] * len(seqs)
    for i, trace in zip(float_seqs, g_seq_traces):
        forward = trace[::-1]  # the backward loop produced them last step first
        before = M.zeros_like(seqs[i][:start])
        after = M.zeros_like(seqs[i][n_done:])
        g_seqs[i] = M.concatenate([before, forward, after])
    return [None] + g_seqs + g_inits + [None] * info.n_shared + g_nonseqs


def _refuse_random(op, inputs):
    """A step that draws random numbers cannot be replayed backwards with the same numbers: say so."""
    reason = (f"the gradient through {op} is not available: its step draws random numbers (or updates shared "
              "variables), and replaying it backwards would draw different ones. Treat the sampled outputs as data: "
              "grad(cost, params, consider_constant=[samples]) (what the RBM tutorial does with its chain end)")
    return [None] + [UndefinedGrad(reason) if _is_float(v) else None for v in inputs[1:]]
