# %% [markdown]
# # Lesson 5 — Logistic regression on the CPU and on the GPU
#
# The GPU chapter of the Theano tutorial ends with an exercise rather than an answer: take a small
# logistic-regression script (400 examples, 784 features, 10 000 gradient steps), run it on the GPU,
# time it, find out with the profiler where the time goes, and then make the GPU version faster.
# This lesson works through that exercise with coursekit, which runs the tutorial's script after
# changing only its imports.
#
# The plan:
#
# 1. train the tutorial's model as written, once with `device="cpu"` and once with `device="gpu"`;
# 2. ask the compiled graph which ops ran where (the tutorial's `Gemv` / `GpuGemv` test);
# 3. profile both runs and read the line that splits time into CPU ops, GPU ops and transfers;
# 4. look at the graph the compiler really runs: the cross-entropy was rewritten into a stable form,
#    and we will see what happens without that rewrite;
# 5. make the GPU version faster, one change at a time, measuring each change;
# 6. grow the data set to find the size where the GPU starts to win.
#
# One warning before any number appears. Without an NVIDIA GPU, `device="gpu"` falls back to
# coursekit's **simulated GPU**: the same graph, the same transfer ops, a separate memory space — but
# every kernel is NumPy running on the CPU. Transfers, placement and op counts are real lessons on
# that device; its timings are CPU timings and every table below says so.

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
from coursekit.compile.mode import get_mode
from coursekit.lessons import Table, device_label, format_seconds, size, time_call
from coursekit.devices import synchronize

N = 400                               # examples, as in the tutorial
feats = 784                           # features per example (a 28 x 28 image)
training_steps = size(100, 10000)     # the tutorial trains for 10 000 steps

print(f"N={N}, feats={feats}, training_steps={training_steps}")
print(device_label())
with theano.config.change(device="gpu"):
    GPU_LABEL = device_label()
GPU_SIMULATED = "simulated" in GPU_LABEL
print(GPU_LABEL)

# %% [markdown]
# ## The data and the model
#
# The tutorial's data are pure noise: Gaussian features and labels drawn by a coin. That sounds
# hopeless, yet there are more features (784) than examples (400), so some hyperplane separates any
# labelling of the points, and a long enough training run reaches 100 % training accuracy. We keep the
# data in `float32` from the start: a GPU is fast in single precision, and coursekit leaves
# `float64` work on the host (as Theano's original CUDA backend did; its later GpuArray backend ran
# `float64` on the GPU, where a consumer card does it at 1/32 of the `float32` rate).

# %%
# NBVAL_CHECK_OUTPUT
rng = np.random.RandomState(2012)
D = (rng.randn(N, feats).astype("float32"),                       # inputs
     rng.randint(size=N, low=0, high=2).astype("float32"))        # labels, 0 or 1
w_start = rng.randn(feats).astype("float32")                      # the same start for every run
print(D[0].shape, D[0].dtype, D[1].shape, D[1].dtype, "labels equal to 1:", int(D[1].sum()))


# %% [markdown]
# Below is the tutorial's model, unchanged except that it sits in a function, so that we can compile
# it once per device. The device is chosen by `config.change` around the construction: shared
# variables created under `device="gpu"` live in device memory, and `theano.function` places the graph
# on that device.
#
# * `p_1` is the predicted probability of label 1, a sigmoid of `x·w + b`, written out by hand;
# * the cost is the mean cross-entropy plus a small L2 penalty on `w`;
# * one call of `train` does one step of gradient descent (the `updates`) and returns the predictions
#   and the per-example cross-entropy.

# %%
# NBVAL_CHECK_OUTPUT
def tutorial_model(device, profile=False):
    with theano.config.change(device=device, floatX="float32"):
        x = T.matrix("x")
        y = T.vector("y")
        w = theano.shared(w_start.copy(), name="w")
        b = theano.shared(np.asarray(0.0, dtype="float32"), name="b")
        p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))                # probability of a 1
        prediction = p_1 > 0.5                                   # the predicted class
        xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)        # cross-entropy, as written
        cost = xent.mean() + 0.01 * (w ** 2).sum()               # what we minimise
        gw, gb = T.grad(cost, [w, b])
        train = theano.function([x, y], [prediction, xent],
                                updates={w: w - 0.01 * gw, b: b - 0.01 * gb},
                                name="train", profile=profile)
        predict = theano.function([x], prediction, name="predict")
    return train, predict


def tutorial_check(fn):
    # the tutorial's own test: look for the class name of the matrix-vector product
    names = [node.op.__class__.__name__ for node in fn.maker.fgraph.toposort()]
    if any(name in ["Gemv", "CGemv", "Gemm", "CGemm"] for name in names):
        return "Used the cpu"
    if any(name in ["GpuGemm", "GpuGemv"] for name in names):
        return "Used the gpu"
    return f"ERROR, not able to tell if theano used the cpu or the gpu: {names}"


