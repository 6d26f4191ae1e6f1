"""T.nnet (softmax family, cross-entropies, relu), conv2d, pool_2d and ifelse against NumPy and finite differences."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import coursekit as theano
import coursekit.tensor as T
from coursekit.gradient import verify_grad
from coursekit.ifelse import ifelse
from coursekit.tensor.signal import pool
from coursekit.theano import downsample  # Theano 0.7's old pooling module, kept by the alias layer

RNG = np.random.default_rng(2)


def reference_conv(x, w, pad, stride, flip, dilation=(1, 1)):
    """A direct (loop over output positions) convolution, independent of im2col."""
    if flip:
        w = w[:, :, ::-1, ::-1]
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    kh, kw = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], dilation)]  # the pixels a dilated filter covers
    ho, wo = (xp.shape[2] - kh) // stride[0] + 1, (xp.shape[3] - kw) // stride[1] + 1
    out = np.zeros((x.shape[0], w.shape[0], ho, wo))
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, :, i * stride[0]:i * stride[0] + kh:dilation[0], j * stride[1]:j * stride[1] + kw:dilation[1]]
            out[:, :, i, j] = np.einsum("bchw,fchw->bf", patch, w)
    return out


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["valid", "full", "half", 1, (2, 0)]), st.sampled_from([(1, 1), (2, 1), (2, 2)]),
       st.booleans(), st.integers(3, 6), st.integers(1, 3))
def test_conv2d_matches_a_direct_convolution(border_mode, subsample, flip, size, channels):
    x, w = RNG.standard_normal((2, channels, size, size + 1)), RNG.standard_normal((3, channels, 3, 2))
    pads = {"valid": (0, 0), "full": (2, 1), "half": (1, 1), 1: (1, 1), (2, 0): (2, 0)}
    xs, ws = T.dtensor4("x"), T.dtensor4("w")
    out = T.nnet.conv2d(xs, ws, filter_shape=w.shape, border_mode=border_mode, subsample=subsample,
                        filter_flip=flip)
    got = theano.function([xs, ws], out)(x, w)
    np.testing.assert_allclose(got, reference_conv(x, w, pads[border_mode], subsample, flip), rtol=1e-10, atol=1e-12)


def test_conv2d_gradients_and_channel_errors():
    verify_grad(lambda a, b: T.nnet.conv2d(a, b, filter_shape=(2, 2, 3, 2), border_mode="half", subsample=(2, 1)),
                [RNG.standard_normal((2, 2, 5, 4)), RNG.standard_normal((2, 2, 3, 2))])
    verify_grad(lambda a, b: T.nnet.conv2d(a, b, border_mode="valid"),
                [RNG.standard_normal((1, 1, 4, 4)), RNG.standard_normal((2, 1, 2, 2))])
    with pytest.raises(ValueError, match="3 channels.*expects 2"):
        T.nnet.conv2d(T.tensor4(), T.tensor4(), input_shape=(1, 3, 5, 5), filter_shape=(4, 2, 3, 3))
    xs, ws = T.dtensor4("x"), T.dtensor4("w")
    f = theano.function([xs, ws], T.nnet.conv2d(xs, ws))
    with pytest.raises(ValueError, match="3 channels.*expect 2.*must match") as err:
        f(np.zeros((1, 3, 5, 5)), np.zeros((4, 2, 3, 3)))
    assert "test_nnet_conv.py" in str(err.value)


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["valid", "full", "half", (1, 2)]), st.sampled_from([(1, 1), (2, 1)]),
       st.sampled_from([(2, 2), (3, 1), (1, 2)]), st.booleans())
def test_dilated_conv2d_matches_a_direct_convolution(border_mode, subsample, dilation, flip):
    x, w = RNG.standard_normal((2, 2, 8, 9)), RNG.standard_normal((3, 2, 3, 2))
    covered = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], dilation)]
    pads = {"valid": (0, 0), "full": tuple(c - 1 for c in covered), "half": tuple(c // 2 for c in covered),
            (1, 2): (1, 2)}
    xs, ws = T.dtensor4("x"), T.dtensor4("w")
    out = T.nnet.conv2d(xs, ws, filter_shape=w.shape, border_mode=border_mode, subsample=subsample,
                        filter_flip=flip, filter_dilation=dilation)
    got = theano.function([xs, ws], out)(x, w)
    np.testing.assert_allclose(got, reference_conv(x, w, pads[border_mode], subsample, flip, dilation),
                               rtol=1e-10, atol=1e-12)


def test_dilated_conv2d_gradients_and_errors():
    verify_grad(lambda a, b: T.nnet.conv2d(a, b, border_mode="half", subsample=(2, 1), filter_dilation=(2, 3),
                                           filter_shape=(2, 2, 3, 2)),
                [RNG.standard_normal((1, 2, 7, 8)), RNG.standard_normal((2, 2, 3, 2))])
    with pytest.raises(ValueError, match="filter_dilation.*at least 1"):
        T.nnet.conv2d(T.tensor4(), T.tensor4(), filter_dilation=(0, 1))
    xs, ws = T.dtensor4("x"), T.dtensor4("w")
    f = theano.function([xs, ws], T.nnet.conv2d(xs, ws, filter_dilation=3))
    with pytest.raises(ValueError, match="dilation \\(3, 3\\).*larger than the padded input"):
        f(np.zeros((1, 1, 5, 5)), np.zeros((1, 1, 3, 3)))


def test_second_derivatives_of_conv2d_and_pool_by_finite_differences():
    """The gradient ops have gradients: a gradient penalty (the gradient of a gradient) is checked numerically."""
    v = RNG.standard_normal((2, 2, 3, 2))

    def conv_grad_of(x, w):  # d/dx and d/dw of sum(conv(x, w) ** 2 * r), as one expression of x and w
        out = T.nnet.conv2d(x, w, border_mode=(1, 0), subsample=(2, 1), filter_dilation=(1, 2), filter_shape=v.shape)
        gx, gw = T.grad(T.sum(out ** 2), [x, w])
        return T.sum(gx ** 2) + T.sum(gw * v)

    verify_grad(conv_grad_of, [RNG.standard_normal((1, 2, 5, 6)), RNG.standard_normal((2, 2, 3, 2))])
    for mode in ("max", "average_exc_pad", "sum"):
        r = RNG.standard_normal((2, 1, 5, 6))
        verify_grad(lambda x: T.grad(T.sum(pool.pool_2d(x, ws=(2, 2), ignore_border=False, mode=mode) ** 2), x) * r,
                    [RNG.standard_normal((2, 1, 5, 6))])
    verify_grad(lambda x: T.grad(T.sum(T.tile(x, (2, 3)) ** 3), x), [RNG.standard_normal((2, 2))])
    verify_grad(lambda x: T.grad(T.sum(T.repeat(x, np.array([2, 0, 1]), axis=0) ** 3), x),
                [RNG.standard_normal((3, 2))])


def reference_pool(x, ws, stride, ignore_border, mode):
    rows = (x.shape[-2] - ws[0]) // stride[0] + 1 if ignore_border else -(-(x.shape[-2] - ws[0]) // stride[0]) + 1
    cols = (x.shape[-1] - ws[1]) // stride[1] + 1 if ignore_border else -(-(x.shape[-1] - ws[1]) // stride[1]) + 1
    out = np.zeros(x.shape[:-2] + (rows, cols))
    for i in range(rows):
        for j in range(cols):
            window = x[..., i * stride[0]:i * stride[0] + ws[0], j * stride[1]:j * stride[1] + ws[1]]
            out[..., i, j] = {"max": window.max(axis=(-2, -1)), "sum": window.sum(axis=(-2, -1)),
                              "average_exc_pad": window.mean(axis=(-2, -1))}[mode]
    return out


@pytest.mark.parametrize("mode", ["max", "sum", "average_exc_pad"])
@pytest.mark.parametrize("ignore_border", [True, False])
@pytest.mark.parametrize("stride", [(2, 2), (1, 2)])
def test_pool_matches_numpy_and_finite_differences(mode, ignore_border, stride):
    x = RNG.standard_normal((2, 3, 5, 7))
    xs = T.dtensor4("x")
    out = pool.pool_2d(xs, ws=(2, 3), stride=stride, ignore_border=ignore_border, mode=mode)
    np.testing.assert_allclose(theano.function([xs], out)(x), reference_pool(x, (2, 3), stride, ignore_border, mode))
    verify_grad(lambda a: pool.pool_2d(a, ws=(2, 2), stride=stride, ignore_border=ignore_border, mode=mode),
                [RNG.standard_normal((1, 4, 5))])


def test_pool_padding_average_inc_pad_and_old_names():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    xs = T.dtensor4("x")
    inc = pool.pool_2d(xs, ws=(2, 2), ignore_border=True, pad=(1, 1), mode="average_inc_pad")
    got = theano.function([xs], [inc, downsample.max_pool_2d(xs, (2, 2), ignore_border=True)])(x)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    np.testing.assert_allclose(got[0], reference_pool(padded, (2, 2), (2, 2), True, "sum") / 4)
    np.testing.assert_allclose(got[1], reference_pool(x, (2, 2), (2, 2), True, "max"))


def test_softmax_family_and_crossentropies():
    x, y = RNG.standard_normal((4, 3)), np.array([0, 2, 1, 2])
    xs, ys = T.dmatrix("x"), T.lvector("y")
    sm = T.nnet.softmax(xs)
    f = theano.function([xs, ys], [T.nnet.log_softmax(xs), T.nnet.categorical_crossentropy(sm, ys),
                                   T.nnet.categorical_crossentropy(sm, T.eye(3, dtype="float64")[ys]),
                                   T.nnet.relu(xs), T.nnet.relu(xs, 0.1)])
    logsm, ce_int, ce_onehot, relu, leaky = f(x, y)
    expected = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(logsm, expected)
    np.testing.assert_allclose(ce_int, -expected[np.arange(4), y])
    np.testing.assert_allclose(ce_onehot, -expected[np.arange(4), y])
    np.testing.assert_array_equal(relu, np.maximum(x, 0))
    np.testing.assert_allclose(leaky, np.where(x > 0, x, 0.1 * x))
    verify_grad(T.nnet.log_softmax, [x])
    verify_grad(lambda a: T.nnet.categorical_crossentropy(T.nnet.softmax(a), y), [x])
    p = RNG.random((3, 2)) * 0.8 + 0.1
    t = RNG.random((3, 2))
    np.testing.assert_allclose(T.nnet.binary_crossentropy(T.constant(p), T.constant(t)).eval(),
                               -(t * np.log(p) + (1 - t) * np.log(1 - p)))


def test_ifelse_runs_only_the_chosen_branch():
    a, b, c = T.dscalar("a"), T.dvector("b"), T.lscalar("c")
    bad = b[T.arange(3) + 100].sum()  # out of range: raises if it ever runs
    out = ifelse(T.lt(c, 0), bad, b.sum() * a)
    f = theano.function([a, b, c], out)
    assert f(2.0, np.ones(3), 1) == 6.0
    with pytest.raises(IndexError):
        f(2.0, np.ones(3), -1)
    g = theano.function([a, b, c], theano.grad(out, [a, b]))
    ga, gb = g(2.0, np.array([1.0, 2.0, 3.0]), 1)
    assert ga == 6.0 and list(gb) == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError, match="T.switch"):
        ifelse(b > 0, a, a)
    with pytest.raises(TypeError, match="same dtype and rank"):
        ifelse(c, a, b)


def test_ifelse_with_several_values_matches_switch():
    a, b = T.dvector("a"), T.dvector("b")
    cond = T.lscalar("cond")
    lazy = ifelse(cond, [a * 2, b], [a, b * 3])
    f = theano.function([cond, a, b], lazy + [T.switch(cond, a * 2, a)])
    x, y = RNG.standard_normal(3), RNG.standard_normal(3)
    first, second, switched = f(1, x, y)
    np.testing.assert_allclose(first, switched)
    np.testing.assert_allclose(second, y)
    np.testing.assert_allclose(f(0, x, y)[1], y * 3)


def test_conv_and_pool_run_on_the_gpu_device_with_the_cpus_results():
    import warnings

    xv = RNG.standard_normal((2, 1, 8, 8)).astype("float32")
    wv = RNG.standard_normal((3, 1, 3, 3)).astype("float32")
    results = {}
    for device in ("cpu", "sim"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with theano.config.change(device=device):
                w, x = theano.shared(wv), T.ftensor4("x")
                out = pool.pool_2d(T.nnet.conv2d(x, w, border_mode="half"), ws=(2, 2), ignore_border=True)
                f = theano.function([x], [out, *theano.grad((out ** 2).sum(), [x, w])])
                results[device] = f(xv)
                ops = {str(n.op).split("{")[0] for n in f.toposort()}
    assert {"GpuConv2d", "GpuPool", "GpuPoolGrad", "GpuConv2dGradInput", "GpuConv2dGradWeights"} <= ops
    for a, b in zip(results["cpu"], results["sim"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_softmax_and_log_softmax_stay_on_the_gpu_device_in_a_training_step():
    """A classifier's step on device=sim keeps its scores on the device: GpuSoftmax/GpuLogSoftmax, no
    HostFromGpu/GpuFromHost inside (before, Softmax ran on the host and cost a download and an upload of
    the score matrix per call); values and gradients equal the CPU's."""
    import warnings

    xv = RNG.standard_normal((13, 7)).astype("float32")
    tv = np.eye(5, dtype="float32")[RNG.integers(0, 5, 13)]
    wv = RNG.standard_normal((7, 5)).astype("float32")
    results = {}
    for device in ("cpu", "sim"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with theano.config.change(device=device, floatX="float32"):
                x, t, w = theano.shared(xv), theano.shared(tv), theano.shared(wv.copy())
                scores = T.dot(x, w)
                loss = -(t * T.log(T.nnet.softmax(scores))).sum() + (t * T.nnet.log_softmax(scores)).sum() ** 2
                step = theano.function([], [], updates=[(w, w - 0.01 * theano.grad(loss, w))])
                step()
                results[device] = np.asarray(w.get_value())
                names = [type(n.op).__name__ for n in step.toposort()]
    assert "GpuSoftmax" in names and "GpuLogSoftmax" in names, names
    assert not [n for n in names if n in ("HostFromGpu", "GpuFromHost")], names
    np.testing.assert_allclose(results["cpu"], results["sim"], rtol=1e-5, atol=1e-6)
