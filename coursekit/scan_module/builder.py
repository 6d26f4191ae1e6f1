"""``scan(fn, sequences, outputs_info, non_sequences, n_steps, ...)``: Theano's loop, building the Scan node.

``fn`` is called once, on placeholder variables, to build the graph of one
step; the loop itself runs inside the compiled function.  The arguments
follow Theano exactly (the order ``fn`` receives its arguments: every tap of
every sequence, then every tap of every recurrent output, then the
non-sequences).  Everything that can be checked while building is checked
here, with messages that say what was wrong and what to write instead.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..compile.sharedvalue import SharedVariable
from ..graph import Constant, Variable, clone_replace, format_trace, graph_inputs, user_trace
from ..tensor import math as M
from ..tensor.shape import ShapeI
from ..tensor.type import TensorType
from ..tensor.var import as_tensor_variable
from .op import Scan, ScanInfo


class until:  # noqa: N801 - Theano's name
    """Return ``until(condition)`` from the step function to stop after the step where it is true."""

    def __init__(self, condition):
        condition = as_tensor_variable(condition)
        if condition.type.ndim != 0:
            raise TypeError(f"until(condition): the condition must be a scalar, got {condition.type}")
        self.condition = condition


class ScanError(TypeError):
    """The step function or the arguments of scan() do not fit together."""


def _where():
    return format_trace(user_trace())


def _element_type(var, what):
    if var.type.ndim < 1:
        raise ScanError(f"scan: {what} {var} is a scalar ({var.type}); a sequence needs a leading axis to loop "
                        f"over. Called at {_where()}")
    return TensorType(var.type.dtype, var.type.broadcastable[1:])


def _host_type(ttype):
    """The host version of a type: inner placeholders are host values (the loop runs on the host)."""
    return ttype.host_type() if hasattr(ttype, "host_type") else ttype


def _placeholder(ttype, name):
    return _host_type(ttype).make_variable(name)


def _normalize_sequences(sequences, go_backwards):
    """One (outer slice, inner placeholder) per tap of every sequence."""
    outer, inner, lengths = [], [], []
    for i, seq in enumerate(_as_list(sequences)):
        taps = [0]
        if isinstance(seq, dict):
            if "input" not in seq:
                raise ScanError(f"scan: sequence {i} is a dict without 'input'; write dict(input=x, taps=[...]). "
                                f"Called at {_where()}")
            taps = list(seq.get("taps", [0]) or [0])
            seq = seq["input"]
        seq = as_tensor_variable(seq)
        etype = _element_type(seq, f"sequence {i}")
        if go_backwards:
            seq = seq[::-1]
        lo, hi = min(taps), max(taps)
        span = hi - lo
        rows = ShapeI(0)(seq)  # read on the host, also for a device array: the loop's driver needs it there
        length = rows - span if span else rows
        lengths.append(length)
        for tap in taps:
            start = tap - lo
            outer.append(seq if span == 0 else seq[start:start + length])
            inner.append(_placeholder(etype, f"{seq.name or f'seq{i}'}[t{tap:+d}]" if tap else
                                      f"{seq.name or f'seq{i}'}[t]"))
    return outer, inner, lengths


def _normalize_outputs(outputs_info):
    """Per output: (taps, initial buffer or None, inner placeholders, initial element type)."""
    result = []
    for k, info in enumerate(_as_list(outputs_info)):
        if info is None or (isinstance(info, dict) and info.get("initial") is None):
            result.append(((), None, [], None))
            continue
        if isinstance(info, dict):
            taps = list(info.get("taps", [-1]))
            initial = as_tensor_variable(info["initial"])
            if not taps:
                result.append(((), None, [], None))
                continue
            if any(not isinstance(t, int) or t >= 0 for t in taps):
                raise ScanError(f"scan: outputs_info[{k}] has taps {taps}; an output's taps must be negative ints "
                                f"(the steps before the current one, e.g. [-2, -1]). Called at {_where()}")
            if len(set(taps)) != len(taps):
                raise ScanError(f"scan: outputs_info[{k}] repeats a tap in {taps}. Called at {_where()}")
            depth = -min(taps)
            if taps == [-1]:  # the initial value is the state itself (Theano's "sit-sot")
                buffer, etype = initial.dimshuffle("x", *range(initial.type.ndim)), initial.type
            elif initial.type.ndim == 0:
                raise ScanError(f"scan: outputs_info[{k}] reads taps {taps}, so its initial state must hold "
                                f"{depth} past values (a leading axis of length >= {depth}), but it is a scalar. "
                                f"Called at {_where()}")
            else:
                buffer, etype = initial, TensorType(initial.type.dtype, initial.type.broadcastable[1:])
        else:
            taps = [-1]
            initial = as_tensor_variable(info)
            buffer, etype = initial.dimshuffle("x", *range(initial.type.ndim)), initial.type
        placeholders = [_placeholder(etype, f"out{k}[t{tap}]") for tap in taps]
        result.append((tuple(taps), buffer, placeholders, etype))
    return result


def _as_list(x):
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _split_step_result(result, n_declared):
    """Theano's step results: outputs, an updates dict and an until, in any order."""
    cond, updates, outputs = None, {}, []
    items = list(result) if isinstance(result, tuple) else [result]
    if isinstance(result, list) and not any(isinstance(r, (dict, until)) for r in result):
        items = [result]
    for item in items:
        if isinstance(item, until):
            cond = item.condition
        elif isinstance(item, dict):
            updates.update(item)
        elif isinstance(item, (list, tuple)) and item and all(isinstance(p, tuple) and len(p) == 2 and
                                                              isinstance(p[0], SharedVariable) for p in item):
            updates.update(dict(item))
        elif isinstance(item, (list, tuple)):
            outputs.extend(item)
        elif item is not None:
            outputs.append(item)
    return outputs, updates, cond


