"""function(): updates, givens, aliasing, borrow reuse, atomic updates, input checking."""
import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit.compile.function import MissingInputError, UnusedInputError


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def test_tutorial_port_tanh_dot():
    x = T.fvector("x")
    W = theano.shared(f32(500, 784), name="W")
    out = T.tanh(T.dot(W, x))
    fn = theano.function([x], out)
    v = f32(784, seed=1)
    np.testing.assert_allclose(fn(v), np.tanh(W.get_value() @ v), rtol=1e-5, atol=1e-6)


def test_updates_are_seen_by_every_function():
    s = theano.shared(np.zeros(3, "float32"), name="s")
    x = T.fvector("x")
    inc = theano.function([x], [], updates={s: s + x})
    read = theano.function([], s * 2)
    inc(np.ones(3, "float32"))
    inc(np.ones(3, "float32"))
    np.testing.assert_array_equal(read(), [4, 4, 4])
    np.testing.assert_array_equal(s.get_value(), [2, 2, 2])


def test_updates_use_values_from_before_the_call():
    a = theano.shared(np.float32(1.0), name="a")
    b = theano.shared(np.float32(2.0), name="b")
    swap = theano.function([], [], updates=[(a, b), (b, a)])
    swap()
    assert (a.get_value(), b.get_value()) == (2.0, 1.0)


def test_failed_call_leaves_shared_state_unchanged():
    s = theano.shared(np.zeros(3, "float32"), name="s")
    t = theano.shared(np.zeros(3, "float32"), name="t")
    x = T.fvector("x")
    # the update of s is computable, the output is not (shape mismatch): nothing may change
    f = theano.function([x], s[:2] + x, updates=[(s, s + 1), (t, t + 1)])
    with pytest.raises(ValueError) as info:
        f(np.ones(3, "float32"))
    np.testing.assert_array_equal(s.get_value(), 0)
    np.testing.assert_array_equal(t.get_value(), 0)
    message = str(info.value)
    assert "Elemwise{add}" in message and "(2,)" in message and "(3,)" in message
    assert "test_function.py" in message  # the user's line
    assert "No shared variable was updated" in message


def test_givens_replace_variables():
    x = T.fvector("x")
    s = theano.shared(np.arange(3, dtype="float32"), name="s")
    y = T.fvector("y")
    f = theano.function([y], x * 2, givens={x: y + s})
    np.testing.assert_array_equal(f(np.ones(3, "float32")), [2, 4, 6])


def test_outputs_never_alias_inputs_or_shared_values():
    x = T.fvector("x")
    s = theano.shared(np.arange(3, dtype="float32"), name="s")
    f = theano.function([x], [x, s, x.T, s[1:]])
    v = np.ones(3, "float32")
    r = f(v)
    internal = s.get_value(borrow=True)
    for out in r:
        assert not np.shares_memory(out, v)
        assert not np.shares_memory(out, internal)


def test_borrowed_output_buffer_is_reused_and_overwritten():
    s = theano.shared(np.ones(5, "float32"), name="s")
    f = theano.function([], theano.Out(T.exp(s), borrow=True))
    first = f()
    saved = first.copy()
    s.set_value(np.zeros(5, "float32"))
    second = f()
    assert second is first, "borrow=True must hand back the same buffer"
    np.testing.assert_array_equal(first, np.ones(5))  # the earlier result was overwritten
    assert not np.array_equal(first, saved)


def test_unborrowed_outputs_are_fresh_each_call():
    s = theano.shared(np.ones(5, "float32"), name="s")
    f = theano.function([], T.exp(s))
    a, b = f(), f()
    assert a is not b and not np.shares_memory(a, b)


def test_borrowed_output_that_is_also_an_update_is_not_shared():
    s = theano.shared(np.ones(4, "float32"), name="s")
    y = s * 2
    f = theano.function([], theano.Out(y, borrow=True), updates={s: y})
    out = f()
    assert not np.shares_memory(out, s.get_value(borrow=True))
    f()
    np.testing.assert_array_equal(s.get_value(), 4)