train_cpu, predict_cpu = tutorial_model("cpu", profile=True)
train_gpu, predict_gpu = tutorial_model("gpu", profile=True)
print("device=cpu:", tutorial_check(train_cpu))
print("device=gpu:", tutorial_check(train_gpu))


# %% [markdown]
# ## Which ops ran where
#
# The tutorial tells the devices apart by one class name, but the whole compiled graph is worth a
# look. `f.toposort()` lists the Apply nodes in the order they run. Every coursekit op declares its
# device (`op.device`) and whether it is a transfer (`op.is_transfer`): we count with those
# attributes, not with class names.

# %%
# NBVAL_CHECK_OUTPUT
def where(node):
    if getattr(node.op, "is_transfer", False):
        return "transfer"
    return node.op.device


for label, fn in [("cpu", train_cpu), ("gpu", train_gpu)]:
    nodes = fn.toposort()
    counts = {kind: sum(where(n) == kind for n in nodes) for kind in ("cpu", "gpu", "transfer")}
    print(f"device={label}: {len(nodes)} ops, {counts}")
    print("   ", [n.op.__class__.__name__ for n in nodes if where(n) == "transfer" or "Gemv" in type(n.op).__name__])

# %% [markdown]
# The picture of the GPU training function (the legend is under its title, top left): purple boxes run on the
# device, orange ones on the host, and the red dashed boxes are transfers. Hover a box for its full
# name (after running the cell: a freshly opened notebook shows the picture as a PNG).

# %%
theano.printing.pydotprint(train_gpu)


# %% [markdown]
# On the GPU device the gradient's matrix-vector product became `GpuGemv` and the forward one a `GpuDot`
# (its bias `b` is added inside the fused kernels that read `x·w + b`, instead of being copied into a
# GEMV's output first: one launch fewer), the fused elementwise chains became `GpuElemwise`, and the compiler inserted `GpuFromHost` / `HostFromGpu` wherever a value
# crosses between host and device. Two uploads happen on every call: `x` and `y`, which we pass in as
# NumPy arrays. The example count `N` that the mean divides by is computed on the host and stays
# there: coursekit, like Theano's optimiser, keeps scalar work on the host, so it needs no copy. Two
# downloads bring the two outputs back, because a function returns host arrays unless told otherwise.
#
# ## Training on both devices
#
# Now the 10 000-step loop of the tutorial (fewer steps at the small size). We record the mean
# cross-entropy after every step for the loss curve, and the wall time of the loop with the device
# synchronised before the clock stops.

# %%
def fit(train, steps):
    losses = np.empty(steps)
    train(D[0], D[1])            # a warm-up step first, untimed (as the profile leaves out its first call)
    synchronize()
    start = time.perf_counter()
    for i in range(steps):
        pred, err = train(D[0], D[1])
        losses[i] = err.mean()
    synchronize()
    return losses, time.perf_counter() - start


losses_cpu, seconds_cpu = fit(train_cpu, training_steps)
losses_gpu, seconds_gpu = fit(train_gpu, training_steps)
accuracy_cpu = (predict_cpu(D[0]) == D[1]).mean()
accuracy_gpu = (predict_gpu(D[0]) == D[1]).mean()
Table(["device", "timed steps (after one warm-up)", "wall time", "per step", "training accuracy"],
      [[name, training_steps, format_seconds(s), format_seconds(s / training_steps), f"{a:.3f}"]
       for name, s, a in [("cpu", seconds_cpu, accuracy_cpu),
                          ("gpu (simulated GPU: CPU time)" if GPU_SIMULATED else "gpu", seconds_gpu, accuracy_gpu)]])

# %%
fig, ax = plt.subplots(figsize=(6, 3.5), dpi=70)
ax.plot(losses_cpu, label="device=cpu", lw=3, alpha=0.5)
ax.plot(losses_gpu, "--", label="device=gpu", lw=1.5)
ax.set_xlabel("training step")
ax.set_ylabel("mean cross-entropy")
ax.set_yscale("log")
ax.set_title("The two runs learn the same model")
ax.legend()
plt.show()
gap = float(np.max(np.abs(losses_cpu - losses_gpu)))
print(f"largest difference between the two loss curves: {gap:.2g}")
assert gap < 1e-3, "the two devices should learn the same model"

