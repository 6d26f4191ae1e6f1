"""A rule of one's own: registered with the decorators, seen in the rewrite log, taken out with remove_rewrite.

Lesson 9 and its exercise register rules in the running process and remove them again; these tests
make sure a removed rule really stops firing, that it can be put back, and that a wrong name gets a
message that helps.
"""
from __future__ import annotations

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit.rewriting import local_rewrite, registered, remove_rewrite
from coursekit.rewriting.patterns import elemwise_name, producer
from coursekit.tensor.elemwise import Elemwise


def _log_of_exp(fgraph, node):
    if elemwise_name(node) == "log":
        inner = producer(node.inputs[0], "exp")
        if inner is not None:
            return [inner.inputs[0]]
    return None


def _compiled_ops():
    x = T.dvector("x")
    with theano.config.change(device="cpu"):
        f = theano.function([x], T.log(T.exp(x)), mode=theano.Mode("FAST_RUN").excluding("fusion"))
    return f, [node.op.scalar_op.name for node in f.toposort()]


@pytest.fixture
def user_rule():
    local_rewrite("canonicalize", "test_user", tracks=[Elemwise], name="test_log_of_exp")(_log_of_exp)
    yield "test_log_of_exp"
    if any(rw.name == "test_log_of_exp" for rw in registered()):
        remove_rewrite("test_log_of_exp")


def test_a_registered_rule_fires_and_is_logged(user_rule):
    f, names = _compiled_ops()
    assert names == []  # the output is the input itself: nothing left to compute
    assert ("canonicalize", user_rule) in [entry[:2] for entry in f.maker.fgraph.rewrite_log]
    value = np.array([-2.0, 0.5, 800.0])  # exp(800) overflows: only the rewritten graph gets 800
    assert f(value).tolist() == value.tolist()


def test_a_removed_rule_stops_firing_and_can_be_put_back(user_rule):
    removed = remove_rewrite(user_rule)
    assert removed.fn is _log_of_exp and removed.stage == "canonicalize" and "test_user" in removed.tags
    assert user_rule not in [rw.name for rw in registered()]
    f, names = _compiled_ops()
    assert names == ["exp", "log"]
    assert user_rule not in [entry[1] for entry in f.maker.fgraph.rewrite_log]
    local_rewrite(removed.stage, *removed.tags, tracks=removed.tracks, name=removed.name)(removed.fn)
    assert _compiled_ops()[1] == []


def test_removing_an_unknown_rule_names_the_close_ones(user_rule):
    with pytest.raises(LookupError, match=r"no rewrite named 'test_log_of_ex' .*did you mean \['test_log_of_exp'\]"):
        remove_rewrite("test_log_of_ex")
    with pytest.raises(LookupError, match=r"registered\(\) lists them"):
        remove_rewrite("no_such_rule_anywhere")


def test_verify_grad_names_the_worst_element_in_plain_numbers():
    class WrongSign(theano.Op):
        __props__ = ()

        def make_node(self, x):
            x = T.as_tensor_variable(x)
            return theano.Apply(self, [x], [x.type.make_variable()])

        def perform(self, node, inputs, output_storage):
            output_storage[0][0] = 3 * inputs[0]

        def grad(self, inputs, output_grads):
            return [-3 * output_grads[0]]

    with theano.config.change(device="cpu"), pytest.raises(AssertionError) as caught:
        theano.gradient.verify_grad(WrongSign(), [np.random.default_rng(1).standard_normal((3, 2))])
    message = str(caught.value)
    assert "np.int64" not in message and "np.float64" not in message
    assert "6 of 6 elements wrong" in message
