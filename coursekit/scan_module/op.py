"""The ``Scan`` op: a loop whose body is a graph, compiled once and run once per step.

The op holds the *inner graph* (placeholders in, step results out); at link
time it compiles it into an inner function (``op.fn``, with its own
``maker.fgraph`` and, with ``profile=True``, its own profile), and its thunk
is a Python loop that feeds each step's slices and previous results to that
function.  Inputs and outputs of a Scan node, in order::

    inputs:  n_steps, sequences..., initial buffers (recurrent outputs)...,
             shared states..., non-sequences...
    outputs: traces (one (n_steps, ...) array per output)..., final shared states...

A recurrent output with taps ``[-3, -1]`` reads, at step t, the values of
steps t-3 and t-1: the loop keeps one buffer ``initial[:3] + results`` per
output and hands the step views into it, so nothing is copied but each
step's result.  *Shared states* are values carried from step to step without
a trace (a random stream's generator state); their last values become the
updates that ``scan`` returns.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..compile.function import function
from ..compile.io import Out
from ..compile.mode import get_mode
from ..config import config
from ..devices import current, device_variable
from ..devices.transfer import gpu_from_host, host_from_gpu
from ..graph import Apply, Op, clone_replace, format_trace
from ..tensor.type import TensorType
from ..work import NO_WORK, Work, work_of
from .steps import ShapeRecorder, direct_caller, hooked_caller

_IDS = itertools.count()


class _LazyWhere:
    """" (the scan built at ...)", formatted only when an error message uses it."""

    def __init__(self, trace):
        self.trace = trace

    def __str__(self):
        return f" (the scan built at {format_trace(self.trace)})"

    __format__ = lambda self, spec: format(str(self), spec)  # noqa: E731


def _same(value):
    return value


@dataclass(frozen=True)
class ScanInfo:
    """The static shape of a loop: how many of each kind of input, and the taps of each output."""

    n_seqs: int
    taps: tuple  # per output: a tuple of negative ints (recurrent) or () (just collected)
    n_shared: int
    n_nonseqs: int
    until: bool
    name: str = "scan"
    truncate_gradient: int = -1
    profile: bool = False
    mode: object = None

    @property
    def n_outs(self):
        return len(self.taps)

    @property
    def recurrent(self):
        return [k for k, taps in enumerate(self.taps) if taps]

    def depth(self, k):
        """How many initial values output ``k`` needs (3 for taps [-3, -1])."""
        return -min(self.taps[k]) if self.taps[k] else 0


class Scan(Op):
    """A loop over an inner graph (see the module docstring)."""
    verified_outputs = True

    __props__ = ("uid",)
    fold_constants = False
    host_inputs = (0,)  # n_steps: the loop's Python driver reads it, so on a GPU device it stays on the host
    # set by a profiler while this loop runs in a profiled call: a function giving, for the inner function
    # about to run, a linker hook that sees every step (see steps.hooked_caller); None otherwise
    step_hook = None

    def __init__(self, inner_inputs, inner_outputs, info, trace=None):
        self.inner_inputs, self.inner_outputs, self.info = list(inner_inputs), list(inner_outputs), info
        self.uid = next(_IDS)
        self.trace = trace  # the user's scan() call, for error messages
        self.fn = None
        self.device_fns = {}  # device name -> inner function compiled for that GPU device
        self.last_steps = None  # steps the last run made (the cost model prices the loop from it)
        self._step_work = {}  # input shapes -> the Work of one step (see work())

    # each loop/branch is its own op (its inner graph is its identity), also after unpickling
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __getstate__(self):
        """Pickled without the compiled inner function(s): they are compiled again on first use."""
        state = dict(self.__dict__)
        for key in ("fn", "device_fns", "_step_work"):
            state[key] = None if key == "fn" else {}
        return state

    def __str__(self):
        return f"Scan{{{self.info.name}}}"

    # ------------------------------------------------------------ the node
    def make_node(self, n_steps, *inputs):
        info = self.info
        n_init = len(info.recurrent)
        expected = info.n_seqs + n_init + info.n_shared + info.n_nonseqs
        if len(inputs) != expected:
            raise TypeError(f"{self} takes {expected} inputs after n_steps, got {len(inputs)}")
        out_types = []
        for k in range(info.n_outs):
            inner = self.inner_outputs[k].type
            bcast = inner.broadcastable
            if info.taps[k]:
                init = inputs[info.n_seqs + info.recurrent.index(k)].type
                bcast = tuple(a and b for a, b in zip(bcast, init.broadcastable[1:]))
            out_types.append(TensorType(inner.dtype, (False,) + tuple(bcast)))
        shared_start = info.n_seqs + n_init
        # final states are host values (the loop runs on the host); placement moves them where they live
        out_types += [v.type.host_type() if hasattr(v.type, "host_type") else v.type
                      for v in inputs[shared_start:shared_start + info.n_shared]]
        return Apply(self, [n_steps, *inputs], [t.make_variable() for t in out_types])

    def split_inputs(self, inputs):
        """(n_steps, sequences, initial buffers, shared states, non-sequences) of a node's inputs."""
        info = self.info
        n_steps, rest = inputs[0], list(inputs[1:])
        a = info.n_seqs
        b = a + len(info.recurrent)
        c = b + info.n_shared
        return n_steps, rest[:a], rest[a:b], rest[b:c], rest[c:]

    # ------------------------------------------------------------ compiling
    def compile_inner(self):
        """The inner graph as a compiled function (once per op)."""
        if self.fn is None:
            outs = [Out(v, borrow=True) for v in self.inner_outputs]
            # the loop runs where its values live: here on the host (state stays in host memory, no per-step
            # transfer); the inner graph is never placed on a device on its own
            with config.change(device="cpu"):
                self.fn = function(self.inner_inputs, outs, mode=self.info.mode, on_unused_input="ignore",
                                   trust_input=True, name=f"{self.info.name} (inner function)",
                                   profile=self.info.profile or None)
        return self.fn

    def compile_inner_on_device(self):
        """The inner graph for the current GPU device: inputs and outputs live in device memory.

        Each host placeholder is replaced by ``host_from_gpu(device input)`` and
        each output wrapped in ``gpu_from_host``; placement then lifts the step's
        ops to the device and cuts every transfer pair, so a step moves no data
        between host and device (see ``op.device_fns[name].toposort()``).
        """
        name = current().name
        if name not in self.device_fns:
            dev_inputs = [device_variable(v.type.dtype, v.type.broadcastable, v.name) for v in self.inner_inputs]
            outs, _ = clone_replace(self.inner_outputs, {ph: host_from_gpu(dv) for ph, dv in
                                                         zip(self.inner_inputs, dev_inputs)})
            # borrow=False: a fused GpuElemwise may return a buffer of its own instead of writing into a kept
            # output buffer, and the device thunk does not check for that (on the host, Elemwise does)
            # no CUDA graph per step: each step's inputs are other device buffers (slices of the sequence),
            # so a graph captured at one step could not be replayed at the next
            self.device_fns[name] = function(dev_inputs, [Out(gpu_from_host(o), borrow=False) for o in outs],
                                             mode=get_mode(self.info.mode).without_cuda_graphs(),
                                             on_unused_input="ignore", trust_input=True,
                                             name=f"{self.info.name} (inner function, {name})",
                                             profile=self.info.profile or None)
        return self.device_fns[name]

    def gpu_perform(self, node, inputs, output_storage):
        """The loop on a GPU device (placement wraps the op when its data fits the device): buffers,
        state and every step stay in device memory; n_steps is a host input, and only the stop condition
        (``until``) is read back, once per step."""
        device = current()
        backend = getattr(device, "backend", None) or device
        fn = self.compile_inner_on_device()
        call = fn if self.step_hook is None else hooked_caller(fn, self.step_hook(fn))
        values = [backend.unwrap(v) if backend.is_device_array(v) else v for v in inputs]
        results = self.run_loop(call, values, backend.xp, backend.wrap, backend.unwrap)
        for cell, value in zip(output_storage, results):
            cell[0] = backend.wrap(value)

    def make_thunk(self, node, storage_map):
        inner = self.compile_inner()
        fast = direct_caller(inner)
        in_cells = [storage_map[v] for v in node.inputs]
        out_cells = [storage_map[v] for v in node.outputs]
        run = self.run_loop

        def thunk():
            call = fast if self.step_hook is None else hooked_caller(inner, self.step_hook(inner))
            results = run(call, [c[0] for c in in_cells])
            for cell, value in zip(out_cells, results):
                cell[0] = value

        return thunk

    def perform(self, node, inputs, output_storage):
        inner = self.compile_inner()
        call = direct_caller(inner) if self.step_hook is None else hooked_caller(inner, self.step_hook(inner))
        for cell, value in zip(output_storage, self.run_loop(call, inputs)):
            cell[0] = value

    # ------------------------------------------------------------ the loop
    def run_loop(self, fn, inputs, xp=np, wrap=None, unwrap=None):
        """Run the steps.  ``inputs`` are ``xp`` arrays; ``wrap``/``unwrap`` convert to and from what
        ``fn`` takes and gives (device arrays on a GPU device; None on the host)."""
        info = self.info
        n_steps, seqs, inits, states, nonseqs = self.split_inputs(inputs)
        n = self._check_lengths(int(n_steps), seqs, inits)
        buffers, depths = [None] * info.n_outs, [info.depth(k) for k in range(info.n_outs)]
        for k, init in zip(info.recurrent, inits):
            dtype = self.inner_outputs[k].type.dtype
            buffers[k] = xp.empty((depths[k] + n,) + tuple(init.shape[1:]), dtype=dtype)
            buffers[k][:depths[k]] = init[:depths[k]]
        tap_plan = [(buffers[k], depths[k], info.taps[k]) for k in info.recurrent]
        row_shapes = [None if buf is None else buf.shape[1:] for buf in buffers]  # what each step must return
        on_host = wrap is None
        wrap = wrap or _same
        states = [wrap(v) for v in states]
        nonseqs = [wrap(v) for v in nonseqs]
        n_outs, n_shared, until = info.n_outs, info.n_shared, info.until
        steps_done = n
        for t in range(n):
            if on_host:  # the hot path: no conversion calls
                args = [s[t, ...] for s in seqs]  # [t, ...] gives 0-d arrays, never NumPy scalars
                for buf, depth, taps in tap_plan:
                    base = depth + t
                    args.extend([buf[base + tap, ...] for tap in taps])
            else:
                args = [wrap(s[t, ...]) for s in seqs]
                for buf, depth, taps in tap_plan:
                    base = depth + t
                    args.extend([wrap(buf[base + tap, ...]) for tap in taps])
            args.extend(states)
            args.extend(nonseqs)
            results = fn(*args)
            if unwrap is not None:
                results = [unwrap(r) if not isinstance(r, np.ndarray) else r for r in results]
            for k in range(n_outs):
                value = results[k]
                if value.shape != row_shapes[k]:
                    if buffers[k] is not None:
                        self._shape_error(k, t, value.shape, row_shapes[k])
                    buffers[k] = xp.empty((n,) + value.shape, dtype=self.inner_outputs[k].type.dtype)
                    row_shapes[k] = value.shape
                buffers[k][depths[k] + t] = value
            if n_shared:
                states = [wrap(xp.array(v, copy=True)) for v in results[n_outs:n_outs + n_shared]]
            if until and bool(results[-1]):
                steps_done = t + 1
                break
        self.last_steps = steps_done
        traces = []
        for k in range(n_outs):
            buf = buffers[k]
            if buf is None:  # zero steps: an empty trace of the right rank
                buf = xp.empty((0,) * (self.inner_outputs[k].type.ndim + 1), dtype=self.inner_outputs[k].type.dtype)
            traces.append(buf[depths[k]:depths[k] + steps_done])
        return traces + [unwrap(v) if unwrap is not None else v for v in states]

    def _check_lengths(self, n, seqs, inits):
        where = _LazyWhere(self.trace)
        if n < 0:
            raise ValueError(f"scan: n_steps is {n}; it must be >= 0 (use go_backwards=True to run backwards){where}")
        for i, s in enumerate(seqs):
            if s.shape[0] < n:
                raise ValueError(f"scan: sequence {i} has {s.shape[0]} entries but the loop runs {n} steps; give "
                                 f"n_steps <= the sequences' length{where}")
        for k, init in zip(self.info.recurrent, inits):
            depth = self.info.depth(k)
            if init.shape[0] < depth:
                raise ValueError(
                    f"scan: output {k} reads taps {list(self.info.taps[k])}, which reach {depth} steps back, but its "
                    f"initial state has only {init.shape[0]} entries (shape {init.shape}). Give outputs_info="
                    f"dict(initial=x0, taps=...) with x0 of at least {depth} rows{where}")
        return n

    def _shape_error(self, k, t, got, expected):
        raise ValueError(
            f"scan: at step {t}, output {k} of the step function has shape {got}, but earlier steps (or its initial "
            f"state) have shape {expected}; every step must return the same shape (the scan built at "
            f"{format_trace(self.trace)})")

    # ------------------------------------------------------------ cost model
    def work(self, node, shapes, dtypes):
        """The loop's work for a GPU cost model: one step's work times the steps of the last run.

        A loop on a GPU device launches every kernel of its step once per step,
        so a short step is priced mostly in launch latency.  One step's work is
        the sum over the inner function's nodes (each op's own ``work``, the
        shapes found by running the host inner function once on zeros of the
        step's shapes); bytes, FLOPs and launches are summed, and the wave fill
        is that of the step's largest kernel.  Before any run the sequences'
        length stands for the number of steps.
        """
        _, seq_shapes, init_shapes, state_shapes, nonseq_shapes = self.split_inputs(list(shapes))
        steps = self.last_steps
        if steps is None:
            steps = min((s[0] for s in seq_shapes), default=0)
        if steps == 0:
            return NO_WORK
        key = (tuple(map(tuple, shapes)), tuple(map(str, dtypes)))
        if key not in self._step_work:
            self._step_work[key] = self._one_step_work(seq_shapes, init_shapes, state_shapes, nonseq_shapes)
        step = self._step_work[key]
        if step is None:  # a step we cannot run on zeros (a random generator's state): the default guess
            return NO_WORK._replace(launches=steps)
        return step._replace(flops=step.flops * steps, bytes_read=step.bytes_read * steps,
                             bytes_written=step.bytes_written * steps, launches=step.launches * steps)

    def _one_step_work(self, seq_shapes, init_shapes, state_shapes, nonseq_shapes):
        if state_shapes:
            return None
        shapes = [tuple(s[1:]) for s in seq_shapes]
        for k, init in zip(self.info.recurrent, init_shapes):
            shapes += [tuple(init[1:])] * len(self.info.taps[k])
        shapes += [tuple(s) for s in nonseq_shapes]
        fn = self.compile_inner()
        args = [np.zeros(s, dtype=v.type.dtype) for s, v in zip(shapes, self.inner_inputs)]
        seen = ShapeRecorder(fn)
        fn.add_hook(seen)
        try:
            with np.errstate(all="ignore"):
                fn(*args)
        finally:
            fn.remove_hook(seen)
        works = [work_of(node, *zip(*info)) if info else work_of(node, [], [])
                 for node, info in zip(fn.nodes, seen.inputs)]
        largest = max(works, key=lambda w: w.flops + w.bytes, default=NO_WORK)
        return Work(flops=sum(w.flops for w in works), bytes_read=sum(w.bytes_read for w in works),
                    bytes_written=sum(w.bytes_written for w in works), launches=sum(w.launches for w in works),
                    threads=largest.threads, matrix=largest.matrix, dtype=largest.dtype)

    # ------------------------------------------------------------ gradient
    def L_op(self, inputs, outputs, output_grads):
        from .grad import scan_grad

        return scan_grad(self, inputs, outputs, output_grads)
