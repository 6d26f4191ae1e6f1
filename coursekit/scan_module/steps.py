"""How a Scan runs one step of its compiled inner function: fast, reporting to a profiler, or recording shapes.

A step is small (an RNN step is three thunks), so the loop drives the inner
function's thunks itself instead of calling it (:func:`direct_caller`); a
profiled run sends each step's thunk events to the profiler's record
(:func:`hooked_caller`); the cost model finds the shapes one step sees with
:class:`ShapeRecorder`.  Errors in a step name the user's line
(:func:`step_error`).
"""
from __future__ import annotations

from ..compile.hooks import LinkerHook
from ..graph import format_trace


class ShapeRecorder(LinkerHook):
    """A linker hook that notes the (shape, dtype) of every node's inputs during one call."""

    def __init__(self, fn):
        self.cells = [[fn.storage_map[v] for v in node.inputs] for node in fn.nodes]
        self.inputs = [None] * len(fn.nodes)

    def thunk_started(self, index):
        self.inputs[index] = [(tuple(getattr(c[0], "shape", ())), str(getattr(c[0], "dtype", "float64")))
                              for c in self.cells[index]]


def direct_caller(fn):
    """A call of the compiled inner function that drives its thunks directly.

    A step is small (an RNN step is three thunks), so the compiled call's
    per-call work (argument checks, output copies, freeing buffers) would be
    a large share of it.  This sets the input cells, runs the thunks and reads
    the output cells; the loop copies every result into its own buffers
    before the next step, so reusing the thunks' buffers is safe.  A profiled
    (or otherwise hooked) inner function is called normally, so its profile
    sees every step.
    """
    if getattr(fn, "profile", None) is not None or getattr(fn, "hooks", ()):
        return fn
    cells, thunks, nodes = fn.input_cells, fn.thunks, fn.nodes
    outs = [fn.storage_map[v] for v in fn.maker.fgraph.outputs]

    def call(*args):
        for cell, value in zip(cells, args):
            cell[0] = value
        i = 0
        try:
            for thunk in thunks:
                thunk()
                i += 1
        except Exception as exc:  # noqa: BLE001 -- any error in a step is re-raised naming the step's node
            step_error(nodes[i], fn.storage_map, exc)
        return [cell[0] for cell in outs]

    return call


def hooked_caller(fn, hook):
    """A step of the compiled inner function ``fn`` that reports to ``hook`` (a profiler's record).

    It sends the events of :class:`coursekit.compile.hooks.LinkerHook` around
    each thunk, as a hook installed on ``fn`` would receive them, without
    installing it: installing regenerates ``fn``'s call, and would leave
    every later, unprofiled run of the loop paying for the hook.
    """
    cells, thunks, nodes = fn.input_cells, fn.thunks, fn.nodes
    outs = [fn.storage_map[v] for v in fn.maker.fgraph.outputs]

    def call(*args):
        hook.call_started(args)
        for cell, value in zip(cells, args):
            cell[0] = value
        i = 0
        try:
            for thunk in thunks:
                hook.thunk_started(i)
                thunk()
                hook.thunk_finished(i)
                i += 1
        except Exception as exc:  # noqa: BLE001 -- any error in a step is re-raised naming the step's node
            hook.call_failed(i, exc)
            step_error(nodes[i], fn.storage_map, exc)
        results = [cell[0] for cell in outs]
        hook.call_computed(results, [])
        hook.call_finished()
        return results

    return call


def step_error(node, storage_map, exc):
    shapes = [getattr(storage_map[v][0], "shape", "?") for v in node.inputs]
    message = (f"{exc}\n\nIn the step of a scan: {node} failed (input shapes {shapes}); the node was created "
               f"by your code at {format_trace(node.trace)}")
    try:
        new = type(exc)(message)
    except Exception:  # noqa: BLE001 -- the exception's own class may refuse a message
        new = RuntimeError(f"{type(exc).__name__}: {message}")
    raise new.with_traceback(None) from exc