# %% [markdown]
# The curves lie on top of each other: same graph, same `float32` arithmetic. (On a real GPU the last
# digits can differ — the tutorial shows `exp` giving `1.61879337` on the CPU and `1.61879349` on the
# GPU — but not the shape of the curve.) The starting weights are large, so the first predictions are
# confidently wrong and the loss starts high. The training accuracy in the table is what this run
# reached after its steps; more features than examples means that a long enough run separates the
# training data, but a short run (the small size: 100 steps) is still far from it.
#
# The table's time per step is the whole loop, and the profile below reports a smaller figure per
# call. Where the difference goes is measured after the profile, not guessed.
#
# ## Profiling: where does the time go?
#
# Both training functions were compiled with `profile=True`. The profile's summary has Theano's
# Class / Ops / Apply tables; here we print the head of the Class table and the line the tutorial
# tells us to check: *time in CPU ops, GPU ops and transfer ops*.

# %%
for fn in (train_cpu, train_gpu):
    text = fn.profile.summary(file="str", n_ops_to_print=5, n_apply_to_print=0)
    head = text.split("Ops\n---")[0]
    print(head.strip())
    print(fn.profile.device_line())
    print()

# %% [markdown]
# **Where the loop's time went.** The CPU loop above took longer per step than the profile's
# `Function.__call__` figure. Three suspects: reading the loss back (`err.mean()`), the profiler's own
# bookkeeping after each call (it stores every op's time and the inputs' shapes, and leaves that work
# out of the time it reports), and the per-op timing inside each profiled call. The next cell times
# each on this machine (CPU time; the machine's load moves every figure):

# %%
# this machine, device=cpu: the loop of the table against its parts
train_plain, _ = tutorial_model("cpu", profile=False)      # the same graph, not profiled


def per_step(body, steps=50):
    body()
    start = time.perf_counter()
    for _ in range(steps):
        body()
    return (time.perf_counter() - start) / steps


_, err_now = train_cpu(D[0], D[1])
loop_profiled = per_step(lambda: train_cpu(D[0], D[1])[1].mean())
reported = train_cpu.profile.call_time / train_cpu.profile.timed_calls
loop_plain = per_step(lambda: train_plain(D[0], D[1])[1].mean())
calls_plain = per_step(lambda: train_plain(D[0], D[1]))
mean_only = per_step(lambda: err_now.mean(), steps=2000)
print(f"profiled function, loop with err.mean():     {format_seconds(loop_profiled)} per step (measured)")
print(f"  the profile's Function.__call__ per call:  {format_seconds(reported)}")
print(f"  err.mean() alone:                          {format_seconds(mean_only)}")
print(f"unprofiled function, loop with err.mean():   {format_seconds(loop_plain)} per step")
print(f"unprofiled function, calls alone:            {format_seconds(calls_plain)} per step")

# %% [markdown]
# Read it from the bottom. Reading the loss back is a few microseconds, a small part of the
# difference. The unprofiled function's loop is the step itself; the profiled loop adds the per-op
# timing inside each call (in the profile's figure) and the bookkeeping after each call (outside
# it). So a profile is the tool for *where* the time goes, and an unprofiled loop (`time_call`, which
# later cells use) the tool for *how much* a step costs.

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.5), dpi=70)
train_cpu.profile.plot(ax=axes[0], by="class", top=6)
train_gpu.profile.plot(ax=axes[1], by="class", top=6)
fig.tight_layout()
plt.show()

# %% [markdown]
# How to read this:
#
# * On the CPU, most of the time goes into the two `Gemv` (the forward `x·w` and the backward
#   `xᵀ·g`) and the fused elementwise ops. The tutorial's reference solution measured the same shape
#   on an Intel i7-4820K: 10 002 calls in 1.59 s, of which `CGemv` took 59.6 %.
# * On the GPU device, a large share is *transfer* time: every call uploads `x`, 400 × 784 × 4 bytes
#   ≈ 1.25 MB, to compute a product that takes a fraction of that time. The tutorial's reference
#   solution had already made `x` and `y` shared variables, and still took 3.54 s for 10 002 calls on a
#   GeForce GTX TITAN against 1.59 s on the CPU. Read that figure with its conditions: it was measured
#   with `CUDA_LAUNCH_BLOCKING=1` and `profile=True`, so every one of the ~20 kernels of a step was
#   waited for and timed on its own, and none could overlap with the host's work; a run without those
#   flags is faster. Even so, every op works on tiny vectors (400 or 784 numbers: far too few to keep
#   thousands of cores busy) and pays a kernel launch.

# %%
with theano.config.change(device="cpu"):
    z = T.vector("z")           # the score x·w + b
    y = T.vector("y")
    p_1 = 1 / (1 + T.exp(-z))
    xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
    # fusion off, so that each elementwise op keeps its own box in the picture
    loss = theano.function([z, y], xent, name="xent", mode=get_mode("FAST_RUN").excluding("fusion"))
theano.printing.pydotprint(loss)

