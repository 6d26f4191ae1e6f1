"""Issue 17: fewer, bigger kernels and compiling deep graphs.

Counts, never timings: how many nodes a graph compiles to, which ops remain,
and that the rewritten graph computes what NumPy computes.
"""
import sys

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit.fgraph import FunctionGraph
from coursekit.rewriting.fusion import fuse_elemwise
from coursekit.scalar.composite import Composite


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def scalar_names(f):
    names = []
    for node in f.toposort():
        op = getattr(node.op, "scalar_op", None)
        if isinstance(op, Composite):
            names += [step[0].name for step in op.program]
        elif op is not None:
            names.append(op.name)
    return names


def elementwise_chain(x, n):
    y = x
    for i in range(n):
        y = T.exp(y) if i % 3 == 0 else (y * 0.5 if i % 3 == 1 else T.tanh(y))
    return y


def chain_reference(xv, n):
    y = xv
    for i in range(n):
        y = np.exp(y) if i % 3 == 0 else (y * np.float32(0.5) if i % 3 == 1 else np.tanh(y))
    return y


class low_recursion_limit:  # noqa: N801  (used as a context manager, named like one)
    """Run with only ``depth`` frames to spare: a walk that recurses once per graph level fails."""

    def __init__(self, depth=120):
        self.depth = depth

    def __enter__(self):
        self.old = sys.getrecursionlimit()
        frame, used = sys._getframe(), 0
        while frame is not None:
            frame, used = frame.f_back, used + 1
        sys.setrecursionlimit(used + self.depth)

    def __exit__(self, *exc):
        sys.setrecursionlimit(self.old)


def test_fusion_of_a_deep_chain_does_not_recurse():
    """1000 elementwise ops compiled with ~120 spare stack frames: nothing walks the graph recursively
    (it raised RecursionError at 1000 ops before).  The whole chain is one Composite."""
    x = T.fvector("x")
    y = elementwise_chain(x, 1000)
    with low_recursion_limit():
        f = theano.function([x], y)
    assert len(f.toposort()) == 1
    xv = f32(5) * 0.1
    np.testing.assert_allclose(f(xv), chain_reference(xv, 1000), rtol=1e-5)


def test_fusion_of_a_10000_op_chain():
    """Only the fusion pass, on a FunctionGraph built directly (cheap): 10,000 ops become one node."""
    x = T.fvector("x")
    y = elementwise_chain(x, 10_000)
    fgraph = FunctionGraph([x], [y])
    fgraph.rewrite_log = []
    with low_recursion_limit():
        assert fuse_elemwise(fgraph) == 1
    (node,) = fgraph.toposort()
    assert len(node.op.scalar_op.program) == 10_000
    assert len(str(node.op)) < 1000  # the name stays readable (it lists the steps past a length)


def test_a_value_read_twice_inside_one_kernel_is_fused_and_computed_once():
    """s = sigmoid(x) is read by two ops that both end in the output: one Composite, one sigmoid."""
    x, y = T.fvectors("x,y")
    s = T.sigmoid(x)
    out = s * y + s * s
    f = theano.function([x, y], out)
    assert len(f.toposort()) == 1
    assert scalar_names(f).count("sigmoid") == 1
    xv, yv = f32(6), f32(6, seed=1)
    sv = 1 / (1 + np.exp(-xv))
    np.testing.assert_allclose(f(xv, yv), sv * yv + sv * sv, rtol=1e-5)


def test_a_value_that_is_also_an_output_stays_its_own_node():
    x = T.fvector("x")
    s = T.sigmoid(x)
    f = theano.function([x], [s, s * 2 + s])
    assert len(f.toposort()) == 2


def test_equal_steps_inside_a_composite_are_computed_once():
    x = T.fvector("x")
    # exp(x) written twice: merge joins the nodes, and the kernel has one exp
    f = theano.function([x], T.exp(x) * 2 + T.exp(x) * 3)
    assert scalar_names(f).count("exp") == 1
    xv = f32(4)
    np.testing.assert_allclose(f(xv), np.exp(xv) * 5, rtol=1e-6)


def test_composite_key_tells_structures_apart():
    x = T.fvector("x")
    a = theano.function([x], T.exp(x) * 2 + 1).toposort()[0].op.scalar_op
    b = theano.function([x], T.exp(x) * 2 + 1).toposort()[0].op.scalar_op
    c = theano.function([x], T.exp(x) * 3 + 1).toposort()[0].op.scalar_op
    assert a == b and hash(a) == hash(b) and a != c


