"""Linker hooks: events in order, nesting, aborting a call, and no trace of them when none is installed."""
from __future__ import annotations

import re

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit.compile.hooks import LinkerHook


class Recorder(LinkerHook):
    def __init__(self, tag, log):
        self.tag, self.log, self.fn = tag, log, None

    def attached(self, fn):
        self.fn = fn

    def call_started(self, args):
        self.log.append((self.tag, "start", len(args)))

    def thunk_started(self, index):
        self.log.append((self.tag, "before", index))

    def thunk_finished(self, index):
        self.log.append((self.tag, "after", index))

    def call_failed(self, index, exc):
        self.log.append((self.tag, "failed", index, type(exc).__name__))

    def call_computed(self, outputs, update_values):
        self.log.append((self.tag, "computed", len(outputs), len(update_values)))

    def call_finished(self):
        self.log.append((self.tag, "finished"))


def two_node_function():
    x = T.dvector("x")
    w = theano.shared(np.zeros(3), name="w")
    f = theano.function([x], T.exp(x) * 2 + w, updates={w: w + 1}, mode="FAST_COMPILE")
    return f, w


def test_events_in_order_and_nested():
    f, w = two_node_function()
    n = len(f.nodes)
    assert n >= 2
    log = []
    outer, inner = f.add_hook(Recorder("outer", log)), f.add_hook(Recorder("inner", log))
    assert outer.fn is f and f.hooks == (outer, inner)
    f(np.ones(3))
    expected = [("outer", "start", 1), ("inner", "start", 1)]
    for k in range(n):
        expected += [("outer", "before", k), ("inner", "before", k), ("inner", "after", k), ("outer", "after", k)]
    expected += [("outer", "computed", 1, 1), ("inner", "computed", 1, 1), ("outer", "finished"),
                 ("inner", "finished")]
    assert log == expected
    np.testing.assert_array_equal(w.get_value(), np.ones(3))


def test_no_hook_leaves_no_trace_in_the_generated_call():
    f, _ = two_node_function()
    plain = f.source
    assert not re.search(r"\bh[sbexcf]\d+\(", plain)
    hook = f.add_hook(Recorder("r", []))
    assert f.source != plain and "hb0(0)" in f.source
    f.remove_hook(hook)
    assert f.source == plain and f.hooks == ()


def test_only_overridden_events_are_called():
    class OnlyFinished(LinkerHook):
        calls = 0

        def call_finished(self):
            OnlyFinished.calls += 1

    f, _ = two_node_function()
    f.add_hook(OnlyFinished())
    assert "hb0" not in f.source and "hs0" not in f.source and "hf0()" in f.source
    f(np.ones(3))
    assert OnlyFinished.calls == 1


def test_raising_in_call_computed_aborts_the_call_and_updates_nothing():
    class Veto(LinkerHook):
        def call_computed(self, outputs, update_values):
            raise AssertionError("vetoed")

    f, w = two_node_function()
    f.add_hook(Veto())
    with pytest.raises(AssertionError, match="vetoed"):
        f(np.ones(3))
    np.testing.assert_array_equal(w.get_value(), np.zeros(3))


def test_call_failed_names_the_thunk_and_the_error_still_points_at_the_node():
    x = T.dmatrix("x")
    y = T.dvector("y")
    f = theano.function([x, y], T.dot(x, y))
    log = []
    f.add_hook(Recorder("r", log))
    with pytest.raises(ValueError, match="Apply node that caused the error"):
        f(np.ones((2, 3)), np.ones(4))
    failed = [entry for entry in log if entry[1] == "failed"]
    assert failed == [("r", "failed", 0, "ValueError")]
    assert ("r", "finished") not in log


def test_installing_the_same_hook_twice_is_refused():
    f, _ = two_node_function()
    hook = f.add_hook(Recorder("r", []))
    with pytest.raises(ValueError, match="already installed"):
        f.add_hook(hook)


def test_profile_and_debugmode_are_hooks():
    x = T.dvector("x")
    f = theano.function([x], T.exp(x), mode="DebugMode", profile=True)
    kinds = [type(h).__name__ for h in f.hooks]
    assert kinds == ["_FunctionRecord", "_DebugHook"]
    f(np.ones(3))
    f(np.ones(3))
    assert f.profile.timed_calls == 1