# %%
# NBVAL_CHECK_OUTPUT
theano.printing.debugprint(loss)
for stage, rewrite, target in loss.maker.fgraph.rewrite_log:
    if any(word in rewrite for word in ("sigmoid", "entropy", "softplus")):
        print(f"{stage:>12}: {rewrite:<18} on {target}")

# %% [markdown]
# We wrote `1 / (1 + exp(-z))`, a logarithm of it, and a logarithm of one minus it. The compiler
# recognised the sigmoid (`recognise_sigmoid`), turned `1 - sigmoid(z)` into `sigmoid(-z)`, and then
# — in the *stabilize* stage — replaced each `log(sigmoid(z))` by `-softplus(-z)`, where
# `softplus(t) = log(1 + exp(t))` is computed without overflow. One more stabilize rewrite,
# `logistic_cross_entropy`, sees that `y·softplus(-z) + (1 - y)·softplus(z)` is a single
# cross-entropy: since `softplus(-z) = softplus(z) - z`, it equals `softplus(z) - y·z`, one softplus
# instead of two. `T.grad` differentiates the stabilised cost, so the gradient becomes just
# `sigmoid(z) - y` (divided by N for the mean). Finally a *specialize* rewrite,
# `softplus_minus_linear`, evaluates it as `(max(z, 0) - y·z) + log1p(exp(-|z|))`, the order
# PyTorch's and TensorFlow's logistic losses use: for a label of 0 or 1 the bracket is exact, so even
# a tiny loss keeps its digits. Mathematically nothing changed. Numerically a lot did, as soon as the
# scores get large.
#
# ### What goes wrong without the rewrite
#
# A trained model is *confident*: scores of ±30 or ±100 are common. Here is the formula exactly as
# written, in `float32` NumPy:

# %%
# NBVAL_CHECK_OUTPUT
z_values = np.array([-120, -30, 0, 30, 120], dtype="float32")
y_values = np.array([1, 0, 1, 1, 1], dtype="float32")
with np.errstate(all="ignore"):
    p = 1 / (1 + np.exp(-z_values))
    literal = -y_values * np.log(p) - (1 - y_values) * np.log(1 - p)
stable = y_values * np.logaddexp(0, -z_values) + (1 - y_values) * np.logaddexp(0, z_values)
print("z       ", z_values)
print("y       ", y_values)
print("p       ", p)
print("literal ", literal)
print("stable  ", stable.astype("float32"))

# %% [markdown]
# * `z = -120, y = 1`: `exp(120)` overflows `float32` (largest ≈ 3.4·10³⁸), `p` becomes exactly 0 and
#   `-log(0)` is `inf`. The true loss is 120: large, but a number.
# * `z = 120, y = 1`: a confident and *correct* prediction. `p` rounds to exactly 1, so
#   `(1 - y) * log(1 - p)` is `0 * (-inf)`, which is `nan`. One such example makes the mean cost `nan`,
#   the gradient `nan`, and after one update every weight is `nan`.
#
# The stable form never takes the log of something that rounded to 0. Compiling the same loss with the
# *stabilize* stage switched off shows that coursekit's rewrite is what saves us:

# %%
# NBVAL_CHECK_OUTPUT
with theano.config.change(device="cpu"):
    unstable = theano.function([z, y], xent, mode=get_mode("FAST_RUN").excluding("stabilize"))
    with np.errstate(all="ignore"):
        print("without stabilize:", unstable(z_values, y_values))
    print("with stabilize:   ", loss(z_values, y_values))


# %% [markdown]
# ## Making the GPU version faster
#
# The profile pointed at transfers and at tiny ops. The tutorial's tips give the remedies; we apply
# them one at a time, and measure each. A single training step is timed with `time_call` (warm-up
# first, device synchronised, best of several repeats); transfers are counted by a profiled copy of the
# same function.
#
# 1. **as written**: `x` and `y` are inputs, uploaded on every call;
# 2. **shared data**: `x` and `y` become `float32` shared variables, so they are uploaded once, when
#    they are created, and `train()` takes no arguments;
# 3. **outputs left on the device**: the outputs are wrapped in `gpu_from_host` (the prediction first
#    cast to `float32`), so nothing is downloaded, and `Out(..., borrow=True)` lets the function hand
#    back its own buffer instead of a copy;
# 4. **return only what you need**: during training nobody reads the predictions; return nothing
#    (the updates still happen).
#
# A fifth remedy, *float32 everywhere*, is checked separately below: here every variable is already
# `float32`.

