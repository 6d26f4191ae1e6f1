"""Whole-call CUDA graphs (on by default; mode.with_cuda_graphs(after=k) sets when), counted on the CuPy stand-in: after capture a call is ONE
graph launch plus the copies that must cross; results are the ordinary call's; where capture is impossible
the function says why and keeps working."""
import warnings

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
import cupy_standin
from coursekit.compile.mode import get_mode
from cupy_standin import counting

GRAPHS = get_mode("FAST_RUN").with_cuda_graphs(after=2)
ORDINARY = get_mode("FAST_RUN").without_cuda_graphs()


@pytest.fixture
def cuda():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with cupy_standin.installed(), theano.config.change(device="cuda", floatX="float32", allow_gc=False):
            yield


def training_step(mode):
    rng = np.random.RandomState(7)
    data = theano.shared(rng.randn(64, 9).astype("float32"))
    labels = theano.shared(rng.randint(0, 2, 64).astype("float32"))
    w, b = theano.shared(np.zeros(9, "float32"), name="w"), theano.shared(np.float32(0), name="b")
    p = T.nnet.sigmoid(T.dot(data, w) + b)
    cost = T.nnet.binary_crossentropy(p, labels).mean()
    gw, gb = T.grad(cost, [w, b])
    return theano.function([], cost, updates=[(w, w - 0.5 * gw), (b, b - 0.5 * gb)], mode=mode), w


def test_a_captured_step_is_one_graph_launch_and_computes_the_same(cuda):
    plain, w_plain = training_step(ORDINARY)
    graphed, w_graphed = training_step(GRAPHS)
    costs = [(float(plain()), float(graphed())) for _ in range(3)]
    assert graphed.cuda_graph.graph is not None and graphed.cuda_graph.reason is None
    for _ in range(3):
        with counting() as c:
            got = float(graphed())
        costs.append((float(plain()), got))
        assert (c.graph_launches, c.launches, c.h2d, c.d2h, c.allocations) == (1, 0, 0, 1, 0), c
    np.testing.assert_array_equal([a for a, _ in costs], [b for _, b in costs])
    np.testing.assert_array_equal(w_plain.get_value(), w_graphed.get_value())   # updates applied by the graph


def test_graphs_need_a_real_gpu_and_say_so(cuda):
    with theano.config.change(device="sim"):
        x = theano.shared(np.ones(4, "float32"))
        f = theano.function([], T.exp(x), mode=GRAPHS)
    for _ in range(3):
        np.testing.assert_allclose(f(), np.exp(np.ones(4)), rtol=1e-6)
    assert f.cuda_graph.graph is None and "need a real GPU" in f.cuda_graph.reason


def test_a_shape_change_falls_back_then_captures_again(cuda):
    x = T.fvector("x")
    f = theano.function([x], T.exp(x) * 2, mode=GRAPHS)
    small, large = np.arange(3, dtype="float32"), np.arange(5, dtype="float32")
    for _ in range(3):
        f(small)
    assert f.cuda_graph.graph is not None
    with counting() as c:
        np.testing.assert_allclose(f(small), np.exp(small) * 2, rtol=1e-6)
    assert (c.graph_launches, c.launches, c.h2d, c.d2h) == (1, 0, 1, 1)   # the input still crosses, once
    np.testing.assert_allclose(f(large), np.exp(large) * 2, rtol=1e-6)
    assert f.cuda_graph.graph is None and "changed shape" in f.cuda_graph.reason
    for _ in range(2):
        f(large)
    assert f.cuda_graph.graph is not None and f.cuda_graph.captures == 2
    np.testing.assert_allclose(f(large), np.exp(large) * 2, rtol=1e-6)


def test_a_value_that_comes_back_to_the_host_and_goes_out_again_cannot_be_captured(cuda):
    x = theano.shared(np.arange(6, dtype="float32"))
    total = T.exp(x).sum()
    f = theano.function([], T.exp(x)[T.cast(total, "int64") % 6] * x, mode=GRAPHS)   # an index computed on the device
    want = None
    for _ in range(3):
        got = np.asarray(f())
        want = got if want is None else want
        np.testing.assert_allclose(got, want)
    if f.cuda_graph.graph is None:
        assert "host" in f.cuda_graph.reason


def test_a_call_with_no_device_work_needs_no_graph(cuda):
    a, b = T.fscalar("a"), T.fscalar("b")
    f = theano.function([a, b], a * b, mode=GRAPHS)        # host_scalars keeps it on the host
    for _ in range(3):
        assert float(f(np.float32(2), np.float32(3))) == 6
    assert f.cuda_graph.graph is None and "nothing runs on the device" in f.cuda_graph.reason


def test_set_value_drops_the_graph(cuda):
    x = theano.shared(np.ones(3, "float32"))
    f = theano.function([], T.exp(x), mode=GRAPHS)
    for _ in range(3):
        f()
    assert f.cuda_graph.graph is not None
    x.set_value(np.zeros(3, "float32"))
    np.testing.assert_allclose(np.asarray(f()), 1.0)
    assert "new buffer" in f.cuda_graph.reason


def test_results_of_earlier_calls_are_not_overwritten_by_the_replay(cuda):
    x = T.fvector("x")
    f = theano.function([x], theano.gpu_from_host(T.exp(x)), mode=GRAPHS)
    for _ in range(3):
        f(np.zeros(2, "float32"))
    first = f(np.zeros(2, "float32"))
    f(np.ones(2, "float32"))
    np.testing.assert_allclose(first.get(), 1.0)


def test_with_allow_gc_the_call_before_capture_keeps_its_buffers_and_the_graph_owns_them(cuda):
    with theano.config.change(allow_gc=True):
        f, w = training_step(GRAPHS)
        plain, w_plain = training_step(ORDINARY)
    for _ in range(5):
        assert float(f()) == float(plain())
    assert f.cuda_graph.graph is not None and f.cuda_graph.reason is None
    np.testing.assert_array_equal(w.get_value(), w_plain.get_value())


def test_a_call_that_allocates_while_its_kernels_run_is_never_captured(cuda):
    x = theano.shared(np.random.RandomState(2).rand(4, 6).astype("float32"))
    f = theano.function([], T.nnet.softmax(x), mode=GRAPHS)    # softmax's temporaries come from the pool
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(f()).sum(axis=1), 1.0, rtol=1e-5)
    assert f.cuda_graph.graph is None and "allocates" in f.cuda_graph.reason


def test_with_cuda_graphs_checks_its_argument():
    with pytest.raises(ValueError, match="at least 1"):
        get_mode("FAST_RUN").with_cuda_graphs(after=0)
