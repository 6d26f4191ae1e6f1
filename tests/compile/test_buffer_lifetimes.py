"""Issue 17: with allow_gc=True a buffer is freed, or handed on, at its last use within a call.

Counts buffers (tracemalloc sees NumPy's allocations), never time.
"""
import gc
import tracemalloc

import numpy as np

import coursekit as theano
import coursekit.tensor as T

UNFUSED = theano.Mode("FAST_RUN", ("canonicalize", "stabilize", "specialize"))  # no fusion: one node per op


def chain(x, n=20):
    for i in range(n):
        k = i % 4
        x = T.exp(x) if k == 0 else x * 0.5 if k == 1 else T.tanh(x) if k == 2 else x + 1.0
    return x


def numpy_chain(x, n=20):
    for i in range(n):
        k = i % 4
        x = np.exp(x) if k == 0 else x * np.float32(0.5) if k == 1 else np.tanh(x) if k == 2 else x + np.float32(1)
    return x


def peak_buffers(call, nbytes):
    call()
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = call()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return peak / nbytes, result


def test_unfused_chain_peaks_at_three_buffers_or_fewer():
    """20 nodes, 20 intermediate results: at most 3 buffers alive at once (the result included),
    where freeing at the end of the call held all 20."""
    x = T.vector("x")
    with theano.config.change(allow_gc=True):
        f = theano.function([x], chain(x), mode=UNFUSED)
    assert len(f.toposort()) == 20
    xv = np.random.default_rng(0).random(200_000).astype("float32")
    buffers, result = peak_buffers(lambda: f(xv), xv.nbytes)
    assert buffers <= 3.05, buffers
    np.testing.assert_allclose(result, numpy_chain(xv), rtol=1e-5)
    assert not np.shares_memory(result, xv)


def test_without_gc_the_buffers_stay_for_the_next_call():
    x = T.vector("x")
    with theano.config.change(allow_gc=False):
        f = theano.function([x], chain(x, 8), mode=UNFUSED)
    xv = np.random.default_rng(1).random(1000).astype("float32")
    f(xv)
    cells = [f.storage_map[n.outputs[0]] for n in f.toposort()[:-1]]
    assert all(c[0] is not None for c in cells)  # kept for reuse, not freed
    np.testing.assert_allclose(f(xv), numpy_chain(xv, 8), rtol=1e-5)


def test_a_buffer_still_viewed_is_not_handed_on():
    """e = exp(x) is read by a transpose (a view) that a later op reads: e must survive until then,
    even though its last *direct* reader ran earlier."""
    m = T.matrix("m")
    e = T.exp(m)
    view = e.T
    out = (e * 2).sum() + view[0, 0] * 0 + (view + 1)[0, 1]
    with theano.config.change(allow_gc=True):
        f = theano.function([m], out, mode=UNFUSED)
    mv = np.arange(6, dtype="float32").reshape(2, 3) / 10
    ev = np.exp(mv)
    np.testing.assert_allclose(f(mv), (ev * 2).sum() + ev.T[0, 0] * 0 + (ev.T + 1)[0, 1], rtol=1e-6)
    np.testing.assert_allclose(f(mv), (ev * 2).sum() + (ev.T + 1)[0, 1], rtol=1e-6)


def test_inputs_and_shared_values_are_never_written():
    x = T.vector("x")
    s = theano.shared(np.ones(5, "float32"), name="s")
    with theano.config.change(allow_gc=True):
        f = theano.function([x], [chain(x + s, 6), x * 2], mode=UNFUSED)
    xv = np.linspace(0, 1, 5, dtype="float32")
    before, s_before = xv.copy(), s.get_value()
    a, b = f(xv)
    a2, b2 = f(xv)
    np.testing.assert_array_equal(xv, before)
    np.testing.assert_array_equal(s.get_value(), s_before)
    np.testing.assert_array_equal(a, a2)
    assert not np.shares_memory(a, a2) and not np.shares_memory(b, b2)  # fresh outputs each call


def test_borrowed_output_keeps_its_own_buffer():
    x = T.vector("x")
    with theano.config.change(allow_gc=True):
        f = theano.function([x], theano.Out(chain(x, 3), borrow=True), mode=UNFUSED)  # ends on tanh
    xv = np.linspace(0, 1, 7, dtype="float32")
    first = f(xv)
    kept = first.copy()
    second = f(xv)
    assert second is first or np.shares_memory(first, second)  # borrow=True: the buffer is reused
    np.testing.assert_allclose(second, kept, rtol=1e-6)


def test_a_big_graph_runs_its_thunks_in_a_loop_and_still_frees_early():
    """Past UNROLL_LIMIT thunks the call is a loop (compiling thousands of lines cost more than
    running them); the buffers are freed at their last use all the same, and errors name the node."""
    from coursekit.compile.callgen import UNROLL_LIMIT

    x = T.vector("x")
    n = UNROLL_LIMIT + 20
    with theano.config.change(allow_gc=True):
        f = theano.function([x], chain(x, n), mode=UNFUSED)
    assert len(f.toposort()) == n and "for i, thunk" in f.source and f.source.count("\n") < 40
    xv = np.random.default_rng(2).random(100_000).astype("float32")
    buffers, result = peak_buffers(lambda: f(xv), xv.nbytes)
    assert buffers <= 3.05, buffers
    np.testing.assert_allclose(result, numpy_chain(xv, n), rtol=1e-4)
