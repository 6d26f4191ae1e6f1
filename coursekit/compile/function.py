"""``coursekit.function``: check what the user asked for, then compile it.

This module is the front door: it turns ``inputs``, ``outputs``,
``updates`` and ``givens`` into a :class:`FunctionGraph`, refusing anything
ambiguous with a message that says what was wrong and what to do.  The
rewriting (mode) and the linking into a callable happen in ``mode.py`` and
``linker.py``.
"""
from __future__ import annotations

import time
import warnings

from ..config import config
from ..graph import Constant, Variable, clone_replace, format_trace, graph_inputs, user_trace
from ..tensor.var import as_tensor_variable
from ..fgraph import FunctionGraph
from .io import In, Out
from .linker import Function
from .mode import get_mode
from .rebuild import remember
from .sharedvalue import SharedVariable


class MissingInputError(ValueError):
    """A variable needed by an output is neither an input, shared, nor a constant."""


class UnusedInputError(ValueError):
    """An input does not influence any output or update."""


def function(inputs, outputs=None, updates=None, givens=None, mode=None, profile=None, name=None,
             on_unused_input=None, allow_input_downcast=None, no_default_updates=False, trust_input=False):
    """Compile a graph into a Python callable.

    ``inputs``: the variables (or ``In``) the caller passes, in order.
    ``outputs``: one variable, a list of them, or ``Out(var, borrow=True)``.
    ``updates``: ``{shared_var: new_value_expression}`` (or a list of pairs),
    applied after each call, all together, only when the whole call succeeded.
    ``givens``: ``{var: replacement}`` substituted into the graph before compiling.

    An input may be a computed variable, as in Theano: the graph is cut there, and the value passed
    replaces that variable (what computes it is not run; see :func:`_cut_at_computed_inputs`).
    """
    on_unused_input = on_unused_input or config.on_unused_input
    where = user_trace()
    fn_name = name or (f"{where[0].rsplit('/', 1)[-1]}:{where[1]}" if where else "<function>")
    ins, cuts = _cut_at_computed_inputs(_normalize_inputs(inputs))
    outs, single = _normalize_outputs(outputs)
    upd = _normalize_updates(updates)
    upd = upd + _default_updates([o.variable for o in outs] + [v for _, v in upd], upd, no_default_updates)
    giv = _normalize_givens(givens)
    for computed in cuts:
        if computed in giv:
            raise ValueError(f"{computed} is both a function input and a key of givens; give it one or the other")
    giv.update(cuts)

    out_vars = [o.variable for o in outs] + [value for _, value in upd]
    cloned, memo = clone_replace(out_vars, giv)
    input_vars = [i.variable for i in ins]
    _check_missing_and_unused(input_vars, cloned, outs, on_unused_input, cuts)

    shared_vars = _collect_shared(cloned, input_vars, upd)
    fgraph = FunctionGraph(input_vars + shared_vars, cloned, n_outputs=len(outs),
                           update_targets=[target for target, _ in upd], n_user_inputs=len(input_vars))
    mode_obj = get_mode(mode)
    start = time.perf_counter()
    mode_obj.rewrite(fgraph)
    fn = Function(fgraph, ins, outs, single, upd, mode_obj, name=fn_name, profile=profile,
                  allow_input_downcast=allow_input_downcast, trust_input=trust_input)
    fn.compile_time = time.perf_counter() - start
    if fn.profile is not None:
        fn.profile.compile_time = getattr(fn.profile, "compile_time", 0.0) + fn.compile_time
    # the recipe, for pickle and Function.copy (see rebuild.py)
    remember(fn, inputs=inputs, outputs=outputs, updates=updates, givens=givens, mode=mode, profile=bool(profile),
             name=name, on_unused_input=on_unused_input, allow_input_downcast=allow_input_downcast,
             no_default_updates=no_default_updates, trust_input=trust_input)
    finalize = getattr(mode_obj, "finalize", None)
    return finalize(fn) if finalize else fn


