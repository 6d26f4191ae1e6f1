"""Linking: turn a rewritten FunctionGraph into a fast Python callable.

Every variable gets a *storage cell* (a one-element list).  Input cells are
filled from the call's arguments, shared variables bring their own cells,
constants get a cell holding their data, and every Apply node becomes a
*thunk*: a zero-argument closure that reads its input cells and writes its
output cells.  A call is then: fill inputs, run the thunks in topological
order, collect outputs, apply updates.

Four promises are kept here, whatever ``allow_gc`` says and whatever
in-place ops (``destroy_map``) or views (``view_map``) the graph holds:

* **no hidden aliasing** — an output never shares memory with an input, a
  shared value or an internal buffer, unless the user asked for it with
  ``Out(borrow=True)``; then the output buffer *is* reused by the next call
  (``aliasing.py`` decides what is copied, freed, or given a private copy);
* **atomic updates** — shared variables change only after every output and
  update value of the call was computed, so a failing call changes nothing;
* **one call at a time** — a function's calls from several threads take
  turns (each call owns the storage cells while it runs), and a call that
  updates a shared variable holds that variable's lock from reading it to
  storing its new value, so no update is lost;
* **errors point at the user's code** — a failure in a thunk names the op,
  its input shapes and dtypes, and the line that built the node; a custom
  op's outputs are checked against the types its ``make_node`` declared.
"""
from __future__ import annotations

import operator


from .. import wiring
from ..config import config
from ..devices import get as get_device
from ..devices.simarray import is_device_array
from ..graph import Constant, format_trace
from ..profiling import ProfileStats
from ..tensor.type import TensorType
from .aliasing import plan_results, protect_destroyed_inputs
from .callgen import MISSING, CallPlan, generate_call
from .cudagraph import GraphCall
from .program import Cell, LinkedProgram
from .lifetimes import buffer_lifetimes
from .sharedvalue import SharedVariable


class FunctionMaker:
    """What Theano users reach for as ``f.maker``: the graph and the mode."""

    def __init__(self, fgraph, inputs, outputs, mode):
        self.fgraph, self.inputs, self.outputs, self.mode = fgraph, inputs, outputs, mode


