"""Writing a compiled function's call as straight-line Python (what ``f.source`` shows).

The linker (``linker.py``) decides *what* a call does: which cells to fill,
which thunks to run, which outputs to copy, which buffers to free.  This
module writes that down as one Python function with no loops and no
branches it does not need, because on tiny graphs the interpreter's loop
and attribute lookups cost more than the arithmetic (W2 of the benchmarks:
``a + b`` of two scalars).  The text is kept so a student can read exactly
what a call does.

Installed hooks (:mod:`coursekit.compile.hooks`) are written into the text
at their places; with no hook the text has no trace of them.
"""
from __future__ import annotations

import functools
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ..tensor.type import TensorType
from .hooks import hook_methods


@dataclass
class CallPlan:
    """Everything the generated call needs, decided by the linker."""

    name: str
    input_cells: list
    input_types: list
    thunks: list
    outputs: list        # (cell, must_copy, as_array, hand_out: None or a callable) per output
    updates: list        # (shared cell, value cell, must_copy, as_array, recycle) per update
    release_cells: list  # cells emptied once the results are read (their buffers are handed out)
    gc_cells: list       # intermediate buffers freed after the call (empty when allow_gc is off)
    single: bool
    filter_input: object  # filter_input(pos, value) -> validated value (raises a clear error)
    thunk_error: object   # thunk_error(index, exc): raises the error that names the node
    bind: object = None   # bind(positional, named): fills defaults, checks names, calls again
    trust_input: bool = False
    hooks: list = field(default_factory=list)
    turn: list = None          # the function's turn (one token): one call at a time, it owns the storage cells
    update_locks: list = field(default_factory=list)  # locks of the updated shared variables, in order
    frees_after: list = field(default_factory=list)     # per thunk: cells dead once it ran (allow_gc)
    inherit_before: list = field(default_factory=list)  # per thunk: (dying input cell, output cell) or None


UNROLL_LIMIT = 200  # thunks; past this (and with no per-thunk hook) the call runs them in a loop


def generate_call(plan):
    """(source text, callable) of the call described by ``plan``."""
    ns = {"ndarray": np.ndarray, "generic": np.generic, "asarray": np.asarray,
          "filt": plan.filter_input, "error": plan.thunk_error, "MISSING": MISSING, "bind": plan.bind}
    lines = _signature_lines(len(plan.input_cells))
    hooks = {event: hook_methods(plan.hooks, event) for event in
             ("call_started", "thunk_started", "thunk_finished", "call_failed", "call_computed", "call_finished")}
    args_tuple = "(" + "".join(f"a{i}, " for i in range(len(plan.input_cells))) + ")"
    lines += _hook_calls(ns, "hs", hooks["call_started"], args_tuple, "    ")
    lines += _input_lines(ns, plan)
    clear_gc = []
    for j, cell in enumerate(plan.gc_cells):
        ns[f"g{j}"] = cell
        clear_gc.append(f"g{j}[0] = None")
    lines += _thunk_lines(ns, plan, hooks, clear_gc)
    # read every output and update value first, then empty cells: the same buffer may be read twice
    results, values, clears = [], [], []
    for k, (cell, must_copy, as_array, hand_out) in enumerate(plan.outputs):
        ns[f"o{k}"] = cell
        lines.append(f"    r{k} = o{k}[0]" + (".copy()" if must_copy else ""))
        if as_array:
            lines.append(f"    if not isinstance(r{k}, ndarray): r{k} = asarray(r{k})")
        if hand_out is not None:  # a real GPU's result becomes a handle (devices/handles.py)
            ns[f"handle{k}"] = hand_out
            lines.append(f"    r{k} = handle{k}(r{k})")
        results.append(f"r{k}")
    for k, (target, cell, must_copy, as_array, _) in enumerate(plan.updates):
        ns[f"s{k}"], ns[f"u{k}"] = target, cell
        lines.append(f"    v{k} = u{k}[0]" + (".copy()" if must_copy else ""))
        if as_array:
            lines.append(f"    if not isinstance(v{k}, ndarray): v{k} = asarray(v{k})")
        values.append(f"v{k}")
    for j, cell in enumerate(plan.release_cells):
        ns[f"x{j}"] = cell
        clears.append(f"    x{j}[0] = None")
    if hooks["call_computed"]:
        computed = f"[{', '.join(results)}], [{', '.join(values)}]"
        lines += ["    try:"] + _hook_calls(ns, "hc", hooks["call_computed"], computed, "        ")
        lines += ["    except BaseException:"] + [f"        {c}" for c in clear_gc] + ["        raise"]
    lines += clears
    for k, (_, _, _, _, recycle) in enumerate(plan.updates):
        if not recycle:
            lines.append(f"    s{k}[0] = v{k}")
            continue
        # the buffer the shared variable held until now goes back to the op that computes its new value, so
        # the next call writes into it instead of allocating -- only when nothing else holds it (the two
        # references are this local and getrefcount's argument): no caller, no view, no other cell
        ns["refcount"] = sys.getrefcount
        lines += [f"    old{k} = s{k}[0]", f"    s{k}[0] = v{k}",
                  f"    if old{k} is not v{k} and refcount(old{k}) == 2:", f"        u{k}[0] = old{k}",
                  f"    old{k} = None"]
    freed_early = {id(c) for cells in _early_frees(plan)[0] for c in cells}
    at_end = [(cell, c) for cell, c in zip(plan.gc_cells, clear_gc) if id(cell) not in freed_early]
    if len(at_end) > UNROLL_LIMIT:
        ns["gc_end"] = tuple(cell for cell, _ in at_end)
        lines += ["    for cell in gc_end:", "        cell[0] = None"]
    else:
        lines += [f"    {c}" for _, c in at_end]
    lines += _hook_calls(ns, "hf", hooks["call_finished"], "", "    ")
    if plan.single:
        lines.append(f"    return {results[0] if results else 'None'}")
    else:
        lines.append(f"    return [{', '.join(results)}]")
    if plan.turn is not None:
        lines = lines[:3] + _locked(ns, plan, lines[3:])  # arguments are sorted out before taking the turn
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<coursekit function {plan.name}>", "exec"), ns)
    return source, ns["call"]


