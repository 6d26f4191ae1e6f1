"""Linking: turn a rewritten FunctionGraph into a fast Python callable.

Every variable gets a *storage cell* (a one-element list).  Input cells are
filled from the call's arguments, shared variables bring their own cells,
constants get a cell holding their data, and every Apply node becomes a
*thunk*: a zero-argument closure that reads its input cells and writes its
output cells.  A call is then: fill inputs, run the thunks in topological
order, collect outputs, apply updates.

Three promises are kept here:

* **no hidden aliasing** — an output never shares memory with an input, a
  shared value or an internal buffer, unless the user asked for it with
  ``Out(borrow=True)``; then the output buffer *is* reused by the next call;
* **atomic updates** — shared variables change only after every output and
  update value of the call was computed, so a failing call changes nothing;
* **errors point at the user's code** — a failure in a thunk names the op,
  its input shapes and dtypes, and the line that built the node.
"""
from __future__ import annotations

import numpy as np

from ..graph import Constant, format_trace
from ..tensor.type import TensorType
from .callgen import CallPlan, generate_call
from .sharedvalue import SharedVariable


class FunctionMaker:
    """What Theano users reach for as ``f.maker``: the graph and the mode."""

    def __init__(self, fgraph, inputs, outputs, mode):
        self.fgraph, self.inputs, self.outputs, self.mode = fgraph, inputs, outputs, mode


