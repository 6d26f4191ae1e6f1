# %% [markdown]
# # Lesson 10 — The afternoon project: initialisations, an MLP and a denoising autoencoder
#
# The talk the course follows ends with exercises for the afternoon: train a multi-layer perceptron and
# a (denoising) autoencoder, and *compare initialisations* — the one Glorot and Bengio proposed,
# sampling uniformly from ±1/fan_in, and a matrix whose singular values are all 1 (biases 0) — with
# tanh and with rectifiers, "extra kudos for interesting plots". This lesson does that project on real
# data that ships inside scikit-learn (1 797 handwritten digits of 8 × 8 pixels: nothing to download),
# then puts the training step on the GPU device with no transfer at all.
#
# The question: **does the starting point of the weights matter, and why?** Every initialisation here
# draws small random numbers with mean zero; they differ only in how large the numbers are and how the
# columns of a weight matrix relate to each other. We will
#
# 1. write the three initialisations and check their properties (variance, range, singular values);
# 2. predict which one a deep tanh network and a deep ReLU network train best from;
# 3. look inside the networks at initialisation: how large the activations and the gradients are,
#    layer by layer;
# 4. train them, and watch the loss curves and the weights' singular values;
# 5. train a denoising autoencoder, whose corruption is drawn on the device by `MRG_RandomStreams`;
# 6. put the training step on the GPU device with no transfer per step, and compare CPU and GPU —
#    measured on this machine, and modelled for a real GPU.
# 7. compare three optimisers — SGD, momentum and Adam — from the three starts: the talk's question
#    of how optimisation algorithms help these initialisations;
# 8. train a small convolutional net with `conv2d` and `pool_2d` on the GPU device, again with no
#    transfer per step, and set its accuracy beside the MLP's.
#
# As in every lesson: without an NVIDIA GPU, `device="gpu"` is coursekit's **simulated GPU**. Its
# graphs and transfers are real lessons; its timings are CPU timings, and the tables say so.

# %%
# Setup: run this cell first. The same in every notebook of the course (`python -m coursekit setup-cells`
# writes it). Where coursekit is missing (Colab, a hub, a downloaded notebook) it installs it; then it
# picks the GPU, or says that this notebook uses the simulated one.
import importlib, importlib.util, os, shlex, subprocess, sys
if importlib.util.find_spec("coursekit") is None:
    _source = os.environ.get("COURSEKIT_PIP_SOURCE", "coursekit")
    _pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *shlex.split(_source)],
                          capture_output=True, text=True)
    importlib.invalidate_caches()
    if _pip.returncode != 0 or importlib.util.find_spec("coursekit") is None:
        _why = (_pip.stderr.strip().splitlines() or ["pip gave no message"])[-1]
        raise RuntimeError(f"Setup could not install coursekit from {_source!r} ({_why}): connect this "
                           "notebook to the internet, or set COURSEKIT_PIP_SOURCE to a wheel, and run it again.")
from coursekit.course.student.setup import notebook_setup
_device = notebook_setup()

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

import coursekit as theano
import coursekit.tensor as T
from coursekit.lessons import (Table, device_label, format_seconds, load_digits, one_blas_thread, size,
                                     time_call)
from coursekit.random import MRG_RandomStreams

DEPTH = 5                      # hidden layers of the MLP
WIDTH = size(40, 128)          # units per hidden layer
STEPS = size(100, 1500)        # full-batch gradient steps per run
EVAL_EVERY = size(10, 25)      # steps between two points of a loss curve
N_TRAIN = size(600, 1297)      # training examples (the rest of the 1 797 are the test set)
print(f"{DEPTH} hidden layers of {WIDTH} units, {STEPS} steps, {N_TRAIN} training examples")
with theano.config.change(device="gpu"):
    GPU_LABEL = device_label()
GPU_SIMULATED = "simulated" in GPU_LABEL
print(GPU_LABEL)

# %% [markdown]
# ## The data
#
# `load_digits()` returns 1 797 grey-level images of 8 × 8 pixels (values 0 to 16) and their labels
# 0–9, read from a file inside the scikit-learn package (coursekit's `load_digits` reads that file
# with NumPy and gives what scikit-learn's does, without the two seconds scikit-learn takes to
# import). We scale the pixels to [0, 1], keep everything in `float32` (the GPU's precision; `float64`
# work stays on the host), shuffle with a fixed seed, and split off a test set.

# %%
# NBVAL_CHECK_OUTPUT
digits = load_digits()
order = np.random.default_rng(10).permutation(len(digits.target))
images = (digits.data[order] / 16.0).astype("float32")            # 1797 x 64, in [0, 1]
labels = digits.target[order].astype("int64")
X_train, X_test = images[:N_TRAIN], images[N_TRAIN:N_TRAIN + 500]
y_train, y_test = labels[:N_TRAIN], labels[N_TRAIN:N_TRAIN + 500]
Y_train = np.eye(10, dtype="float32")[y_train]                     # one-hot targets
print("train", X_train.shape, X_train.dtype, "test", X_test.shape)
print("examples per class (train):", np.bincount(y_train, minlength=10).tolist())

# %%
fig, axes = plt.subplots(2, 10, figsize=(9, 2.2), dpi=70)
for ax, image, label in zip(axes.ravel(), X_train, y_train):
    ax.imshow(image.reshape(8, 8), cmap="gray_r", vmin=0, vmax=1)
    ax.set_title(str(label), fontsize=9)
    ax.axis("off")
fig.suptitle("The first 20 training digits (8 × 8 pixels, label above each)", fontsize=10)
plt.show()


# %% [markdown]
# ## Three ways to start
#
# A layer computes `h_out = f(h_in · W + b)` with `W` of shape `fan_in × fan_out`. The three
# initialisations of the afternoon exercise:
#
# * **Glorot** (Glorot & Bengio, 2010): uniform in ±√(6 / (fan_in + fan_out)), so that
#   `Var(W) = 2 / (fan_in + fan_out)`. The idea: keep the variance of the activations (forward) and of
#   the gradients (backward) the same from layer to layer, for a unit that is linear around 0 (tanh).
# * **±1/fan_in**: uniform in ±1/fan_in, so `Var(W) = 1 / (3 · fan_in²)`. A unit then sums
#   `fan_in` inputs with weights of about 1/fan_in: its input variance shrinks by a factor of
#   about 3 · fan_in at every layer.
# * **Orthogonal**: all singular values 1, biases 0 (Saxe et al., 2013). `h · W` keeps the length of
#   every vector (for a square `W`): nothing grows or shrinks, in either direction. We take the Q of
#   the QR decomposition of a Gaussian matrix, with the signs fixed so that Q is drawn uniformly among
#   orthogonal matrices.
#
# All biases start at 0.

# %%
def glorot_uniform(fan_in, fan_out, rng):
    bound = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-bound, bound, (fan_in, fan_out)).astype("float32")


def fan_in_uniform(fan_in, fan_out, rng):
    return rng.uniform(-1.0 / fan_in, 1.0 / fan_in, (fan_in, fan_out)).astype("float32")


def orthogonal(fan_in, fan_out, rng):
    tall = rng.standard_normal((max(fan_in, fan_out), min(fan_in, fan_out)))
    q, r = np.linalg.qr(tall)                  # q: orthonormal columns
    q *= np.sign(np.diag(r))                   # the sign fix: without it q is not uniformly distributed
    return (q if fan_in >= fan_out else q.T).astype("float32")


INITS = {"Glorot": glorot_uniform, "±1/fan_in": fan_in_uniform, "orthogonal": orthogonal}

# %%
# NBVAL_CHECK_OUTPUT
rows = []
for name, init in INITS.items():
    W = init(64, 40, np.random.default_rng(1)).astype("float64")
    singular = np.linalg.svd(W, compute_uv=False)
    rows.append([name, f"{W.var():.2e}", f"{np.abs(W).max():.3f}", f"{singular.min():.2f} … {singular.max():.2f}"])
Table(["initialisation", "variance (64 × 40)", "largest |w|", "singular values"], rows,
      caption="Glorot: 2/(64+40) = 1.92e-02, bound 0.240; ±1/fan_in: 1/(3·64²) = 8.14e-05, bound 0.016")

