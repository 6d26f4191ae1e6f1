"""scan: Theano's loops (the tutorial's examples), taps, until, gradients through time, errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import coursekit as theano
import coursekit.tensor as T
from coursekit.gradient import verify_grad
from coursekit.scan_module import ScanError

RNG = np.random.default_rng(1)


def test_the_tutorials_power_and_polynomial(device):
    k, A = T.iscalar("k"), T.vector("A")
    result, updates = theano.scan(lambda prior, A: prior * A, outputs_info=T.ones_like(A), non_sequences=A, n_steps=k)
    power = theano.function([A, k], result[-1], updates=updates)
    np.testing.assert_allclose(power(np.arange(10, dtype="float32"), 3), np.arange(10) ** 3)
    coefficients, x = T.vector("coefficients"), T.scalar("x")
    components, _ = theano.scan(lambda c, p, free: c * free ** p, outputs_info=None,
                                sequences=[coefficients, T.arange(1000)], non_sequences=x)
    poly = theano.function([coefficients, x], components.sum())
    assert poly(np.asarray([1, 0, 2], "float32"), 3) == pytest.approx(19.0)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), st.booleans())
def test_rnn_matches_a_numpy_loop(n, h, backwards):
    x, W, h0 = RNG.standard_normal((n, h)), RNG.standard_normal((h, h)), RNG.standard_normal(h)
    xs, Ws, h0s = T.dmatrix("x"), T.dmatrix("W"), T.dvector("h0")
    out, _ = theano.scan(lambda x_t, prev, W: T.tanh(x_t + T.dot(prev, W)), sequences=xs, outputs_info=h0s,
                         non_sequences=Ws, go_backwards=backwards)
    got = theano.function([xs, Ws, h0s], out)(x, W, h0)
    expected, state = [], h0
    for x_t in (x[::-1] if backwards else x):
        state = np.tanh(x_t + state @ W)
        expected.append(state)
    np.testing.assert_allclose(got, np.array(expected), rtol=1e-12)


def test_taps_on_outputs_and_sequences():
    x0 = T.dvector("x0")
    fib, _ = theano.scan(lambda a, b: a + b, outputs_info=dict(initial=x0, taps=[-2, -1]), n_steps=6)
    np.testing.assert_array_equal(theano.function([x0], fib)(np.array([1.0, 1.0])), [2, 3, 5, 8, 13, 21])
    s = T.dvector("s")
    window, _ = theano.scan(lambda a, b, c: a - 2 * b + c, sequences=dict(input=s, taps=[-1, 0, 1]))
    v = RNG.standard_normal(6)
    np.testing.assert_allclose(theano.function([s], window)(v), v[:-2] - 2 * v[1:-1] + v[2:])


def test_until_stops_early_and_shared_updates_from_the_step(device):
    max_value = T.scalar("max_value")
    values, _ = theano.scan(lambda prev, mx: (prev * 2, theano.scan_module.until(prev * 2 > mx)),
                            outputs_info=T.constant(np.float32(1.0)), non_sequences=max_value, n_steps=1024)
    np.testing.assert_array_equal(theano.function([max_value], values)(45), [2, 4, 8, 16, 32, 64])
    counter = theano.shared(np.float32(0), name="counter")
    out, updates = theano.scan(lambda x: (x * 2, {counter: counter + x}), sequences=T.vector("v"))
    assert counter in updates
    f = theano.function(out.owner.inputs[1:2], out, updates=updates)  # the sequence input
    np.testing.assert_array_equal(f(np.array([1.0, 2.0, 3.0], "float32")), [2, 4, 6])
    assert counter.get_value() == 6


def test_gradient_through_time_matches_finite_differences():
    def rnn(x, W, U, h0):
        h, _ = theano.scan(lambda x_t, prev, W, U: T.tanh(T.dot(x_t, W) + T.dot(prev, U)), sequences=x,
                           outputs_info=h0, non_sequences=[W, U])
        return h
    verify_grad(rnn, [RNG.standard_normal((4, 3)), RNG.standard_normal((3, 2)), RNG.standard_normal((2, 2)),
                      RNG.standard_normal(2)])

    def taps(x0, a):
        out, _ = theano.scan(lambda u, v, a: a * u + T.sin(v), outputs_info=dict(initial=x0, taps=[-3, -1]),
                             non_sequences=a, n_steps=5)
        return out
    verify_grad(taps, [RNG.standard_normal((4, 2)), RNG.standard_normal(2)])

    def windows(x):
        out, _ = theano.scan(lambda a, b, c: a * b + c, sequences=dict(input=x, taps=[-1, 0, 2]), go_backwards=True)
        return out
    verify_grad(windows, [RNG.standard_normal((6, 2))])


def test_truncate_gradient_stops_after_k_steps():
    x, h0 = T.dvector("x"), T.dscalar("h0")
    out, _ = theano.scan(lambda xt, h: h * xt + xt, sequences=x, outputs_info=h0, truncate_gradient=2)
    g = theano.function([x, h0], theano.grad(out[-1], [x, h0]))(np.arange(1.0, 6.0), 1.0)
    np.testing.assert_allclose(g[0], [0, 0, 0, 5 * 22, 89])  # h = 1, 2, 6, 21, 88, 445
    assert g[1] == 0


def test_gradient_with_until_uses_the_steps_that_ran():
    x = T.dscalar("x")
    values, _ = theano.scan(lambda prev, x: (prev * x, theano.scan_module.until(prev * x > 10)),
                            outputs_info=T.constant(1.0, dtype="float64"), non_sequences=x, n_steps=50)
    f = theano.function([x], [values[-1], theano.grad(values[-1], x), values.shape[0]])
    last, g, steps = f(3.0)  # 3, 9, 27: three steps, last = x**3
    assert steps == 3 and last == 27 and g == pytest.approx(27.0)


def test_random_numbers_inside_the_loop_advance_through_updates():
    srng = theano.random.MRG_RandomStreams(seed=3)
    out, updates = theano.scan(lambda: srng.uniform((2,)), n_steps=4)
    f = theano.function([], out, updates=updates)
    a, b = f(), f()
    assert a.shape == (4, 2) and len({tuple(r) for r in a}) == 4 and not np.array_equal(a, b)
    g = theano.function([], out, no_default_updates=True)  # the generator state does not move: same numbers
    np.testing.assert_array_equal(g(), g())
    h = theano.function([], out)  # updates forgotten: the state's default update is now the loop's final state
    assert not np.array_equal(h(), h())


def test_step_errors_name_the_problem_and_the_line():
    x = T.dvector("x")
    with pytest.raises(ScanError, match="returned 2 output.*outputs_info has 1") as err:
        theano.scan(lambda v, prev: (v, v), sequences=x, outputs_info=[T.constant(0.0, dtype="float64")])
    with pytest.raises(ScanError, match="cannot take the 2 argument.*1 sequence value.*1 previous output"):
        theano.scan(lambda v: v, sequences=x, outputs_info=[T.constant(0.0, dtype="float64")])
    assert "test_scan.py" in str(err.value)
    with pytest.raises(ScanError, match="float32.*outputs_info\\[0\\].*float64|float64.*float32"):
        theano.scan(lambda v, prev: T.cast(prev + v, "float32"), sequences=x,
                    outputs_info=T.constant(0.0, dtype="float64"))
    with pytest.raises(ScanError, match="taps must be negative"):
        theano.scan(lambda a: a, outputs_info=dict(initial=x, taps=[0]), n_steps=2)
    with pytest.raises(ScanError, match="output 1 of the step function is 'done' \\(str\\).*tensor variables") as err:
        theano.scan(lambda v: (v * 2, "done"), sequences=x)
    assert "test_scan.py" in str(err.value)
    with pytest.raises(ScanError, match="strict=True.*pass it in non_sequences"):  # Theano's strict: shared ones
        theano.scan(lambda v: v * theano.shared(np.ones(3), name="w"), sequences=x, strict=True)
    x0 = T.dvector("x0")
    fib, _ = theano.scan(lambda a, b: a + b, outputs_info=dict(initial=x0, taps=[-3, -1]), n_steps=2)
    with pytest.raises(ValueError, match="reach 3 steps back.*only 2 entries"):
        theano.function([x0], fib)(np.ones(2))
    n = T.lscalar("n")
    long, _ = theano.scan(lambda v: v * 2, sequences=x, n_steps=n)
    with pytest.raises(ValueError, match="sequence 0 has 3 entries but the loop runs 5 steps"):
        theano.function([x, n], long)(np.ones(3), 5)


def test_profile_shows_the_inner_functions_ops():
    x = T.dvector("x")
    out, _ = theano.scan(lambda v: T.exp(v) * 2, sequences=x, profile=True)
    f = theano.function([x], out)
    f(np.ones(3))
    scan_node = [n for n in f.toposort() if type(n.op).__name__ == "Scan"][0]
    inner = scan_node.op.fn
    assert inner.profile is not None and "exp" in theano.printing.debugprint(inner, file="str")


def test_a_scan_of_dot_over_rows_becomes_one_gemm():
    X, W = T.dmatrix("X"), T.dmatrix("W")
    out, _ = theano.scan(lambda x_t, W: T.dot(W, x_t), sequences=X, non_sequences=W)
    out2, _ = theano.scan(lambda x_t: T.dot(x_t, W), sequences=X)
    f = theano.function([X, W], [out, out2])
    assert not any(type(n.op).__name__ == "Scan" for n in f.toposort())
    assert any(name == "scan_dot_to_gemm" for _, name, _ in f.maker.fgraph.rewrite_log)
    x, w = RNG.standard_normal((5, 3)), RNG.standard_normal((3, 3))
    a, b = f(x, w)
    np.testing.assert_allclose(a, x @ w.T)
    np.testing.assert_allclose(b, x @ w)
    slow = theano.function([X, W], out, mode="FAST_COMPILE")  # no rewrites: the loop itself
    assert any(type(n.op).__name__ == "Scan" for n in slow.toposort())
    np.testing.assert_allclose(slow(x, w), a)


def test_on_a_gpu_device_the_loop_state_stays_in_device_memory():
    rng = np.random.default_rng(5)
    Wv, xv, hv = rng.standard_normal((4, 4)).astype("float32"), rng.standard_normal((6, 4)).astype("float32"), \
        np.zeros(4, "float32")
    results = {}
    for device in ("cpu", "sim"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with theano.config.change(device=device):
                W = theano.shared(Wv)
                x, h0 = T.fmatrix("x"), T.fvector("h0")
                h, _ = theano.scan(lambda x_t, prev: T.tanh(x_t + T.dot(prev, W)), sequences=x, outputs_info=h0)
                f = theano.function([x, h0], [h, theano.grad(h.sum(), W)])
                results[device] = f(xv, hv)
                scans = [n.op for n in f.toposort() if "Scan" in str(n.op)]
        if device == "sim":
            forward = [op for op in scans if str(op) == "GpuScan{scan}"]
            assert forward and all(op.device == "gpu" for op in forward)
            inner = forward[0].cpu_op.device_fns["sim"]
            kinds = [type(n.op).__name__ for n in inner.toposort()]
            assert "GpuDot" in kinds and not {"GpuFromHost", "HostFromGpu"} & set(kinds)  # no transfer per step
    for a, b in zip(results["cpu"], results["sim"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_dot_of_a_sequence_element_is_pushed_out_of_the_loop():
    x, W, U, h0 = T.dmatrix("x"), T.dmatrix("W"), T.dmatrix("U"), T.dvector("h0")
    h, _ = theano.scan(lambda x_t, prev: T.tanh(T.dot(x_t, W) + T.dot(prev, U)), sequences=x, outputs_info=h0)
    fast = theano.function([x, W, U, h0], h)
    plain = theano.function([x, W, U, h0], h, mode="FAST_COMPILE")
    assert any(name == "scan_pushout_seq_dot" for _, name, _ in fast.maker.fgraph.rewrite_log)
    scan_op = [n.op for n in fast.toposort() if type(n.op).__name__ == "Scan"][0]
    inner_dots = [n for n in scan_op.compile_inner().toposort() if "Dot" in type(n.op).__name__
                  or "Gemv" in type(n.op).__name__]
    assert len(inner_dots) == 1  # only dot(prev, U) is left in the step
    args = [RNG.standard_normal((5, 3)), RNG.standard_normal((3, 2)), RNG.standard_normal((2, 2)),
            RNG.standard_normal(2)]
    np.testing.assert_allclose(fast(*args), plain(*args), rtol=1e-12)


def test_a_pushed_out_dot_of_matrix_and_row_matches_numpy(device):
    """dot(W, x_t) pushed out of the loop is X W^T (it was W^T X^T transposed: X W, wrong for a square W)."""
    rng = np.random.default_rng(11)
    xv, wv, hv = (rng.standard_normal(s).astype("float32") for s in ((6, 4), (4, 4), (4,)))
    x, W, h0 = T.fmatrix("x"), T.fmatrix("W"), T.fvector("h0")
    h, _ = theano.scan(lambda x_t, prev, W: T.tanh(T.dot(W, x_t) + prev), sequences=x, outputs_info=h0,
                       non_sequences=W)
    f = theano.function([x, h0, W], h)
    assert any(name == "scan_pushout_seq_dot" for _, name, _ in f.maker.fgraph.rewrite_log)
    expected, state = [], hv
    for row in xv:
        state = np.tanh(wv @ row + state)
        expected.append(state)
    np.testing.assert_allclose(np.asarray(f(xv, hv, wv)), expected, rtol=1e-5, atol=1e-6)


def test_a_pushed_out_product_that_fails_names_the_step_functions_line():
    x, h0, W = T.dmatrix("x"), T.dvector("h0"), T.dmatrix("W")
    h, _ = theano.scan(lambda x_t, prev, W: T.tanh(T.dot(W, x_t) + prev),  # the line the error must name
                       sequences=x, outputs_info=h0, non_sequences=W)
    f = theano.function([x, h0, W], h)
    assert any(name == "scan_pushout_seq_dot" for _, name, _ in f.maker.fgraph.rewrite_log)
    with pytest.raises(ValueError, match=r"created by your code at.*T\.tanh\(T\.dot\(W, x_t\) \+ prev\)"):
        f(np.ones((3, 4)), np.zeros(4), np.ones((5, 3)))  # W should be 4 x 4


def test_the_cost_model_prices_a_loop_per_step():
    """A Scan's work is one step's work (its inner ops) times the steps the last run made."""
    from coursekit import costmodel
    from coursekit.work import work_of

    h = 8
    x, h0, U = T.dmatrix("x"), T.dvector("h0"), T.dmatrix("U")
    out, _ = theano.scan(lambda x_t, prev, U: T.tanh(x_t + T.dot(prev, U)), sequences=x, outputs_info=h0,
                         non_sequences=U)
    f = theano.function([x, h0, U], out, mode="FAST_COMPILE")
    node = [nd for nd in f.toposort() if type(nd.op).__name__ == "Scan"][0]
    shapes, dtypes = [(), (10, h), (1, h), (h, h)], ["int64"] + ["float64"] * 3
    before = work_of(node, shapes, dtypes)  # no run yet: the sequence's length stands for the steps
    inner = node.op.compile_inner()
    per_step = sum(work_of(nd, [(h,) * v.type.ndim for v in nd.inputs], [v.type.dtype for v in nd.inputs]).launches
                   for nd in inner.nodes)
    assert before.launches == 10 * per_step > 0
    f(np.ones((4, h)), np.zeros(h), np.eye(h))  # 4 steps
    four = work_of(node, [(), (4, h), (1, h), (h, h)], dtypes)
    assert four.launches == 4 * per_step and four.flops == pytest.approx(before.flops * 4 / 10)
    assert four.flops >= 4 * 2 * h * h  # at least the products
    model = costmodel.model("t4")
    assert model.node_cost(node, [(), (4, h), (1, h), (h, h)], dtypes).launch == pytest.approx(
        4 * per_step * model.spec.launch_latency)


@pytest.mark.parametrize("device_name", ["cpu", "sim"])
def test_a_profile_shows_the_ops_inside_a_loop_without_scan_profile(device_name):
    """Issue 12: the profiler lists the step's ops (per step, where they ran, transfers) under the loop."""
    rng = np.random.default_rng(12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with theano.config.change(device=device_name, floatX="float32"):
            U = theano.shared(rng.standard_normal((5, 5)).astype("float32"), name="U")
            x, h0 = T.fmatrix("x"), T.fvector("h0")
            h, _ = theano.scan(lambda x_t, prev: T.tanh(x_t + T.dot(prev, U)), sequences=x, outputs_info=h0,
                               name="rnn")
            f = theano.function([x, h0], h[-1], profile=True)
            plain = theano.function([x, h0], h[-1])
    xv, hv = rng.standard_normal((7, 5)).astype("float32"), np.zeros(5, "float32")
    for _ in range(4):  # the first call is the warm-up: 3 timed calls of 7 steps
        f(xv, hv)
    (loop,) = f.profile.loop_rows()
    assert loop["steps"] == 21 and loop["calls"] == 3 and "Scan{rnn}" in loop["loop"]
    names = [row["name"] for row in loop["rows"]]
    assert any("Dot" in name and "U" in name for name in names) and any("tanh" in name for name in names)
    assert 0 < loop["step_time"] <= loop["loop_time"]  # the steps' ops are part of the loop op's time
    if device_name == "sim":
        assert {row["kind"] for row in loop["rows"]} == {"gpu"} and loop["transfers"] == 0  # none per step
    text = f.profile.summary(file="str")
    assert "Inside loops" in text and "3 steps per call" not in text and "7 steps per call" in text
    assert "Inside loops" in f.profile._repr_html_()
    # the watch is switched off outside the profiled calls: another function running the same loop is unaffected
    scan_op = [n.op for n in f.toposort() if "Scan" in str(n.op)][0]
    assert getattr(scan_op, "cpu_op", scan_op).step_hook is None
    np.testing.assert_allclose(plain(xv, hv), f(xv, hv), rtol=1e-6)
    assert f.profile.loop_rows()[0]["steps"] == 28


def test_a_profiled_loop_whose_step_has_no_ops_runs():
    """A step that returns its row unchanged compiles to no ops; profiling it used to raise IndexError."""
    x = T.fmatrix("x")
    rows, _ = theano.scan(lambda row: row, sequences=x)
    f = theano.function([x], rows, profile=True)
    value = np.arange(15, dtype="float32").reshape(5, 3)
    for _ in range(3):
        np.testing.assert_array_equal(f(value), value)
    (loop,) = f.profile.loop_rows()
    assert loop["steps"] == 10 and loop["rows"] == [] and loop["step_time"] == 0.0


def test_a_loop_on_the_gpu_device_moves_nothing_between_host_and_device():
    """The number of steps is read from the sequence's shape on the host (Shape_i) and is a host input of the
    loop, so a loop over device values needs no transfer at all (it was 2 per call: the shape up, the length
    back down)."""
    rng = np.random.default_rng(15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with theano.config.change(device="sim", floatX="float32"):
            xs = theano.shared(rng.standard_normal((9, 4)).astype("float32"), name="x")
            W, U = (theano.shared(rng.standard_normal((4, 4)).astype("float32"), name=n) for n in "WU")
            h0, h_last = (theano.shared(np.zeros(4, "float32"), name=n) for n in ("h0", "h_last"))
            hs, _ = theano.scan(lambda x_t, h, W, U: T.tanh(T.dot(x_t, W) + T.dot(h, U)), sequences=xs,
                                outputs_info=h0, non_sequences=[W, U])
            f = theano.function([], [], updates=[(h_last, hs[-1])], profile=True)
    nodes = f.toposort()
    assert not [n for n in nodes if n.op.is_transfer]
    (loop,) = [n for n in nodes if "Scan" in str(n.op)]
    assert loop.op.device == "gpu" and str(loop.inputs[0].owner.op) == "Shape_i{0}"
    for _ in range(3):
        f()
    assert f.profile.device_split()["transfer"]["count"] == 0
    h = np.zeros(4, "float32")
    for x_t in xs.get_value():
        h = np.tanh(x_t @ W.get_value() + h @ U.get_value())
    np.testing.assert_allclose(h_last.get_value(), h, rtol=1e-5, atol=1e-6)
