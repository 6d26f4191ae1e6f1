"""``NanGuardMode``: stop at the first node whose input or output holds a NaN, an infinity or a huge value.

Theano's debugging mode for "my cost became nan": compile with ``mode=NanGuardMode(...)`` (or
``mode='NanGuardMode'``, ``config.mode``) and the call fails at the node that first produced (or received)
the bad value, naming it, the line of your code that built it, which input or output, and how many
elements are bad, instead of a NaN surfacing many steps later.  ``nan_is_error``, ``inf_is_error`` and
``big_is_error`` (|x| > 1e10, Theano's threshold) say what counts; their defaults are the
``config.NanGuardMode.*`` flags.  Integer values are never NaN or infinite and are not checked.

It is a linker hook (:mod:`coursekit.compile.hooks`), like :class:`~coursekit.compile.MonitorMode`: the
function is compiled as usual and every node's cells are checked around its thunk, so it is slow.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..config import config
from ..graph import format_trace
from .hooks import LinkerHook
from .mode import Mode, register_mode

BIG = 1e10  # Theano's "big value" threshold

__all__ = ["NanGuardMode", "BIG"]


def _host(value):
    if hasattr(value, "get") and not isinstance(value, np.ndarray):
        value = value.get()  # a device array (simulated GPU or CuPy): checked on a host copy
    return np.asarray(value)


def _problem(value, nan, inf, big):
    """What is wrong with ``value`` ("3 NaN", ...), or None."""
    if value is None:
        return None
    array = _host(value)
    if array.dtype.kind not in "fc":
        return None
    if nan and (count := int(np.isnan(array).sum())):
        return f"NaN detected ({count} of {array.size} elements)"
    if inf and (count := int(np.isinf(array).sum())):
        return f"Inf detected ({count} of {array.size} elements)"
    if big and (count := int((np.abs(np.nan_to_num(array, nan=0.0, posinf=0.0, neginf=0.0)) > BIG).sum())):
        return f"Big value detected ({count} of {array.size} elements above {BIG:g} in magnitude)"
    return None


class _Guard(LinkerHook):
    def __init__(self, mode):
        self.mode = mode

    def attached(self, fn):
        self.nodes = list(fn.nodes)
        self.storage = fn.storage_map
        made = {id(o) for node in self.nodes for o in node.outputs}
        # inputs that no node computes (the function's inputs, shared variables, constants): checked where read
        self.leaves = [[(k, v) for k, v in enumerate(node.inputs) if id(v) not in made] for node in self.nodes]

    def thunk_started(self, index):
        for k, var in self.leaves[index]:
            self._check(index, f"input {k} ({var})", var, "an input of this node")

    def thunk_finished(self, index):
        for k, var in enumerate(self.nodes[index].outputs):
            self._check(index, f"output {k}", var, "an output of this node")

    def _check(self, index, which, var, where):
        m = self.mode
        problem = _problem(self.storage[var][0], m.nan_is_error, m.inf_is_error, m.big_is_error)
        if problem is None:
            return
        node = self.nodes[index]
        trace = getattr(node.outputs[0].tag, "trace", None)
        message = (f"NanGuardMode: {problem} in {which} of node {index} of the function, {node.op} "
                   f"(inputs {[str(v.type) for v in node.inputs]}), created at {format_trace(trace)}. NanGuardMode "
                   f"found the error in {where}; f.toposort()[{index}] is the node.")
        action = config["NanGuardMode.action"]
        if action == "warn":
            warnings.warn(message, RuntimeWarning, stacklevel=2)
        elif action == "pdb":
            import pdb  # the debugger only when asked for

            print(message)
            pdb.set_trace()
        else:
            raise AssertionError(message)


class NanGuardMode(Mode):
    """Theano's ``NanGuardMode(nan_is_error, inf_is_error, big_is_error, optimizer, linker)``."""

    def __init__(self, nan_is_error=None, inf_is_error=None, big_is_error=None, optimizer="default", linker=None):
        include = ("fast_compile",) if optimizer in ("fast_compile", "merge", None, "None") else ("fast_run",)
        super().__init__("NanGuardMode", include)
        self.linker = linker
        self.nan_is_error = config["NanGuardMode.nan_is_error"] if nan_is_error is None else bool(nan_is_error)
        self.inf_is_error = config["NanGuardMode.inf_is_error"] if inf_is_error is None else bool(inf_is_error)
        self.big_is_error = config["NanGuardMode.big_is_error"] if big_is_error is None else bool(big_is_error)

    def finalize(self, fn):
        fn.add_hook(_Guard(self))
        return fn


register_mode("NanGuardMode", NanGuardMode)
