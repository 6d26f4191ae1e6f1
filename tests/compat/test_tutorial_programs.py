"""Programs shaped like the Deep Learning Tutorials, written for this project on synthetic data.

Each is the tutorial's structure in Theano's own idiom (shared datasets,
minibatches through ``givens``, ``T.arange`` indexing, random streams,
``scan`` loops, conv + pool layers), run on ``cpu`` and on the simulated
GPU (and on a real GPU where CuPy sees one).  Where a NumPy reference is short, the first step is compared with it;
everywhere, training must lower the cost.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import cupy_standin

import coursekit as theano
import coursekit.tensor as T
from coursekit.random import MRG_RandomStreams
from coursekit.random import RandomStreams
from coursekit.tensor.signal import pool

floatX = "float32"


@pytest.fixture(params=["cpu", "sim", cupy_standin.cuda_case()])
def device(request):
    """cpu, the simulated GPU and CuPy's code path (a real GPU where CuPy sees one, else the CuPy stand-in)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with cupy_standin.on(request.param), theano.config.change(device=request.param, floatX=floatX):
            yield request.param


def shared_dataset(x, y):
    return theano.shared(np.asarray(x, dtype=floatX)), T.cast(theano.shared(np.asarray(y, dtype=floatX)), "int32")


def blobs(rng, n, n_in, n_classes):
    centres = rng.standard_normal((n_classes, n_in)) * 3
    y = rng.integers(0, n_classes, n)
    return (centres[y] + rng.standard_normal((n, n_in))).astype(floatX), y


def test_logistic_regression_with_minibatches_through_givens(device):
    rng = np.random.default_rng(0)
    x_data, y_data = blobs(rng, 60, 5, 3)
    train_x, train_y = shared_dataset(x_data, y_data)
    index, x, y = T.lscalar(), T.matrix("x"), T.ivector("y")
    W = theano.shared(np.zeros((5, 3), dtype=floatX), name="W")
    b = theano.shared(np.zeros(3, dtype=floatX), name="b")
    p_y_given_x = T.nnet.softmax(T.dot(x, W) + b)
    y_pred = T.argmax(p_y_given_x, axis=1)
    nll = -T.mean(T.log(p_y_given_x)[T.arange(y.shape[0]), y])
    errors = T.mean(T.neq(y_pred, y))
    g_W, g_b = T.grad(nll, [W, b])
    batch = 20
    train = theano.function([index], nll, updates=[(W, W - 0.1 * g_W), (b, b - 0.1 * g_b)],
                            givens={x: train_x[index * batch:(index + 1) * batch],
                                    y: train_y[index * batch:(index + 1) * batch]})
    # the first step against NumPy
    xb, yb = x_data[:batch], y_data[:batch]
    first = train(0)
    assert first == pytest.approx(np.log(3), rel=1e-5)
    probs = np.full((batch, 3), 1 / 3)
    probs[np.arange(batch), yb] -= 1
    np.testing.assert_allclose(W.get_value(), -0.1 * xb.T @ probs / batch, rtol=1e-4, atol=1e-6)
    costs = [float(train(i % 3)) for i in range(1, 60)]
    test_errors = theano.function([], errors, givens={x: train_x, y: train_y})
    assert costs[-1] < first / 3 and test_errors() < 0.1


def _mlp(rng, x, n_in, n_hidden, n_out):
    def layer(n_a, n_b, activation):
        bound = np.sqrt(6.0 / (n_a + n_b))
        W = theano.shared(rng.uniform(-bound, bound, (n_a, n_b)).astype(floatX))
        b = theano.shared(np.zeros(n_b, dtype=floatX))
        return W, b, activation
    hidden = layer(n_in, n_hidden, T.tanh)
    out_W, out_b, _ = layer(n_hidden, n_out, None)
    h = hidden[2](T.dot(x, hidden[0]) + hidden[1])
    return T.nnet.softmax(T.dot(h, out_W) + out_b), [hidden[0], hidden[1], out_W, out_b]


