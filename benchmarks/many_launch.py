"""The lessons' many-launch calls, as rows for benchmarks/model_accuracy.py (``--many-launch``).

Every row of the committed corpus is ONE kernel launch, so the cost model's band says nothing yet about
a training step of 10-200 launches, which is what lessons 5, 8 and 10 price.  These builders compile the
same graphs those lessons compile (same shapes, same ops, same updates; random data of the lessons' sizes,
since only shapes set the work), so that one run on a GPU measures them next to their modelled figures:

* lesson 5: the tutorial's logistic-regression step as written (data passed each call) and tuned (data
  in shared variables, nothing returned), N = 400, 784 features;
* lesson 8: the RNN of section 6 as one 100-step ``scan`` with every value a shared variable;
* lesson 10: the MLP step (5 tanh layers of 40, 600 x 64 inputs, SGD) and the conv-net step (8 filters 3x3,
  2x2 pooling, a dense softmax layer, Adam).

Each builder returns ``(name, function, args)``; the functions are compiled on the current device (``mode``:
the compilation mode, e.g. ``get_mode("FAST_RUN").without_cuda_graphs()`` for the ordinary call).
"""
from __future__ import annotations

import numpy as np

import coursekit as theano
import coursekit.tensor as T
from coursekit.tensor.nnet import conv2d
from coursekit.tensor.signal.pool import pool_2d


def _uniform(rng, fan_in, fan_out):
    bound = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-bound, bound, (fan_in, fan_out)).astype("float32")


def _one_hot(rng, n, classes=10):
    return np.eye(classes, dtype="float32")[rng.integers(0, classes, n)]


def logistic(variant, n=400, feats=784, seed=5, mode=None):
    """Lesson 5's step: ``variant`` "as written" (x, y passed each call; prediction and xent returned)
    or "tuned" (x, y shared, nothing returned)."""
    rng = np.random.default_rng(seed)
    xv, yv = rng.standard_normal((n, feats)).astype("float32"), rng.integers(0, 2, n).astype("float32")
    w = theano.shared(rng.standard_normal(feats).astype("float32"), name="w")
    b = theano.shared(np.float32(0.0), name="b")
    if variant == "as written":
        x, y = T.fmatrix("x"), T.fvector("y")
        inputs, args = [x, y], (xv, yv)
    else:
        x, y = theano.shared(xv, name="x"), theano.shared(yv, name="y")
        inputs, args = [], ()
    p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
    xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
    cost = xent.mean() + 0.01 * (w ** 2).sum()
    gw, gb = T.grad(cost, [w, b])
    outputs = [p_1 > 0.5, xent] if variant == "as written" else []
    fn = theano.function(inputs, outputs, updates=[(w, w - 0.01 * gw), (b, b - 0.01 * gb)], mode=mode)
    return f"lesson 5 step {variant}, N={n}", fn, args


def rnn_scan(steps=100, hidden=64, seed=8, mode=None):
    """Lesson 8's RNN: h = tanh(x_t W + h U + b) over ``steps`` steps, the last state kept on the device."""
    rng = np.random.default_rng(seed)
    W, U = (theano.shared((scale * rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype("float32"))
            for scale in (1.0, 0.9))
    b = theano.shared(np.zeros(hidden, "float32"))
    xs = theano.shared(rng.standard_normal((steps, hidden)).astype("float32"))
    h0, h_last = (theano.shared(np.zeros(hidden, "float32")) for _ in range(2))
    hs, _ = theano.scan(lambda x_t, h, W, U, b: T.tanh(T.dot(x_t, W) + T.dot(h, U) + b),
                        sequences=xs, outputs_info=h0, non_sequences=[W, U, b], name="rnn")
    return f"lesson 8 RNN scan, {steps} steps", theano.function([], [], updates=[(h_last, hs[-1])], mode=mode), ()


def mlp_step(n=600, features=64, width=40, depth=5, seed=10, mode=None):
    """Lesson 10's MLP step: ``depth`` tanh layers of ``width``, softmax, mean cross-entropy, SGD."""
    rng = np.random.default_rng(seed)
    x = theano.shared(rng.random((n, features)).astype("float32"))
    t = theano.shared(_one_hot(rng, n))
    sizes = [features] + [width] * depth + [10]
    weights = [theano.shared(_uniform(rng, a, c)) for a, c in zip(sizes, sizes[1:])]
    biases = [theano.shared(np.zeros(c, "float32")) for c in sizes[1:]]
    h = x
    for W, bias in zip(weights[:-1], biases[:-1]):
        h = T.tanh(T.dot(h, W) + bias)
    p = T.nnet.softmax(T.dot(h, weights[-1]) + biases[-1])
    loss = -(t * T.log(p)).sum() * np.float32(1.0 / n)
    params = weights + biases
    updates = [(v, v - 0.1 * g) for v, g in zip(params, T.grad(loss, params))]
    return f"lesson 10 MLP step, {depth}x{width}", theano.function([], [], updates=updates, mode=mode), ()


def _adam(params, grads, rate=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    count = theano.shared(np.float32(0))
    step = count + 1
    corrected = rate * T.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    updates = [(count, step)]
    for p, g in zip(params, grads):
        m, v = (theano.shared(np.zeros_like(p.get_value())) for _ in range(2))
        new_m, new_v = beta1 * m + (1 - beta1) * g, beta2 * v + (1 - beta2) * T.sqr(g)
        updates += [(m, new_m), (v, new_v), (p, p - corrected * new_m / (T.sqrt(new_v) + eps))]
    return updates


def convnet_step(n=600, filters=8, seed=11, mode=None):
    """Lesson 10's conv net: 3x3 'half' convolution, tanh, 2x2 max pooling, a dense log-softmax, Adam."""
    rng = np.random.default_rng(seed)
    x = theano.shared(rng.random((n, 1, 8, 8)).astype("float32"))
    t = theano.shared(_one_hot(rng, n))
    kernels = theano.shared((0.3 * rng.standard_normal((filters, 1, 3, 3))).astype("float32"))
    b_conv = theano.shared(np.zeros(filters, "float32"))
    features = filters * 4 * 4
    W, b = theano.shared(_uniform(rng, features, 10)), theano.shared(np.zeros(10, "float32"))
    maps = T.tanh(conv2d(x, kernels, border_mode="half") + b_conv.dimshuffle("x", 0, "x", "x"))
    flat = pool_2d(maps, ws=(2, 2), ignore_border=True).reshape((n, features))
    loss = -(t * T.nnet.log_softmax(T.dot(flat, W) + b)).sum() * np.float32(1.0 / n)
    params = [kernels, b_conv, W, b]
    step = theano.function([], [], updates=_adam(params, T.grad(loss, params)), mode=mode)
    return f"lesson 10 conv-net step, {filters} filters", step, ()


def rows():
    """Every many-launch row, compiled on the current device."""
    yield logistic("as written")
    yield logistic("tuned")
    yield rnn_scan()
    yield mlp_step()
    yield convnet_step()
