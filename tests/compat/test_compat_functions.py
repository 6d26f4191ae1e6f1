"""Compiled functions as Theano code uses them: pickled with their model, copied with swapped shared variables."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T


def test_a_pickled_model_computes_the_same_and_keeps_sharing_its_variables():
    rng = np.random.default_rng(0)
    W = theano.shared(rng.standard_normal((3, 2)).astype("float32"), name="W")
    x = T.fmatrix("x")
    y = T.nnet.softmax(T.dot(x, W))
    predict = theano.function([x], T.argmax(y, axis=1))
    step = theano.function([x], y.sum(), updates={W: W * 0.5})
    srng = theano.random.MRG_RandomStreams(3)
    noise = theano.function([], srng.normal((4,)))
    loop, _ = theano.scan(lambda row: T.exp(row).sum(), sequences=x)
    looped = theano.function([x], loop)
    model = {"W": W, "predict": predict, "step": step, "noise": noise, "looped": looped}
    clone = pickle.loads(pickle.dumps(model))
    xv = rng.standard_normal((5, 3)).astype("float32")
    np.testing.assert_array_equal(clone["predict"](xv), predict(xv))
    np.testing.assert_array_equal(clone["noise"](), noise())  # the generator state travelled too
    np.testing.assert_allclose(clone["looped"](xv), looped(xv))
    clone["step"](xv)  # updates the clone's W, which its predict reads: still one variable
    np.testing.assert_allclose(clone["W"].get_value(), W.get_value() * 0.5)
    assert clone["W"] is not W


def test_copy_swaps_shared_variables_and_drops_updates():
    W = theano.shared(np.float32(2.0), name="W")
    other = theano.shared(np.float32(10.0), name="other")
    x = T.fscalar("x")
    f = theano.function([x], x * W, updates={W: W + 1})
    g = f.copy(swap={W: other})
    assert g(np.float32(1)) == 10 and other.get_value() == 11 and W.get_value() == 2
    h = f.copy(delete_updates=True)
    assert h(np.float32(1)) == 2 and W.get_value() == 2
    with pytest.raises(TypeError, match="same type"):
        f.copy(swap={W: theano.shared(np.zeros(2, "float32"))})


def test_an_op_with_theanos_five_argument_make_thunk_runs():
    class DoubleOp(theano.Op):
        __props__ = ()

        def make_node(self, x):
            x = T.as_tensor_variable(x)
            return theano.Apply(self, [x], [x.type()])

        def make_thunk(self, node, storage_map, compute_map, no_recycling, impl=None):
            assert compute_map == {} and no_recycling == [] and impl is None
            inputs = [storage_map[v] for v in node.inputs]
            outputs = [storage_map[v] for v in node.outputs]

            def thunk():
                outputs[0][0] = inputs[0][0] * 2
            return thunk

    x = T.fmatrix("x")
    f = theano.function([x], DoubleOp()(x) + 1)
    np.testing.assert_array_equal(f(np.ones((2, 3), "float32")), np.full((2, 3), 3.0))


def test_theanos_mode_arguments_and_monitor_mode(capsys):
    x = T.dvector("x")
    y = T.log(x) * x
    fast = theano.function([x], y * 1, mode=theano.Mode(linker="cvm", optimizer="fast_run"))
    plain = theano.function([x], y * 1, mode=theano.Mode(linker="py", optimizer=None))
    assert len(plain.toposort()) > len(fast.toposort())  # no algebra rewrites without an optimizer
    nogc = theano.function([x], y, mode=theano.Mode(linker="vm_nogc"))
    assert nogc.allow_gc is False
    with pytest.raises(ValueError, match="linker names"):
        theano.Mode(linker="jit")

    seen = []

    def detect_nan(i, node, fn):
        for output in fn.outputs:
            if np.isnan(output[0]).any():
                seen.append((i, str(node.op)))

    f = theano.function([x], y, mode=theano.compile.MonitorMode(post_func=detect_nan))
    with np.errstate(all="ignore"):
        f(np.array([1.0, 0.0]))  # log(0) * 0 is NaN
    assert seen and "mul" in seen[-1][1]
    before = []
    g = theano.function([x], y, mode=theano.compile.MonitorMode(pre_func=lambda i, node, fn: before.append(
        [c[0] is not None for c in fn.inputs])))
    g(np.array([2.0]))
    assert before and all(all(flags) for flags in before)  # every input is ready before its node runs