class Function:
    """A compiled function.  Call it with values for its inputs."""

    def __init__(self, fgraph, ins, outs, single, updates, mode, name, profile=None,
                 allow_input_downcast=None, trust_input=False):
        from ..config import config

        self.maker = FunctionMaker(fgraph, ins, outs, mode)
        self.name = name
        self.single = single
        self.allow_gc = config.allow_gc and not config.linker.endswith("_nogc")  # Theano's vm_nogc/cvm_nogc
        self.trust_input = trust_input
        self.device = fgraph.device_label or "CPU (NumPy)"
        self._allow_downcast = allow_input_downcast
        self._hooks = []
        self._link(fgraph, ins, outs, updates)
        want_profile = config.profile if profile is None else profile
        self.profile = None
        if want_profile:
            from ..profiling import ProfileStats

            self.profile = profile if not isinstance(profile, bool) and profile is not None else ProfileStats(name)
            self.profile.attach(self)

    # ------------------------------------------------------------------ link
    def _link(self, fgraph, ins, outs, updates):
        nodes = fgraph.toposort()
        self.nodes = nodes
        storage = {}
        for var in fgraph.inputs:
            storage[var] = var.container.storage if isinstance(var, SharedVariable) else [None]
        for node in nodes:
            for var in node.inputs:
                if var not in storage:
                    storage[var] = [var.data] if isinstance(var, Constant) else [None]
            for var in node.outputs:
                storage[var] = [None]
        for var in fgraph.outputs:
            if var not in storage:
                storage[var] = [var.data] if isinstance(var, Constant) else [None]
        self.storage_map = storage
        self.thunks = [node.op.make_thunk(node, storage) for node in nodes]

        n_out = fgraph.n_outputs
        out_vars = fgraph.outputs[:n_out]
        upd_vars = fgraph.outputs[n_out:]
        self.input_cells = [storage[i.variable] for i in ins]
        self.input_types = [i.variable.type for i in ins]
        self.input_specs = ins
        self._n_inputs = len(ins)
        persistent = _persistent_variables(fgraph)
        borrowed = {id(v) for v, o in zip(out_vars, outs) if o.borrow}

        # outputs: (cell, must_copy, clear_after)
        self.output_plan, claimed = [], set()
        for var, out in zip(out_vars, outs):
            # borrow=True: the caller accepts an alias of an input, a shared value or a reused buffer
            alias = not out.borrow and (id(var) in persistent or id(var) in claimed)
            claimed.add(id(var))
            self.output_plan.append((storage[var], alias, not out.borrow and not isinstance(var, Constant)
                                     and id(var) not in persistent))
        # updates: (shared cell, value cell, must_copy)
        self._update_types = [target.type for target, _ in updates]
        self.update_plan = []
        for (target, _), var in zip(updates, upd_vars):
            alias = id(var) in persistent or id(var) in claimed or id(var) in borrowed
            claimed.add(id(var))
            self.update_plan.append((target.container.storage, storage[var], alias,
                                     not isinstance(var, Constant) and id(var) not in persistent))
        # host 0-d outputs are returned as 0-d arrays (NumPy ufuncs give scalars); device values stay as they are
        self._output_is_scalar = [type(v.type) is TensorType and v.type.ndim == 0 for v in out_vars]
        # buffers to free after the call (allow_gc) -- everything computed, except borrowed outputs
        keep_ids = borrowed
        self.gc_cells = [storage[v] for node in nodes for v in node.outputs if id(v) not in keep_ids]
        self._build_call()

    # ----------------------------------------------------------------- hooks
    @property
    def hooks(self):
        """The installed linker hooks (see :mod:`coursekit.compile.hooks`), outermost first."""
        return tuple(self._hooks)

    def add_hook(self, hook):
        """Install ``hook``: its callbacks run in every later call (the call is regenerated)."""
        if any(h is hook for h in self._hooks):
            raise ValueError(f"{hook!r} is already installed on function {self.name}")
        attached = getattr(hook, "attached", None)
        if attached is not None:
            attached(self)
        self._hooks.append(hook)
        self._build_call()
        return hook

    def remove_hook(self, hook):
        """Take ``hook`` off; with no hook left the call is the plain straight-line code again."""
        self._hooks = [h for h in self._hooks if h is not hook]
        self._build_call()

    # ------------------------------------------------------------------ call
    def _build_call(self):
        """Generate the call as straight-line Python (``f.source``; see ``callgen.py``)."""
        plan = CallPlan(
            name=self.name, input_cells=self.input_cells, input_types=self.input_types, thunks=self.thunks,
            outputs=[(cell, copy, clear, scalar) for (cell, copy, clear), scalar
                     in zip(self.output_plan, self._output_is_scalar)],
            updates=[(target, cell, copy, clear, _as_array(t)) for (target, cell, copy, clear), t
                     in zip(self.update_plan, self._update_types)],
            gc_cells=self.gc_cells if self.allow_gc else [], single=self.single,
            filter_input=self._filter_input, thunk_error=self._runtime_error, trust_input=self.trust_input,
            hooks=self._hooks)
        self.source, self._call = generate_call(plan)

    def __call__(self, *args, **kwargs):
        if kwargs or len(args) != self._n_inputs:
            args = self._bind_arguments(args, kwargs)
        return self._call(*args)

    def _bind_arguments(self, args, kwargs):
        specs = self.input_specs
        if len(args) > len(specs):
            raise TypeError(f"function {self.name} takes {len(specs)} argument(s) "
                            f"({', '.join(str(s.variable) for s in specs)}), got {len(args)}")
        values = list(args) + [_MISSING] * (len(specs) - len(args))
        by_name = {s.name: i for i, s in enumerate(specs) if s.name}
        for key, value in kwargs.items():
            if key not in by_name:
                raise TypeError(f"function {self.name} has no input named {key!r}; "
                                f"its inputs are {[s.name for s in specs]}")
            if values[by_name[key]] is not _MISSING:
                raise TypeError(f"function {self.name} got input {key!r} twice (by position and by name)")
            values[by_name[key]] = value
        for i, (spec, value) in enumerate(zip(specs, values)):
            if value is _MISSING:
                if spec.value is None:
                    raise TypeError(f"function {self.name}: missing a value for input {i} ({spec.variable}); "
                                    f"it takes {len(specs)} argument(s)")
                values[i] = spec.value
        return values

    def _filter_input(self, pos, value):
        spec = self.input_specs[pos]
        allow = spec.allow_downcast if spec.allow_downcast is not None else self._allow_downcast
        where = _LazyText(lambda: f"argument {pos} ({spec.variable}) of function {self.name}")
        return spec.variable.type.filter(value, strict=spec.strict, allow_downcast=allow, where=where)

    def _runtime_error(self, index, exc):
        node = self.nodes[index]
        cells = [self.storage_map[v][0] for v in node.inputs]
        shapes = [getattr(c, "shape", "?") for c in cells]
        dtypes = [str(getattr(c, "dtype", type(c).__name__)) for c in cells]
        detail = (f"{exc}\n\nApply node that caused the error: {node}\n"
                  f"Toposort index: {index}\n"
                  f"Inputs shapes: {shapes}\nInputs dtypes: {dtypes}\n"
                  f"The node was created by your code at: {format_trace(node.trace)}\n"
                  "No shared variable was updated by this call."
                  + _verbose_detail(node))
        try:
            new = type(exc)(detail)
        except Exception:
            new = RuntimeError(f"{type(exc).__name__}: {detail}")
        raise new.with_traceback(None) from exc

    # ------------------------------------------------------------ inspection
    def toposort(self):
        """The Apply nodes this function runs, in order (``f.maker.fgraph.toposort()``)."""
        return self.maker.fgraph.toposort()

    @property
    def fgraph(self):
        return self.maker.fgraph

    def __repr__(self):
        return f"<coursekit.Function {self.name}: {len(self.nodes)} nodes on {self.device}>"

    def _repr_html_(self):
        from ..printing import function_html

        return function_html(self)

    def copy(self, share_memory=False, swap=None, delete_updates=False, name=None, profile=None):
        """Theano's copy: the same graph compiled again, with shared variables swapped ({old: new}) and/or
        without its updates (see :mod:`coursekit.compile.rebuild`)."""
        from .rebuild import copy_function

        return copy_function(self, share_memory, swap, delete_updates, name, profile)

    def __reduce__(self):
        """Pickled as the recipe it was compiled from; unpickling compiles it again."""
        from .rebuild import rebuild

        return (rebuild, (self.rebuild_spec,))