# %%
# NBVAL_CHECK_OUTPUT
def gpu_model(variant, X, Y, profile=False):
    with theano.config.change(device="gpu", floatX="float32"):
        w = theano.shared(w_start.copy(), name="w")
        b = theano.shared(np.asarray(0.0, dtype="float32"), name="b")
        if variant == "as written":
            x, y = T.matrix("x"), T.vector("y")
            inputs, args = [x, y], (X, Y)
        else:
            x, y = theano.shared(X, name="x"), theano.shared(Y, name="y")   # uploaded once, here
            inputs, args = [], ()
        p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
        prediction = p_1 > 0.5
        xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
        cost = xent.mean() + 0.01 * (w ** 2).sum()
        gw, gb = T.grad(cost, [w, b])
        if variant in ("as written", "shared data"):
            outputs = [prediction, xent]
        elif variant == "outputs on device":
            outputs = [theano.Out(theano.gpu_from_host(T.cast(prediction, "float32")), borrow=True),
                       theano.Out(theano.gpu_from_host(xent), borrow=True)]
        else:
            outputs = []
        train = theano.function(inputs, outputs, updates={w: w - 0.01 * gw, b: b - 0.01 * gb},
                                profile=profile)
    return train, args


VARIANTS = ["as written", "shared data", "outputs on device", "return nothing"]
rows, timings = [], {}
for variant in VARIANTS:
    probe, args = gpu_model(variant, *D, profile=True)
    for _ in range(5):
        probe(*args)
    split = probe.profile.device_split()["transfer"]
    calls = probe.profile.timed_calls
    names = [type(n.op).__name__ for n in probe.toposort()]
    rows.append([variant, names.count("GpuFromHost"), names.count("HostFromGpu"),
                 round(split["count"] / calls), f"{split['bytes'] / calls:,.0f} B"])
Table(["variant", "GpuFromHost ops", "HostFromGpu ops", "transfers per call", "moved per call"], rows)

# %%
from coursekit import costmodel
from coursekit.profiling.predict import predict_calls

VARIANT_CARDS = ("gtx-titan", "t4", "h100")
# coursekit's W3 step on the H100 lent on 2026-11-24 (the "as written" variant: data passed each call)
H100_MEASURED = {"as written": 1.104e-3}   # benchmarks/results/2026-11-24-intel-xeon-16c-gpu-h100-80gb-hbm3-quick.md
modelled_variants = {}
for variant in VARIANTS:
    train, args = gpu_model(variant, *D)
    timings[variant] = time_call(train, *args, repeat=3, model=False)
    # one traced run per variant: every card's column gets the same measured host time
    modelled_variants[variant] = predict_calls(train, *args, models=VARIANT_CARDS)
with theano.config.change(device="cpu"):
    timings["cpu, as written"] = time_call(train_cpu, *D, repeat=3)
base = timings["as written"].best
Table(["variant", "measured per training step", "measured, vs. as written"]
      + [f"whole call, {costmodel.model(card).label}" for card in VARIANT_CARDS]
      + ["measured on an H100 (2026-11-24)"],
      [[name, str(t), f"{base / t.best:.2f}x"]
       + ([f"{format_seconds(modelled_variants[name][card].total)} ({modelled_variants[name][card].band})"
           for card in VARIANT_CARDS] if name in modelled_variants else ["—"] * len(VARIANT_CARDS))
       + [format_seconds(H100_MEASURED[name]) if name in H100_MEASURED else "—"]
       for name, t in timings.items()],
      caption=f"N = {N}. GPU rows measured on: {GPU_LABEL}; whole call = modelled device path + host time "
              "measured here; the band is the preset's error on the project's H100 corpus")


# %% [markdown]
# What changed, in the order of the table:
#
# * **shared data** removed the two big uploads: 1.25 MB per step for `x` is gone, and nothing is
#   uploaded any more. On a real GPU this is the biggest single win: a PCIe x16 transfer
#   runs at about 3–6 GB/s on PCIe 2.0 and up to about 50 GB/s on PCIe 5.0 from page-locked memory
#   (less from ordinary NumPy memory), while the GPU reads its own memory at hundreds of GB/s to a few
#   TB/s (the presets in `coursekit/costmodel/presets.py` cite each figure).
# * **outputs on device** removed the downloads: the predictions and the losses stay in device
#   memory until someone asks for them.
# * **return nothing** also removes the work of producing outputs nobody reads.
#
# On the simulated GPU a "transfer" is a NumPy copy, so the gains you see are only the copies saved;
# treat the ratios as a count of avoided work, not as a GPU measurement.
#
# The modelled columns are whole calls: the host time coursekit's Python spends per step on this
# machine, plus each card's modelled launches, kernels, copies and synchronisation. The next cell reads
# the T4 column and sets the H100 column beside the one step the project measured on an H100.
#

# %%
# NBVAL_IGNORE_OUTPUT
t4 = {v: modelled_variants[v]["t4"] for v in VARIANTS}
shared_cut = 1 - t4["shared data"].total / t4["as written"].total
overall = t4["as written"].total / t4["return nothing"].total
tuned = t4["return nothing"]
print(f"modelled (t4): shared data removes {shared_cut:.0%} of a whole step; all three changes make it "
      f"{overall:.1f}x shorter")
