"""The Theano surface libraries import (issue 27): each name against NumPy/SciPy, and its gradient by finite
differences (``verify_grad``)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import signal, special

import coursekit as theano
import coursekit.tensor as T
from coursekit import gradient as G
from coursekit.gradient import verify_grad
from coursekit.tensor.nnet import abstract_conv, bn, conv3d2d, neighbours

RNG = np.random.default_rng(27)
T5 = T.TensorType("float64", (False,) * 5)


def rand(*shape):
    return RNG.standard_normal(shape)


def conv3d_reference(x, w, flip=True):
    """Per-(batch, filter) sum over channels of SciPy's n-d valid convolution (correlation if not flip)."""
    op = signal.convolve if flip else signal.correlate
    return np.stack([np.stack([sum(op(x[b, c], w[k, c], mode="valid") for c in range(x.shape[1]))
                               for k in range(w.shape[0])]) for b in range(x.shape[0])])


@pytest.mark.parametrize("flip", [True, False])
def test_conv3d_matches_scipy(flip, device):
    x, w = rand(2, 3, 4, 5, 4), rand(2, 3, 2, 3, 2)
    xs, ws = T5("x"), T5("w")
    got = theano.function([xs, ws], T.nnet.conv3d(xs, ws, filter_flip=flip))(x, w)
    np.testing.assert_allclose(np.asarray(got), conv3d_reference(x, w, flip), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("border_mode,subsample,dilation", [("valid", 1, 1), ("half", (2, 1, 2), 1),
                                                           ((1, 0, 2), (1, 2, 1), (2, 1, 1)), ("full", 1, 1)])
def test_conv3d_gradients(border_mode, subsample, dilation):
    x, w = rand(1, 2, 4, 5, 4), rand(2, 2, 2, 3, 2)
    verify_grad(lambda a, b: T.nnet.conv3d(a, b, border_mode=border_mode, subsample=subsample,
                                           filter_dilation=dilation, filter_shape=w.shape), [x, w])


def test_conv3d2d_uses_theanos_axis_order_and_flips():
    s, w = rand(2, 4, 3, 5, 5), rand(2, 2, 3, 3, 3)
    got = theano.function([], conv3d2d.conv3d(T.constant(s), T.constant(w)))()
    expected = conv3d_reference(s.transpose(0, 2, 1, 3, 4), w.transpose(0, 2, 1, 3, 4)).transpose(0, 2, 1, 3, 4)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n", [2, 3])
def test_abstract_grad_inputs_is_the_gradient_of_the_convolution(n):
    """Lasagne's transposed convolution: gradInputs(W, y) must equal d<conv(x, W), y>/dx."""
    shape, kernel = (2, 3) + (6,) * n, (4, 3) + (3,) * n
    typ = T.TensorType("float64", (False,) * (n + 2))
    x, w, y = typ("x"), typ("w"), typ("y")
    conv = T.nnet.conv2d if n == 2 else T.nnet.conv3d
    ops = {2: abstract_conv.AbstractConv2d_gradInputs, 3: abstract_conv.AbstractConv3d_gradInputs}
    wops = {2: abstract_conv.AbstractConv2d_gradWeights, 3: abstract_conv.AbstractConv3d_gradWeights}
    out = conv(x, w, border_mode="half", subsample=(2,) * n, filter_shape=kernel)
    reference = theano.grad((out * y).sum(), [x, w])
    built = [ops[n](imshp=shape, kshp=kernel, border_mode="half", subsample=(2,) * n)(w, y, shape[2:]),
             wops[n](imshp=shape, kshp=kernel, border_mode="half", subsample=(2,) * n)(x, y, kernel[2:])]
    xv, wv = rand(*shape), rand(*kernel)
    yv = rand(*theano.function([x, w], out)(xv, wv).shape)
    got = theano.function([x, w, y], reference + built)(xv, wv, yv)
    np.testing.assert_allclose(got[2], got[0], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got[3], got[1], rtol=1e-10, atol=1e-10)


def test_images2neibs_order_inverse_and_gradient():
    x = np.arange(2 * 3 * 4 * 6, dtype=float).reshape(2, 3, 4, 6)
    xs = T.dtensor4("x")
    patches = neighbours.images2neibs(xs, (2, 3))
    got, back = theano.function([xs], [patches, neighbours.neibs2images(patches, (2, 3), xs.shape)])(x)
    np.testing.assert_array_equal(got, x.reshape(2, 3, 2, 2, 2, 3).transpose(0, 1, 2, 4, 3, 5).reshape(-1, 6))
    np.testing.assert_array_equal(back, x)
    verify_grad(lambda a: neighbours.images2neibs(a, (2, 2), (1, 2), mode="ignore_borders"), [rand(1, 2, 5, 5)])
    with pytest.raises(ValueError, match="ignore_borders"):
        theano.function([xs], neighbours.images2neibs(xs, (3, 3)))(x)


def test_batch_normalization_train_and_test():
    xv, gv, bv = rand(6, 3, 2, 2), rand(3) + 2, rand(3)
    x, g, b = T.dtensor4("x"), T.dvector("g"), T.dvector("b")
    rm, rv = T.dvector("rm"), T.dvector("rv")
    out, mean, invstd, new_rm, new_rv = bn.batch_normalization_train(x, g, b, "spatial", 1e-4, 0.1, rm, rv)
    got = theano.function([x, g, b, rm, rv], [out, mean, invstd, new_rm, new_rv])(xv, gv, bv, np.zeros(3), np.ones(3))
    m, v = xv.mean(axis=(0, 2, 3), keepdims=True), xv.var(axis=(0, 2, 3), keepdims=True)
    expand = (None, slice(None), None, None)
    np.testing.assert_allclose(got[0], (xv - m) / np.sqrt(v + 1e-4) * gv[expand] + bv[expand], rtol=1e-10)
    # Theano gives the statistics in gamma's shape: a vector here (Keras 1.x averages them into its vectors)
    np.testing.assert_allclose(got[1], m.ravel(), rtol=1e-10)
    np.testing.assert_allclose(got[2], 1 / np.sqrt(v.ravel() + 1e-4), rtol=1e-10)
    g4 = T.TensorType("float64", (True, False, True, True))("g4")  # gamma keeps the reduced axes: stats too
    kept = bn.batch_normalization_train(x, g4, g4, "spatial", 1e-4)
    got_kept = theano.function([x, g4], kept)(xv, gv[expand])[1:]
    assert got_kept[0].shape == got_kept[1].shape == (1, 3, 1, 1)
    np.testing.assert_allclose(got_kept[0], m, rtol=1e-10)
    np.testing.assert_allclose(got[3], 0.1 * m.ravel(), rtol=1e-10)
    np.testing.assert_allclose(got[4], 0.9 + 0.1 * xv.var(axis=(0, 2, 3), ddof=1), rtol=1e-10)
    test = bn.batch_normalization_test(x, g, b, rm, rv, "spatial", 1e-4)
    got = theano.function([x, g, b, rm, rv], test)(xv, gv, bv, m.ravel(), v.ravel())
    np.testing.assert_allclose(got, (xv - m) / np.sqrt(v + 1e-4) * gv[expand] + bv[expand], rtol=1e-10)
    verify_grad(lambda a: bn.batch_normalization_train(a, gv, bv)[0], [rand(5, 3)])


def test_activations_match_numpy_and_softmax_of_a_vector_is_a_row():
    v = T.dvector("v")
    xv = rand(7) * 3
    got = theano.function([v], [T.nnet.softsign(v), T.nnet.hard_sigmoid(v), T.nnet.elu(v, 0.5),
                                T.nnet.softmax(v), T.softmax(v)])(xv)
    np.testing.assert_allclose(got[0], xv / (1 + np.abs(xv)))
    np.testing.assert_allclose(got[1], np.clip(0.2 * xv + 0.5, 0, 1))
    np.testing.assert_allclose(got[2], np.where(xv > 0, xv, 0.5 * np.expm1(xv)))
    assert got[3].shape == (1, 7) and got[4].shape == (7,)
    assert T.nnet.softmax(v).broadcastable == (True, False)
    for f in (T.nnet.softsign, T.nnet.elu, T.nnet.selu):
        verify_grad(f, [xv + 0.01])


def test_elementwise_legacy_names_match_numpy_and_differentiate():
    xv = RNG.uniform(0.2, 0.9, (3, 4))
    cases = [(T.inv, np.reciprocal), (T.log2, np.log2), (T.log10, np.log10), (T.exp2, np.exp2), (T.tan, np.tan),
             (T.arcsin, np.arcsin), (T.arccos, np.arccos), (T.arctan, np.arctan), (T.sinh, np.sinh),
             (T.cosh, np.cosh), (T.erf, special.erf), (T.erfc, special.erfc)]
    x = T.dmatrix("x")
    got = theano.function([x], [f(x) for f, _ in cases])(xv)
    for (f, ref), g in zip(cases, got):
        np.testing.assert_allclose(g, ref(xv), rtol=1e-12)
        verify_grad(f, [xv])
    verify_grad(lambda a: T.arctan2(a, a * a + 1), [xv])
    flags = theano.function([x], [T.isnan(x), T.isinf(x), T.any(x > 0.5, axis=1), T.all(x > 0.1)])(
        np.array([[np.nan, np.inf], [0.2, 0.7]]))
    np.testing.assert_array_equal(flags[0], [[True, False], [False, False]])
    np.testing.assert_array_equal(flags[1], [[False, True], [False, False]])
    np.testing.assert_array_equal(flags[2], [True, True])
    assert not flags[3]


def test_broadcast_patterns_padding_squeeze_and_shape_unpacking():
    x = T.dmatrix("x")
    row = T.addbroadcast(x[:1], 0)
    assert row.broadcastable == (True, False) and T.unbroadcast(row, 0).broadcastable == (False, False)
    assert T.patternbroadcast(x, (False, True)).broadcastable == (False, True)
    assert T.shape_padleft(x).broadcastable == (True, False, False)
    assert T.shape_padright(x, 2).broadcastable == (False, False, True, True)
    assert T.shape_padaxis(x, 1).broadcastable == (False, True, False)
    assert T.squeeze(T.shape_padaxis(x, 1)).broadcastable == (False, False)
    t3 = T.dtensor3("t3")
    squeezed = theano.function([t3], [T.squeeze(t3, 1), T.extra_ops.squeeze(t3[:, :1], axis=(1,))])(np.zeros((2, 1, 3)))
    assert [s.shape for s in squeezed] == [(2, 3), (2, 3)]
    with pytest.raises(ValueError, match="declared broadcastable"):
        theano.function([t3], T.squeeze(t3, 0))(np.zeros((2, 1, 3)))
    rows, cols = x.shape
    xv = rand(3, 4)
    got = theano.function([x], [row * x, rows * cols])(xv)
    np.testing.assert_allclose(got[0], xv[:1] * xv)
    assert got[1] == 12
    with pytest.raises(ValueError, match="declared broadcastable"):
        theano.function([x], T.addbroadcast(x, 0))(xv)
    verify_grad(lambda a: T.addbroadcast(a[:1], 0) * a, [xv])
    with pytest.raises(TypeError, match="cannot be iterated"):
        iter(T.dvector())


def test_mean_dtype_cumulative_and_one_hot():
    i, y = T.ivector("i"), T.lvector("y")
    m = T.mean(i, dtype="float32")
    assert m.dtype == "float32" and i.mean(dtype="float64").dtype == "float64"
    x = T.dmatrix("x")
    xv = rand(3, 4) + 2
    got = theano.function([i, x, y], [m, T.cumsum(x, axis=1), T.extra_ops.cumprod(x), T.extra_ops.to_one_hot(y, 3)])(
        np.array([1, 2, 4], "int32"), xv, np.array([2, 0]))
    assert got[0] == np.float32(7 / 3)
    np.testing.assert_allclose(got[1], np.cumsum(xv, axis=1))
    np.testing.assert_allclose(got[2], np.cumprod(xv))
    np.testing.assert_array_equal(got[3], [[0, 0, 1], [1, 0, 0]])
    for f in (lambda a: T.cumsum(a, 0), T.cumsum, lambda a: T.extra_ops.cumprod(a, 1), T.extra_ops.cumprod):
        verify_grad(f, [xv])


def test_gradient_helpers():
    x = T.dvector("x")
    xv = np.array([1.0, -2.0, 3.0])
    clipped = theano.grad((G.grad_clip(x, -1, 1) * 5).sum(), x)
    scaled = theano.grad((G.grad_scale(x, 3) ** 2).sum(), x)
    const = theano.grad((G.consider_constant(x) * x).sum(), x)
    cut = theano.grad((G.disconnected_grad(x) * x).sum(), x)
    got = theano.function([x], [clipped, scaled, const, cut, G.grad_clip(x, 0, 1)])(xv)
    np.testing.assert_array_equal(got[0], [1, 1, 1])
    np.testing.assert_allclose(got[1], 6 * xv)
    np.testing.assert_allclose(got[2], xv)
    np.testing.assert_allclose(got[3], xv)
    np.testing.assert_array_equal(got[4], xv)  # the forward pass is the identity
    with pytest.raises(Exception, match="does not depend|disconnected"):
        theano.grad(G.disconnected_grad(x).sum(), x)
    jac = theano.function([x], T.jacobian(T.exp(x) * x.sum(), x))(xv)
    np.testing.assert_allclose(jac, np.diag(np.exp(xv)) * xv.sum() + np.exp(xv)[:, None], rtol=1e-12)
    hess = theano.function([x], T.hessian((x ** 3).sum() + x[0] * x[1], x))(xv)
    np.testing.assert_allclose(hess, np.diag(6 * xv) + np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]]))


