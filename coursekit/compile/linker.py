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
        self.allow_gc = config.allow_gc
        self.trust_input = trust_input
        self.device = getattr(fgraph, "device_label", "CPU (NumPy)")
        self._allow_downcast = allow_input_downcast
        self._n_updates = len(updates)
        want_profile = config.profile if profile is None else profile
        self.profile = None
        if want_profile:
            from ..profiling import ProfileStats

            self.profile = profile if not isinstance(profile, bool) and profile is not None else ProfileStats(name)
            self.profile.attach(self)
        self._link(fgraph, ins, outs, updates)

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
        persistent = _persistent_variables(fgraph)
        borrowed = {id(v) for v, o in zip(out_vars, outs) if o.borrow}

        # outputs: (cell, must_copy, clear_after)
        self.output_plan, claimed = [], set()
        for var, out in zip(out_vars, outs):
            alias = id(var) in persistent or id(var) in claimed
            claimed.add(id(var))
            keep = out.borrow and not alias
            self.output_plan.append((storage[var], alias, not keep and not isinstance(var, Constant)
                                     and id(var) not in persistent))
        # updates: (shared cell, value cell, must_copy)
        self.update_plan = []
        for (target, _), var in zip(updates, upd_vars):
            alias = id(var) in persistent or id(var) in claimed or id(var) in borrowed
            claimed.add(id(var))
            self.update_plan.append((target.container.storage, storage[var], alias,
                                     not isinstance(var, Constant) and id(var) not in persistent))
        # buffers to free after the call (allow_gc) -- everything computed, except borrowed outputs
        keep_ids = borrowed
        self.gc_cells = [storage[v] for node in nodes for v in node.outputs if id(v) not in keep_ids]
        self._build_call()

    # ------------------------------------------------------------------ call
    def _build_call(self):
        thunks = self.thunks
        input_cells, types = self.input_cells, self.input_types
        output_plan, update_plan = self.output_plan, self.update_plan
        gc_cells = self.gc_cells if self.allow_gc else ()
        single = self.single
        n_inputs = len(input_cells)
        fast_checks = [(t.numpy_dtype, t.ndim, any(t.broadcastable)) for t in types]
        filter_input = self._filter_input
        error = self._runtime_error
        trust = self.trust_input
        profile = self.profile

        def call(*args, **kwargs):
            if kwargs or len(args) != n_inputs:
                args = self._bind_arguments(args, kwargs)
            if trust:
                for cell, value in zip(input_cells, args):
                    cell[0] = value
            else:
                for pos, (cell, value, (dtype, ndim, has_bcast)) in enumerate(zip(input_cells, args, fast_checks)):
                    if type(value) is np.ndarray and value.dtype is dtype and value.ndim == ndim and not has_bcast:
                        cell[0] = value
                    else:
                        cell[0] = filter_input(pos, value)
            if profile is not None:
                profile.run_thunks(thunks)
            else:
                i = 0
                try:
                    for thunk in thunks:
                        thunk()
                        i += 1
                except Exception as exc:
                    try:
                        error(i, exc)
                    finally:
                        for cell in gc_cells:
                            cell[0] = None
            results = []
            for cell, must_copy, clear in output_plan:
                value = cell[0]
                if must_copy:
                    value = value.copy()
                elif clear:
                    cell[0] = None
                results.append(value)
            for target, cell, must_copy, clear in update_plan:
                value = cell[0]
                if must_copy:
                    value = value.copy()
                elif clear:
                    cell[0] = None
                target[0] = value
            for cell in gc_cells:
                cell[0] = None
            if single:
                return results[0] if results else None
            return results

        self._call = call

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

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
        where = f"argument {pos} ({spec.variable}) of function {self.name}"
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
                  "No shared variable was updated by this call.")
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

    def copy(self):
        raise NotImplementedError("Function.copy() is not supported; compile the graph again with function()")


_MISSING = object()


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