print(f"the tuned step: {tuned.launches} launches cost {format_seconds(tuned.parts['launch'])} of its "
      f"{format_seconds(tuned.total)}; its kernels {format_seconds(tuned.parts['kernel'])}")
h100 = modelled_variants["as written"]["h100"]
print(f"as written, {h100.figure()}; measured on an H100 (2026-11-24): "
      f"{format_seconds(H100_MEASURED['as written'])}, {H100_MEASURED['as written'] / h100.total:.1f}x the model")
# the checks use the model's device path: the host part is measured on this machine and grows with its load
device_cut = 1 - t4["shared data"].device / t4["as written"].device
assert device_cut > 0.5 and t4["as written"].device / tuned.device > 2 and tuned.parts["launch"] > tuned.parts["kernel"]
assert H100_MEASURED["as written"] / h100.device > 2   # far outside the one-launch band (held out: at most 1.79x);
# the model's device path: this machine's host time, in h100.total, grows with its load

# %% [markdown]
# The tuned step's launches and kernels add up to more than its whole call. That is the overlap
# rule of a modelled call: a call that copies to or from the host waits for the GPU, so its parts
# add up; a call that leaves everything on the device (the tuned step copies nothing) only queues
# its kernels, so in a loop the host issues the next launches while the GPU runs this step's
# kernels, and the slower of the two sets the pace:

# %%
# the overlap rule of a modelled call, read from the tuned step's parts (t4 preset)
host_part = tuned.host or 0.0
issue = host_part + tuned.parts["launch"] + tuned.parts["alloc"] + tuned.parts["transfer"]
busy = tuned.parts["kernel"] + tuned.parts["transfer"]
rule = host_part + tuned.device if tuned.synchronises else max(issue, busy)
print(f"tuned step, waits for the GPU: {tuned.synchronises}")
print(f"max(host {format_seconds(host_part)} (measured here) + launches {format_seconds(tuned.parts['launch'])}"
      f" + allocations {format_seconds(tuned.parts['alloc'])}, kernels {format_seconds(busy)}) = "
      f"{format_seconds(rule)}: the whole call, {tuned.figure()}")
assert not tuned.synchronises and abs(rule - tuned.total) < 1e-12


# %% [markdown]
# Shared data removes more than half of a step (the upload of `x`), and the three changes together
# make the step several times shorter. What remains is launches: each one costs the host several
# microseconds, more than the small kernel it starts. The measured H100 step (run on 2026-11-24, when the step still uploaded `N` as well: five copies, now four) is several times longer
# than even the H100 model says, and outside the band measured held out on the corpus: that corpus holds
# calls of one kernel launch (and up to four copies), and this step's GPU ops (twelve when it was measured, nine now) and its copies cost more
# per op on coursekit's CuPy path than the model's figures. So a step of many launches is priced with its
# launch count and a separate, wider band ("-24%/+250% at <n> launches, unmeasured"), whose top is this one
# measurement, until such steps are measured on the current path. A modelled figure is a prediction; where a
# measurement exists, trust the measurement.

# %%
# NBVAL_CHECK_OUTPUT
def training_places(labels, cast):
    with theano.config.change(device="gpu", floatX="float32", warn_float64="ignore"):
        x = theano.shared(D[0], name="x")
        y = theano.shared(labels, name="y")
        w = theano.shared(w_start.copy(), name="w")
        y_used = T.cast(y, "float32") if cast else y
        p_1 = T.nnet.sigmoid(T.dot(x, w))
        xent = -y_used * T.log(p_1) - (1 - y_used) * T.log(1 - p_1)
        fn = theano.function([], [], updates={w: w - 0.01 * T.grad(xent.mean(), w)})
    kinds = [where(n) for n in fn.toposort()]
    return [str(xent.dtype), kinds.count("cpu"), kinds.count("gpu"), kinds.count("transfer")]


int_labels = D[1].astype("int32")
Table(["labels", "dtype of xent", "CPU ops", "GPU ops", "transfer ops"],
      [["int32 shared, used as they are", *training_places(int_labels, cast=False)],
       ["int32 shared, T.cast in the graph", *training_places(int_labels, cast=True)],
       ["cast to float32 before storing", *training_places(D[1], cast=False)]])