def _normalize_inputs(inputs):
    if inputs is None:
        inputs = []
    if isinstance(inputs, (Variable, In)):
        raise TypeError("function(inputs, ...): inputs must be a list, e.g. function([x], y), not function(x, y)")
    result, seen = [], set()
    for pos, item in enumerate(inputs):
        spec = item if isinstance(item, In) else None
        if spec is None:
            if not isinstance(item, Variable):
                raise TypeError(f"function input {pos} is a {type(item).__name__}, not a symbolic variable. "
                                "Inputs are the variables you will pass values for, e.g. x = T.vector('x').")
            spec = In(item)
        var = spec.variable
        if isinstance(var, SharedVariable):
            raise TypeError(f"function input {pos} ({var}) is a shared variable. Shared variables are implicit "
                            "inputs: leave it out of the inputs list (use givens to substitute it).")
        if isinstance(var, Constant):
            raise TypeError(f"function input {pos} is a constant ({var}); inputs must be symbolic variables")
        if id(var) in seen:
            raise ValueError(f"function input {pos} ({var}) appears twice in the inputs list")
        seen.add(id(var))
        result.append(spec)
    return result


def _cut_at_computed_inputs(ins):
    """``(ins, cuts)``: each computed input (one with an owner) replaced by a fresh leaf of its type.

    Theano let ``function([h], y)`` take ``h = f(x)``: the value passed stands for ``h`` and nothing
    above ``h`` is computed for it (``y`` still needing ``x`` by another path is a missing input).
    ``cuts`` (``{h: leaf}``) goes into the givens, so the graph is cut by the same substitution.
    """
    cuts, result = {}, []
    for spec in ins:
        var = spec.variable
        if var.owner is None:
            result.append(spec)
            continue
        leaf = var.clone()
        cuts[var] = leaf
        result.append(In(leaf, name=spec.name, value=spec.value, strict=spec.strict,
                         allow_downcast=spec.allow_downcast, borrow=spec.borrow, mutable=spec.mutable))
    return result, cuts


def _normalize_outputs(outputs):
    if outputs is None:
        return [], False
    single = not isinstance(outputs, (list, tuple))
    items = [outputs] if single else list(outputs)
    result = []
    for pos, item in enumerate(items):
        if isinstance(item, Out):
            result.append(item)
        else:
            try:
                # a variable of another type (a sparse matrix) is an output as it is; values become tensors
                result.append(Out(item if isinstance(item, Variable) else as_tensor_variable(item)))
            except TypeError as exc:
                raise TypeError(f"function output {pos} cannot be used: {exc}") from None
    return result, single


def _normalize_updates(updates):
    if updates is None:
        return []
    pairs = list(updates.items()) if isinstance(updates, dict) else list(updates)
    result, seen = [], set()
    for pos, pair in enumerate(pairs):
        try:
            target, value = pair
        except (TypeError, ValueError):
            raise TypeError(f"update {pos} is {pair!r}; updates are a dict {{shared: expr}} or a list of "
                            "(shared, expr) pairs") from None
        if not isinstance(target, SharedVariable):
            raise TypeError(f"update {pos}: {target} is not a shared variable; only shared variables can be "
                            "updated (make it with coursekit.shared(value))")
        if id(target) in seen:
            raise ValueError(f"shared variable {target} is updated twice; give it a single update expression")
        seen.add(id(target))
        value = as_tensor_variable(value)
        if value.type.dtype != target.type.dtype or value.type.ndim != target.type.ndim:
            raise TypeError(
                f"the update of shared variable {target.name or target} has type {value.type}, but the variable "
                f"is {target.type}. Cast the expression (T.cast(expr, '{target.type.dtype}')) or build it with "
                f"matching dtypes; {_trace_hint(value)}")
        fixed = [d for d, (t, v) in enumerate(zip(target.type.broadcastable, value.type.broadcastable)) if t and not v]
        if fixed:
            raise TypeError(
                f"the update of shared variable {target.name or target} has type {value.type} (broadcastable "
                f"{value.type.broadcastable}), but the variable is {target.type} (broadcastable "
                f"{target.type.broadcastable}): dimension(s) {fixed} of the variable always have length 1, and the "
                "update could change that. Build the update with the same pattern (a reduction with keepdims=True, "
                f"or T.specify_shape(expr, shape)), or make the shared variable without broadcastable=...; "
                f"{_trace_hint(value)}")
        result.append((target, value))
    return result