class Function:
    """A compiled function.  Call it with values for its inputs."""

    def __init__(self, fgraph, ins, outs, single, updates, mode, name, profile=None,
                 allow_input_downcast=None, trust_input=False):
        self.maker = FunctionMaker(fgraph, ins, outs, mode)
        self.name = name
        self.single = single
        linker_name = getattr(mode, "linker", None) or config.linker
        self.allow_gc = config.allow_gc and not linker_name.endswith("_nogc")  # Theano's vm_nogc/cvm_nogc
        self.trust_input = trust_input
        self.device = fgraph.device or get_device("cpu")  # the Device object: ask it, never its label
        self._allow_downcast = allow_input_downcast
        self._hooks = []
        self._turn = [True]  # one call at a time: a call owns the storage cells while it runs (callgen.py)
        containers = sorted({id(t.container): t.container for t, _ in updates}.values(), key=lambda c: c.order)
        self._update_locks = [c.lock for c in containers]
        self._link(fgraph, ins, outs, updates)
        want_profile = config.profile if profile is None else profile
        self.profile = None
        if want_profile:
            self.profile = profile if not isinstance(profile, bool) and profile is not None else ProfileStats(name)
            self.profile.attach(self)
        # whole-call CUDA graphs (cudagraph.py), on unless the mode turns them off: None then
        self.cuda_graph = GraphCall(self, mode.cuda_graphs) if getattr(mode, "cuda_graphs", 0) else None

    # ------------------------------------------------------------------ link
    def _link(self, fgraph, ins, outs, updates):
        protect_destroyed_inputs(fgraph, mutable=[i.variable for i in ins if i.mutable])
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
        self.thunks = [_checked_unless_verified(node, node.op.make_thunk(node, storage), storage) for node in nodes]

        n_out = fgraph.n_outputs
        out_vars, upd_vars = fgraph.outputs[:n_out], fgraph.outputs[n_out:]
        self.input_cells = [storage[i.variable] for i in ins]
        self.input_types = [i.variable.type for i in ins]
        self.input_specs = ins
        self._n_inputs = len(ins)
        outputs, values, self._release_cells, self.gc_cells = plan_results(fgraph, outs, storage, self.allow_gc)
        # device views (a DimShuffle of a shared variable...) are remade every call: emptying their cells after
        # the call drops the last reference to a shared variable's old buffer, which its update can then reuse
        released = {id(c) for c in self._release_cells} | {id(c) for c in self.gc_cells}
        self.view_cells = [storage[o] for node in nodes if getattr(node.op, "device", "cpu") == "gpu"
                           for k, o in enumerate(node.outputs) if (getattr(node.op, "view_map", None) or {}).get(k)
                           and id(storage[o]) not in released]
        self._release_cells = self._release_cells + self.view_cells
        # host 0-d outputs are returned as 0-d arrays (NumPy ufuncs give scalars); device values stay on their
        # device, handed out as that device says (on a real GPU: handles that numpy.asarray copies home)
        self.output_plan = [(cell, copy, type(v.type) is TensorType and v.type.ndim == 0,
                             _handing_out(v.type, o.borrow)) for (cell, copy), v, o in zip(outputs, out_vars, outs)]
        # a device shared variable's old buffer is handed back to the op computing its update (callgen.py)
        self.update_plan = [(target.container.storage, cell, copy, _as_array(target.type),
                             _device_update(target, value, copy))
                            for (target, _), value, (cell, copy) in zip(updates, upd_vars, values)]
        # allow_gc: free each buffer right after its last reader (which may compute into it), not at the end
        self.frees_after, self.inherit_before = [], []
        if self.allow_gc:
            collectable = {id(c) for c in self.gc_cells}
            frees, inherits = buffer_lifetimes(fgraph.inputs, nodes, list(out_vars) + list(upd_vars),
                                               borrowed={v for v, o in zip(out_vars, outs) if o.borrow})
            self.frees_after = [[storage[v] for v in vs if id(storage[v]) in collectable] for vs in frees]
            self.inherit_before = [None if v is None else (storage[v], storage[node.outputs[0]])
                                   for v, node in zip(inherits, nodes)]
        self._build_call()

    # --------------------------------------------------- Theano's introspection
    @property
    def fn(self):
        """Theano's ``f.fn``: the linked program (nodes, thunks, storage; calling it runs them: program.py)."""
        if self.__dict__.get("_program") is None:
            self._program = LinkedProgram(self)
        return self._program

    @property
    def input_storage(self):
        return [Cell(i.variable, cell) for i, cell in zip(self.input_specs, self.input_cells)]

    @property
    def output_storage(self):
        fgraph = self.maker.fgraph
        return [Cell(v, self.storage_map[v]) for v in fgraph.outputs[:fgraph.n_outputs]]

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
            outputs=self.output_plan, updates=self.update_plan, release_cells=self._release_cells,
            gc_cells=self.gc_cells, single=self.single,
            filter_input=self._filter_input, thunk_error=self._runtime_error, trust_input=self.trust_input,
            bind=self._bind_and_call,
            hooks=self._hooks, turn=self._turn, update_locks=self._update_locks,
            frees_after=self.frees_after, inherit_before=self.inherit_before)
        self.source, self._call = generate_call(plan)
        graph = getattr(self, "cuda_graph", None)
        if graph is not None:   # a hook came or went: the graph call wraps the new ordinary call, or steps aside
            graph.rewire()

    # ``f(...)`` runs the generated call itself (``attrgetter`` is C code, so no Python frame comes
    # in between): on a two-scalar graph the wrapper frame was a tenth of the call (W2).
    __call__ = property(operator.attrgetter("_call"), doc="Call the function with values for its inputs.")

    def _bind_and_call(self, args, kwargs):
        """The call when not every input came by position: sorts the arguments out, then calls."""
        args = tuple(a for a in args if a is not MISSING)  # the positional ones the caller gave
        return self._call(*self._bind_arguments(args, kwargs))

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
        raise _same_kind(exc, detail).with_traceback(None) from exc

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
        return wiring.get("function_html")(self)

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
    if config.exception_verbosity != "high":
        return "\nHINT: set coursekit.config.exception_verbosity = 'high' to see the graph of this node."
    debugprint = wiring.get("debugprint")
    return "\n\nDebugprint of the node's graph:\n" + debugprint(node.outputs, file="str")


