"""``MonitorMode``: call your functions before and after every node of a compiled function (Theano's).

::

    def detect_nan(i, node, fn):
        for output in fn.outputs:
            if numpy.isnan(output[0]).any():
                print("*** NaN detected ***", node)

    f = coursekit.function([x], y, mode=coursekit.compile.MonitorMode(post_func=detect_nan))

``pre_func(i, node, fn)`` runs before node ``i`` of ``f.toposort()``,
``post_func(i, node, fn)`` after it; ``fn.inputs`` and ``fn.outputs`` are the
node's storage cells (``fn.outputs[0][0]`` is its first output's value), as
in Theano.  It is a linker hook (see :mod:`coursekit.compile.hooks`), so the
function itself is compiled as usual.
"""
from __future__ import annotations

from .hooks import LinkerHook
from .mode import Mode


class NodeCells:
    """What ``pre_func``/``post_func`` receive as ``fn``: the node's input and output storage cells."""

    def __init__(self, node, storage_map):
        self.inputs = [storage_map[v] for v in node.inputs]
        self.outputs = [storage_map[v] for v in node.outputs]


class _Before(LinkerHook):
    def __init__(self, func):
        self.func = func

    def attached(self, fn):
        self.nodes = list(fn.nodes)
        self.cells = [NodeCells(n, fn.storage_map) for n in self.nodes]

    def thunk_started(self, index):
        self.func(index, self.nodes[index], self.cells[index])


class _After(_Before):
    thunk_started = LinkerHook.thunk_started

    def thunk_finished(self, index):
        self.func(index, self.nodes[index], self.cells[index])


class MonitorMode(Mode):
    """A mode that calls ``pre_func`` / ``post_func`` around each node; rewrites as ``optimizer`` says."""

    def __init__(self, pre_func=None, post_func=None, optimizer="default", linker=None):
        include = ("fast_compile",) if optimizer in ("fast_compile", "merge", None, "None") else ("fast_run",)
        super().__init__("MonitorMode", include)
        self.pre_func, self.post_func, self.linker = pre_func, post_func, linker

    def finalize(self, fn):
        if self.pre_func is not None:
            fn.add_hook(_Before(self.pre_func))
        if self.post_func is not None:
            fn.add_hook(_After(self.post_func))
        return fn