def test_mlp_learns_a_nonlinear_problem(device):
    rng = np.random.default_rng(1)
    x_data = rng.standard_normal((80, 2)).astype(floatX)
    y_data = (x_data[:, 0] * x_data[:, 1] > 0).astype("int32")  # XOR-like: no linear model does this
    x, y = T.matrix("x"), T.ivector("y")
    p, params = _mlp(rng, x, 2, 16, 2)
    l2 = sum((w ** 2).sum() for w in params[::2])
    cost = T.nnet.categorical_crossentropy(p, y).mean() + 1e-4 * l2
    grads = T.grad(cost, params)
    train = theano.function([x, y], cost, updates=[(w, w - 0.5 * g) for w, g in zip(params, grads)])
    accuracy = theano.function([x, y], T.mean(T.eq(T.argmax(p, axis=1), y)))
    first = train(x_data, y_data)
    for _ in range(150):
        last = train(x_data, y_data)
    assert last < first / 2 and accuracy(x_data, y_data) > 0.85


def test_denoising_autoencoder_with_corruption_from_a_random_stream(device):
    rng = np.random.default_rng(2)
    data = (rng.random((40, 12)) < 0.3).astype(floatX)
    theano_rng = RandomStreams(rng.integers(2 ** 30))
    x = T.matrix("x")
    W = theano.shared(rng.uniform(-0.3, 0.3, (12, 6)).astype(floatX), name="W")
    b_hid = theano.shared(np.zeros(6, dtype=floatX))
    b_vis = theano.shared(np.zeros(12, dtype=floatX))
    corrupted = theano_rng.binomial(size=x.shape, n=1, p=1 - 0.3, dtype=floatX) * x
    hidden = T.nnet.sigmoid(T.dot(corrupted, W) + b_hid)
    z = T.nnet.sigmoid(T.dot(hidden, W.T) + b_vis)
    cost = T.mean(-T.sum(x * T.log(z) + (1 - x) * T.log(1 - z), axis=1))
    params = [W, b_hid, b_vis]
    train = theano.function([x], cost, updates=[(p, p - 0.5 * g) for p, g in zip(params, T.grad(cost, params))])
    costs = [float(train(data)) for _ in range(60)]
    assert costs[-1] < costs[0] * 0.8
    corrupt = theano.function([x], corrupted)
    c1, c2 = corrupt(np.ones((40, 12), floatX)), corrupt(np.ones((40, 12), floatX))
    assert not np.array_equal(c1, c2) and 0.6 < c1.mean() < 0.8  # the stream advances: new noise each call


def test_rbm_with_gibbs_sampling_in_scan(device):
    rng = np.random.default_rng(3)
    n_vis, n_hid = 10, 5
    patterns = np.array([[1] * 5 + [0] * 5, [0] * 5 + [1] * 5], dtype=floatX)
    data = patterns[rng.integers(0, 2, 40)]
    theano_rng = MRG_RandomStreams(7)
    W = theano.shared(rng.uniform(-0.1, 0.1, (n_vis, n_hid)).astype(floatX))
    hbias = theano.shared(np.zeros(n_hid, dtype=floatX))
    vbias = theano.shared(np.zeros(n_vis, dtype=floatX))

    def free_energy(v):
        return -T.dot(v, vbias) - T.sum(T.log(1 + T.exp(T.dot(v, W) + hbias)), axis=1)

    def gibbs_vhv(v0):
        h_mean = T.nnet.sigmoid(T.dot(v0, W) + hbias)
        h = theano_rng.binomial(size=h_mean.shape, n=1, p=h_mean, dtype=floatX)
        v_mean = T.nnet.sigmoid(T.dot(h, W.T) + vbias)
        v = theano_rng.binomial(size=v_mean.shape, n=1, p=v_mean, dtype=floatX)
        return v_mean, v

    x = T.matrix("x")
    (v_means, v_samples), updates = theano.scan(gibbs_vhv, outputs_info=[None, x], n_steps=3)
    chain_end = v_samples[-1]
    cost = T.mean(free_energy(x)) - T.mean(free_energy(chain_end))
    params = [W, hbias, vbias]
    grads = T.grad(cost, params, consider_constant=[chain_end])
    for p, g in zip(params, grads):
        updates[p] = p - 0.1 * g
    monitor = T.mean(T.nnet.binary_crossentropy(T.clip(v_means[-1], 1e-6, 1 - 1e-6), x))
    train = theano.function([x], monitor, updates=updates)
    costs = [float(train(data)) for _ in range(80)]
    assert np.mean(costs[-10:]) < np.mean(costs[:10])
    reconstruct = theano.function([x], T.nnet.sigmoid(T.dot(T.nnet.sigmoid(T.dot(x, W) + hbias), W.T) + vbias))
    assert np.abs(reconstruct(patterns) - patterns).mean() < 0.35


