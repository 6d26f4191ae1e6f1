"""Rewrites as patterns (coursekit.rewriting.patterns): matched by op identity, on CPU and GPU nodes alike."""
import numpy as np

import coursekit as theano
import coursekit.tensor as T
from coursekit import config, devices
from coursekit.devices.gpu_ops import gpu_twin
from coursekit.rewriting import registered
from coursekit.rewriting.patterns import ADD, EXP, MUL, NEG, SIGMOID, SUB, TRUE_DIV, match, pattern_rewrite
from coursekit.scalar.ops import ScalarOp
from coursekit.tensor.elemwise import Elemwise


def _ops(f):
    return [str(n.op) for n in f.toposort()]


def _rewrite(name):
    (rw,) = [r for r in registered() if r.name == name]
    return rw


def test_a_pattern_rule_tracks_exactly_the_ops_its_patterns_start_with():
    assert _rewrite("double_negation").tracks == (Elemwise(NEG),)
    assert set(_rewrite("sink_negation").tracks) == {Elemwise(op) for op in (MUL, TRUE_DIV, ADD, SUB)}
    assert not _rewrite("double_negation").looks_at(Elemwise(EXP))


def test_names_bind_once_and_numbers_match_constants():
    x, y = T.dvector("x"), T.dvector("y")
    assert match((SUB, "a", "a"), x - x, {}) and not match((SUB, "a", "a"), x - y, {})
    bound = {}
    assert match((SUB, 1, (SIGMOID, "z")), 1 - T.sigmoid(y), bound) and bound["z"] is y
    assert not match((SUB, 2, (SIGMOID, "z")), 1 - T.sigmoid(y), {})


def test_ops_are_matched_by_identity_not_by_name():
    """An op of one's own that happens to be called 'neg' is not the built-in neg."""
    class MyNeg(ScalarOp):
        pass

    my_neg = Elemwise(MyNeg("neg", 1, np.negative, c_expr="(-{0})"))
    x = T.dvector("x")
    f = theano.function([x], my_neg(my_neg(x)))
    assert "double_negation" not in [name for _, name, _ in f.maker.fgraph.rewrite_log]
    g = theano.function([x], -(-x))
    assert "double_negation" in [name for _, name, _ in g.maker.fgraph.rewrite_log]


def test_excluding_a_pattern_rule_keeps_its_nodes():
    x = T.dvector("x")
    f = theano.function([x], T.exp(-(-x)), mode=theano.Mode("FAST_RUN").excluding("double_negation", "fusion"))
    assert _ops(f).count("Elemwise{neg}") == 2


def test_pattern_rules_see_gpu_twins_and_build_on_the_same_device():
    """Nodes that are already GPU twins (a graph built from device ops) are rewritten like CPU ones."""
    with config.change(device="sim"):
        sim = devices.get("sim")
        twin = gpu_twin(Elemwise)
        x = devices.device_variable("float32", (False,), name="x")
        s = twin(Elemwise(SIGMOID), sim)(x)
        one = theano.tensor.constant(np.ones(1, "float32"))
        y = twin(Elemwise(SUB), sim)(one, s)  # 1 - sigmoid(x) -> sigmoid(-x), both on the device
        f = theano.function([x], twin(Elemwise(NEG), sim)(twin(Elemwise(NEG), sim)(y)),
                            mode=theano.Mode("FAST_RUN").excluding("fusion"))
        fired = [name for _, name, _ in f.maker.fgraph.rewrite_log]
        assert "double_negation" in fired and "one_minus_sigmoid" in fired
        assert all(op.startswith(("Gpu", "HostFromGpu")) for op in _ops(f)), _ops(f)
        a = np.linspace(-3, 3, 7, dtype="float32")
        np.testing.assert_allclose(f(devices.to_device(a)), 1 - 1 / (1 + np.exp(-a)), rtol=1e-5, atol=1e-7)


def test_a_rule_of_ones_own_as_a_pattern():
    from coursekit.rewriting import remove_rewrite

    pattern_rewrite("canonicalize", "test_only", name="exp_of_neg_of_neg", rules=[((EXP, (NEG, (NEG, "x"))), (EXP, "x"))])
    try:
        x = T.dvector("x")
        f = theano.function([x], T.exp(-(-x)), mode=theano.Mode("FAST_RUN").excluding("double_negation"))
        assert "exp_of_neg_of_neg" in [name for _, name, _ in f.maker.fgraph.rewrite_log]
        np.testing.assert_allclose(f(np.arange(3.0)), np.exp(np.arange(3.0)))
    finally:
        remove_rewrite("exp_of_neg_of_neg")