@pytest.mark.parametrize("allow_gc", [True, False])
def test_allow_gc_does_not_change_results(allow_gc):
    x = T.fvector("x")
    with theano.config.change(allow_gc=allow_gc):
        f = theano.function([x], [T.exp(x) * 2 + 1, T.sum(x)])
    v = f32(6)
    for _ in range(3):
        a, b = f(v)
        np.testing.assert_allclose(a, np.exp(v) * 2 + 1, rtol=1e-6)
        np.testing.assert_allclose(b, v.sum(), rtol=1e-5)


def test_scalar_outputs_are_zero_d_arrays():
    a, b = T.fscalars("a,b")
    f = theano.function([a, b], a + b)
    r = f(1.5, 2)
    assert isinstance(r, np.ndarray) and r.shape == () and r.dtype == np.float32 and r == 3.5


def test_toposort_is_exposed_both_ways():
    x = T.fvector("x")
    f = theano.function([x], T.exp(x))
    assert f.toposort() == f.maker.fgraph.toposort()
    assert any(isinstance(n.op, T.Elemwise) for n in f.toposort())


def test_in_defaults_and_keywords():
    x, y = T.fvector("x"), T.fscalar("y")
    f = theano.function([x, theano.In(y, value=2.0)], x * y)
    np.testing.assert_array_equal(f(np.ones(2, "float32")), [2, 2])
    np.testing.assert_array_equal(f(np.ones(2, "float32"), y=3), [3, 3])
    with pytest.raises(TypeError, match="no input named"):
        f(np.ones(2, "float32"), z=1)
    with pytest.raises(TypeError, match="takes 2 argument"):
        f(1, 2, 3)


@pytest.mark.parametrize("value, match", [
    (np.ones(3), "float64 value.*could lose precision.*allow_input_downcast"),
    (np.ones((3, 1), "float32"), "wrong number of dimensions.*expected 1"),
    ("abc", "numeric|could not be converted|precision"),
    ([[1, 2], [3]], "could not be converted"),
])
def test_bad_inputs_name_the_argument_and_the_fix(value, match):
    x = T.fvector("x")
    f = theano.function([x], x + 1)
    with pytest.raises(TypeError, match=match) as info:
        f(value)
    assert "argument 0 (x)" in str(info.value)


def test_allow_input_downcast():
    x = T.fvector("x")
    f = theano.function([x], x + 1, allow_input_downcast=True)
    assert f(np.ones(3)).dtype == np.float32


def test_broadcastable_input_checked():
    r = T.frow("r")
    f = theano.function([r], r * 2)
    with pytest.raises(TypeError, match="broadcastable"):
        f(np.ones((2, 3), "float32"))


def test_missing_input_names_the_variable_and_line():
    x, y = T.fvector("x"), T.fvector("y")
    with pytest.raises(MissingInputError, match=r"variable y .*test_function.py"):
        theano.function([x], x + y)


def test_unused_input():
    x, y = T.fvector("x"), T.fvector("y")
    with pytest.raises(UnusedInputError, match="not used"):
        theano.function([x, y], x * 2)
    with pytest.warns(UserWarning):
        theano.function([x, y], x * 2, on_unused_input="warn")
    theano.function([x, y], x * 2, on_unused_input="ignore")