# %%
fig, ax = plt.subplots(figsize=(6.5, 3.2), dpi=70)
for name, init in INITS.items():
    singular = np.linalg.svd(init(WIDTH, WIDTH, np.random.default_rng(2)), compute_uv=False)
    ax.plot(np.arange(1, WIDTH + 1), singular, marker=".", label=name)
ax.set_yscale("log")
ax.set_xlabel("index of the singular value (largest first)")
ax.set_ylabel("singular value")
ax.set_title(f"Singular values of a {WIDTH} × {WIDTH} weight matrix at initialisation", fontsize=10)
ax.legend()
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
# the same seed draws the same uniform numbers for both: only the bound differs, √(6 / 2n) against 1/n
glorot_sv = np.linalg.svd(glorot_uniform(WIDTH, WIDTH, np.random.default_rng(2)).astype("float64"), compute_uv=False)
fan_in_sv = np.linalg.svd(fan_in_uniform(WIDTH, WIDTH, np.random.default_rng(2)).astype("float64"), compute_uv=False)
sv_ratio = glorot_sv / fan_in_sv
print(f"{WIDTH} × {WIDTH}: Glorot's singular values {glorot_sv.min():.3f} … {glorot_sv.max():.2f}; "
      f"±1/fan_in's are {sv_ratio.min():.1f} to {sv_ratio.max():.1f} times smaller; √(3 · {WIDTH}) = {np.sqrt(3 * WIDTH):.1f}")
# the sentence below reads these
assert 1.5 < glorot_sv.max() < 2.5 and glorot_sv.min() < 0.1
assert np.allclose(sv_ratio, np.sqrt(3 * WIDTH), rtol=0.01)

# %% [markdown]
# A random Glorot matrix stretches some directions by up to about 2 and squashes others to nearly 0;
# ±1/fan_in is the same shape at a scale √(3 · fan_in) times smaller (the line above: about 11 at
# this run's width of 40, about 20 at the full size's 128); the orthogonal matrix is flat at 1.
#
# **Predict first.** A network of several tanh layers and one of ReLU layers, trained by plain
# full-batch gradient descent for `STEPS` steps (printed at the top): which initialisation trains
# fastest, and does any of them hardly train at all? Does the answer change from tanh to ReLU? Write
# it down.

# %%
# Your prediction (not graded)
my_fastest_tanh = None        # "Glorot", "±1/fan_in" or "orthogonal"
my_stuck = None               # the one that hardly trains, or None

# %% [markdown]
# ## The MLP, compiled once per setting
#
# `build_mlp` makes the parameters as `float32` shared variables and compiles three functions:
#
# * `step()` — one step of gradient descent on the whole training set, returning nothing;
# * `evaluate()` — the mean cross-entropy on the training set and the accuracy on the test set;
# * `probe()` — every hidden layer's activations and the gradient of the loss with respect to every
#   weight matrix, to look inside.
#
# The output layer is a softmax; the loss is the mean cross-entropy. We divide the sum by the number
# of examples as a Python number rather than with `.mean()`: the reason appears in the GPU section.

# %%
ACTIVATIONS = {"tanh": T.tanh, "ReLU": T.nnet.relu}


def build_mlp(init, activation, device="cpu", hidden=None, data=(X_train, Y_train), learning_rate=0.1, seed=0,
              profile=False):
    rng = np.random.default_rng(seed)
    X, Y = data
    sizes = [X.shape[1], *(hidden or [WIDTH] * DEPTH), Y.shape[1]]
    with theano.config.change(device=device, floatX="float32"):
        x, t = theano.shared(X, name="x"), theano.shared(Y, name="t")
        weights = [theano.shared(init(a, b, rng), name=f"W{i}") for i, (a, b) in enumerate(zip(sizes, sizes[1:]))]
        biases = [theano.shared(np.zeros(b, dtype="float32"), name=f"b{i}") for i, b in enumerate(sizes[1:])]

        def forward(inputs):
            h, hidden_values = inputs, []
            for W, b in zip(weights[:-1], biases[:-1]):
                h = activation(T.dot(h, W) + b)
                hidden_values.append(h)
            return T.nnet.softmax(T.dot(h, weights[-1]) + biases[-1]), hidden_values

        p, hidden_values = forward(x)
        loss = -(t * T.log(p)).sum() * np.float32(1.0 / X.shape[0])       # mean cross-entropy
        params = weights + biases
        grads = T.grad(loss, params)
        step = theano.function([], [], updates=[(v, v - learning_rate * g) for v, g in zip(params, grads)],
                               name="step", profile=profile)
        x_test, y_test_sym = T.matrix("x_test"), T.lvector("y_test")
        accuracy = T.mean(T.cast(T.eq(T.argmax(forward(x_test)[0], axis=1), y_test_sym), "float32"))
        evaluate = theano.function([x_test, y_test_sym], [loss, accuracy], name="evaluate")
        probe = theano.function([], hidden_values + grads[:len(weights)], name="probe")
    return step, evaluate, probe, weights


# %% [markdown]
# ## Inside the networks at initialisation
#
# Before any training: run the training set through each network and measure, layer by layer, the
# standard deviation of the activations, and of the gradient of the loss with respect to each weight
# matrix. This needs no training at all, so it is the cheapest experiment and the most telling.

# %%
def look_inside(init, activation):
    # std of every hidden layer's activations and of every weight matrix's gradient, before any step
    values = build_mlp(init, activation)[2]()
    return [float(np.std(h)) for h in values[:DEPTH]], [float(np.std(g)) for g in values[DEPTH:]]


with one_blas_thread():      # on a busy machine extra BLAS threads only stall: one is faster here
    inside = {(act_name, init_name): look_inside(init, activation)
              for act_name, activation in ACTIVATIONS.items() for init_name, init in INITS.items()}

fig, axes = plt.subplots(2, 2, figsize=(10, 6), dpi=70, sharex="row")
for column, act_name in enumerate(ACTIVATIONS):
    for init_name in INITS:
        act_std, grad_std = inside[act_name, init_name]
        axes[0, column].semilogy(range(1, DEPTH + 1), act_std, marker="o", label=init_name)
        axes[1, column].semilogy(range(1, DEPTH + 2), grad_std, marker="o", label=init_name)
    axes[0, column].set_title(f"{act_name}: activations at initialisation", fontsize=10)
    axes[1, column].set_title(f"{act_name}: gradients at initialisation", fontsize=10)
    axes[0, column].set_xlabel("hidden layer")
    axes[1, column].set_xlabel("weight matrix (layer)")
    axes[0, column].set_ylabel("std of the activations")
    axes[1, column].set_ylabel("std of dLoss/dW")
    axes[0, column].legend(fontsize=8)
fig.suptitle("Measured on the CPU, training set, before any step", fontsize=10)
fig.tight_layout()
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
for (act_name, init_name), (act_std, grad_std) in inside.items():
    print(f"{act_name:<5} {init_name:<11} std of the activations: layer 1 {act_std[0]:.0e}, layer {DEPTH} {act_std[-1]:.0e}; "
          f"of the weight gradients: {min(grad_std):.0e} to {max(grad_std):.0e}")
per_layer = np.sqrt(3 * WIDTH)                # ±1/fan_in's predicted shrink per layer of fan_in = WIDTH
shrink = {a: inside[a, "±1/fan_in"][0][0] / inside[a, "±1/fan_in"][0][-1] for a in ACTIVATIONS}
gradient_gap = {a: min(np.median(inside[a, i][1]) for i in ("Glorot", "orthogonal")) / np.median(inside[a, "±1/fan_in"][1])
                for a in ACTIVATIONS}
print(f"±1/fan_in, layer 1 over layer {DEPTH}: " + ", ".join(f"{a} {shrink[a]:.0e}" for a in ACTIVATIONS)
      + f"; √(3 · {WIDTH}) = {per_layer:.1f}, to the power {DEPTH - 1}: {per_layer ** (DEPTH - 1):.0e}")
print("weight gradients, the smaller of Glorot's and orthogonal's over ±1/fan_in's (median std): "
      + ", ".join(f"{a} {gradient_gap[a]:.0e}" for a in ACTIVATIONS))
# the paragraph below reads these
assert 1 / 3 < shrink["tanh"] / per_layer ** (DEPTH - 1) < 3 and shrink["ReLU"] > shrink["tanh"]
assert all(gap > 5e4 for gap in gradient_gap.values())
assert all(max(g) / min(g) < 10 for g in (inside[a, "±1/fan_in"][1] for a in ACTIVATIONS))