def _step_output(k, value, trace):
    """Output ``k`` of the step as a tensor variable, or an error saying what the step returned instead."""
    if isinstance(value, (Variable, numbers.Number, np.ndarray, np.generic)):
        return as_tensor_variable(value)
    raise ScanError(f"scan: output {k} of the step function is {value!r} ({type(value).__name__}); a step returns "
                    "tensor variables (or numbers), an updates dict and scan_module.until(condition), in a tuple or "
                    f"a list. Called at {format_trace(trace)}")


def scan(fn, sequences=None, outputs_info=None, non_sequences=None, n_steps=None, truncate_gradient=-1,
         go_backwards=False, mode=None, name=None, profile=False, allow_gc=None, strict=False,
         return_list=False):
    """Repeat ``fn`` over sequences and recurrent outputs; returns ``(outputs, updates)`` as Theano's scan.

    ``outputs`` are the stacked per-step results (without the initial values);
    ``updates`` must be passed to ``function(..., updates=updates)`` when the
    step draws random numbers or updates shared variables.
    """
    trace = user_trace()
    seq_outer, seq_inner, lengths = _normalize_sequences(sequences, go_backwards)
    out_specs = _normalize_outputs(outputs_info)
    nonseqs = [as_tensor_variable(v) if not isinstance(v, Variable) else v for v in _as_list(non_sequences)]
    nonseq_inner = [v if isinstance(v, Constant) else _placeholder(v.type, v.name) for v in nonseqs]

    n_steps_var = _steps(n_steps, lengths)
    # the step receives the non-sequences' outer variables, as Theano's did: their graphs stay connected, so a
    # step may differentiate through them (``T.grad(y[i], x)`` for ``y`` a function of ``x``: a Jacobian's rows);
    # the inner graph below reads each one from its inner copy
    args = seq_inner + [p for spec in out_specs for p in spec[2]] + nonseqs
    _check_arity(fn, args, len(seq_inner), sum(len(spec[2]) for spec in out_specs), len(nonseq_inner), trace)
    result = fn(*args)
    outputs, updates, cond = _split_step_result(result, len(out_specs))
    outputs = [_step_output(k, o, trace) for k, o in enumerate(outputs)]
    if outputs_info is None:
        out_specs = [((), None, [], None)] * len(outputs)
    elif len(outputs) != len(out_specs):
        raise ScanError(
            f"scan: the step function returned {len(outputs)} output(s) but outputs_info has {len(out_specs)} "
            f"entr{'y' if len(out_specs) == 1 else 'ies'}; give one outputs_info entry per returned output (None "
            f"for an output that is not fed back). Called at {format_trace(trace)}")
    for k, (out, spec) in enumerate(zip(outputs, out_specs)):
        _check_output_type(k, out, spec[3], trace)

    # shared variables: updated ones become loop state; the others (and free variables) implicit non-sequences
    updates = dict(updates)
    explicit_inner = {id(v) for v in args}
    roots = outputs + list(updates.values()) + ([cond] if cond is not None else [])
    _collect_default_updates(roots, updates, blockers=[v for v in nonseqs if not isinstance(v, Constant)])
    state_vars = list(updates)
    replace = {}
    state_inner = [_placeholder(v.type, f"{v.name or 'shared'}[t]") for v in state_vars]
    replace.update(zip(state_vars, state_inner))
    # a step that uses a non-sequence's outer variable itself (Lasagne's do) means the inner copy, as Theano's
    # givens made it; so strict=True asks only about what lies outside the non-sequences
    passed = [(v, p) for v, p in zip(nonseqs, nonseq_inner) if not isinstance(v, Constant)]
    replace.update(passed)
    implicit_outer, implicit_inner = [], []
    for leaf in graph_inputs(roots + list(updates.values()), blockers=[v for v, _ in passed]):
        if id(leaf) in explicit_inner or isinstance(leaf, Constant) or leaf in replace:
            continue
        if strict and isinstance(leaf, SharedVariable):  # Theano's strict: "all the shared variables used"
            raise ScanError(f"scan(strict=True): the step function uses {leaf} ({leaf.type}), created at "
                            f"{format_trace(leaf.tag.trace)}, without receiving it; pass it in non_sequences. "
                            f"Called at {format_trace(trace)}")
        implicit_outer.append(leaf)
        implicit_inner.append(_placeholder(leaf.type, leaf.name or "free"))
        replace[leaf] = implicit_inner[-1]
    new_states = [M.cast(as_tensor_variable(updates[v]), v.type.dtype) for v in state_vars]
    inner_out = outputs + new_states + ([cond] if cond is not None else [])
    inner_out, _ = clone_replace(inner_out, replace)

    nonseq_outer = [v for v in nonseqs if not isinstance(v, Constant)] + implicit_outer
    nonseq_inner_all = [p for v, p in zip(nonseqs, nonseq_inner) if not isinstance(v, Constant)] + implicit_inner
    inner_in = seq_inner + [p for spec in out_specs for p in spec[2]] + state_inner + nonseq_inner_all
    info = ScanInfo(n_seqs=len(seq_outer), taps=tuple(spec[0] for spec in out_specs), n_shared=len(state_vars),
                    n_nonseqs=len(nonseq_outer), until=cond is not None, name=name or "scan",
                    truncate_gradient=truncate_gradient, profile=bool(profile), mode=mode)
    op = Scan(inner_in, inner_out, info, trace=trace)
    inits = [spec[1] for spec in out_specs if spec[0]]
    node_outputs = op(n_steps_var, *seq_outer, *inits, *state_vars, *nonseq_outer)
    node_outputs = node_outputs if isinstance(node_outputs, list) else [node_outputs]
    traces = node_outputs[:info.n_outs]
    scan_updates = dict(zip(state_vars, node_outputs[info.n_outs:]))
    for var, final in scan_updates.items():
        if getattr(var, "default_update", None) is not None:
            # a random stream's state now advances through the whole loop, also when the caller forgets the
            # updates (its old default update is an expression of the inner graph, meaningless outside it)
            var.default_update = final
    if len(traces) == 1 and not return_list:
        return traces[0], scan_updates
    return traces, scan_updates