def test_fills_from_gradients_are_not_materialised():
    """grad of 0.01 * sum(w**2) is 0.02 * w: no `second` left in the compiled graph."""
    w = theano.shared(f32(5), name="w")
    g = T.grad(0.01 * (w ** 2).sum(), w)
    f = theano.function([], g)
    assert "second" not in scalar_names(f)
    np.testing.assert_allclose(f(), 0.02 * w.get_value(), rtol=1e-6)


def test_fill_that_carries_the_shape_is_kept():
    x = T.fmatrix("x")
    f = theano.function([x], T.ones_like(x) * 2)  # nothing else says how big the result is
    np.testing.assert_array_equal(f(np.zeros((2, 3), "float32")), np.full((2, 3), 2, "float32"))


def test_mean_does_not_keep_a_formula_alive_for_its_length():
    x = T.fvector("x")
    f = theano.function([x], T.grad(T.exp(x * 2).mean(), x))
    (count,) = [n for n in f.toposort() if type(n.op).__name__ == "NumElements"]
    assert count.inputs[0] is f.maker.fgraph.inputs[0]


def test_mean_gradient_still_refuses_disagreeing_shapes():
    """The shortcuts for fills and element counts keep the run-time check that elementwise inputs
    agree: the element count of x * y is read from x and y, and x and y of different lengths still raise."""
    x, y = T.fvectors("x,y")
    f = theano.function([x, y], T.grad((x * y).mean(), x))
    assert "NumElements" not in [type(n.op).__name__ for n in f.toposort()]
    np.testing.assert_allclose(f(f32(3), np.full(3, 2, "float32")), np.full(3, 2 / 3, "float32"), rtol=1e-6)
    with pytest.raises(ValueError):
        f(f32(3), f32(4))
    with pytest.raises(ValueError, match="broadcastable"):
        f(f32(3), f32(1))


def logistic_regression_step():
    rng = np.random.RandomState(0)
    n, feats = 40, 7
    xv, yv = rng.randn(n, feats).astype("float32"), rng.randint(0, 2, n).astype("float32")
    x, y = T.matrix("x"), T.vector("y")
    w = theano.shared(rng.randn(feats).astype("float32"), name="w")
    b = theano.shared(np.float32(0.0), name="b")
    p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
    xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
    cost = xent.mean() + 0.01 * (w ** 2).sum()
    gw, gb = T.grad(cost, [w, b])
    train = theano.function([x, y], [p_1 > 0.5, xent], updates=[(w, w - 0.1 * gw), (b, b - 0.1 * gb)])
    return train, (xv, yv), w, b


def numpy_step(xv, yv, w, b):
    z = xv @ w + b
    p = 1 / (1 + np.exp(-z))
    xent = np.logaddexp(0, z) - yv * z
    dz = (p - yv) / len(yv)
    return p > 0.5, xent, w - 0.1 * (xv.T @ dz + 0.02 * w), b - 0.1 * dz.sum()


def test_logistic_regression_step_compiles_to_few_nodes_and_one_sigmoid_one_softplus():
    train, (xv, yv), w, b = logistic_regression_step()
    names = scalar_names(train)
    assert names.count("sigmoid") == 1 and "second" not in names
    # softplus(z) and softplus(-z) share their expensive tail: one log1p(exp(-|z|))
    assert names.count("softplus") + names.count("log1p") == 1, names
    kinds = [type(n.op).__name__ for n in train.toposort()]
    assert kinds.count("Gemv") == 2 and len(kinds) <= 14, kinds
    w0, b0 = w.get_value(), b.get_value()
    pred, xent = train(xv, yv)
    p_ref, x_ref, w_ref, b_ref = numpy_step(xv.astype("float64"), yv, w0.astype("float64"), float(b0))
    np.testing.assert_array_equal(pred, p_ref)
    np.testing.assert_allclose(xent, x_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.get_value(), w_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.get_value(), b_ref, rtol=1e-5, atol=1e-6)