MISSING = object()  # an argument the caller did not pass positionally


def _signature_lines(n):
    """``def call(a0=MISSING, ..., /, *extra, **named)``: the common call -- every input by
    position -- goes straight on; anything else (names, defaults, a wrong count) is handed to
    ``bind``, which sorts the arguments out (or says what is wrong) and calls again.

    The call *is* ``f.__call__`` (see ``Function.__call__``), so a call costs one Python
    frame, not two."""
    if not n:
        return ["def call(*extra, **named):", "    if extra or named:", "        return bind(extra, named)"]
    params = "".join(f"a{i}=MISSING, " for i in range(n))
    given = "".join(f"a{i}, " for i in range(n))
    return [f"def call({params}/, *extra, **named):",
            f"    if extra or named or a{n - 1} is MISSING:",
            f"        return bind(({given}*extra), named)"]


def _locked(ns, plan, body):
    """``body`` run holding the function's turn (and its updated shared variables' locks).

    A function's turn is a one-element list: a call takes the element
    (``list.pop`` is atomic in CPython) and puts it back when it ends.  That
    costs about a third of a ``threading.Lock`` round trip, which matters on
    tiny graphs (W2).  Only when another call holds the turn does
    ``wait_turn`` run: it refuses a re-entrant call (this function called from
    inside itself would wait forever), then waits for the turn.
    """
    ns["take"], ns["give_back"] = plan.turn.pop, plan.turn.append
    ns["wait_turn"] = functools.partial(_wait_turn, plan.turn, ns, plan.name)  # (a partial adds no frame)
    lines = ["    try:", "        turn = take()", "    except IndexError:", "        turn = wait_turn()", "    try:"]
    for j, lock in enumerate(plan.update_locks):
        ns[f"la{j}"], ns[f"lr{j}"] = lock.acquire, lock.release
        lines.append(f"        la{j}()")
    if plan.update_locks:
        lines.append("        try:")
        lines += ["        " + line for line in body]
        lines.append("        finally:")
        lines += [f"            lr{j}()" for j in reversed(range(len(plan.update_locks)))]
    else:
        lines += ["    " + line for line in body]
    lines += ["    finally:", "        give_back(turn)"]
    return lines


def _wait_turn(turn, ns, name):
    code, frame = ns["call"].__code__, sys._getframe(2)  # the frames above the waiting call itself
    while frame is not None:
        if frame.f_code is code:
            raise RuntimeError(f"function {name} was called from inside one of its own calls (a custom op or a "
                               "hook calling it back). A compiled function runs one call at a time; compile a "
                               "second function for the inner call.")
        frame = frame.f_back
    pause = 1e-6
    while True:  # another thread's call is running: poll, backing off up to a millisecond
        try:
            return turn.pop()
        except IndexError:
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)


