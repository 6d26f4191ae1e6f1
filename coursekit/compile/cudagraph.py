"""Whole-call CUDA graphs: a compiled function's device kernels captured once and replayed as ONE launch.

On by default: every function on a real GPU (through CuPy, or its test stand-in) is captured after its
first two ordinary calls, when its buffers and kernels exist (``mode.with_cuda_graphs(after=k)`` changes
when; ``mode.without_cuda_graphs()`` turns it off).  Elsewhere the function runs as usual at no cost and
says why in ``f.cuda_graph.reason``.  A captured call pays the host's launch cost once, not per kernel:
that is what makes a training step of a dozen small kernels cheap to dispatch.

A call is cut in three: the host work and host->device copies that feed the device (run every call,
into the same device buffers), the device kernels (captured with CuPy's stream capture:
``Stream.begin_capture``/``end_capture``, replayed with ``Graph.launch``), and the device->host
copies and host work that read the results (run every call).  Updates of device shared variables are
captured as copies into the variables' own buffers, since a graph writes to the addresses it saw.

A graph cannot be used, and the function keeps its ordinary call, when:

* a value comes back to the host and goes out again between kernels (a host op in the middle);
* a kernel synchronises or copies to the host while being captured (CUDA refuses; CuPy raises);
* a kernel allocates a device buffer while it is captured (a temporary inside a multi-kernel op, a
  loop's per-step buffers): the pool would hand that memory to someone else after the capture while the
  graph still writes to it, so such a call is never captured (counted with CuPy's memory hooks; the
  stand-in counts its own);
* hooks watch every thunk (``profile=True``, DebugMode, a trace): they see every op, so while one is
  installed the call is the ordinary one; when the last goes the function is captured again.

With ``allow_gc`` (the default) the call just before capture keeps its buffers, and the graph owns
them from then on: a graph writes to the addresses it saw, so a graphed function holds its
intermediate buffers between calls, as ``allow_gc=False`` would.

It is dropped, and captured again after ``after`` more calls, when an input's shape or dtype
changes, when a device input is another buffer than at capture, when a shared variable is given a
new buffer (``set_value``), or when arguments come by name.  ``f.cuda_graph.reason`` says which.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ..devices.transfer import GpuFromHost, HostFromGpu
from ..devices.types import GpuArrayType
from .callgen import CallPlan, generate_call
from .sharedvalue import SharedVariable


class CaptureRefused(RuntimeError):
    """Why this function's call cannot be one CUDA graph."""


def sections(fgraph, nodes):
    """(before, device, after): node positions run before the graph, captured in it, and after it."""
    after = set()
    for node in nodes:
        if isinstance(node.op, HostFromGpu) or any(v.owner in after for v in node.inputs):
            after.add(node)
    device = []
    for k, node in enumerate(nodes):
        if node in after:
            continue
        if getattr(node.op, "device", "cpu") == "gpu" and not isinstance(node.op, GpuFromHost):
            device.append(k)
        elif not getattr(node.op, "shape_only", False) and any(nodes[d] in _ancestors(node) for d in device):
            raise CaptureRefused(f"{node.op} runs on the host between device kernels (it reads a device result "
                                 "that came back to the host): a graph cannot contain host work")
    for node in after:
        if getattr(node.op, "device", "cpu") == "gpu" and not isinstance(node.op, HostFromGpu):
            raise CaptureRefused(f"{node.op} needs a value that came back to the host and goes out again: "
                                 "a graph cannot wait for the host")
    before = [k for k, n in enumerate(nodes) if n not in after and k not in device]
    return before, device, [k for k, n in enumerate(nodes) if n in after]


def _ancestors(node):
    seen, stack = set(), list(node.inputs)
    while stack:
        var = stack.pop()
        if var.owner is not None and var.owner not in seen:
            seen.add(var.owner)
            stack.extend(var.owner.inputs)
    return seen


@contextmanager
def _allocations(cupy):
    """``with _allocations(cupy) as box:`` -- ``box[0]``: device buffers the pool handed out inside the block."""
    box = [0]
    hooks = getattr(getattr(cupy.cuda, "memory_hook", None), "MemoryHook", None)
    if hooks is not None:                    # real CuPy: a memory hook sees every pool allocation
        class Count(hooks):
            name = "coursekit-capture"

            def malloc_preprocess(self, **_):
                box[0] += 1
        with Count():
            yield box
    else:                                    # the CuPy stand-in counts its own allocations
        with cupy.counting() as counts:
            yield box
        box[0] = counts.allocations


def _signature(args):
    return tuple((np.shape(a), str(getattr(a, "dtype", type(a).__name__))) for a in args)