# %% [markdown]
# What the pictures say:
#
# * **±1/fan_in** divides the spread of the signal by about √(3 · fan_in) per layer (about 11 at
#   this run's width of 40, about 20 at the full size's 128): by the fifth hidden layer the activations
#   are about (√(3 · fan_in))⁴ times smaller than after the first, and more with ReLU (the ratios
#   printed above), and the network starts as a nearly constant function. The gradient of a weight
#   matrix is (activations below) × (error signal from above); going up the activations shrink, going
#   down the error signal shrinks by the same factor, so the gradients are about equally small in every
#   layer (within a factor of 10 of each other: the ranges above), and about 10⁵ times smaller than
#   Glorot's and orthogonal's, or more (printed above). A step of gradient descent then barely moves
#   anything.
# * **Glorot** keeps the activations of tanh at a steady size; ReLU zeroes half of its inputs, so the
#   variance halves at every layer (the reason He et al. later doubled Glorot's variance for
#   rectifiers), but slowly compared with ±1/fan_in.
# * **Orthogonal** keeps the size of the signal with tanh almost exactly where it started, since each
#   layer is a rotation followed by a function that is nearly linear around 0.

# %% [markdown]
# ## Training
#
# Now the six runs: three initialisations, two activations, the same data, learning rate and number
# of steps. Every `EVAL_EVERY` steps `evaluate()` records the training loss and the test accuracy.

# %%
def train(init, activation, steps=STEPS, device="cpu"):
    # one run: EVAL_EVERY steps at a time, recording (step, training loss, test accuracy)
    step, evaluate, _, weights = build_mlp(init, activation, device=device)
    curve = []
    for i in range(steps + 1):
        if i % EVAL_EVERY == 0:
            loss, accuracy = evaluate(X_test, y_test)
            curve.append((i, float(loss), float(accuracy)))
        if i < steps:
            step()
    return np.array(curve), [np.asarray(W.get_value()) for W in weights]


started = time.perf_counter()
with one_blas_thread():
    runs = {(act_name, init_name): train(init, activation)
            for act_name, activation in ACTIVATIONS.items() for init_name, init in INITS.items()}
print(f"6 runs of {STEPS} steps in {time.perf_counter() - started:.1f} s (measured on the CPU)")

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), dpi=70, sharey=True)
for ax, act_name in zip(axes, ACTIVATIONS):
    for init_name in INITS:
        curve = runs[act_name, init_name][0]
        ax.plot(curve[:, 0], curve[:, 1], marker=".", label=init_name)
    ax.set_title(f"{act_name}, {DEPTH} hidden layers of {WIDTH}", fontsize=10)
    ax.set_xlabel("gradient step (full batch)")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
axes[0].set_ylabel("training loss (mean cross-entropy)")
fig.suptitle("Loss curves, measured on the CPU", fontsize=10)
fig.tight_layout()
plt.show()
Table(["activation", "initialisation", "loss at the start", "loss at the end", "test accuracy"],
      [[a, i, f"{runs[a, i][0][0, 1]:.3f}", f"{runs[a, i][0][-1, 1]:.3f}", f"{runs[a, i][0][-1, 2]:.3f}"]
       for a, i in runs])

# %%
# NBVAL_IGNORE_OUTPUT
end_loss = {key: run[0][-1, 1] for key, run in runs.items()}
fastest_tanh = min(INITS, key=lambda init_name: end_loss["tanh", init_name])
stuck = [init_name for init_name in INITS
         if all(run[0][-1, 1] > 0.95 * run[0][0, 1] for (a, i), run in runs.items() if i == init_name)]
print(f"lowest tanh loss after {STEPS} steps: {fastest_tanh} (you predicted {my_fastest_tanh})")
print(f"hardly trains (loss down by under 5%, both activations): {', '.join(stuck) or 'none'} (you predicted {my_stuck})")
good_starts = ("Glorot", "orthogonal")
tanh_gap = max(end_loss["tanh", i] for i in good_starts) / min(end_loss["tanh", i] for i in good_starts)
relu_over_tanh = {i: end_loss["ReLU", i] / end_loss["tanh", i] for i in good_starts}
print(f"tanh, Glorot against orthogonal: end losses differ by ×{tanh_gap:.2g}; ReLU's end loss over tanh's: "
      + ", ".join(f"{i} ×{r:.2g}" for i, r in relu_over_tanh.items()))
# the paragraph below reads these
assert stuck == ["±1/fan_in"] and tanh_gap < 2
assert all((ratio > 1) == (STEPS == 100) for ratio in relu_over_tanh.values())   # small: 100 steps, full: 1 500

# %% [markdown]
# The pictures taken before training predicted the outcome. **±1/fan_in** stays at the loss of a
# uniform guess, ln 10 ≈ 2.30, and at chance accuracy: with gradients about 10⁵ times smaller than
# the others' or more (printed before training), its `STEPS` steps move its weights by almost
# nothing. It is not a bad direction, only a bad scale — the network would first have to grow its
# weights by orders of magnitude before the data could shape them. **Glorot** and **orthogonal** both
# train from the first step, and with tanh they end close to each other (within the factor printed
# above). With **ReLU** every layer halves the variance of the signal, so the last layers see a weaker
# signal and the first ones a weaker error: whether the ReLU runs end above or below the tanh ones
# depends on how many steps they get (the ratios printed above; at `COURSEKIT_SIZE=small`'s 100 steps
# they have ended above, at the full size's 1 500 below). He et al.'s doubled variance, or a larger
# learning rate, would help them start — the exercise invites you to try. Which of the two good starts
# wins depends on the depth, the width and the learning rate: at `COURSEKIT_SIZE=full` the curves are
# longer and the comparison fairer.
#
# ### What training does to the weights
#
# The singular values of a middle layer's weight matrix before and after training:

# %%
middle = DEPTH // 2
fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), dpi=70, sharey=True)
grew = {}
for ax, (init_name, init) in zip(axes, INITS.items()):
    before = np.linalg.svd(build_mlp(init, T.tanh)[3][middle].get_value(), compute_uv=False)
    after = np.linalg.svd(runs["tanh", init_name][1][middle], compute_uv=False)
    grew[init_name] = int((after > 1.1 * before).sum())
    ax.semilogy(before, "--", label="at initialisation")
    ax.semilogy(after, label=f"after {STEPS} steps")
    ax.set_title(f"{init_name} (tanh), W{middle}", fontsize=10)
    ax.set_xlabel("index of the singular value")
    ax.legend(fontsize=8)
axes[0].set_ylabel("singular value")
fig.suptitle("Singular values of a hidden layer's weights, measured on the CPU", fontsize=10)
fig.tight_layout()
plt.show()
print(f"singular values of W{middle} that grew by over 10 % in {STEPS} steps: "
      + ", ".join(f"{name} {count} of {WIDTH}" for name, count in grew.items()))
