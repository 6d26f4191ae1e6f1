"""DebugMode catches wrong ops, ops that scribble on their inputs, and NaNs."""
import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit.debugmode import DebugModeError


class Double(theano.Op):
    """x * 2, with a separate fast thunk (which subclasses get wrong on purpose)."""

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return theano.Apply(self, [x], [x.type.make_variable()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0] * 2

    def fast(self, x):
        return x * 2

    def make_thunk(self, node, storage_map):
        src, dst = storage_map[node.inputs[0]], storage_map[node.outputs[0]]

        def thunk():
            dst[0] = self.fast(src[0])

        return thunk


class WrongDouble(Double):
    def fast(self, x):
        return x * 3


class Scribbler(Double):
    def fast(self, x):
        x *= 2  # writes into its input without declaring destroy_map
        return x.copy()


class NaNMaker(Double):
    def fast(self, x):
        return x * np.nan


def test_correct_op_passes():
    x = T.fvector("x")
    f = theano.function([x], Double()(x) + 1, mode="DebugMode")
    np.testing.assert_array_equal(f(np.ones(3, "float32")), [3, 3, 3])


@pytest.mark.parametrize("op, match", [
    (WrongDouble(), "differs from the op's perform"),
    (Scribbler(), "wrote into its input"),
    (NaNMaker(), "NaN/Inf"),
])
def test_debugmode_catches_bad_ops(op, match):
    x = T.fvector("x")
    f = theano.function([x], op(x), mode="DebugMode")
    with pytest.raises(DebugModeError, match=match) as info:
        f(np.ones(3, "float32"))
    assert "test_debugmode.py" in str(info.value)  # names the user's line
    g = theano.function([x], op(x), mode="FAST_RUN")
    g(np.ones(3, "float32"))  # FAST_RUN trusts the op


def test_debugmode_catches_a_wrong_rewrite(monkeypatch):
    from coursekit.rewriting import _DB, local_rewrite
    from coursekit.rewriting.patterns import elemwise_name

    @local_rewrite("specialize", "wrong_for_test")
    def wrong_exp(fgraph, node):
        if elemwise_name(node) == "exp" and not getattr(node.outputs[0].tag, "rewritten", False):
            new_exp = T.exp(node.inputs[0])
            new_exp.tag.rewritten = True  # fire once
            return [new_exp * 1.5]
        return None

    try:
        x = T.fvector("x")
        f = theano.function([x], T.exp(x), mode="DebugMode")
        with pytest.raises(DebugModeError, match="differs between the rewritten graph"):
            f(np.ones(2, "float32"))
    finally:
        _DB["specialize"] = [r for r in _DB["specialize"] if r.name != "wrong_exp"]


def test_debugmode_leaves_state_unchanged_on_error():
    s = theano.shared(np.ones(3, "float32"), name="s")
    f = theano.function([], WrongDouble()(s), updates={s: s + 1}, mode="DebugMode")
    with pytest.raises(DebugModeError):
        f()
    np.testing.assert_array_equal(s.get_value(), 1)


def test_debugmode_via_config_flag():
    x = T.fvector("x")
    with theano.config.change(mode="DebugMode"):
        f = theano.function([x], WrongDouble()(x))
    with pytest.raises(DebugModeError):
        f(np.ones(2, "float32"))