def test_scan_strict_accepts_what_theano_accepted():
    """Theano's strict=True asks only that every *shared* variable the step uses be a non-sequence; a step may
    use a non-sequence's outer variable directly (Lasagne's recurrent layers do), meaning its inner copy."""
    w = theano.shared(np.full((2, 2), 0.5), name="w")
    w2 = w * 2  # a computed non-sequence, used from the closure as Lasagne does
    x = T.dmatrix("x")
    out, _ = theano.scan(lambda row, h, *_: T.dot(h, w2) + row, sequences=x, outputs_info=T.zeros((2,), "float64"),
                         non_sequences=[w2], strict=True)
    xv = rand(3, 2)
    h, expected = np.zeros(2), []
    for row in xv:
        h = h @ (np.full((2, 2), 0.5) * 2) + row
        expected.append(h)
    np.testing.assert_allclose(theano.function([x], out)(xv), expected)
    with pytest.raises(Exception, match="strict=True"):
        theano.scan(lambda row: row * w, sequences=x, strict=True)


def _pool3d_reference(x, ws, stride, pad, mode):
    """Window by window in NumPy (ignore_border=True); padding is NaN so that it never wins a max."""
    from coursekit.tensor.signal.pool import _out_len

    padded = np.pad(x, [(0, 0)] * (x.ndim - 3) + [(p, p) for p in pad], constant_values=np.nan)
    outs = [_out_len(s, w, t, p, True) for s, w, t, p in zip(x.shape[-3:], ws, stride, pad)]
    out = np.zeros(x.shape[:-3] + tuple(outs))
    for idx in np.ndindex(*outs):
        window = padded[(Ellipsis,) + tuple(slice(i * t, i * t + w) for i, t, w in zip(idx, stride, ws))]
        flat = window.reshape(window.shape[:-3] + (-1,))
        reduce = {"max": np.nanmax, "sum": np.nansum, "average_exc_pad": np.nanmean,
                  "average_inc_pad": lambda a, axis: np.nansum(a, axis) / a.shape[axis]}[mode]
        out[(Ellipsis,) + idx] = reduce(flat, -1)
    return out


@pytest.mark.parametrize("ws,stride,pad,mode", [((2, 2, 2), (2, 2, 2), (0, 0, 0), "max"),
                                                ((3, 2, 2), (1, 2, 1), (1, 1, 0), "average_exc_pad"),
                                                ((2, 2, 3), (1, 1, 1), (1, 0, 1), "average_inc_pad"),
                                                ((2, 2, 2), (2, 1, 2), (0, 0, 0), "sum")])
def test_pool_3d_matches_numpy_windows(ws, stride, pad, mode):
    from coursekit.tensor.signal.pool import pool_3d

    x = rand(2, 3, 5, 6, 4)
    got = theano.function([], pool_3d(T.constant(x), ws, True, stride, pad, mode))()
    np.testing.assert_allclose(got, _pool3d_reference(x, ws, stride, pad, mode), rtol=1e-12)
    verify_grad(lambda a: pool_3d(a, ws, True, stride, pad, mode), [x[:1, :1]])
