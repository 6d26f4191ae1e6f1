"""Each rewrite is shown firing where it should and not firing where it must not."""
import warnings

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit import rewriting
from coursekit.rewriting import RewriteError, local_rewrite
from coursekit.scalar.composite import Composite


def ops(f):
    return [type(n.op).__name__ for n in f.toposort()]


def fired(f, name):
    return any(entry[1] == name for entry in f.maker.fgraph.rewrite_log)


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def test_merge_common_subexpressions_and_constants():
    x = T.fvector("x")
    f = theano.function([x], [T.exp(x) + 1, T.exp(x) + 1], mode=theano.Mode("m", ("canonicalize",)))
    assert ops(f).count("Elemwise") == 2  # one exp, one add
    a, b = f(f32(3))
    np.testing.assert_array_equal(a, b)
    assert a is not b  # the same variable twice is still two independent outputs


def test_merge_does_not_merge_different_inputs():
    x, y = T.fvectors("x,y")
    f = theano.function([x, y], [T.exp(x), T.exp(y)], mode=theano.Mode("m", ("canonicalize",)))
    assert len(f.toposort()) == 2


def test_constant_folding():
    x = T.fvector("x")
    c = T.constant(np.arange(3, dtype="float32"))
    f = theano.function([x], x + T.exp(c) * 2)
    assert fired(f, "constant_folding")
    assert len(f.toposort()) == 1
    np.testing.assert_allclose(f(np.zeros(3, "float32")), np.exp(np.arange(3)) * 2, rtol=1e-6)
    g = theano.function([x], T.exp(x) * 2)
    assert not fired(g, "constant_folding")


@pytest.mark.parametrize("build", [lambda x: x * 1, lambda x: 1 * x, lambda x: x + 0, lambda x: x - 0,
                                   lambda x: x / 1, lambda x: x ** 1, lambda x: -(-x)])
def test_identity_algebra_disappears(build):
    x = T.fvector("x")
    f = theano.function([x], build(x))
    assert f.toposort() == []
    v = f32(4)
    out = f(v)
    np.testing.assert_array_equal(out, v)
    assert not np.shares_memory(out, v)


def test_identity_algebra_keeps_broadcasting_constants():
    x = T.fvector("x")
    f = theano.function([x], x * np.ones((2, 1), dtype="float32"))  # result is a matrix: not just x
    assert f(f32(3)).shape == (2, 3)


def test_sigmoid_recognised_and_log_stabilised():
    x = T.fvector("x")
    p = 1 / (1 + T.exp(-x))
    f = theano.function([x], [T.log(p), T.log(1 - p)])
    assert fired(f, "recognise_sigmoid") and fired(f, "log_sigmoid")
    v = np.array([-200, -50, 0, 50, 200], dtype="float32")
    lp, lq = f(v)
    assert np.isfinite(lp).all() and np.isfinite(lq).all()
    np.testing.assert_allclose(lp, -np.logaddexp(0, -v.astype("float64")), rtol=1e-6, atol=1e-30)
    np.testing.assert_allclose(lq, -np.logaddexp(0, v.astype("float64")), rtol=1e-6, atol=1e-30)
    unstable = theano.function([x], T.log(p), mode="FAST_COMPILE")
    with np.errstate(all="ignore"):
        assert not np.isfinite(unstable(v)).all()  # the literal formula really overflows


def test_log_one_plus_exp_becomes_softplus():
    x = T.fvector("x")
    f = theano.function([x], T.log(1 + T.exp(x)))
    assert fired(f, "log_one_plus_exp")
    v = np.array([-100, 0, 100], dtype="float32")
    np.testing.assert_allclose(f(v), np.logaddexp(0, v), rtol=1e-6)


def test_literal_cross_entropy_gradient_is_finite_in_float32():
    x, y = T.matrix("x"), T.vector("y")
    w = theano.shared(f32(20) * 50, name="w")
    b = theano.shared(np.float32(0), name="b")
    p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
    xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
    gw, gb = T.grad(xent.mean(), [w, b])
    f = theano.function([x, y], [xent, gw, gb])
    xv, yv = f32(30, 20, seed=1) * 10, (np.arange(30) % 2).astype("float32")
    for value in f(xv, yv):
        assert np.isfinite(value).all()
    # and it is the right gradient: compare with float64 NumPy
    z = xv.astype("float64") @ w.get_value().astype("float64")
    sig = np.exp(-np.logaddexp(0, -z))
    np.testing.assert_allclose(f(xv, yv)[1], xv.T.astype("float64") @ (sig - yv) / 30, rtol=1e-3, atol=1e-3)