assert all(0 < grew[name] <= WIDTH // 4 for name in good_starts)    # "a handful", below

# %% [markdown]
# In this run's `STEPS` steps, training changes a few directions (for the good starts a handful of
# singular values grow by over 10 %, counted under the figure: the directions the data uses) and
# leaves the rest of the matrix where it started: the bulk of a weight matrix keeps its initial spread
# for a long time, one more reason the start matters.
#
# ## A denoising autoencoder
#
# An autoencoder learns to reproduce its input through a narrower hidden layer; a *denoising* one
# (Vincent et al., 2008) sees a corrupted input — here 30 % of the pixels set to 0 — and must
# reconstruct the clean one, which forces it to learn how pixels go together. We use the Deep Learning
# Tutorials' shape: tied weights (the decoder is `Wᵀ`), a tanh hidden layer here, sigmoid outputs, and
# the cross-entropy between the clean pixels and the reconstruction, written with `softplus` so that it
# is stable. The corruption mask is drawn *inside the graph* by `MRG_RandomStreams`: on a GPU device
# the random numbers are made on the device, so the clean images never leave it.

# %%
N_DAE = size(300, 1797)
DAE_HIDDEN = size(24, 64)
DAE_STEPS = size(60, 1500)


def build_dae(init, device="cpu", data=images[:N_DAE], hidden=DAE_HIDDEN, corruption=0.3, learning_rate=0.5,
              seed=0):
    rng = np.random.default_rng(seed)
    with theano.config.change(device=device, floatX="float32"):
        x = theano.shared(data, name="x")
        W = theano.shared(init(data.shape[1], hidden, rng), name="W")
        b_hidden = theano.shared(np.zeros(hidden, dtype="float32"), name="b_hidden")
        b_visible = theano.shared(np.zeros(data.shape[1], dtype="float32"), name="b_visible")
        streams = MRG_RandomStreams(seed=seed + 1)
        corrupted = x * streams.binomial(size=x.shape, n=1, p=1 - corruption, dtype="float32")
        z = T.dot(T.tanh(T.dot(corrupted, W) + b_hidden), W.T) + b_visible
        loss = (x * T.softplus(-z) + (1 - x) * T.softplus(z)).sum() * np.float32(1.0 / data.shape[0])
        params = [W, b_hidden, b_visible]
        step = theano.function([], [], updates=[(v, v - learning_rate * g) for v, g in zip(params, T.grad(loss, params))],
                               name="dae_step")
        evaluate = theano.function([], loss, name="dae_loss")
        show = theano.function([], [corrupted, T.nnet.sigmoid(z)], name="dae_show")
    return step, evaluate, show, W


def train_dae(init):
    step, evaluate, show, W = build_dae(init)
    curve = []
    for i in range(DAE_STEPS + 1):
        if i % EVAL_EVERY == 0:
            curve.append((i, float(evaluate())))
        if i < DAE_STEPS:
            step()
    return np.array(curve), (show, W)


with one_blas_thread():
    dae_runs = {init_name: train_dae(init) for init_name, init in INITS.items()}
dae_curves = {name: curve for name, (curve, _) in dae_runs.items()}
dae_models = {name: model for name, (_, model) in dae_runs.items()}

fig, ax = plt.subplots(figsize=(6.5, 3.2), dpi=70)
for init_name, curve in dae_curves.items():
    ax.plot(curve[:, 0], curve[:, 1], marker=".", label=init_name)
ax.set_xlabel("gradient step (full batch)")
ax.set_ylabel("reconstruction cross-entropy\n(per image, corrupted input)")
ax.set_title(f"Denoising autoencoder, 64 → {DAE_HIDDEN} → 64, measured on the CPU", fontsize=10)
ax.legend()
plt.show()

# %%
show, W = dae_models["orthogonal"]
corrupted, reconstructed = show()
fig, axes = plt.subplots(3, 8, figsize=(8, 3.3), dpi=70)
for column in range(8):
    for row, (picture, what) in enumerate([(images[column], "clean"), (corrupted[column], "corrupted"),
                                           (reconstructed[column], "reconstructed")]):
        axes[row, column].imshow(np.asarray(picture).reshape(8, 8), cmap="gray_r", vmin=0, vmax=1)
        axes[row, column].set_xticks([])
        axes[row, column].set_yticks([])
        if column == 0:
            axes[row, column].set_ylabel(what, fontsize=8)
fig.suptitle(f"The orthogonal-start autoencoder after {DAE_STEPS} steps (one random corruption)", fontsize=10)
plt.show()

filters = np.asarray(W.get_value()).T
fig, axes = plt.subplots(2, 12, figsize=(9, 1.8), dpi=70)
for ax, weights in zip(axes.ravel(), filters):
    ax.imshow(weights.reshape(8, 8), cmap="RdBu_r")
    ax.axis("off")
fig.suptitle("What its first hidden units look for: columns of W as 8 × 8 images (red +, blue −)", fontsize=10)
plt.show()


# %% [markdown]
# The reconstructions fill in the erased pixels from the strokes around them; the filters are strokes
# and blobs at places where digits differ. With more steps (`COURSEKIT_SIZE=full`) they sharpen.
#
# ## On the GPU, with no transfer per step
#
# Lesson 5 ended with a rule: the GPU pays off when the data lives on it. Here all the data and
# parameters are `float32` shared variables, so they live on the device. Two small things in a
# step written the obvious way could still bring transfers back, and it is worth seeing which do:
#
# 1. **returning the loss** from `step()`: a function returns host arrays, so the scalar is
#    downloaded on every call (a `HostFromGpu`);
# 2. **`.mean()`**: it divides by the number of rows, a count read from the array's *shape*, which
#    the host holds. coursekit keeps such one-element work on the host, as Theano's GPU optimiser did
#    (the placement rule `host_scalars`): a host op (`NumElements`) computes the count and hands it to
#    the division kernel as a launch argument, so nothing is copied. With the rule switched off
#    (`mode.excluding("host_scalars")`) the count would be uploaded on every call: a `GpuFromHost` of
#    4 bytes, but a transfer, and on a real GPU a synchronisation.
#
# The version we trained above returns nothing and divides by a Python number, a constant of the
# graph: no host op and no copy. Count the transfer ops of the three versions, then profile
# a few calls of the on-device step and read its transfer count:

# %%
def first_written(device, mode=None):
    # the same MLP step, written the obvious way: .mean() and the loss returned by every call
    with theano.config.change(device=device, floatX="float32"):
        rng = np.random.default_rng(0)
        x, t = theano.shared(X_train, name="x"), theano.shared(Y_train, name="t")
        sizes = [64, *[WIDTH] * DEPTH, 10]
        params = [theano.shared(orthogonal(a, b, rng), name=f"W{i}") for i, (a, b) in enumerate(zip(sizes, sizes[1:]))]
        h = x
        for W in params[:-1]:
            h = T.tanh(T.dot(h, W))
        loss = -(t * T.log(T.nnet.softmax(T.dot(h, params[-1])))).sum(axis=1).mean()
        return theano.function([], loss, updates=[(W, W - 0.1 * g) for W, g in zip(params, T.grad(loss, params))],
                               mode=mode)


def transfers(fn):
    return [type(node.op).__name__ for node in fn.toposort() if getattr(node.op, "is_transfer", False)]


def host_ops(fn):
    return [type(node.op).__name__ for node in fn.toposort() if getattr(node.op, "device", "cpu") == "cpu"]


gpu_step = build_mlp(orthogonal, T.tanh, device="gpu", profile=True)[0]
for _ in range(6):
    gpu_step()
versions = {"first written: .mean(), loss returned": first_written("gpu"),
            "the same, host_scalars rule off": first_written("gpu", theano.Mode("FAST_RUN").excluding("host_scalars")),
            "on the device: sum / N, nothing returned": gpu_step}
# the paragraphs above and below read these
assert transfers(versions["first written: .mean(), loss returned"]) == ["HostFromGpu"]
assert sorted(transfers(versions["the same, host_scalars rule off"])) == ["GpuFromHost", "HostFromGpu"]
assert transfers(gpu_step) == [] and host_ops(gpu_step) == []
Table(["version of the step (device=gpu)", "transfer ops in toposort()", "which", "host ops"],
      [[name, len(transfers(fn)), transfers(fn) or "none", host_ops(fn) or "none"] for name, fn in versions.items()])

# %%
# NBVAL_CHECK_OUTPUT
split = gpu_step.profile.device_split()
print(f"profiled calls: {gpu_step.profile.timed_calls} (the first, the warm-up, is not counted)")
print(f"transfers in those calls: {split['transfer']['count']}, bytes moved: {split['transfer']['bytes']}")
print("ops of the step on the GPU device:", split["gpu"]["applies"], "| on the CPU:", split["cpu"]["applies"])

# %% [markdown]
# Zero transfers: every one of the step's ops — the matrix products (`GpuGemm`, `GpuDot`), the fused
# elementwise chains (`GpuElemwise`), the reductions (`GpuCAReduce`), the softmax (`GpuSoftmax`) — reads
# and writes device memory, and the updates store the new weights where the old ones were. The data
# crossed the bus once, when the shared variables were made. Reading the loss is a separate function,
# `evaluate()`, called once every `EVAL_EVERY` steps: there the download is deliberate.
#
# The denoising autoencoder's step is the same story, random numbers included: `MRG_RandomStreams`
# keeps its generator's state on the device, and `GpuMRGUniform` draws the mask there.

# %%
# NBVAL_CHECK_OUTPUT
dae_gpu_step = build_dae(orthogonal, device="gpu")[0]
print("denoising step on device=gpu:", [type(n.op).__name__ for n in dae_gpu_step.toposort()
                                      if "MRG" in type(n.op).__name__], "| transfer ops:", transfers(dae_gpu_step))

# %% [markdown]
# ### CPU against GPU
#
# Now the time of one training step, on the CPU and on the GPU device. Two kinds of figures, in
# separate columns:
#
# * **measured** here, with `time_call` (warm-up first, device synchronised, BLAS on one thread), at
#   this run's size. On a machine without a GPU the GPU device is the simulated one: its times are CPU
#   times, not GPU times;
# * **modelled**: the whole call of the same step as coursekit's cost model prices it on a real card
#   (`coursekit/costmodel/presets.py`): the device work, from the shapes every node saw, plus the host
#   time coursekit spends per step on this machine — a prediction, not a measurement.
#   `predict_scaled` runs the step at this run's size and prices it at a larger one: the lesson's full
#   size (1 297 examples, hidden layers of 128), and the size of the Deep Learning Tutorials' MNIST
#   (50 000 images of 784 pixels, hidden layers of 512).
#
# **Predict first.** At the full size a step does about 6 × 1 297 × (64·128 + 4·128² + 128·10) ≈
# 0.6 GFLOP (forward and backward). A T4 does about 8 TFLOP/s in float32: is its step limited by that
# arithmetic, or by the number of kernels it launches?

# %%
from coursekit import costmodel
from coursekit.profiling.predict import predict_call, predict_scaled

PRESETS = ("t4", "h100")
step_on = {device: build_mlp(orthogonal, T.tanh, device=device)[0] for device in ("cpu", "gpu")}
measured = {device: time_call(fn, repeat=3, model=False) for device, fn in step_on.items()}
SCALES = {f"this run ({N_TRAIN} × 64, hidden {WIDTH})": {},
          "full size (1297 × 64, hidden 128)": {N_TRAIN: 1297, WIDTH: 128},
          "MNIST size (50000 × 784, hidden 512)": {N_TRAIN: 50_000, 64: 784, WIDTH: 512}}
# the host's part of a step: coursekit's dispatch, measured here at this run's size (it does not grow with the data)
host = {p: predict_call(step_on["gpu"], model=costmodel.model(p)).host for p in PRESETS}
rows, whole = [], {}
for name, scale in SCALES.items():
    modelled = [predict_scaled(step_on["gpu"], sizes=scale, model=costmodel.model(p)).with_host(host[p]) for p in PRESETS]
    whole[name] = dict(zip(PRESETS, modelled))
    here = not scale
    rows.append([name, str(measured["cpu"]) if here else "not run", str(measured["gpu"]) if here else "not run"]
                + [f"{format_seconds(m.total)} ({m.band}), {m.launches} launches, {m.transfers} transfers"
                   for m in modelled])
Table(["size", "CPU, measured", "GPU device, measured" + (" (simulated: CPU time)" if GPU_SIMULATED else "")]
      + [f"whole call, {costmodel.model(p).label} (a prediction)" for p in PRESETS], rows,
      caption=f"{DEPTH} tanh hidden layers, orthogonal start; GPU device here: {GPU_LABEL}")

# %%
# NBVAL_IGNORE_OUTPUT
speedup = {name: calls["t4"].total / calls["h100"].total for name, calls in whole.items()}
for name, ratio in speedup.items():
    print(f"{name:<38} modelled h100 / t4 speed-up: {ratio:.1f}x")
print(f"measured here, GPU device / CPU: {measured['gpu'].best / measured['cpu'].best:.2f}"
      + (" (the simulated GPU: NumPy on the CPU too)" if GPU_SIMULATED else ""))
small, full, mnist = speedup.values()
assert small < 1.5 and full < 2.5 and mnist > 4   # the reading below


# %% [markdown]
# How to read the table:
#
# * Without a GPU the "GPU device" column is NumPy on the CPU, so its time is of the same order as the
#   CPU column's (their ratio is printed above: the device's bookkeeping costs a little, and on a busy
#   machine the noise between two measurements can be larger than that). It shows that the step runs
#   on the device with no transfer, not that a GPU is fast.
# * The modelled columns price the same kernels on a real card, plus the host's dispatch. At this
#   run's size and at the full size each kernel is tiny: the step costs its host work and its launches,
#   several microseconds each, and the H100 gains little over the T4 (the speed-ups printed above; how
#   little depends on this machine's host time, which the H100 does not shorten). At MNIST's size the matrix products dominate, and
#   the newer card's bandwidth and arithmetic pay off several times over.
# * The host part is measured on this machine and does not shrink on a faster card: small steps stay
#   host-bound on any GPU.

# %% [markdown]
# ## Optimisers × initialisations
#
# The talk's afternoon exercise goes on: *how do different optimisation algorithms help with these
# initialisations?* Every run so far took plain gradient-descent steps. Here are three update rules,
# each written as the list of `(shared variable, new value)` pairs that `theano.function(updates=...)`
# takes. An optimiser's state — a velocity, running moments, a step counter — is one more shared
# variable per parameter, made on the same device, so on a GPU it never leaves the GPU either.
#
# * **SGD**: `W ← W − η·g`. No state; the step is proportional to the gradient, so a tiny gradient
#   gives a tiny step.
# * **Momentum** (the heavy ball): a velocity `v ← μ·v − η·g`, then `W ← W + v`. On a slope that keeps
#   its direction the velocity settles at η·g/(1 − μ): with μ = 0.9, steps ten times SGD's. The step
#   still scales with the gradient.
# * **Adam** (Kingma & Ba, 2014): running means `m` of `g` and `v` of `g²`, a step counter `t` that
#   corrects both for starting at zero, and the step `η · m̂ / (√v̂ + ε)`. The ratio m̂ / √v̂ is close to
#   ±1 while a weight's gradient keeps its sign, *whatever its size*: every weight's first steps are
#   about η long, even where the gradient is as small as ±1/fan_in's (measured above).
#
# The settings are the usual ones, tuned for no initialisation: SGD with η = 0.1 (as above), momentum
# with η = 0.1 and μ = 0.9, Adam with η = 0.01, β₁ = 0.9, β₂ = 0.999, ε = 10⁻⁸.

# %%
def sgd(params, grads, learning_rate=0.1):
    return [(p, p - learning_rate * g) for p, g in zip(params, grads)]


def momentum(params, grads, learning_rate=0.1, mu=0.9):
    updates = []
    for p, g in zip(params, grads):
        velocity = theano.shared(np.zeros_like(p.get_value()), name=f"velocity_{p.name}")
        new_velocity = mu * velocity - learning_rate * g
        updates += [(velocity, new_velocity), (p, p + new_velocity)]
    return updates


def adam(params, grads, learning_rate=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    step_count = theano.shared(np.float32(0), name="t")
    t = step_count + 1
    corrected_rate = learning_rate * T.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)   # the bias correction of m and v
    updates = [(step_count, t)]
    for p, g in zip(params, grads):
        m = theano.shared(np.zeros_like(p.get_value()), name=f"m_{p.name}")
        v = theano.shared(np.zeros_like(p.get_value()), name=f"v_{p.name}")
        new_m = beta1 * m + (1 - beta1) * g
        new_v = beta2 * v + (1 - beta2) * T.sqr(g)
        updates += [(m, new_m), (v, new_v), (p, p - corrected_rate * new_m / (T.sqrt(new_v) + eps))]
    return updates


OPTIMISERS = {"SGD": sgd, "momentum": momentum, "Adam": adam}

# %% [markdown]
# `build_with` is `build_mlp` with an optimiser's updates in place of plain SGD, and one more change:
# the loss reads `log_softmax` instead of `log(softmax(...))`. Adam drives the training loss close to
# zero, where `softmax` rounds the probability of a wrong class to exactly 0 in `float32`; then
# `t · log p` is 0 · (−∞), which is `nan`, and one `nan` in a gradient spoils every weight.
# `log_softmax` computes `z − log Σ exp z` and never takes the log of 0.
#
# **Predict first.** The same `STEPS` full-batch steps (printed at the top of the lesson) from the three
# starts, with tanh and with ReLU, for each optimiser: does any optimiser get the ±1/fan_in network training? Does momentum
# help the deep ReLU network as much as the tanh one?

# %%
# Your prediction (not graded)
my_rescues_fan_in = None      # "SGD", "momentum", "Adam" or None
my_momentum_helps_relu = None  # True or False


# %%
def build_with(init, activation, optimiser, device="cpu", seed=0):
    rng = np.random.default_rng(seed)
    sizes = [X_train.shape[1], *[WIDTH] * DEPTH, Y_train.shape[1]]
    with theano.config.change(device=device, floatX="float32"):
        x, t = theano.shared(X_train, name="x"), theano.shared(Y_train, name="t")
        weights = [theano.shared(init(a, b, rng), name=f"W{i}") for i, (a, b) in enumerate(zip(sizes, sizes[1:]))]
        biases = [theano.shared(np.zeros(b, dtype="float32"), name=f"b{i}") for i, b in enumerate(sizes[1:])]

        def log_probabilities(h):
            for W, b in zip(weights[:-1], biases[:-1]):
                h = activation(T.dot(h, W) + b)
            return T.nnet.log_softmax(T.dot(h, weights[-1]) + biases[-1])

        loss = -(t * log_probabilities(x)).sum() * np.float32(1.0 / X_train.shape[0])
        params = weights + biases
        step = theano.function([], [], updates=optimiser(params, T.grad(loss, params)), name="step")
        x_test, y_test_sym = T.matrix("x_test"), T.lvector("y_test")
        accuracy = T.mean(T.cast(T.eq(T.argmax(log_probabilities(x_test), axis=1), y_test_sym), "float32"))
        evaluate = theano.function([x_test, y_test_sym], [loss, accuracy], name="evaluate")
    return step, evaluate


def train_with(init, activation, optimiser, steps=STEPS):
    # (step, training loss, test accuracy) every EVAL_EVERY steps, as train() above
    step, evaluate = build_with(init, activation, optimiser)
    curve = []
    for i in range(steps + 1):
        if i % EVAL_EVERY == 0:
            loss, accuracy = evaluate(X_test, y_test)
            curve.append((i, float(loss), float(accuracy)))
        if i < steps:
            step()
    return np.array(curve)


started = time.perf_counter()
with one_blas_thread():
    grid = {(act_name, opt_name, init_name): train_with(init, activation, optimiser)
            for act_name, activation in ACTIVATIONS.items()
            for opt_name, optimiser in OPTIMISERS.items()
            for init_name, init in INITS.items()}
print(f"{len(grid)} runs of {STEPS} steps in {time.perf_counter() - started:.1f} s (measured on the CPU)")

# %%
fig, axes = plt.subplots(2, 3, figsize=(11, 5.6), dpi=70, sharex=True, sharey=True)
for row, act_name in enumerate(ACTIVATIONS):
    for column, opt_name in enumerate(OPTIMISERS):
        ax = axes[row, column]
        for init_name in INITS:
            curve = grid[act_name, opt_name, init_name]
            ax.plot(curve[:, 0], curve[:, 1], marker=".", label=init_name)
        ax.set_yscale("log")
        ax.set_title(f"{act_name}, {opt_name}", fontsize=10)
        if row == 1:
            ax.set_xlabel("gradient step (full batch)")
    axes[row, 0].set_ylabel("training loss")
axes[0, 0].legend(fontsize=8)
fig.suptitle(f"Optimisers × initialisations: {DEPTH} hidden layers of {WIDTH}, measured on the CPU", fontsize=10)
fig.tight_layout()
plt.show()
Table(["activation", "initialisation"] + [f"{opt_name}: end loss, test accuracy" for opt_name in OPTIMISERS],
      [[act_name, init_name] + [f"{grid[act_name, o, init_name][-1, 1]:.3f}, {grid[act_name, o, init_name][-1, 2]:.3f}"
                                for o in OPTIMISERS]
       for act_name in ACTIVATIONS for init_name in INITS],
      caption=f"after {STEPS} steps; every run starts at a loss near ln 10 ≈ 2.30")


# %%
# NBVAL_IGNORE_OUTPUT
def end_loss(act_name, opt_name, init_name):
    return grid[act_name, opt_name, init_name][-1, 1]


def loss_fell(act_name, opt_name, init_name, fraction):
    return end_loss(act_name, opt_name, init_name) < (1 - fraction) * grid[act_name, opt_name, init_name][0, 1]


good_starts = ("Glorot", "orthogonal")
fan_in_moves = [o for o in OPTIMISERS if all(loss_fell(a, o, "±1/fan_in", 0.2) for a in ACTIVATIONS)]
fan_in_stuck = [o for o in OPTIMISERS if not any(loss_fell(a, o, "±1/fan_in", 0.05) for a in ACTIVATIONS)]
print(f"±1/fan_in's loss down by over 20% (tanh and ReLU) with: {', '.join(fan_in_moves) or 'none'} "
      f"(you predicted {my_rescues_fan_in})")
print(f"±1/fan_in's loss down by under 5% (tanh and ReLU) with: {', '.join(fan_in_stuck) or 'none'}")
against_sgd = {(a, o): max(end_loss(a, o, i) / end_loss(a, "SGD", i) for i in good_starts)
               for a in ACTIVATIONS for o in ("momentum", "Adam")}
for act_name in ACTIVATIONS:
    print(f"{act_name}: end loss over SGD's, the worse of the two good starts: "
          + ", ".join(f"{o} ×{against_sgd[act_name, o]:.2g}" for o in ("momentum", "Adam")))
between_starts = max(max(end_loss("tanh", o, i) for i in good_starts) / min(end_loss("tanh", o, i) for i in good_starts)
                     for o in OPTIMISERS)
print(f"tanh, Glorot against orthogonal: end losses differ by ×{between_starts:.2g} at most; "
      f"SGD against the other two by ×{1 / max(against_sgd['tanh', o] for o in ('momentum', 'Adam')):.2g} at least")
rose = [f"{a}/{i}" for a in ACTIVATIONS for i in good_starts
        if grid[a, "momentum", i][:, 1].max() > grid[a, "momentum", i][0, 1]]
momentum_helps_relu = all(end_loss("ReLU", "momentum", i) < end_loss("ReLU", "SGD", i) for i in good_starts)
print(f"momentum's loss rose above its start in: {', '.join(rose) or 'no run'}; with ReLU momentum ends below SGD "
      f"from both good starts: {momentum_helps_relu} (you predicted {my_momentum_helps_relu})")
# the paragraph below reads these
assert fan_in_stuck == ["SGD", "momentum"] and fan_in_moves == ["Adam"]
assert max(against_sgd["tanh", o] for o in ("momentum", "Adam")) < 0.5 and against_sgd["ReLU", "Adam"] < 0.5
assert between_starts < 1 / max(against_sgd["tanh", o] for o in ("momentum", "Adam"))
assert all(end_loss(a, "Adam", "±1/fan_in") > max(end_loss(a, "Adam", i) for i in good_starts) for a in ACTIVATIONS)

# %% [markdown]
# What the grid shows, read with the lines printed above (they are computed from the same runs):
#
# * **±1/fan_in** stays at the loss of a uniform guess under SGD *and* under momentum. Momentum
#   multiplies the step by up to 1/(1 − μ), but ten times a vanishing step is still a vanishing step:
#   it changes the speed along a direction, not the scale of the gradient. Adam is the one optimiser
#   under which its loss falls: its steps are about η long whatever the gradient's size, so the tiny
#   weights grow, step by step, towards a scale at which the signal reaches the output. It starts
#   late, and in this run's steps it stays behind the good starts (the table). ±1/fan_in is a
#   Glorot-like matrix shrunk many times over (compare their singular values above): a start whose
#   fault is its scale alone, the fault that Adam's division by √v̂ undoes.
# * **The two good starts with tanh**: momentum and Adam both end far below SGD (the ratios printed
#   above). Momentum gathers speed along directions the gradient keeps pointing in; Adam also gives
#   every weight a step of about the same size, so a layer whose gradients are small learns as fast
#   as one whose gradients are large. Glorot and orthogonal end closer to each other than any optimiser ends
#   to SGD (the two factors printed above): once the start is sane, the optimiser matters more.
# * **ReLU**: Adam trains both good starts far below SGD's loss here too. Momentum is another story;
#   the line above lists the runs where its loss rose above where it started. A rectifier does not
#   saturate as tanh does, so a step that is too large is not damped: a velocity ten times SGD's step
#   overshoots, the loss jumps, and the run spends its steps recovering. The η that suits tanh may be
#   too large for ReLU with momentum: an optimiser's settings are part of the comparison.
#
# What this grid cannot say: one learning rate per optimiser, one seed, `STEPS` full-batch steps. Try
# the exercise with a smaller momentum learning rate, or more steps (`COURSEKIT_SIZE=full`).

# %% [markdown]
# ## A small convolutional net, on the device
#
# The talk's next afternoon exercise needs convolutions, and so does the "MLPs and ConvNets" of the
# initialisation exercise. coursekit has Theano's two building blocks: `T.nnet.conv2d` (in
# `coursekit/tensor/nnet/conv.py`: every 3 × 3 window gathered into a row of a matrix, then one
# matrix product) and `pool_2d` (in `coursekit/tensor/signal/pool.py`). Both have GPU twins, and so do
# their gradients, so a convolutional net can train on the GPU device as the MLP did — *if* nothing
# in the graph drags a value back to the host. The net, on images of shape (batch, 1 channel, 8, 8):
#
# 1. a convolution with `FILTERS` filters of 3 × 3, padded (`border_mode="half"`) so the maps stay
#    8 × 8, then tanh;
# 2. a 2 × 2 max-pooling: maps of 4 × 4;
# 3. a softmax layer on the `FILTERS` · 16 pooled values, trained with the Adam updates above, for the
#    same number of steps as the MLP runs.
#
# Everything a step reads is a `float32` shared variable on the device: the training images and
# targets, the parameters, Adam's moments and counter. The evaluation reads the test images and
# labels from the device too, and returns loss and accuracy joined into one vector of two numbers.
#
# **Predict first.** The conv net has far fewer weights than the MLP (printed below). After the same
# number of Adam steps, is its test accuracy higher or lower than the MLP's with the same optimiser?

# %%
# Your prediction (not graded)
my_cnn_beats_mlp = None        # True or False

# %%
from coursekit.tensor.nnet import conv2d
from coursekit.tensor.signal.pool import pool_2d

FILTERS = size(8, 16)


def conv_glorot(n_filters, channels, rows, cols, rng, pool=4):
    # Glorot for a convolution: fan_in counts a window's inputs, fan_out the filters' taps after pooling
    bound = np.sqrt(6.0 / (channels * rows * cols + n_filters * rows * cols / pool))
    return rng.uniform(-bound, bound, (n_filters, channels, rows, cols)).astype("float32")


def build_cnn(device="gpu", seed=0, flatten_at_run_time=False, profile=False):
    rng = np.random.default_rng(seed)
    features = FILTERS * 4 * 4
    with theano.config.change(device=device, floatX="float32"):
        x, t = theano.shared(X_train.reshape(-1, 1, 8, 8), name="x"), theano.shared(Y_train, name="t")
        x_test = theano.shared(X_test.reshape(-1, 1, 8, 8), name="x_test")
        labels_test = theano.shared(y_test.astype("float32"), name="labels_test")
        filters = theano.shared(conv_glorot(FILTERS, 1, 3, 3, rng), name="filters")
        b_conv = theano.shared(np.zeros(FILTERS, dtype="float32"), name="b_conv")
        W, b = theano.shared(glorot_uniform(features, 10, rng), name="W"), theano.shared(np.zeros(10, "float32"), name="b")

        def log_probabilities(images, n_images):
            maps = T.tanh(conv2d(images, filters, border_mode="half") + b_conv.dimshuffle("x", 0, "x", "x"))
            pooled = pool_2d(maps, ws=(2, 2), ignore_border=True)
            flat = pooled.flatten(2) if flatten_at_run_time else pooled.reshape((n_images, features))
            return T.nnet.log_softmax(T.dot(flat, W) + b)

        loss = -(t * log_probabilities(x, len(X_train))).sum() * np.float32(1.0 / len(X_train))
        params = [filters, b_conv, W, b]
        step = theano.function([], [], updates=adam(params, T.grad(loss, params)), name="cnn_step", profile=profile)
        hits = T.eq(T.argmax(log_probabilities(x_test, len(X_test)), axis=1), labels_test)
        accuracy = T.cast(hits, "float32").sum() * np.float32(1.0 / len(X_test))
        evaluate = theano.function([], T.concatenate([loss.dimshuffle("x"), accuracy.dimshuffle("x")]),
                                   name="cnn_evaluate")
    return step, evaluate, params


started = time.perf_counter()
with one_blas_thread():
    cnn_step, cnn_evaluate, cnn_params = build_cnn(profile=True)
    cnn_curve = []
    for i in range(STEPS + 1):
        if i % EVAL_EVERY == 0:
            cnn_curve.append((i, *(float(v) for v in cnn_evaluate())))
        if i < STEPS:
            cnn_step()
cnn_curve = np.array(cnn_curve)
cnn_weights = sum(p.get_value().size for p in cnn_params)
mlp_weights = sum(a * b + b for a, b in zip([64, *[WIDTH] * DEPTH], [*[WIDTH] * DEPTH, 10]))
print(f"conv net: {FILTERS} filters of 3 × 3, 2 × 2 max-pool, softmax on {FILTERS * 16} values: {cnn_weights} weights "
      f"(the MLP: {mlp_weights})")
print(f"{STEPS} Adam steps on {GPU_LABEL.split(' - ')[0]} in {time.perf_counter() - started:.1f} s (measured)")

# %% [markdown]
# Did the convolution and the pooling run on the device, and did anything cross the bus? The compiled
# functions' `toposort()` lists every op; the profile of the training run counts what really moved.
# Beside them, the same step written with `pooled.flatten(2)` instead of a reshape to Python numbers:

# %%
# NBVAL_CHECK_OUTPUT
ops = [type(node.op).__name__ for node in cnn_step.toposort()]
print("convolution and pooling ops of the step:", [name for name in ops if "Conv" in name or "Pool" in name])
Table(["function (device=gpu)", "transfer ops in toposort()", "which"],
      [["cnn_step: reshape to Python numbers, nothing returned", len(transfers(cnn_step)), transfers(cnn_step) or "none"],
       ["cnn_evaluate: loss and accuracy joined on the device", len(transfers(cnn_evaluate)), transfers(cnn_evaluate)],
       ["cnn_step written with flatten(2)", len(transfers(build_cnn(flatten_at_run_time=True)[0])),
        transfers(build_cnn(flatten_at_run_time=True)[0])]])

# %%
# NBVAL_CHECK_OUTPUT
split = cnn_step.profile.device_split()
print(f"profiled calls of cnn_step: {cnn_step.profile.timed_calls} (the first, the warm-up, is not counted)")
print(f"transfers in those calls: {split['transfer']['count']}, bytes moved: {split['transfer']['bytes']}")
print(f"ops on the GPU device: {split['gpu']['applies']} | on the CPU: {split['cpu']['applies']}",
      [name for node, name in zip(cnn_step.toposort(), ops) if getattr(node.op, "device", "cpu") == "cpu"])

# %% [markdown]
# The step's ops are all GPU ops: the convolution (`GpuConv2d`), the pooling (`GpuPool`) and both
# their gradients (`GpuPoolGrad`, `GpuConv2dGradWeights`; the images need no gradient, so there is
# no `GpuConv2dGradInput`). The profile counts no transfer over all its calls. The one CPU op is a
# `Shape`: the gradient of the reshape needs the pooled maps' shape back, and a shape is metadata the
# host already holds — reading it moves no data. Evaluating costs one copy, the joined loss and
# accuracy, and only every `EVAL_EVERY` steps.
#
# `flatten(2)` computes the flattened size from the array's shape *at run time*. That small vector of
# integers used to be copied to the device, sliced there and copied back on every step: two transfers
# of a few bytes each. Placement now keeps shape arithmetic on the host, where the shape already is (as
# Theano's optimiser did), so the last row of the table shows none: the same as a reshape to Python
# numbers, which is known when the function is compiled.
#
# How does it learn, next to the MLP with the same optimiser and the same steps?

# %%
mlp_adam = {init_name: grid["tanh", "Adam", init_name] for init_name in ("Glorot", "orthogonal")}
fig, (ax_loss, ax_accuracy) = plt.subplots(1, 2, figsize=(10, 3.4), dpi=70)
for name, curve in [("conv net (GPU device)", cnn_curve)] + [(f"MLP, tanh, {i} (CPU)", c) for i, c in mlp_adam.items()]:
    ax_loss.plot(curve[:, 0], curve[:, 1], marker=".", label=name)
    ax_accuracy.plot(curve[:, 0], curve[:, 2], marker=".", label=name)
ax_loss.set_yscale("log")
ax_loss.set_ylabel("training loss")
ax_accuracy.set_ylabel("test accuracy")
for ax in (ax_loss, ax_accuracy):
    ax.set_xlabel("Adam step (full batch)")
ax_accuracy.legend(fontsize=8)
fig.suptitle("Conv net against the MLP, both trained with Adam (the GPU device here: " +
             ("simulated" if GPU_SIMULATED else "a real GPU") + ")", fontsize=10)
fig.tight_layout()
plt.show()
Table(["model", "weights", "training loss at the end", "test accuracy at the end"],
      [["conv net", cnn_weights, f"{cnn_curve[-1, 1]:.4f}", f"{cnn_curve[-1, 2]:.3f}"]]
      + [[f"MLP, tanh, {i} start", mlp_weights, f"{c[-1, 1]:.4f}", f"{c[-1, 2]:.3f}"] for i, c in mlp_adam.items()],
      caption=f"after {STEPS} steps; test set: {len(X_test)} digits, so one digit is {1 / len(X_test):.3f} of accuracy")

# %%
# NBVAL_IGNORE_OUTPUT
best_mlp = max(c[-1, 2] for c in mlp_adam.values())
cnn_wins = bool(cnn_curve[-1, 2] > best_mlp)
print(f"conv net {cnn_curve[-1, 2]:.3f} against the better MLP {best_mlp:.3f}: "
      f"{'higher' if cnn_wins else 'not higher'}, by {abs(cnn_curve[-1, 2] - best_mlp) * len(X_test):.0f} test digits "
      f"(you predicted {'higher' if my_cnn_beats_mlp else 'not higher' if my_cnn_beats_mlp is not None else None})")
print(f"weights: conv net {cnn_weights}, MLP {mlp_weights} ({mlp_weights / cnn_weights:.1f} times as many)")
# the paragraph below reads these: close accuracy, far fewer weights, a higher training loss
assert abs(cnn_curve[-1, 2] - best_mlp) < 0.02 and cnn_weights < mlp_weights / 3
assert cnn_curve[-1, 1] > max(c[-1, 1] for c in mlp_adam.values())

# %% [markdown]
# The conv net's test accuracy ends within 0.02 of the better MLP's (ten test digits), with a
# fraction of its weights (the lines above give both, and the difference in test digits). A 3 × 3 filter is one small stroke detector
# applied at every position, so the net need not learn the same stroke again at each place, which is
# what a fully connected layer does. Its training loss stays higher than the MLP's: with fewer weights
# it fits the training set less closely, and on 8 × 8 digits that costs little on the test set. On
# 8 × 8 pictures there is little room for what convolutions do best — stacking layers that see larger
# and larger parts of a large image — so the wide lead conv nets take over MLPs on larger images is
# not to be expected here.
#
# Finally, the time of one conv-net step, labelled as before: measured on this machine (the GPU
# device is the simulated one when there is no GPU), and modelled for real cards — the modelled
# device work plus the host time coursekit spends per step, measured here.

# %%
cnn_on = {device: build_cnn(device=device)[0] for device in ("cpu", "gpu")}
cnn_measured = {device: time_call(fn, repeat=3, model=False) for device, fn in cnn_on.items()}
cnn_modelled = {p: predict_call(cnn_on["gpu"], model=costmodel.model(p)) for p in PRESETS}
# the host's part is measured: on a busy machine a call that waited for the CPU looks slow, so keep the quietest
cnn_host = min([m.host for m in cnn_modelled.values()] + [predict_call(cnn_on["gpu"]).host for _ in range(2)])
cnn_modelled = {p: m.with_host(cnn_host) for p, m in cnn_modelled.items()}
t4, h100 = (costmodel.model(p).spec for p in PRESETS)
cnn_speedup = cnn_modelled["t4"].total / cnn_modelled["h100"].total
print(f"modelled h100 / t4 speed-up of a conv-net step: {cnn_speedup:.1f}x; the cards' ratio of float32 peak: "
      f"{h100.fp32_flops / t4.fp32_flops:.1f}x, of memory bandwidth: {h100.memory_bandwidth / t4.memory_bandwidth:.1f}x")
print(f"host time per step, measured here: {format_seconds(cnn_host)}; modelled kernel time on the t4: "
      f"{format_seconds(cnn_modelled['t4'].parts['kernel'])} in {cnn_modelled['t4'].launches} launches")
# the paragraph below reads these
assert cnn_speedup < h100.memory_bandwidth / t4.memory_bandwidth / 2
assert cnn_modelled["t4"].parts["kernel"] < cnn_host + cnn_modelled["t4"].parts["launch"]
Table(["one training step of the conv net", "time per step", "how it was obtained"],
      [["CPU", str(cnn_measured["cpu"]), "measured here"],
       ["GPU device", str(cnn_measured["gpu"]), "measured here" + (" (simulated GPU: CPU time)" if GPU_SIMULATED else "")]]
      + [[costmodel.model(p).label, m.figure(), f"a prediction: {m.launches} launches, {m.transfers} transfers, "
          f"+ the host time measured here"] for p, m in cnn_modelled.items()],
      caption=f"{N_TRAIN} images, {FILTERS} filters; GPU device here: {GPU_LABEL}")

# %% [markdown]
# On the simulated GPU the step is NumPy on the CPU, so its measured time says nothing about a GPU's
# speed. The modelled rows price the same kernels on real cards, plus the host time measured here.
# At this size every kernel is small: the modelled kernel time (printed above) is less than the
# step's host time and launches together, and the modelled speed-up from the T4 to the H100 is far
# below the ratio of the two cards' bandwidths or arithmetic (all printed above). Small conv nets, like
# small MLPs, are host-bound on a GPU long before they are limited by its arithmetic.

# %% [markdown]
# ## What you learnt
#
# * Initialisation sets the scale of the signal in every layer. ±1/fan_in shrinks it by √(3·fan_in)
#   per layer and the network starts almost dead; Glorot keeps tanh's activations steady; an
#   orthogonal matrix keeps every vector's length, so even deep tanh networks start training at once.
#   Rectifiers halve the variance per layer, whatever the start.
# * The training curves follow from statistics you can measure before training: activation and
#   gradient spread per layer, and the singular values of the weights.
# * On a GPU device a training step can move nothing: data and parameters in `float32` shared
#   variables, nothing returned, the random corruption drawn on the device; `toposort()` and the
#   profile's transfer count prove it. `.mean()`'s count costs no copy, since placement keeps
#   one-element work on the host (the `host_scalars` rule), but it is still one host op per call: a
#   loss divided by a Python number needs none.
# * An optimiser is a list of updates plus some shared state. SGD's and momentum's steps scale with
#   the gradient, so they inherit a bad start's vanishing gradients; Adam divides the gradient by its
#   own running size, which gets even the ±1/fan_in network moving, late: it repairs a start's scale,
#   and with ReLU it takes both good starts far below SGD's loss.
# * A convolutional net trains on the GPU device with no transfer per step, like the MLP: `conv2d`,
#   `pool_2d` and their gradients all have GPU ops, and even a shape computed at run time (`flatten(2)`)
#   costs no transfer: shape arithmetic stays on the host, where the shape is.
#
# **Exercise:** [`exercises/10_afternoon_project_exercises.ipynb`](../exercises/10_afternoon_project_exercises.ipynb) ([in Colab](https://colab.research.google.com/github/coursekit/coursekit/blob/main/exercises/10_afternoon_project_exercises.ipynb)) —
# write the three initialisations and a training step that stays on the device, and compare them on
# your own plots.
#
# **Next:** [Lesson 11 — GPU memory, counted](11_gpu_memory_counted.ipynb) looks inside the kernels
# these steps launch: how a warp's loads are served in 32-byte sectors, shared memory's banks and
# atomics, counted by coursekit's CUDA emulator.
