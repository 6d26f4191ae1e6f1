"""The linker's promises with in-place ops and views, under both allow_gc settings (alias analysis from
view_map and destroy_map), and Out(borrow=True) really reusing its buffer."""
from __future__ import annotations

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit.tensor.blas import Gemm, Gemv

@pytest.fixture(params=[True, False], ids=["gc", "nogc"])
def allow_gc(request):
    with theano.config.change(allow_gc=request.param):
        yield request.param


def ops(f):
    return [str(n.op) for n in f.nodes]


def test_gemm_inplace_result_is_not_overwritten_by_the_next_call(allow_gc):
    A, B, C = T.dmatrix("A"), T.dmatrix("B"), T.dmatrix("C")
    f = theano.function([A, B, C], T.dot(A, B) + T.exp(C))
    assert "Gemm{inplace}" in ops(f)
    one = np.ones((2, 2))
    first = f(one, one, np.zeros((2, 2)))
    kept = first.copy()
    second = f(one, one, np.ones((2, 2)))
    np.testing.assert_array_equal(first, kept)
    assert not np.shares_memory(first, second)
    np.testing.assert_allclose(second, 2 + np.e)


def test_gemm_inplace_update_value_is_not_reused_as_a_buffer(allow_gc):
    A, C = T.dmatrix("A"), T.dmatrix("C")
    w = theano.shared(np.zeros((2, 2)), name="w")
    f = theano.function([A, C], T.tanh(C).sum(), updates={w: T.dot(A, A) + T.exp(C)})
    assert "Gemm{inplace}" in ops(f)
    f(np.ones((2, 2)), np.zeros((2, 2)))
    held = w.get_value(borrow=True)
    np.testing.assert_allclose(held, 3.0)
    f(np.ones((2, 2)), np.ones((2, 2)))
    np.testing.assert_allclose(held, 3.0)  # the old value was not written into by the second call
    np.testing.assert_allclose(w.get_value(), 2 + np.e)


@pytest.mark.parametrize("op", [Gemm(inplace=True), Gemv(inplace=True)], ids=str)
def test_inplace_op_never_destroys_an_input_a_shared_value_or_a_value_read_later(allow_gc, op):
    matrix = type(op) is Gemm
    x = T.dmatrix("x")
    y, z = (T.dmatrix("y"), T.dmatrix("z")) if matrix else (T.dvector("y"), T.dvector("z"))
    ones = (lambda: np.ones((2, 2))) if matrix else (lambda: np.ones(2))
    s = theano.shared(ones(), name="s")
    z_value = ones()
    f = theano.function([x, y, z], op(z, 1.0, x, y, 1.0))  # z is the caller's array
    g = theano.function([x, y], op(s, 1.0, x, y, 1.0))     # s is a shared value
    for fn in (f, g):
        assert "DeepCopyOp" in ops(fn)
    np.testing.assert_array_equal(f(np.ones((2, 2)), ones(), z_value), 3.0)
    np.testing.assert_array_equal(g(np.ones((2, 2)), ones()), 3.0)
    np.testing.assert_array_equal(z_value, 1.0)
    np.testing.assert_array_equal(s.get_value(), 1.0)
    inner = T.exp(z)
    both = theano.function([x, y, z], [op(inner, 1.0, x, y, 1.0), inner])  # inner is an output too: copied
    result, kept = both(np.ones((2, 2)), ones(), 0 * ones())
    np.testing.assert_array_equal(kept, 1.0)
    np.testing.assert_array_equal(result, 3.0)
    single = theano.function([x, y, z], op(T.exp(z), 1.0, x, y, 1.0))  # nobody else reads exp(z): no copy
    assert "DeepCopyOp" not in ops(single)
    np.testing.assert_array_equal(single(np.ones((2, 2)), ones(), 0 * ones()), 3.0)


def test_in_mutable_lets_an_inplace_op_overwrite_the_input():
    x, z = T.dmatrix("x"), T.dmatrix("z")
    f = theano.function([x, theano.In(z, mutable=True)], Gemm(inplace=True)(z, 1.0, x, x, 1.0))
    assert "DeepCopyOp" not in ops(f)


@pytest.mark.parametrize("build", [lambda x: T.exp(x), lambda x: x + 1, lambda x: T.exp(x) * 2,
                                   lambda x: T.tanh(x * 3 + 1)], ids=["exp", "add", "fused", "fused3"])
def test_borrowed_output_buffer_is_reused_and_plain_outputs_are_fresh(build):
    x = T.dvector("x")
    borrowed = theano.function([x], theano.Out(build(x), borrow=True))
    first = borrowed(np.ones(4))
    value = first.copy()
    assert borrowed(np.zeros(4)) is first  # the same buffer, overwritten: the lesson of borrow=True
    assert not np.array_equal(first, value)
    plain = theano.function([x], build(x))
    a, b = plain(np.ones(4)), plain(np.ones(4))
    assert a is not b and not np.shares_memory(a, b)


def test_views_of_internal_buffers_are_handed_out_without_aliasing(allow_gc):
    x = T.dmatrix("x")
    e = T.exp(x)
    f = theano.function([x], [e.T, e, x.T])
    m = np.zeros((2, 3))
    first = f(m)
    assert not np.shares_memory(first[0], first[1]) and not np.shares_memory(first[2], m)
    second = f(m + 1)
    np.testing.assert_array_equal(first[1], 1.0)
    assert not any(np.shares_memory(a, b) for a in first for b in second)


def test_output_equal_to_update_value_is_copied(allow_gc):
    x = T.dvector("x")
    w = theano.shared(np.zeros(3), name="w")
    f = theano.function([x], w + x, updates={w: w + x})
    out = f(np.ones(3))
    assert not np.shares_memory(out, w.get_value(borrow=True))


def test_gemm_results_and_updates_on_the_simulated_gpu_are_not_overwritten(allow_gc):
    with theano.config.change(device="sim"):
        A, B, C = T.fmatrix("A"), T.fmatrix("B"), T.fmatrix("C")
        f = theano.function([A, B, C], T.dot(A, B) + T.exp(C))
        one = np.ones((2, 2), "float32")
        first = f(one, one, 0 * one)
        kept = first.copy()
        f(one, one, one)
        np.testing.assert_array_equal(first, kept)
        w = theano.shared(np.zeros((2, 2), "float32"), name="w")
        g = theano.function([A, C], T.tanh(C).sum(), updates={w: T.dot(A, A) + T.exp(C)})
        g(one, 0 * one)
        held = w.get_value(borrow=True, return_internal_type=True)
        before = held.get().copy()
        g(one, one)
        np.testing.assert_array_equal(held.get(), before)
