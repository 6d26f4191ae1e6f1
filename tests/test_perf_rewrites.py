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
from coursekit.rewriting.fusion import Composite, fuse_elemwise


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


class low_recursion_limit:
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
