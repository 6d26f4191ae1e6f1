"""DebugMode: compile as FAST_RUN, then distrust everything.

Each call of a function compiled with ``mode="DebugMode"``:

1. runs a reference copy of the graph with only the *meaning-changing*
   rewrites applied (canonicalize and stabilize: the stabilised formulas are
   more accurate than the literal ones, so the literal graph is no fair
   reference) and none of the speed rewrites (specialize, GEMM, fusion,
   placement), and compares every output and update value (a wrong speed
   rewrite shows up here);
2. runs each node's thunk on copies of its inputs and checks that
   * it did not write into an input it did not declare in ``destroy_map``,
   * it did not turn finite inputs into NaN/Inf,
   * its result matches the op's reference ``perform`` (for ops whose fast
     thunk or GPU kernel is separate from ``perform``: the custom-op lesson).

It is slow, by design: use it when something looks wrong.
"""
from __future__ import annotations

import numpy as np

from .compile.hooks import LinkerHook
from .compile.io import Out
from .compile.linker import Function
from .compile.mode import Mode, register_mode
from .config import config
from .devices.simarray import is_device_array
from .fgraph import FunctionGraph
from .graph import clone_replace, format_trace
from .rewriting import apply_stages


class DebugModeError(AssertionError):
    """DebugMode found a disagreement; the message says where."""


class DebugMode(Mode):
    def __init__(self, rtol=None, atol=None, check_nan=True):
        super().__init__("DebugMode", ("fast_run",))
        self.rtol, self.atol, self.check_nan = rtol, atol, check_nan

    def __repr__(self):
        return "Mode(DebugMode)"

    def rewrite(self, fgraph):
        apply_stages(fgraph, Mode("stabilize-only", ("canonicalize", "stabilize")))
        reference_outputs, _ = clone_replace(fgraph.outputs)
        # update values are plain outputs of the reference
        fgraph.reference = FunctionGraph(fgraph.inputs, reference_outputs)
        super().rewrite(fgraph)

    def finalize(self, fn):
        """Wrap a compiled Function with the checks described above."""
        fgraph = fn.maker.fgraph
        reference_graph = fgraph.reference
        placement_only = Mode("reference", ("placement", "transfer"))
        with config.change(device="cpu"):  # the reference runs on the CPU: GPU results are checked against it
            apply_stages(reference_graph, placement_only)
        outs = [Out(v) for v in reference_graph.outputs]
        reference = Function(reference_graph, fn.input_specs, outs, False, [], placement_only,
                             name=f"{fn.name} (unrewritten reference)")
        fn.add_hook(_DebugHook(self, fn, reference))
        fn.reference = reference
        return fn

    def _close(self, expected, got):
        expected, got = _host(expected), _host(got)
        if np.shape(expected) != np.shape(got):
            return False
        dtype = np.result_type(expected, got)
        if dtype.kind not in "fc":
            return np.array_equal(expected, got)
        loose = dtype in (np.float32, np.float16)
        rtol = self.rtol if self.rtol is not None else (1e-4 if loose else 1e-7)
        atol = self.atol if self.atol is not None else (1e-5 if loose else 1e-10)
        # where the unrewritten reference overflowed, a finite result is a stabilisation, not a bug
        mask = np.isfinite(expected)
        return bool(np.allclose(expected[mask], got[mask], rtol=rtol, atol=atol))


def _host(value):
    return value.get() if _on_device(value) else np.asarray(value)


def _describe_difference(expected, got):
    expected, got = _host(expected), _host(got)
    if np.shape(expected) != np.shape(got):
        return f"shapes {np.shape(expected)} vs {np.shape(got)}"
    with np.errstate(all="ignore"):
        diff = np.abs(expected.astype("float64") - got.astype("float64"))
    return f"max abs difference {np.nanmax(diff) if diff.size else 0:.3g}"


class _DebugHook(LinkerHook):
    """The checks of the module docs, as a linker hook on the rewritten function."""

    def __init__(self, mode, fn, reference):
        self.mode, self.fn, self.reference = mode, fn, reference
        self.expected, self.before = None, None
        self.in_cells = [[fn.storage_map[v] for v in node.inputs] for node in fn.nodes]
        self.out_cells = [[fn.storage_map[v] for v in node.outputs] for node in fn.nodes]
        self.destroyed = [{i for ins in (getattr(node.op, "destroy_map", None) or {}).values() for i in ins}
                          for node in fn.nodes]

    def call_started(self, args):
        with np.errstate(all="ignore"):  # the unrewritten graph may overflow where the rewritten one is stable
            self.expected = self.reference(*args)

    def thunk_started(self, index):
        self.before = [_host(c[0]).copy() if c[0] is not None else None for c in self.in_cells[index]]

    def thunk_finished(self, index):
        node, before, mode = self.fn.nodes[index], self.before, self.mode
        for i, (cell, old) in enumerate(zip(self.in_cells[index], before)):
            if i in self.destroyed[index] or old is None:
                continue
            if not np.array_equal(_host(cell[0]), old, equal_nan=True):
                raise DebugModeError(f"DebugMode: {_where(node)} wrote into its input {i} ({node.inputs[i]}) "
                                     "without declaring it in destroy_map. Ops must not modify their inputs.")
        results = [c[0] for c in self.out_cells[index]]
        if mode.check_nan:
            inputs_finite = all(_finite(v) for v in before if v is not None)
            for k, value in enumerate(results):
                if inputs_finite and not _finite(_host(value)):
                    raise DebugModeError(f"DebugMode: {_where(node)} produced NaN/Inf in output {k} from finite "
                                         "inputs")
        reference = [[None] for _ in results]
        cpu_node = getattr(node, "cpu_node", None)
        if cpu_node is not None:  # a GPU op: its CPU twin on host copies is the reference
            cpu_node.op.perform(cpu_node, [b.copy() if b is not None else None for b in before], reference)
        else:
            values = [c[0] if _on_device(c[0]) else (None if b is None else b.copy())
                      for b, c in zip(before, self.in_cells[index])]
            node.op.perform(node, values, reference)
        for k, (ref, value) in enumerate(zip(reference, results)):
            if not mode._close(ref[0], value):
                raise DebugModeError(f"DebugMode: output {k} of {_where(node)} differs from the op's perform() "
                                     f"reference ({_describe_difference(ref[0], value)}). The op's thunk (or its "
                                     "GPU kernel) disagrees with its NumPy reference.")

    def call_computed(self, outputs, update_values):
        """Compare with the reference before any shared variable changes: a failed check updates nothing."""
        fgraph = self.fn.maker.fgraph
        for i, (e, g) in enumerate(zip(self.expected, list(outputs) + list(update_values))):
            kind = f"output {i}" if i < len(outputs) else f"update {i - len(outputs)}"
            if not self.mode._close(e, g):
                raise DebugModeError(
                    f"DebugMode: {kind} of function {self.fn.name} differs between the rewritten graph and the "
                    f"unrewritten reference ({_describe_difference(e, g)}). Rewrites applied: "
                    f"{[name for _, name, _ in fgraph.rewrite_log]}")


def _where(node):
    return f"{node} (created at {format_trace(node.trace)})"


_on_device = is_device_array


def _finite(value):
    arr = np.asarray(value)
    return arr.dtype.kind not in "fc" or bool(np.isfinite(arr).all())


register_mode("DebugMode", DebugMode)
register_mode("DEBUG_MODE", DebugMode)