def test_lstm_over_a_tensor3(device):
    rng = np.random.default_rng(4)
    n_steps, batch, n_in, n_hid = 5, 8, 3, 4
    x_data = rng.standard_normal((n_steps, batch, n_in)).astype(floatX)
    y_data = (x_data[:, :, 0].sum(axis=0) > 0).astype("int32")  # a label that needs the whole sequence
    W = theano.shared((rng.standard_normal((n_in, 4 * n_hid)) * 0.3).astype(floatX))
    U = theano.shared((rng.standard_normal((n_hid, 4 * n_hid)) * 0.3).astype(floatX))
    b = theano.shared(np.zeros(4 * n_hid, dtype=floatX))
    V = theano.shared((rng.standard_normal((n_hid, 2)) * 0.3).astype(floatX))
    x, y = T.tensor3("x"), T.ivector("y")

    def slice_(m, k):
        return m[:, k * n_hid:(k + 1) * n_hid]

    def step(x_t, h_prev, c_prev):
        preact = T.dot(x_t, W) + T.dot(h_prev, U) + b
        i, f, o = (T.nnet.sigmoid(slice_(preact, k)) for k in range(3))
        c = f * c_prev + i * T.tanh(slice_(preact, 3))
        return o * T.tanh(c), c

    zeros = T.alloc(np.asarray(0.0, dtype=floatX), x.shape[1], n_hid)
    (h, c), _ = theano.scan(step, sequences=x, outputs_info=[zeros, zeros])
    p = T.nnet.softmax(T.dot(h[-1], V))
    cost = T.nnet.categorical_crossentropy(p, y).mean()
    params = [W, U, b, V]
    train = theano.function([x, y], cost, updates=[(q, q - 0.5 * g) for q, g in zip(params, T.grad(cost, params))])
    # the forward pass against a NumPy loop
    hv, cv = np.zeros((batch, n_hid), floatX), np.zeros((batch, n_hid), floatX)
    sig = lambda a: 1 / (1 + np.exp(-a))  # noqa: E731
    for t in range(n_steps):
        pre = x_data[t] @ W.get_value() + hv @ U.get_value()
        i, f, o = (sig(pre[:, k * n_hid:(k + 1) * n_hid]) for k in range(3))
        cv = f * cv + i * np.tanh(pre[:, 3 * n_hid:])
        hv = o * np.tanh(cv)
    np.testing.assert_allclose(theano.function([x], h[-1])(x_data), hv, rtol=1e-5, atol=1e-6)
    costs = [float(train(x_data, y_data)) for _ in range(40)]
    assert costs[-1] < costs[0] * 0.7


def test_lenet_style_conv_net(device):
    rng = np.random.default_rng(5)
    images = rng.standard_normal((16, 1, 8, 8)).astype(floatX)
    labels = (images[:, 0, :4, :].mean(axis=(1, 2)) > images[:, 0, 4:, :].mean(axis=(1, 2))).astype("int32")
    x, y = T.tensor4("x"), T.ivector("y")
    filters = theano.shared((rng.standard_normal((4, 1, 3, 3)) * 0.3).astype(floatX))
    conv_b = theano.shared(np.zeros(4, dtype=floatX))
    conv_out = T.nnet.conv2d(x, filters, filter_shape=(4, 1, 3, 3), input_shape=(None, 1, 8, 8))
    pooled = pool.pool_2d(conv_out, ws=(2, 2), ignore_border=True)
    hidden = T.tanh(pooled + conv_b.dimshuffle("x", 0, "x", "x")).flatten(2)
    W = theano.shared((rng.standard_normal((4 * 3 * 3, 2)) * 0.1).astype(floatX))
    p = T.nnet.softmax(T.dot(hidden, W))
    cost = T.nnet.categorical_crossentropy(p, y).mean()
    params = [filters, conv_b, W]
    train = theano.function([x, y], cost, updates=[(q, q - 0.2 * g) for q, g in zip(params, T.grad(cost, params))])
    costs = [float(train(images, labels)) for _ in range(40)]
    assert costs[-1] < costs[0] * 0.7