@pytest.mark.parametrize("call, match", [
    (lambda x, s: theano.function(x, x), "inputs must be a list"),
    (lambda x, s: theano.function([s], s * 2), "shared variable.*implicit"),
    (lambda x, s: theano.function([x * 2], x), "computed by"),
    (lambda x, s: theano.function([x], x, updates={x: x + 1}), "not a shared variable"),
    (lambda x, s: theano.function([x], x, updates={s: T.cast(s, "float64")}), "Cast the expression"),
    (lambda x, s: theano.function([x], x, updates=[(s, s + 1), (s, s + 2)]), "updated twice"),
    (lambda x, s: theano.function([x, x], x), "appears twice"),
    (lambda x, s: theano.function([x], x, givens={x: T.dvector()}), "dtype and number of dimensions"),
])
def test_bad_function_arguments(call, match):
    x = T.fvector("x")
    s = theano.shared(np.zeros(3, "float32"), name="s")
    with pytest.raises((TypeError, ValueError), match=match):
        call(x, s)


def test_shared_get_set_copy_semantics():
    v = np.arange(3, dtype="float32")
    s = theano.shared(v)
    v[0] = 99
    assert s.get_value()[0] == 0  # copied at creation
    got = s.get_value()
    got[1] = 99
    assert s.get_value()[1] == 1  # get_value copies
    assert s.get_value(borrow=True) is s.get_value(borrow=True)
    w = np.ones(3, "float32")
    s.set_value(w, borrow=True)
    assert s.get_value(borrow=True) is w
    s.set_value(w)
    assert s.get_value(borrow=True) is not w
    b = theano.shared(v, borrow=True)
    assert b.get_value(borrow=True) is v


def test_shared_set_value_checks_type():
    s = theano.shared(np.zeros(3, "float32"), name="weights")
    with pytest.raises(TypeError, match="weights.*dimensions"):
        s.set_value(np.zeros((3, 3), "float32"))
    with pytest.raises(TypeError, match="precision"):
        s.set_value(np.zeros(3, "float64"))


def test_variable_errors_are_helpful():
    x = T.fvector("x")
    with pytest.raises(TypeError, match="no truth value"):
        if x > 0:
            pass
    with pytest.raises(TypeError, match="len"):
        len(x)


def test_undeclared_broadcasting_is_refused_with_a_hint():
    m, b = T.fmatrix("m"), T.fmatrix("b")
    f = theano.function([m, b], m + b)
    with pytest.raises(ValueError, match=r"input 1 \(b\) has length 1 in dimension 0.*T.row"):
        f(np.ones((3, 4), "float32"), np.ones((1, 4), "float32"))
    r = T.frow("r")
    g = theano.function([m, r], T.grad((m + r).sum(), r))
    assert g(np.ones((3, 4), "float32"), np.ones((1, 4), "float32")).shape == (1, 4)


def test_undeclared_broadcast_cannot_silently_reshape_a_parameter():
    m = T.fmatrix("m")
    bias = theano.shared(np.zeros((1, 4), "float32"), name="bias")  # not declared broadcastable
    step = theano.function([m], [], updates={bias: bias - T.grad((m + bias).sum(), bias)})
    with pytest.raises(ValueError, match="broadcastable"):
        step(np.ones((3, 4), "float32"))
    assert bias.get_value().shape == (1, 4)


def test_borrowed_output_may_alias_a_shared_value():
    m = theano.shared(np.arange(6, dtype="float32").reshape(2, 3), name="m")
    f = theano.function([], theano.Out(m.T, borrow=True))
    assert np.shares_memory(f(), m.get_value(borrow=True))  # no copy: the user asked for it
    g = theano.function([], m.T)
    assert not np.shares_memory(g(), m.get_value(borrow=True))


def test_constant_plus_dot_becomes_a_gemm_that_runs():
    A = theano.shared(np.ones((3, 3), "float32"))
    f = theano.function([], T.dot(A, A) + 1)
    np.testing.assert_array_equal(f(), np.full((3, 3), 4, "float32"))


def test_borrowed_buffer_is_reused_when_an_input_broadcasts():
    x = theano.shared(np.arange(5, dtype="float32"))
    c = theano.shared(np.float32(2))
    f = theano.function([], theano.Out(x * c, borrow=True))
    first = f()
    assert f() is first
    np.testing.assert_array_equal(first, np.arange(5) * 2)