# %% [markdown]
# One missing cast turned the loss into `float64`: its whole computation moved back to the host, and
# values now shuttle between host and device inside every step. A `T.cast(..., "float32")` where the
# integers enter the graph brings the work back to the GPU (one small upload of the cast labels
# remains); casting *before* storing the shared variable, as the tutorial advises, removes that upload
# too. (In Theano, a `mean` of integers needed the same care: it divides by an `int64` length.)
#
# ## Scaling N: where does the GPU win?
#
# Per step, the work grows with N (the two `Gemv` read the whole N × 784 matrix), while the fixed costs
# (launches, the Python call, small transfers) stay constant. So the GPU's advantage, if any, should
# grow with N. The tutorial's reference solution says as much: at N = 400 each GPU op is slower than its
# CPU twin, and "set N = 4000" to see the gain. We time the best CPU version (data in shared variables,
# nothing returned) against the GPU as written and the tuned GPU version.
#
# **Predict first.** The tutorial's CPU took 1.59 s for 10 002 steps at N = 400 (profiled, on an Intel
# i7-4820K), about 159 µs a step, and a step's work grows in proportion to N. From which N on would the
# tuned GPU version (data shared, nothing returned) beat that CPU on a T4? And the version as written,
# which uploads `x` on every step: does it ever win?

# %%
# Your prediction (not graded here; task 4 of exercise 5 grades the crossover)
my_crossover_n_t4 = None             # smallest N from which the tuned GPU step (T4) beats the tutorial's CPU
my_as_written_ever_wins = None       # True or False


# %%
def cpu_model(X, Y):
    with theano.config.change(device="cpu", floatX="float32"):
        x, y = theano.shared(X, name="x"), theano.shared(Y, name="y")
        w = theano.shared(rng.randn(X.shape[1]).astype("float32"), name="w")
        b = theano.shared(np.asarray(0.0, dtype="float32"), name="b")
        p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
        xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
        cost = xent.mean() + 0.01 * (w ** 2).sum()
        gw, gb = T.grad(cost, [w, b])
        return theano.function([], [], updates={w: w - 0.01 * gw, b: b - 0.01 * gb})


sizes = size([100, 300, 900], [400, 4000, 40000])
scaling = []
for n in sizes:
    X = rng.randn(n, feats).astype("float32")
    Y = rng.randint(size=n, low=0, high=2).astype("float32")
    t_cpu = time_call(cpu_model(X, Y), repeat=3)
    slow, slow_args = gpu_model("as written", X, Y)
    t_slow = time_call(slow, *slow_args, repeat=3)
    fast, _ = gpu_model("return nothing", X, Y)
    t_fast = time_call(fast, repeat=3)
    scaling.append((n, t_cpu, t_slow, t_fast))
Table(["N", "CPU (tuned)", "GPU as written", "GPU tuned", "CPU / GPU tuned"],
      [[n, str(a), str(b), str(c), f"{a.best / c.best:.2f}x"] for n, a, b, c in scaling])

# %%
from coursekit import costmodel
from coursekit.profiling.predict import predict_call, predict_scaled

TUTORIAL_CPU_STEP = 1.590916 / 10002     # i7-4820K, N = 400, profile=True: the tutorial's measurement
GPU_PRESETS = ("gtx-titan", "t4", "h100")


def modelled_steps(variant, ns, preset):
    # whole calls: the host time measured here at N = 400 (coursekit's dispatch does not grow with N, every
    # op being on the device) + the modelled device path priced at each N (nothing runs at N)
    fn, args = gpu_model(variant, *D)
    model = costmodel.model(preset)
    host = predict_call(fn, *args, model=model).host
    return [predict_scaled(fn, *args, sizes={N: n_to}, model=model).with_host(host) for n_to in ns]


model_ns = [100, 200, 400, 1000, 2000, 4000, 10_000, 20_000, 40_000, 100_000, 200_000]
cpu_scaled = [TUTORIAL_CPU_STEP * n / N for n in model_ns]
modelled_gpu = {(v, p): modelled_steps(v, model_ns, p) for v in ("return nothing", "as written") for p in GPU_PRESETS}

fig, ax = plt.subplots(figsize=(7.5, 4.2), dpi=80)
ax.loglog(model_ns, cpu_scaled, "k--", label="CPU: tutorial's i7-4820K at N = 400 (measured), scaled ∝ N")
ax.loglog([row[0] for row in scaling], [row[1].best for row in scaling], "ks",
          label="CPU (tuned), measured here, 1 BLAS thread")
for (variant, preset), calls in modelled_gpu.items():
    style = "-" if variant == "return nothing" else ":"
    ax.loglog(model_ns, [c.total for c in calls], style, marker="o", ms=3,
              label=f"GPU {'tuned' if variant == 'return nothing' else 'as written'}, whole call, "
                    f"{costmodel.model(preset).label} ({calls[0].band})")
ax.loglog([400], [3.535239 / 10002], "r*", ms=12,
          label="GTX TITAN, tutorial (measured, CUDA_LAUNCH_BLOCKING=1, profile=True)")
ax.loglog([400], [H100_MEASURED["as written"]], "bX", ms=10,
          label="coursekit as written, measured on an H100 (2026-11-24)")