def test_gemm_replaces_dot_plus_add():
    m = theano.shared(f32(50, 50), name="m")
    x = theano.shared(f32(50, 1, seed=1), name="x")
    b = theano.shared(f32(50, 1, seed=2), name="b")
    f = theano.function([], T.dot(m, x) + b)
    assert ops(f) == ["Gemm"]
    np.testing.assert_allclose(f(), m.get_value() @ x.get_value() + b.get_value(), rtol=1e-5, atol=1e-5)


def test_gemv_with_scales_and_subtraction():
    m, v, z = T.fmatrix("m"), T.fvector("v"), T.fvector("z")
    f = theano.function([m, v, z], z * 3 - 2 * T.dot(m, v))
    assert ops(f) == ["Gemv"]
    mv, vv, zv = f32(4, 5), f32(5, seed=1), f32(4, seed=2)
    np.testing.assert_allclose(f(mv, vv, zv), 3 * zv - 2 * mv @ vv, rtol=1e-5, atol=1e-5)


def test_gemm_not_used_when_the_product_is_needed_elsewhere():
    m, v, z = T.fmatrix("m"), T.fvector("v"), T.fvector("z")
    d = T.dot(m, v)
    f = theano.function([m, v, z], [d + z, d])
    assert "Gemv" not in ops(f)


def test_gemm_not_used_when_z_would_enlarge_the_result():
    m, v, z = T.fmatrix("m"), T.fvector("v"), T.fmatrix("z")
    f = theano.function([m, v, z], T.dot(m, v) + z)
    assert "Gemv" not in ops(f)
    assert f(f32(3, 4), f32(4), f32(2, 3)).shape == (2, 3)


def test_fusion_makes_one_composite():
    x, y = T.fvectors("x,y")
    f = theano.function([x, y], T.tanh(x * y + 1) * 2 - y)
    assert len(f.toposort()) == 1
    op = f.toposort()[0].op
    assert isinstance(op, T.Elemwise) and isinstance(op.scalar_op, Composite)
    xv, yv = f32(7), f32(7, seed=1)
    np.testing.assert_allclose(f(xv, yv), np.tanh(xv * yv + 1) * 2 - yv, rtol=1e-6)


def test_fusion_keeps_intermediates_that_are_outputs():
    x = T.fvector("x")
    e = T.exp(x)
    f = theano.function([x], [e, e * 2 + 1])
    assert len(f.toposort()) == 2
    a, b = f(f32(5))
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_fusion_handles_broadcasting_inside_the_chain():
    r, m = T.frow("r"), T.fmatrix("m")
    f = theano.function([r, m], T.exp(r * 2) + m)
    rv, mv = f32(1, 4), f32(3, 4, seed=1)
    np.testing.assert_allclose(f(rv, mv), np.exp(rv * 2) + mv, rtol=1e-6)


def test_fast_compile_skips_speed_rewrites():
    x, y = T.fvectors("x,y")
    f = theano.function([x, y], T.tanh(x * y + 1), mode="FAST_COMPILE")
    assert len(f.toposort()) == 3
    g = theano.function([x, y], T.tanh(x * y + 1), mode=theano.compile.get_mode("FAST_RUN").excluding("fusion"))
    assert len(g.toposort()) == 3


@pytest.fixture
def broken_rewrite():
    @local_rewrite("canonicalize", "broken_for_test")
    def broken(fgraph, node):
        raise ZeroDivisionError("deliberately broken")

    yield broken
    rewriting._DB["canonicalize"] = [r for r in rewriting._DB["canonicalize"] if r.name != "broken"]


def test_a_failing_rewrite_raises_by_default(broken_rewrite):
    x = T.fvector("x")
    with pytest.raises(RewriteError, match="'broken'.*deliberately broken"):
        theano.function([x], x + 1)


def test_a_failing_rewrite_can_be_skipped_with_a_warning(broken_rewrite):
    x = T.fvector("x")
    with theano.config.change(on_opt_error="warn"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = theano.function([x], x + 1)
    assert any("broken" in str(w.message) for w in caught)
    np.testing.assert_array_equal(f(np.zeros(2, "float32")), [1, 1])