def test_gradient_step_is_folded_into_the_gemv():
    x, d = T.fmatrix("x"), T.fvector("d")
    w = theano.shared(f32(3), name="w")
    step = theano.function([x, d], [], updates=[(w, w - 0.1 * (T.dot(x.T, d) + 0.5 * w))])
    kinds = [type(n.op).__name__ for n in step.toposort()]
    assert kinds.count("Gemv") == 1 and "Elemwise" not in kinds, kinds
    xv, dv, w0 = f32(4, 3), f32(4, seed=2), w.get_value()
    step(xv, dv)
    np.testing.assert_allclose(w.get_value(), w0 - 0.1 * (xv.T @ dv + 0.5 * w0), rtol=1e-5)


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
def test_sigmoid_and_softplus_sharing_is_numerically_sound(mode):
    """Extreme arguments: 1 - sigmoid(z) and softplus(z) - z stay finite and close."""
    z = T.fvector("z")
    f = theano.function([z], [T.sigmoid(z), T.sigmoid(-z), T.softplus(z), T.softplus(-z)], mode=mode)
    zv = np.array([-100, -20, -1, 0, 1e-3, 1, 20, 100], "float32")
    s, s_neg, sp, sp_neg = f(zv)
    z64 = zv.astype("float64")
    np.testing.assert_allclose(s_neg, 1 / (1 + np.exp(z64)), atol=1e-6)
    assert np.all(np.abs(sp_neg - np.logaddexp(0, -z64)) <= 1e-5 * np.maximum(1, np.abs(z64)))


def test_gradient_and_printing_of_a_deep_chain_do_not_recurse():
    """T.grad, debugprint and pp walk the graph with explicit stacks or in topological order."""
    from coursekit.printing import debugprint, pp

    x = T.fvector("x")
    y = elementwise_chain(x, 1000)
    with low_recursion_limit():
        g = T.grad(y.sum(), x)
        text = debugprint(y, file="str")
        line = pp(y)
    assert g.type == x.type
    deepest = max(text.splitlines(), key=lambda line: len(line) - len(line.lstrip(" |")))
    assert text.count("Elemwise") == 1000 and deepest.strip(" |").startswith(("x ", "TensorConstant"))
    assert line.count("exp(") == 334


def test_cross_entropy_becomes_one_softplus_and_its_gradient_sigmoid_minus_y():
    """c*softplus(-z) + (1-c)*softplus(z) -> softplus(z) - c*z before T.grad: the W3 step keeps one
    softplus, no (1 - y) node, and its gradient kernel is (1/N) * (sigmoid - y): two steps."""
    train, (xv, yv), w, b = logistic_regression_step()
    assert any(entry[1] == "logistic_cross_entropy" for entry in train.maker.fgraph.rewrite_log)
    names = scalar_names(train)
    assert names.count("log1p") == 1 and names.count("exp") == 1 and "softplus" not in names, names
    for node in train.toposort():
        assert not (getattr(node.op, "scalar_op", None) is not None and node.op.scalar_op.name == "sub"
                    and len(node.inputs) == 2 and node.inputs[1].name == "y"), "1 - y is computed on its own"
    (grad_kernel,) = [n for n in train.toposort() if isinstance(getattr(n.op, "scalar_op", None), Composite)
                      and "sigmoid" not in [s[0].name for s in n.op.scalar_op.program]
                      and any(i.owner is not None and i.owner.op.__class__.__name__ == "Elemwise"
                              and i.owner.op.scalar_op.name == "sigmoid" for i in n.inputs)]
    assert [step[0].name for step in grad_kernel.op.scalar_op.program] == ["sub", "mul"]


@pytest.mark.parametrize("sign", [1, -1])
def test_cross_entropy_rewrite_keeps_other_terms_and_values(sign):
    """Extra terms of the sum survive, the sign is kept, any coefficient c works (not only 0/1),
    and values match float64 NumPy at extreme z."""
    z, c, u = T.fvectors("z,c,u")
    loss = sign * (c * T.softplus(-z) + (1 - c) * T.softplus(z)) + u * 2 - T.exp(u)
    f = theano.function([z, c, u], [loss, T.grad(loss.sum(), z)])
    assert any(entry[1] == "logistic_cross_entropy" for entry in f.maker.fgraph.rewrite_log)
    zv = np.array([-100, -20, -1, 0, 1e-3, 1, 20, 100], "float32")
    cv = np.array([0, 1, 0.25, 1, 0, 0.5, 1, 0.75], "float32")
    uv = f32(8, seed=3)
    loss_v, grad_v = f(zv, cv, uv)
    z64, c64, u64 = (a.astype("float64") for a in (zv, cv, uv))
    ref = sign * (c64 * np.logaddexp(0, -z64) + (1 - c64) * np.logaddexp(0, z64)) + u64 * 2 - np.exp(u64)
    np.testing.assert_allclose(loss_v, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grad_v, sign * (1 / (1 + np.exp(-z64)) - c64), atol=1e-6)