_MISSING = object()


def _verbose_detail(node):
    """Theano's ``exception_verbosity``: 'high' adds the node's graph, 'low' says how to get it."""
    from ..config import config

    if config.exception_verbosity != "high":
        return "\nHINT: set coursekit.config.exception_verbosity = 'high' to see the graph of this node."
    from ..printing import debugprint

    return "\n\nDebugprint of the node's graph:\n" + debugprint(node.outputs, file="str")


def _as_array(ttype):
    """Host 0-d update values are stored as 0-d arrays (NumPy ufuncs give scalars)."""
    return getattr(ttype, "ndim", 1) == 0 and type(ttype) is TensorType


class _LazyText:
    """A string built only if an error message needs it (keeps the call path fast)."""

    def __init__(self, make):
        self.make = make

    def __str__(self):
        return self.make()

    __format__ = lambda self, spec: format(str(self), spec)  # noqa: E731


def _persistent_variables(fgraph):
    """Variables whose values outlive a call: inputs, shared, constants, and views of them."""
    persistent = {id(v) for v in fgraph.inputs}
    for node in fgraph.toposort():
        for v in node.inputs:
            if isinstance(v, Constant):
                persistent.add(id(v))
        view_map = getattr(node.op, "view_map", {}) or {}
        for out_idx, in_idxs in view_map.items():
            if any(id(node.inputs[i]) in persistent for i in in_idxs):
                persistent.add(id(node.outputs[out_idx]))
    for v in fgraph.outputs:
        if isinstance(v, Constant):
            persistent.add(id(v))
        elif v.owner is not None and (getattr(v.owner.op, "view_map", None) or {}).get(v.index):
            # a view of an internal buffer: that buffer may be reused by the next call
            persistent.add(id(v))
    return persistent