def _check_arity(fn, args, n_seq, n_taps, n_nonseq, trace):
    """The step must accept what scan passes: say what that is when it does not."""
    import inspect

    try:
        inspect.signature(fn).bind(*args)
    except TypeError as exc:
        raise ScanError(
            f"scan: the step function cannot take the {len(args)} argument(s) scan passes it ({exc}). It receives, "
            f"in order: {n_seq} sequence value(s) (one per tap), {n_taps} previous output value(s) (one per tap of "
            f"each outputs_info entry that is not None) and {n_nonseq} non-sequence(s). Called at "
            f"{format_trace(trace)}") from None
    except ValueError:  # builtins without a signature: just call them
        pass


def _steps(n_steps, lengths):
    if n_steps is None:
        if not lengths:
            raise ScanError(f"scan: give sequences or n_steps (how many times to run the step). Called at {_where()}")
        total = lengths[0]
        for other in lengths[1:]:
            total = M.minimum(total, other)
        return M.cast(total, "int64")
    var = as_tensor_variable(n_steps)
    if var.type.ndim != 0 or var.type.dtype[0] not in "iu":
        raise ScanError(f"scan: n_steps must be an integer (a Python int or an int scalar), got {n_steps!r}. "
                        f"Called at {_where()}")
    return M.cast(var, "int64")


def _check_output_type(k, out, etype, trace):
    if not isinstance(out.type, TensorType):
        raise ScanError(f"scan: output {k} of the step function is {out} of type {out.type}, not a tensor")
    if etype is None:
        return
    if out.type.dtype != etype.dtype or out.type.ndim != etype.ndim:
        raise ScanError(
            f"scan: output {k} of the step function is {out.type}, but its initial state (outputs_info[{k}]) is "
            f"{etype}; the step must return the same dtype and rank as the state it updates. Cast one of them "
            f"(T.cast(..., '{etype.dtype}')), or build the initial state with the step's dtype. The step result "
            f"was built at {format_trace(out.tag.trace)}; scan called at {format_trace(trace)}")


def _collect_default_updates(roots, updates, blockers=()):
    """Shared variables in the step that update themselves (random streams) become loop state; the graphs
    above the non-sequences (``blockers``) are computed once, outside the loop, and are not looked into."""
    frontier, passed = list(roots), {id(v) for v in blockers}
    while frontier:
        new = []
        for leaf in graph_inputs(frontier, blockers=list(blockers)):
            if id(leaf) in passed:
                continue
            update = getattr(leaf, "default_update", None)
            if isinstance(leaf, SharedVariable) and update is not None and leaf not in updates:
                updates[leaf] = update
                new.append(update)
        frontier = new