ax.set_xlabel("N (examples; 784 features)")
ax.set_ylabel("seconds per training step")
ax.set_title("Logistic regression step: CPU measured, GPU MODELLED whole calls (a prediction)", fontsize=10)
ax.legend(fontsize=6, loc="upper left")
fig.tight_layout()
plt.show()
if GPU_SIMULATED:
    print("The measured GPU rows of the table above ran on the SIMULATED GPU (NumPy on this CPU); the GPU lines\n"
          "in this picture are the cost model's predictions (modelled device path + host time measured here), "
          "not measurements.")


# %%
# NBVAL_IGNORE_OUTPUT
def crossover(calls):
    # the smallest N of the sweep from which on the whole GPU call stays below the tutorial's CPU step scaled to N
    return next((n for i, n in enumerate(model_ns)
                 if all(c.total < cpu for c, cpu in zip(calls[i:], cpu_scaled[i:]))), None)


crossovers = {}
for (variant, preset), calls in modelled_gpu.items():
    crossovers[variant, preset] = n_win = crossover(calls)
    print(f"GPU {variant:<15} {costmodel.model(preset).label:<22} ({calls[0].band}):",
          f"beats the tutorial's CPU from N = {n_win:,} on" if n_win else "never beats the tutorial's CPU in this sweep")
print(f"you predicted: tuned T4 from N = {my_crossover_n_t4}; as written ever wins: {my_as_written_ever_wins}"
      + ("  (no prediction made)" if my_crossover_n_t4 is None and my_as_written_ever_wins is None else ""))
upload = feats * 4 / costmodel.model("h100").spec.link_pageable     # seconds per example of x, pageable
print(f"per example: the tutorial's CPU {format_seconds(TUTORIAL_CPU_STEP / N)}, "
      f"uploading its 784 float32 to an H100 {format_seconds(upload)}")
assert crossovers["as written", "gtx-titan"] is None and crossovers["as written", "t4"] is None
assert crossovers["as written", "h100"] is not None and crossovers["as written", "h100"] >= 4000
assert all(200 <= (crossovers["return nothing", p] or 0) <= 2000 for p in GPU_PRESETS)


# %% [markdown]
# **Reading the picture.** Each GPU line is a whole modelled call: the host time coursekit's Python
# spends per step on this machine, plus the card's launches, kernels, copies and synchronisation. The
# lines are flat at small N, where a step is its host work and about ten kernel launches and the
# arithmetic is nothing, and rise in proportion to N once the two `Gemv`s stream the N × 784 matrix
# from device memory. The CPU line rises in proportion to N from the start. Where they cross is the N
# where the GPU starts to win.
#
# * The **tuned** version (data in shared variables, nothing returned) crosses at a few hundred
#   examples, around the tutorial's N = 400 (the printout says where, card by card): below that, a
#   step's fixed cost — the host's dispatch and a launch cost per kernel — is more than the CPU's whole
#   step. With no copy left in the step, nothing makes the host wait for the GPU, so in a loop the host
#   queues the next step while the GPU runs this one. The
#   tutorial measured the GTX TITAN slower than its CPU at N = 400 (the red star), with
#   `CUDA_LAUNCH_BLOCKING=1` and `profile=True` adding a wait and a timer to each of its ~20 kernels.
# * The version **as written** uploads 1.25 MB of `x` per step at N = 400, and N × 784 × 4 bytes in
#   general. On the GTX TITAN and the T4 its line stays above the CPU's at every N: their PCIe links move
#   those bytes more slowly than the CPU reads them from its own memory. On the H100 the model has it
#   overtake the CPU only from several thousand examples on, because uploading an example takes almost as long as the
#   CPU needs to process it (the last line of the printout), so only the fixed costs are left to
#   amortise. The blue cross is coursekit's real step on an H100 at N = 400: slower still than the model
#   says (see the table above). Keeping the data on the device is what makes the GPU worth having.
#
# The lines carry the presets' error bands: the H100's from the project's measurements (the wider
# many-launch band, since a step is many launches), the older cards' "uncalibrated". The tutorial's conclusion in one sentence: the GPU pays off when the data lives
# on it and the operations are large; everything else is overhead. If the measured CPU points jump
# abruptly between two sizes, suspect a multi-threaded BLAS on busy cores: `time_call` pins BLAS to one
# thread for that reason.
#
# **Exercise:** [`exercises/05_logistic_regression_exercises.ipynb`](../exercises/05_logistic_regression_exercises.ipynb) ([in Colab](https://colab.research.google.com/github/coursekit/coursekit/blob/main/exercises/05_logistic_regression_exercises.ipynb)):
# a trainer with its data on the device, where each op of a compiled graph runs, the stable
# cross-entropy written as a rewrite of your own, and the crossover size of this section priced
# with the model.