class GraphCall:
    """Counts calls, captures after ``after`` of them, then replays; ``reason``: why no graph runs (or None)."""

    def __init__(self, fn, after=2):
        self.fn, self.after, self.calls = fn, int(after), 0
        self.graph = self.reason = None
        self.captures = 0
        self._keep = None
        self.rewire()

    def rewire(self):
        """Wrap the function's (new) ordinary call; with hooks installed, or off a GPU, step aside."""
        fn = self.fn
        self._normal, self.graph, self.calls = fn._call, None, 0
        if getattr(fn.device, "cupy", None) is None:
            self.reason = f"the function runs on {fn.device.label}: CUDA graphs need a real GPU through CuPy"
        elif fn.hooks:
            self.reason = "hooks watch every thunk (profiling or DebugMode); a graph runs them as one launch"
        else:
            self.reason = None
            fn._call = self._counting

    def _counting(self, *args, **named):
        self.calls += 1
        capturing = self.calls >= self.after and not named
        if capturing and self.fn.allow_gc:           # keep this call's buffers: the capture reuses them
            result = self._kept_buffers_call()(*args)
        else:
            result = self._normal(*args, **named)
        if named:
            self.reason = "arguments came by name: a captured call takes them by position"
        elif self.calls >= self.after:
            try:
                self._capture(args)
            except CaptureRefused as refused:
                self.reason = str(refused)
                self.fn._call = self._normal        # for good: the graph's structure does not change
        return result

    def _replay(self, *args, **named):
        why = self._changed(args, named)
        if why is None:
            return self._graph_call(*args)
        self.reason, self.graph, self.calls = why, None, 0
        self.fn._call = self._counting              # captured again after `after` more calls
        return self._normal(*args, **named)

    def _changed(self, args, named):
        if named:
            return "arguments came by name: a captured call takes them by position"
        if _signature(args) != self._args:
            return f"an input changed shape or dtype ({self._args} at capture, now {_signature(args)})"
        for k, value in self._device_args:
            if args[k] is not value:
                return f"device input {k} is another buffer than at capture (the graph reads the old one's address)"
        for cell, value in self._shared:
            if cell[0] is not value:
                return "a shared variable was given a new buffer (set_value) after capture"
        return None

    def _capture(self, args):
        fn = self.fn
        cupy = getattr(fn.device, "cupy", None)
        if cupy is None:
            raise CaptureRefused(f"the function runs on {fn.device.label}: CUDA graphs need a real GPU through CuPy")
        if fn.hooks:
            raise CaptureRefused("hooks watch every thunk (profiling or DebugMode); a graph runs them as one launch")
        before, device, after = sections(fn.maker.fgraph, fn.nodes)
        if not device:
            raise CaptureRefused("nothing runs on the device (no kernel to capture): the call stays as it is")
        updates = [(target, cell) for target, cell, *_ in fn.update_plan if fn.device.is_device_array(target[0])]
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream, _allocations(cupy) as allocated:
            stream.begin_capture()
            node = None
            try:
                for k in device:
                    node = fn.nodes[k]
                    fn.thunks[k]()
                node = None
                for target, cell in updates:        # a graph writes where it wrote at capture: copy in place
                    if cell[0] is not target[0]:
                        cupy.copyto(target[0], cell[0])
            except Exception as err:  # noqa: BLE001 -- whatever CUDA refused is the reason, said in words
                try:
                    stream.end_capture()
                except Exception:  # noqa: BLE001 -- the capture is invalid anyway
                    pass
                raise CaptureRefused(f"capturing {node.op if node else 'the updates'} failed: {err}") from None
            graph = stream.end_capture()
        if allocated[0]:
            raise CaptureRefused(f"the call allocates {allocated[0]} device buffer(s) while its kernels run "
                                 "(temporaries, or a loop's per-step buffers): a graph would keep writing to memory "
                                 "the pool hands to others after the capture")
        self.graph, self.captures, self.reason = graph, self.captures + 1, None
        self._args = _signature(args)
        self._device_args = [(k, a) for k, a in enumerate(args) if fn.device.is_device_array(a)]
        self._shared = [(v.container.storage, v.container.storage[0]) for v in fn.maker.fgraph.inputs
                        if isinstance(v, SharedVariable) and isinstance(v.type, GpuArrayType)]
        self._graph_call = self._generate(graph, before, after, {id(t) for t, _ in updates})
        fn._call = self._replay

    def _kept_buffers_call(self):
        """The ordinary call without allow_gc's frees (made once): the capture after it finds every buffer."""
        if self._keep is None:
            fn = self.fn
            plan = CallPlan(
                name=f"{fn.name} (before capture)", input_cells=fn.input_cells, input_types=fn.input_types,
                thunks=fn.thunks, outputs=fn.output_plan, updates=fn.update_plan, release_cells=fn._release_cells,
                gc_cells=[], single=fn.single, filter_input=fn._filter_input, thunk_error=fn._runtime_error,
                trust_input=fn.trust_input, bind=fn._bind_and_call, hooks=[], turn=fn._turn,
                update_locks=fn._update_locks)
            self._keep = generate_call(plan)[1]
        return self._keep

    def _generate(self, graph, before, after, captured_targets):
        """The call with the device part as one ``graph.launch()`` (outputs handed out as usual)."""
        fn = self.fn
        order = before + [None] + after
        launch = graph.launch
        first_device = next(k for k in range(len(fn.nodes)) if k not in before and k not in after)
        thunks = [launch if k is None else fn.thunks[k] for k in order]
        positions = [first_device if k is None else k for k in order]
        # a device output is the graph's buffer every call: the caller gets a copy (unless borrowed), and the
        # cell keeps the buffer (an ordinary call empties it so that the next call allocates anew)
        outputs = [(cell, copy or (hand_out is not None and not out.borrow), as_array, hand_out)
                   for (cell, copy, as_array, hand_out), out in zip(fn.output_plan, fn.maker.outputs)]
        kept = {id(cell) for cell, _, _, hand_out in outputs if hand_out is not None}
        kept |= {id(cell) for cell in fn.view_cells}   # the graph does not remake views: their cells stay
        plan = CallPlan(
            name=f"{fn.name} (CUDA graph)", input_cells=fn.input_cells, input_types=fn.input_types, thunks=thunks,
            outputs=outputs, updates=[u for u in fn.update_plan if id(u[0]) not in captured_targets],
            release_cells=[c for c in fn._release_cells if id(c) not in kept], gc_cells=[], single=fn.single, filter_input=fn._filter_input,
            thunk_error=lambda i, exc: fn._runtime_error(positions[i], exc), trust_input=fn.trust_input,
            bind=fn._bind_and_call, hooks=[], turn=fn._turn, update_locks=fn._update_locks)
        self.source, call = generate_call(plan)
        return call