def _default_updates(roots, explicit, no_default_updates):
    """Updates that shared variables ask for themselves (``var.default_update``), as Theano.

    A random stream's generator state is the example: drawing numbers must
    advance it, so its shared variable carries the update, and every function
    using the stream applies it unless ``no_default_updates`` is True (or lists
    that variable).  Updates given explicitly win.
    """
    if no_default_updates is True:
        return []
    skip = {id(v) for v in (no_default_updates or [])} | {id(t) for t, _ in explicit}
    found, frontier = [], list(roots)
    while frontier:
        new = []
        for leaf in graph_inputs(frontier):
            update = getattr(leaf, "default_update", None)
            if isinstance(leaf, SharedVariable) and update is not None and id(leaf) not in skip:
                skip.add(id(leaf))
                found.append((leaf, update))
                new.append(update)
        frontier = new
    return found


def _normalize_givens(givens):
    if givens is None:
        return {}
    pairs = list(givens.items()) if isinstance(givens, dict) else list(givens)
    result = {}
    for old, new in pairs:
        if not isinstance(old, Variable):
            raise TypeError(f"givens keys must be symbolic variables, got {type(old).__name__}")
        new = as_tensor_variable(new)
        if old.type.dtype != new.type.dtype or old.type.ndim != new.type.ndim:
            raise TypeError(f"givens: {old} ({old.type}) cannot be replaced by {new} ({new.type}); "
                            "the dtype and number of dimensions must match (cast the replacement)")
        result[old] = new
    return result


def _check_missing_and_unused(input_vars, outputs, outs, on_unused_input, cuts=None):
    leaves = graph_inputs(outputs, blockers=input_vars)
    known = set(map(id, input_vars))
    for leaf in leaves:
        if id(leaf) in known or isinstance(leaf, (Constant, SharedVariable)):
            continue
        above = [c for c in cuts or {} if any(v is leaf for v in graph_inputs([c]))]
        cut_note = "".join(f" The input {c} is computed by {c.owner.op} from it, but a computed input only "
                           f"stands for itself: whatever else uses {leaf} still needs {leaf}." for c in above)
        raise MissingInputError(
            f"the graph needs the variable {leaf} ({leaf.type}), created at {format_trace(leaf.tag.trace)}, but "
            f"it is not among the function's inputs. Add it to the inputs list, or replace it with givens.{cut_note}")
    used = set(map(id, leaves))
    for var in input_vars:
        if id(var) in used or on_unused_input == "ignore":
            continue
        msg = (f"input {var} is not used by any output or update of this function. Remove it from the inputs, "
               "or pass on_unused_input='warn' (or 'ignore') if that is intended.")
        if on_unused_input == "raise":
            raise UnusedInputError(msg)
        if on_unused_input == "warn":
            warnings.warn(msg, stacklevel=3)
        else:
            raise ValueError(f"on_unused_input={on_unused_input!r}: use 'raise', 'warn' or 'ignore'")


def _collect_shared(outputs, input_vars, updates):
    found, seen = [], set(map(id, input_vars))
    for leaf in graph_inputs(outputs, blockers=input_vars) + [t for t, _ in updates]:
        if isinstance(leaf, SharedVariable) and id(leaf) not in seen:
            seen.add(id(leaf))
            found.append(leaf)
    return found


def _trace_hint(var):
    return f"it was built at {format_trace(var.tag.trace)}"