def test_cross_entropy_keeps_the_digits_of_a_tiny_loss():
    """softplus(z) - z would round exp(-30) to 0; the specialised order (max(z,0) - c*z) + log1p(exp(-|z|))
    keeps its relative accuracy for c = 0 and 1, as PyTorch's and TensorFlow's logistic losses do."""
    z, c = T.fvectors("z,c")
    f = theano.function([z, c], c * T.softplus(-z) + (1 - c) * T.softplus(z))
    assert any(entry[1] == "softplus_minus_linear" for entry in f.maker.fgraph.rewrite_log)
    zv, cv = np.array([30, -30, 17, -17], "float32"), np.array([1, 0, 1, 0], "float32")
    np.testing.assert_allclose(f(zv, cv), np.logaddexp(0, -np.abs(zv.astype("float64"))), rtol=1e-5)


def test_cross_entropy_rewrite_needs_c_and_one_minus_c():
    """Coefficients that are not c and 1 - c (here y and 1 - t) leave both softplus terms alone."""
    z, y, t = T.fvectors("z,y,t")
    f = theano.function([z, y, t], y * T.softplus(-z) + (1 - t) * T.softplus(z))
    assert not any(entry[1] == "logistic_cross_entropy" for entry in f.maker.fgraph.rewrite_log)
    zv, yv, tv = f32(5), f32(5, seed=1), f32(5, seed=2)
    ref = yv * np.logaddexp(0, -zv) + (1 - tv) * np.logaddexp(0, zv)
    np.testing.assert_allclose(f(zv, yv, tv), ref, rtol=1e-5, atol=1e-6)


def test_elementwise_thunk_with_narrow_inputs_matches_numpy_and_still_checks_shapes():
    """A scalar given an axis (DimShuffle{x}) and a constant beside two vectors: the fast thunk reads
    them as 0-d; vectors of different lengths, or a length-1 vector not declared broadcastable, still
    raise the general path's errors.  allow_gc=False exercises the reused output buffer too."""
    x, y = T.fvectors("x,y")
    s = T.fscalar("s")
    for allow_gc in (True, False):
        with theano.config.change(allow_gc=allow_gc):
            f = theano.function([x, y, s], T.maximum(x * s - y, 0.5), mode=theano.Mode("m", ("canonicalize",)))
        assert sum(t.__code__.co_filename.startswith("<elementwise thunk") for t in f.thunks) == 3
        xv, yv = f32(6), f32(6, seed=1)
        for _ in range(2):
            np.testing.assert_allclose(f(xv, yv, np.float32(1.5)), np.maximum(xv * 1.5 - yv, 0.5), rtol=1e-6)
        with pytest.raises(ValueError):
            f(xv, f32(5), np.float32(1.5))
        with pytest.raises(ValueError, match="broadcastable"):
            f(xv, f32(1), np.float32(1.5))
        np.testing.assert_allclose(f(f32(3), f32(3, seed=1), np.float32(2)),
                                   np.maximum(f32(3) * 2 - f32(3, seed=1), 0.5), rtol=1e-6)


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_a_fused_fill_never_writes_into_a_smaller_temporary(device):
    """second(v, -s) fused: the kernel may offer the (1,) temporary -s as the result's buffer; the fill
    must refuse it like a ufunc would (it filled the small buffer and returned shape (1,) before)."""
    v, s = T.fvector("v"), T.fscalar("s")
    with theano.config.change(device=device):
        f = theano.function([v, s], T.second(v, -s.dimshuffle("x")))
    np.testing.assert_array_equal(f(np.zeros(5, "float32"), np.float32(3)), np.full(5, -3, "float32"))


def test_common_factor_only_when_the_products_are_read_once():
    a, b, c = T.fvectors("a,b,c")
    mode = theano.Mode("m", ("canonicalize",))
    f = theano.function([a, b, c], a * b - a * c, mode=mode)
    assert [n.op.scalar_op.name for n in f.toposort()] == ["sub", "mul"]
    g = theano.function([a, b, c], [a * b - a * c, a * b], mode=mode)
    assert [n.op.scalar_op.name for n in g.toposort()].count("mul") == 2
    av, bv, cv = f32(4), f32(4, seed=1), f32(4, seed=2)
    np.testing.assert_allclose(f(av, bv, cv), av * (bv - cv), rtol=1e-6)
    np.testing.assert_allclose(g(av, bv, cv)[0], av * bv - av * cv, rtol=1e-5)