def _hook_calls(ns, prefix, methods, args, indent):
    lines = []
    for j, method in enumerate(methods):
        ns[f"{prefix}{j}"] = method
        lines.append(f"{indent}{prefix}{j}({args})")
    return lines


def _input_lines(ns, plan):
    """Fill each input cell; the common case (the exact dtype and ndim) skips the full check."""
    lines = []
    for i, (cell, t) in enumerate(zip(plan.input_cells, plan.input_types)):
        ns[f"c{i}"], ns[f"d{i}"] = cell, t.numpy_dtype
        if plan.trust_input:
            lines.append(f"    c{i}[0] = a{i}")
            continue
        fast = getattr(getattr(t, "device", None), "fast_input_type", None)
        if fast is not None and not any(t.broadcastable):  # a device input of exactly the device's array type
            ns[f"at{i}"] = fast
            lines += [f"    if type(a{i}) is at{i} and a{i}.dtype is d{i} and a{i}.ndim == {t.ndim}:",
                      f"        c{i}[0] = a{i}", "    else:", f"        c{i}[0] = filt({i}, a{i})"]
            continue
        if type(t) is not TensorType:  # other device inputs and custom types: always the full check
            lines.append(f"    c{i}[0] = filt({i}, a{i})")
            continue
        shape_ok = f" and a{i}.ndim == {t.ndim}" + ("" if not any(t.broadcastable) else " and False")
        lines += [f"    if type(a{i}) is ndarray and a{i}.dtype is d{i}{shape_ok}:",
                  f"        c{i}[0] = a{i}"]
        if t.ndim == 0:
            lines += [f"    elif isinstance(a{i}, generic) and a{i}.dtype is d{i}:",
                      f"        c{i}[0] = asarray(a{i})"]
        lines += ["    else:", f"        c{i}[0] = filt({i}, a{i})"]
    return lines


def _early_frees(plan):
    """(cells freed after each thunk, buffer inherited before each thunk) -- none while hooks are
    installed: DebugMode compares every thunk's inputs before and after it ran, and the profiler
    reads every input's shape when the call has computed everything."""
    if plan.hooks or not plan.frees_after:
        return [()] * len(plan.thunks), [None] * len(plan.thunks)
    return plan.frees_after, plan.inherit_before


def _thunk_lines(ns, plan, hooks, clear_gc):
    """Run every thunk in order; on failure free the buffers and raise the error naming the node."""
    if not plan.thunks:
        return []
    started, finished = hooks["thunk_started"], hooks["thunk_finished"][::-1]
    for j, method in enumerate(started):
        ns[f"hb{j}"] = method
    for j, method in enumerate(finished):
        ns[f"he{j}"] = method
    frees, inherits = _early_frees(plan)
    lines = ["    i = 0", "    try:"]
    if len(plan.thunks) > UNROLL_LIMIT and not started and not finished:
        # a big graph: one line per thunk would cost more to compile than the loop costs to run
        ns["steps"] = tuple((k, thunk, *(inherits[k] or (None, None)), tuple(frees[k]))
                            for k, thunk in enumerate(plan.thunks))
        lines += ["        for i, thunk, inherited, heir, dead in steps:",
                  "            if inherited is not None:", "                heir[0] = inherited[0]",
                  "            thunk()", "            for cell in dead:", "                cell[0] = None"]
    else:
        for k, thunk in enumerate(plan.thunks):
            ns[f"t{k}"] = thunk
            if k:
                lines.append(f"        i = {k}")
            if inherits[k] is not None:  # the input's last reader computes its result into that buffer
                ns[f"hi{k}"], ns[f"ho{k}"] = inherits[k]
                lines.append(f"        ho{k}[0] = hi{k}[0]")
            lines += [f"        hb{j}({k})" for j in range(len(started))]
            lines.append(f"        t{k}()")
            lines += [f"        he{j}({k})" for j in range(len(finished))]
            for j, cell in enumerate(frees[k]):  # dead from here on: freed now, not when the call ends
                ns[f"f{k}_{j}"] = cell
                lines.append(f"        f{k}_{j}[0] = None")
    lines += ["    except Exception as exc:"]
    lines += _hook_calls(ns, "hx", hooks["call_failed"], "i, exc", "        ")
    lines += ["        try:", "            error(i, exc)", "        finally:"]
    if len(clear_gc) > UNROLL_LIMIT:
        ns["gc_all"] = tuple(plan.gc_cells)
        lines += ["            for cell in gc_all:", "                cell[0] = None"]
    else:
        lines += [f"            {c}" for c in clear_gc] + ["            pass"]
    return lines