def _device_update(target, value, copied):
    """Can the buffer a device shared variable gives up be reused for its next update value?  When the value
    is a fresh result of a device op (not a copy, not a view of something else, not an input or constant)."""
    owner = getattr(value, "owner", None)
    return (not copied and getattr(target.type, "device", None) is not None and owner is not None
            and not (getattr(owner.op, "view_map", None) or getattr(owner.op, "destroy_map", None)))


def _handing_out(ttype, borrowed):
    """None (the output is returned as it is: host values, the simulated GPU's) or the callable that turns
    the output buffer into what the caller gets (a real GPU's handles: ``Device.output_handle``)."""
    device = getattr(ttype, "device", None)  # a GpuArrayType names the Device whose memory holds its values
    return None if device is None else device.output_handle(borrowed)


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


def _same_kind(exc, detail):
    """An exception the caller can catch as ``exc`` was, carrying ``detail``.

    Some exceptions cannot be built from a message (NumPy's ``_ArrayMemoryError``
    wants a shape and a dtype): then the nearest base class that can, so a
    MemoryError still reaches the caller as a MemoryError.
    """
    for cls in type(exc).__mro__:
        try:
            return cls(f"{type(exc).__name__}: {detail}" if cls is not type(exc) else detail)
        except Exception:  # noqa: BLE001 -- the exception's own class may refuse a message: try the next
            continue
    return RuntimeError(f"{type(exc).__name__}: {detail}")


def _checked_unless_verified(node, thunk, storage):
    """The op's thunk, followed by a check of what it wrote against its declared output types,
    unless the op's class declares ``verified_outputs`` (see :class:`coursekit.graph.Op`).

    The library's ops declare it (their tests check them), so they cost nothing per call; an op
    written in a notebook does not, because a wrong dtype or shape would otherwise travel on
    silently, into a shared variable through an update.  The check is cheap: dtype, number of
    dimensions, broadcastable lengths, host or device memory.
    """
    op = node.op
    if op.verified_outputs and getattr(op, "cpu_op", op).verified_outputs:  # a twin runs its CPU op's code
        return thunk
    outputs = [(k, storage[v], v.type) for k, v in enumerate(node.outputs) if isinstance(v.type, TensorType)]

    def checked_thunk():
        thunk()
        for k, cell, ttype in outputs:
            problem = _output_problem(ttype, cell[0])
            if problem is not None:
                raise TypeError(
                    f"custom op {node.op} produced {problem} for its output {k}, which make_node declared as "
                    f"{ttype}. Make perform/make_thunk return that type (e.g. .astype('{ttype.dtype}'), a "
                    "reshape), or declare the type the op really produces in make_node.")

    return checked_thunk


def _output_problem(ttype, value):
    """What is wrong with ``value`` as a value of ``ttype`` (None when nothing is)."""
    dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    if dtype is None or shape is None:
        return "nothing (None)" if value is None else f"a {type(value).__name__}, not an array"
    on_device = getattr(ttype, "device", None) is not None  # a GpuArrayType names its Device
    if is_device_array(value) != on_device:
        return f"a {'host' if on_device else 'device'} array (this output lives in {'device' if on_device else 'host'} memory)"
    if str(dtype) != ttype.dtype or len(shape) != ttype.ndim:
        return f"a {dtype} array of shape {tuple(shape)}"
    wrong = [d for d, (b, n) in enumerate(zip(ttype.broadcastable, shape)) if b and n != 1]
    if wrong:
        return f"an array of shape {tuple(shape)} (dimension(s) {wrong} are broadcastable: length 1)"
    return None
