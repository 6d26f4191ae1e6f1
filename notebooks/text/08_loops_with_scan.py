# %% [markdown]
# # Lesson 8 — Loops with `scan`
#
# A graph has no `for` statement. Yet recurrent networks, iterative solvers and samplers all repeat a
# step whose input is the previous step's output. Theano's answer, which five pages of Razvan
# Pascanu's slides (*GPU processing with Theano*, in our seeds) walk through, is `scan`: you write
# the step as a Python function of symbolic variables, `scan` calls it **once** to build the graph of
# one step, and the compiled function runs that small graph once per step inside a single op,
# `Scan`.
#
# This lesson asks four questions and answers each with an experiment:
#
# 1. How does a step read values from several steps back (*taps*), and what exactly does `scan`
#    hand to your step function?
# 2. Does the gradient flow back through all the steps, and does it agree with finite differences?
# 3. What does a loop cost per step, compared with the same work written as one big operation, on
#    this machine's CPU (measured) and on a GPU (modelled: a prediction)? When can the compiler
#    remove the loop altogether ("this should be just a GEMM call", says the slide)?
# 4. On the GPU device, does the loop's state stay in device memory, or does every step cross the
#    bus?
#
# It ends with the slides' debugging tools: test values, `printing.Print`, and reading an error
# that points at your own line.

# %% [markdown]
# ## Setup
#
# `COURSEKIT_SIZE=full` uses larger states and longer loops; the default sizes run in seconds
# anywhere. Sections 1–5 run on the CPU; section 6 switches to the GPU device (a real GPU when CuPy
# sees one, otherwise the simulated GPU, whose timings are CPU timings and say so).

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
import io
import os
import pdb
import re
import sys
import warnings

import matplotlib.pyplot as plt
import numpy as np

import coursekit as theano
import coursekit.tensor as T
from coursekit.compile.mode import get_mode
from coursekit.lessons import Table, device_label, format_seconds, size, time_call
from coursekit import costmodel
from coursekit.profiling.predict import predict_call

theano.config.floatX = "float32"
theano.config.device = "cpu"        # section 6 switches to the GPU device with config.change
print(device_label())

hidden = size(64, 256)               # state size of the loops in sections 4 and 6
steps = size(100, 1000)              # steps of those loops
rng = np.random.default_rng(8)


def weights(rows, cols, gain=1.0):
    # a random float32 matrix whose products keep roughly the scale of their input
    return (gain * rng.standard_normal((rows, cols)) / np.sqrt(rows)).astype("float32")


# %% [markdown]
# ## 1. A recurrence with taps
#
# The slides' example is a small recurrent network with an output fed back into the state. With
# row vectors (the convention of the slides' code: `dot(x, W)`), input `u(n)`, state `x(n)` and
# output `y(n)`:
#
# $$x(n) = \tanh\big(x(n-1)\,W + u(n)\,W^{in}_1 + u(n-4)\,W^{in}_2 + y(n-1)\,W^{fb}\big), \qquad
# y(n) = x(n-3)\,W^{out}$$
#
# Step *n* reads the input now and four steps ago, the state one and three steps ago, and the output
# one step ago. In `scan` these offsets are **taps**: `sequences=dict(input=u, taps=[-4, 0])` and
# `outputs_info=[dict(initial=x0, taps=[-3, -1]), y0]` (a bare initial value such as `y0` means
# `taps=[-1]`). The step function receives its arguments in a fixed order: every tap of every
# sequence, then every tap of every output (in the order of the lists), then the non-sequences.

# %%
n_u, n_x, n_y = 3, size(12, 50), 2
echo_params = {"W": weights(n_x, n_x, 0.9), "W_in_1": weights(n_u, n_x), "W_in_2": weights(n_u, n_x),
               "W_feedback": weights(n_y, n_x, 0.5), "W_out": weights(n_x, n_y)}

u = T.fmatrix("u")
x_init = T.fmatrix("x_init")        # x(-3), x(-2), x(-1): three rows, because the deepest tap is -3
y_init = T.fvector("y_init")        # y(-1)
W, W_in_1, W_in_2, W_feedback, W_out = (T.fmatrix(name) for name in echo_params)


def echo_step(u_4_ago, u_now, x_3_ago, x_1_ago, y_1_ago, W, W_in_1, W_in_2, W_feedback, W_out):
    # sequence taps [-4, 0], then the state's taps [-3, -1], then the output's tap [-1], then the weights
    x_now = T.tanh(T.dot(x_1_ago, W) + T.dot(u_now, W_in_1) + T.dot(u_4_ago, W_in_2)
                   + T.dot(y_1_ago, W_feedback))
    y_now = T.dot(x_3_ago, W_out)
    return [x_now, y_now]


(x_vals, y_vals), updates = theano.scan(
    echo_step,
    sequences=dict(input=u, taps=[-4, 0]),
    outputs_info=[dict(initial=x_init, taps=[-3, -1]), y_init],
    non_sequences=[W, W_in_1, W_in_2, W_feedback, W_out],
    strict=True)
echo = theano.function([u, x_init, y_init, W, W_in_1, W_in_2, W_feedback, W_out], [x_vals, y_vals])

# %% [markdown]
# ### Predict
#
# `u` will have 24 rows. How many steps does the loop make, and how many rows do `x_vals` and
# `y_vals` have? (Hint: the first step needs `u(n-4)`.) Write your answer down, then run the cell.
#
# The reference is a plain NumPy loop that keeps the history in Python lists, written independently
# of `scan`: it has to agree to float32 rounding.

# %%
# NBVAL_CHECK_OUTPUT
u_val = rng.standard_normal((24, n_u)).astype("float32")
x_init_val = (0.1 * rng.standard_normal((3, n_x))).astype("float32")
y_init_val = np.zeros(n_y, dtype="float32")
x_got, y_got = echo(u_val, x_init_val, y_init_val, *echo_params.values())


def numpy_echo(u, x_init, y_init, p):
    xs, ys = list(x_init), [y_init]          # xs[-1] is x(n-1), xs[-3] is x(n-3)
    for n in range(4, len(u)):
        x_now = np.tanh(xs[-1] @ p["W"] + u[n] @ p["W_in_1"] + u[n - 4] @ p["W_in_2"]
                        + ys[-1] @ p["W_feedback"])
        ys.append(xs[-3] @ p["W_out"])
        xs.append(x_now)
    return np.array(xs[3:]), np.array(ys[1:])


x_ref, y_ref = numpy_echo(u_val, x_init_val, y_init_val, echo_params)
print("u:", u_val.shape, "-> x_vals:", x_got.shape, " y_vals:", y_got.shape)
print("agrees with the NumPy loop:", np.allclose(x_got, x_ref, atol=1e-5), np.allclose(y_got, y_ref, atol=1e-5))


# %% [markdown]
# Twenty steps: with taps `[-4, 0]` the first step is the one that can already see `u(n-4)`, so four
# rows of `u` are only ever read as "four steps ago". The traces hold one row per step and do **not**
# include the initial values you passed: `x_vals[0]` is the first *new* state. Forgetting this is the
# classic off-by-one of `scan` code.
#
# How does one op hold a history? For each output with taps, the loop keeps one buffer, the initial
# rows followed by the results so far, and hands the step *views* of the rows its taps name: no copy
# but the new row per step. Nothing in the compiled function depends on the history's length.

# %% [markdown]
# ## 2. `scan`'s arguments
#
# The slides list the signature; here is what each argument does in coursekit (the same as Theano):
#
# | argument | what it does |
# |---|---|
# | `fn` | the step: a Python function called **once**, on placeholders, to build the step's graph |
# | `sequences` | tensors looped over along their first axis; `dict(input=s, taps=[...])` for offsets |
# | `outputs_info` | per output: its initial value (taps `[-1]`), `dict(initial=..., taps=[...])`, or `None` for an output that is not fed back |
# | `non_sequences` | values every step sees unchanged (weights) |
# | `n_steps` | how many steps (default: the sequences' length) |
# | `truncate_gradient` | backpropagate through only the last *k* steps (-1: all) |
# | `go_backwards` | loop over the sequences from the end |
# | `mode`, `name`, `profile` | how the step is compiled, its name in graphs and profiles, a profile of the step alone |
# | `strict` | the step may use only what it is given: no variable captured from the enclosing Python scope |
#
# The step can also return an updates dictionary (for shared variables such as a random stream's
# state) and `theano.scan_module.until(condition)` to stop early; the exercise uses `until`.
#
# `strict=True` above is worth its keystrokes. A step that *captures* a variable instead of receiving
# it works without it, since `scan` adds the captured variable as a hidden non-sequence, but in a
# large model such a hidden input is easy to miss. With `strict=True` it is an error that names the
# variable and what to do:

# %%
def leaky_step(u_now, x_1_ago, W_in_1):
    return T.tanh(T.dot(x_1_ago, W) + T.dot(u_now, W_in_1))   # W is captured, not passed


try:
    theano.scan(leaky_step, sequences=u, outputs_info=T.zeros((n_x,)), non_sequences=[W_in_1], strict=True)
except theano.scan_module.ScanError as err:
    print(str(err).split(". Called at")[0])

# %% [markdown]
# ## 3. The gradient through time
#
# `T.grad` of a cost computed from a scan's outputs is another scan that runs **backwards**: at step
# *t* it receives the gradient flowing into the state from the later steps, differentiates one step
# of the forward graph, and passes the result on to step *t − 1*. This is backpropagation through
# time, derived by the library from the step's graph.
#
# A derived gradient is only as good as its check. Take a plain recurrent layer,
# `h(t) = tanh(u(t)·W_in + h(t−1)·W)`, a cost `C = ½‖h(T)‖²` on the last state, and compare the
# symbolic gradient with respect to `W` with central finite differences of the compiled forward
# function, in float64 so that the differences are accurate.

# %%
n_h, n_steps_bptt = 8, 40
u64, W_in64, W64, h0_64 = T.dmatrix("u"), T.dmatrix("W_in"), T.dmatrix("W"), T.dvector("h0")


def rnn_step(u_now, h_prev, W_in, W):
    return T.tanh(T.dot(u_now, W_in) + T.dot(h_prev, W))


def last_state_cost(truncate=-1):
    hs, _ = theano.scan(rnn_step, sequences=u64, outputs_info=h0_64, non_sequences=[W_in64, W64],
                        truncate_gradient=truncate)
    return 0.5 * T.sum(hs[-1] ** 2)


cost = last_state_cost()
cost_fn = theano.function([u64, W_in64, W64, h0_64], cost)
grad_fn = theano.function([u64, W_in64, W64, h0_64], T.grad(cost, [W64, u64]))

u_b = rng.standard_normal((n_steps_bptt, 3))
W_in_b = rng.standard_normal((3, n_h)) / np.sqrt(3)
W_b = 0.9 * np.linalg.qr(rng.standard_normal((n_h, n_h)))[0]     # every singular value 0.9
h0_b = np.zeros(n_h)
g_W, g_u = grad_fn(u_b, W_in_b, W_b, h0_b)

eps, worst = 1e-6, 0.0
for i, j in rng.integers(0, n_h, size=(6, 2)):
    bump = np.zeros_like(W_b)
    bump[i, j] = eps
    numeric = (cost_fn(u_b, W_in_b, W_b + bump, h0_b) - cost_fn(u_b, W_in_b, W_b - bump, h0_b)) / (2 * eps)
    worst = max(worst, abs(numeric - g_W[i, j]) / max(abs(numeric), 1e-8))
print(f"largest relative difference from central differences over 6 entries of W: {worst:.1e}")

# %%
# NBVAL_CHECK_OUTPUT
print("symbolic gradient agrees with finite differences:", worst < 1e-5)
print("the gradient graph runs a second, backward loop:",
      sorted(str(n.op) for n in grad_fn.toposort() if "Scan" in type(n.op).__name__))

# %% [markdown]
# ### How far back does the gradient reach?
#
# The gradient with respect to each *input* `u(t)` tells how much the last state still depends on
# what the network saw at step *t*. Predict the shape of the curve of ‖∂C/∂u(t)‖ against *t* when
# every singular value of `W` is 0.9 (each step back multiplies by at most 0.9 times the slope of
# tanh), and when they are 1.1. Then look; the third curve is the first setting with
# `truncate_gradient=10`, which backpropagates through the last ten steps only.

# %%
truncated_fn = theano.function([u64, W_in64, W64, h0_64], T.grad(last_state_cost(10), u64))
curves = {
    "singular values 0.9": g_u,
    "singular values 1.1": grad_fn(u_b, W_in_b, W_b * (1.1 / 0.9), h0_b)[1],
    "0.9, truncate_gradient=10": truncated_fn(u_b, W_in_b, W_b, h0_b),
}
fig, ax = plt.subplots(figsize=(6.5, 3.4), dpi=80)
for (label, g), style in zip(curves.items(), ["o-", "s-", "x--"]):
    norms = np.linalg.norm(g, axis=1)
    shown = norms > 0
    ax.semilogy(np.arange(n_steps_bptt)[shown], norms[shown], style, markersize=3, label=label)
ax.set_xlabel("step t of the input u(t)")
ax.set_ylabel("‖∂C/∂u(t)‖ (log scale)")
ax.set_title("Gradient of the last state's cost reaching each input (computed on the CPU)", fontsize=9)
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
norms = {label: np.linalg.norm(g, axis=1) for label, g in curves.items()}
print("0.9: the gradient at t=0 is smaller than at the last step by more than 100x:",
      bool(norms["singular values 0.9"][0] * 100 < norms["singular values 0.9"][-1]))
print("truncated: steps with a zero gradient:", int(np.sum(norms["0.9, truncate_gradient=10"] == 0)))

# %% [markdown]
# With contracting weights the gradient shrinks geometrically as it travels back: the early inputs
# barely matter to the last state, and a model trained this way cannot learn long-range
# dependencies. Singular values of 1.1 did not make it grow: every step back also multiplies by the
# slope of tanh, which is below 1 and smaller the more the units saturate, so the product still
# shrinks, only more slowly. To explode, the weights must outgrow that slope at every step. This *vanishing gradient* (and its twin, the exploding gradient) is what Pascanu's
# own thesis work studied. `truncate_gradient=k` cuts the backward loop after *k* steps: cheaper,
# and zero beyond them, so use it only when the dependencies you care about are short.

# %% [markdown]
# ## 4. What a loop costs per step
#
# A `Scan` runs its step as a small compiled function, once per step, from a Python loop. Each step
# pays a fixed price (a Python iteration, setting inputs, running a few thunks, copying the result into
# the trace) on top of its arithmetic. When the step is tiny, the fixed price is most of it.
#
# Take the slides' last scan, one matrix–vector product per row: `out[t] = dot(W, x[t])`. Written
# without a loop it is one matrix–matrix product, `dot(X, W.T)`. Here are four versions: NumPy's own
# loop and single product, and coursekit's scan with and without the rewrite of section 5 (the
# `scan` rewrites are switched off by excluding their tag from the mode).
#
# **Predict:** at 100 steps of a 64-wide product, how many times slower than one product is the
# loop, in NumPy and in coursekit?

# %%
X, Wm = T.fmatrix("X"), T.fmatrix("W")
rows_out, _ = theano.scan(lambda x_t, W: T.dot(W, x_t), sequences=X, non_sequences=Wm)
f_loop = theano.function([X, Wm], rows_out, mode=get_mode("FAST_RUN").excluding("scan"), name="scan loop")
f_gemm = theano.function([X, Wm], rows_out, name="rewritten")

W_val = weights(hidden, hidden)
calls = size(10, None)               # calls per timed repeat (None: as many as fit in 0.05 s)
sweep = size([10, 100, 200], [10, 100, 1000, 3000])
measured = {name: [] for name in ("NumPy loop", "NumPy, one product", "coursekit scan", "coursekit, rewritten")}
for n in sweep:
    X_val = rng.standard_normal((n, hidden)).astype("float32")
    assert np.allclose(f_loop(X_val, W_val), X_val @ W_val.T, atol=1e-4)
    assert np.allclose(f_gemm(X_val, W_val), X_val @ W_val.T, atol=1e-4)
    measured["NumPy loop"].append(time_call(lambda: [W_val @ x for x in X_val], number=calls, repeat=5))
    measured["NumPy, one product"].append(time_call(lambda: X_val @ W_val.T, number=calls, repeat=5))
    measured["coursekit scan"].append(time_call(f_loop, X_val, W_val, number=calls, repeat=5))
    measured["coursekit, rewritten"].append(time_call(f_gemm, X_val, W_val, number=calls, repeat=5))

fig, ax = plt.subplots(figsize=(6.5, 3.6), dpi=80)
for (name, timings), style in zip(measured.items(), ["o--", "s--", "o-", "s-"]):
    ax.loglog(sweep, [t.best * 1e6 for t in timings], style, label=name)
ax.set_xlabel(f"steps (rows of X; each a product with a {hidden} x {hidden} W)")
ax.set_ylabel("microseconds per call (best of 5 repeats)")
ax.set_title("out[t] = dot(W, x[t]): MEASURED on this machine's CPU, 1 BLAS thread", fontsize=9)
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
i100 = sweep.index(100)
span = sweep[-1] - sweep[0]
extra = {name: (timings[-1].best - timings[0].best) / span for name, timings in measured.items()}
rows = []
for name, timings in measured.items():
    rows.append([name, format_seconds(timings[i100].best), format_seconds(extra[name]),
                 f"x{timings[i100].best / measured['NumPy, one product'][i100].best:.1f}"])
if min(extra.values()) > 0:      # a difference of two timings: noise on a busy machine can swamp a tiny one
    print(f"this run: one more step of NumPy's loop costs {extra['NumPy loop'] / extra['NumPy, one product']:.0f} "
          f"times one more row of its single product; one more step of coursekit's scan, "
          f"{extra['coursekit scan'] / extra['NumPy loop']:.1f} times one of NumPy's loop")
Table(["version", "per call at 100 steps", "cost of one more step", "vs NumPy's one product"], rows,
      caption="MEASURED on this machine's CPU (1 BLAS thread)")

# %% [markdown]
# Read the column "cost of one more step": an extra step of a loop costs many times what an extra
# row costs the single product (the line above the table gives this run's ratio; it was about ten on
# the 2-core machine this lesson was written on), although the arithmetic is the same (a 64 × 64 matrix–vector
# product, 4096 multiply–adds, is well under a microsecond of BLAS). A loop pays a fixed price per
# step; a single product pays it once, and its arithmetic runs in one BLAS call that uses the cache
# and vector units far better than a hundred small ones. coursekit's loop costs more
# per step than NumPy's own loop, because every step also runs the compiled step function's
# machinery (`benchmarks/scan_conv.py` measures it on an RNN step against a hand-written NumPy loop).
#
# ### And on a GPU? (modelled)
#
# On a GPU every op of the step is at least one **kernel launch**, and a launch costs microseconds
# before any arithmetic. The cost model (`coursekit.costmodel`, datasheet presets) prices the
# two compiled graphs on the GPU device at 100 steps: it counts what they do (launches, bytes,
# FLOPs) and turns the counts into time. These are predictions for the named cards, not measurements,
# and none of these cards was measured by the project except the H100 (its band is printed with it: the
# wider one for calls of many launches, since its corpus holds calls of one launch);
# the loop's Python dispatch on the host comes on top of them (section 6 adds it).

# %%
X100 = rng.standard_normal((100, hidden)).astype("float32")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")          # "no GPU: using the simulated GPU" is said by device_label below
    with theano.config.change(device="gpu"):
        gpu_loop = theano.function([X, Wm], rows_out, mode=get_mode("FAST_RUN").excluding("scan"))
        gpu_gemm = theano.function([X, Wm], rows_out)
        modelled = {preset: (predict_call(gpu_loop, X100, W_val, model=costmodel.model(preset)),
                             predict_call(gpu_gemm, X100, W_val, model=costmodel.model(preset)))
                    for preset in ("gtx580", "t4", "h100")}


def compute(call):
    # the modelled seconds of kernel launches and kernels (transfers and allocations are listed apart)
    return call.parts["launch"] + call.parts["kernel"]


Table(["GPU model", "scan loop: launches + kernels", "one GEMM: launches + kernels", "ratio",
       "transfers + allocations (loop / GEMM)"],
      [[costmodel.model(p).label, format_seconds(compute(loop)), format_seconds(compute(gemm)),
        f"x{compute(loop) / compute(gemm):.0f}",
        f"{format_seconds(loop.device - compute(loop))} / {format_seconds(gemm.device - compute(gemm))}"]
       for p, (loop, gemm) in modelled.items()],
      caption="MODELLED device time per call at 100 steps (a prediction, not a measurement; "
              f"bands: {', '.join(f'{p} {loop.band}' for p, (loop, _) in modelled.items())})")

# %%
# NBVAL_CHECK_OUTPUT
loop_call, gemm_call = modelled["t4"]
print(f"kernel launches per call: scan loop {loop_call.launches}, rewritten {gemm_call.launches}")
h100_over_t4 = compute(modelled["t4"][0]) / compute(modelled["h100"][0])
print(f"the loop's launches + kernels, t4 / h100: {h100_over_t4:.2f}")
assert h100_over_t4 < 1.5

# %% [markdown]
# The model agrees with the CPU measurement in direction, and the gap is about a hundred times on
# every card: a hundred launches of a tiny kernel against one launch of a kernel that does all the
# rows at once. The newest card runs the loop hardly faster than a T4 (the ratio printed above), although its
# arithmetic is about eight times faster, because a launch costs the host several microseconds on
# every generation: a loop of small steps is the worst case for a GPU. (Both versions also copy `X` and `W` to the device and the
# result back on every call here, and allocate the result; those costs are the same with or without
# the loop, so they are listed apart.)

# %% [markdown]
# ## 5. "This should be just a GEMM call"
#
# The slide shows exactly this scan and remarks that it *should be* one matrix product. coursekit has
# a rewrite that does it: when the step is one `dot` of a non-sequence matrix with the current row, the
# loop is replaced by one product over all rows. Here is the graph as built: a `Scan` node, whose
# inner graph is the `Dot`:

# %%
# NBVAL_CHECK_OUTPUT
theano.printing.debugprint(rows_out)
scan_op = rows_out.owner.op
print("\nthe step (the Scan's inner graph):")
theano.printing.debugprint(scan_op.inner_outputs)

# %% [markdown]
# and the graph that `theano.function` compiled, with the rewrites on. The loop is gone; what is
# left is a slice of `X` (the rows the loop would have visited) times the transposed `W`:

# %%
# NBVAL_CHECK_OUTPUT
theano.printing.debugprint(f_gemm)
print("\nrewrites that fired on the Scan:",
      [name for stage, name, node in f_gemm.maker.fgraph.rewrite_log if "Scan" in node])

# %%
theano.printing.pydotprint(f_loop)

# %%
theano.printing.pydotprint(f_gemm)

# %% [markdown]
# Before (first picture): the loop, with `X` and `W` going into one `Scan` box. After: a single
# `Dot`, which the BLAS rewrites would fuse further with any scaling or addition around it. The two
# compiled functions agree to float32 rounding (checked in section 4 on every size).
#
# Why does the library not do this for every loop? Because most loops cannot be rewritten: an RNN's
# step multiplies the *previous state*, which does not exist before the loop runs. What the compiler
# can still do is move out of the loop every part of the step that does not depend on the state: in
# `tanh(x_t·W + h·U)`, the product `x_t·W` is the same for any `h`, so `scan_pushout_seq_dot`
# computes it for all steps as one GEMM before the loop and leaves one matrix–vector product per step.

# %% [markdown]
# ## 6. The loop on the GPU device
#
# Now the loop that cannot be removed: an RNN, `h(t) = tanh(x(t)·W + h(t−1)·U + b)`, on the GPU
# device. The weights, the input sequence and the initial state are float32 shared variables, so
# they live in device memory; the last state is written into another shared variable by an update.
#
# **Predict:** the loop runs `steps` steps. How many transfers between host and device does one
# call make: about one per step, a few per call, or none?

# %%
# Your prediction (not graded)
my_transfers_per_call = None   # transfers per call of the RNN on the GPU device, for `steps` steps: a number

# %%
x_data = rng.standard_normal((steps, hidden)).astype("float32")
rnn_values = {"W": weights(hidden, hidden), "U": weights(hidden, hidden, 0.9), "b": np.zeros(hidden, "float32")}


def compile_rnn(device):
    # the RNN as a function of no arguments: every value is a shared variable of the given device
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with theano.config.change(device=device):
            W, U, b = (theano.shared(v, name=k) for k, v in rnn_values.items())
            xs = theano.shared(x_data, name="x")
            h0 = theano.shared(np.zeros(hidden, "float32"), name="h0")
            h_last = theano.shared(np.zeros(hidden, "float32"), name="h_last")
            hs, _ = theano.scan(lambda x_t, h, W, U, b: T.tanh(T.dot(x_t, W) + T.dot(h, U) + b),
                                sequences=xs, outputs_info=h0, non_sequences=[W, U, b], name="rnn")
            updates = [(h_last, hs[-1])]
            return (theano.function([], [], updates=updates, name=f"rnn on {device}"),
                    theano.function([], [], updates=updates, name=f"rnn on {device}", profile=True), h_last)


rnn_cpu, _, h_cpu = compile_rnn("cpu")
rnn_gpu, rnn_gpu_profiled, h_gpu = compile_rnn("gpu")
with theano.config.change(device="gpu"):
    print(device_label())

# %%
# NBVAL_CHECK_OUTPUT
for _ in range(5):
    rnn_gpu_profiled()
rnn_cpu()
state = np.zeros(hidden, "float32")
for x_t in x_data:
    state = np.tanh(x_t @ rnn_values["W"] + state @ rnn_values["U"] + rnn_values["b"])
print("agrees with a NumPy loop:", np.allclose(h_gpu.get_value(), state, atol=1e-4),
      np.allclose(h_cpu.get_value(), state, atol=1e-4))
profile = rnn_gpu_profiled.profile
split = profile.device_split()
print(f"transfers per call: {split['transfer']['count'] / profile.timed_calls:g}, "
      f"{split['transfer']['bytes'] / profile.timed_calls:g} bytes per call, for {steps} steps")
loop_node = next(n for n in rnn_gpu_profiled.toposort() if "Scan" in str(n.op))
print("the loop's op:", loop_node.op, "- runs on:", loop_node.op.device)
print("its number of steps:", loop_node.inputs[0].owner.op, "->", loop_node.inputs[0].type)

# %%
# your prediction beside the profile's count
print(f"transfers per call, counted by the profile: {split['transfer']['count'] / profile.timed_calls:g} "
      f"for {steps} steps; you predicted {my_transfers_per_call}")

# %% [markdown]
# None, whatever the number of steps. Everything the loop reads and writes is already in device
# memory, and the one number the host needs, how many steps to run, is read from the *shape* of `x`,
# which the host knows without copying the array: `Shape_i{0}` gives a `TensorType`, a host value
# (device values have a `GpuArrayType`). The loop op itself runs on the device, and so does its step:
# the inner function compiled for the device takes device arrays and returns device arrays.
#
# The profile shows this without any extra option: under the usual tables, an **Inside loops** table
# lists the ops of the step, timed over every step of the timed calls (on the simulated GPU these are
# CPU times), where each ran, and the transfers inside the loop. It also says how much of the loop
# op's time is *not* in the step's ops: the loop's own bookkeeping, in Python, once per step.

# %%
print(profile.loop_text())

# %%
# NBVAL_CHECK_OUTPUT
(loop,) = profile.loop_rows()
print(f"{loop['loop']}: {loop['steps'] / loop['calls']:g} steps per call; the ops of one step:")
for row in sorted(loop["rows"], key=lambda row: row["name"]):
    print(f"  {row['kind']:>4}  {row['name']}")
print("transfers inside the loop:", loop["transfers"])

# %% [markdown]
# Now the times. On this machine the "GPU" may be the simulated one, whose timings are CPU timings
# (the labels say which); the modelled rows price the same compiled graph on real cards.

# %%
t_cpu = time_call(rnn_cpu, number=calls, repeat=5)
t_gpu = time_call(rnn_gpu, number=calls, repeat=5)


def numpy_rnn():
    h = np.zeros(hidden, "float32")
    for x_t in x_data:
        h = np.tanh(x_t @ rnn_values["W"] + h @ rnn_values["U"] + rnn_values["b"])
    return h


t_numpy = time_call(numpy_rnn, device="NumPy on the CPU", number=calls, repeat=5)
modelled_rnn = {p: predict_call(rnn_gpu, model=costmodel.model(p)) for p in ("gtx580", "t4", "h100")}

labels = ["NumPy loop (measured, CPU)", "coursekit on the CPU (measured)",
          f"coursekit, GPU device ({'simulated: CPU time' if t_gpu.simulated else 'measured'})"]
labels += [f"{call.label}: whole call ({call.band})" for call in modelled_rnn.values()]
values = [t_numpy.best, t_cpu.best, t_gpu.best] + [call.total for call in modelled_rnn.values()]
colours = ["tab:gray", "tab:gray", "tab:green"] + ["tab:purple"] * len(modelled_rnn)
fig, ax = plt.subplots(figsize=(6.5, 3.4), dpi=80)
ax.barh(labels[::-1], [v * 1e6 / steps for v in values[::-1]], color=colours[::-1])
ax.set_xlabel("microseconds per step")
ax.set_title(f"RNN step, hidden {hidden}: grey/green MEASURED here, purple MODELLED (predictions)", fontsize=9)
fig.tight_layout()
plt.show()

# %% [markdown]
# The modelled bars are whole calls: the host time coursekit spends per call on this machine plus
# the card's launches and kernels. Per step, a real GPU is predicted to spend tens of microseconds: its
# kernel launches (the same on every machine) and the host's own work (measured here, so it varies
# with this machine and its load) (the model's per-part split below says so), while the arithmetic of a
# 64-wide step would take nanoseconds. That is the same lesson as section 4 from the other side: the
# state stays on the device, so the loop pays no transfers, but a GPU only shines when each step has
# enough work. Batch many sequences together (a matrix of states instead of a vector) and the same
# launches do far more arithmetic.

# %%
# NBVAL_IGNORE_OUTPUT
t4 = modelled_rnn["t4"]
print(t4.describe())
print(f"per step: {format_seconds(t4.total / steps)} modelled (t4, whole call), of which launches "
      f"{format_seconds(t4.parts['launch'] / steps)} and host time measured here {format_seconds(t4.host / steps)}")
assert t4.parts["launch"] > t4.parts["kernel"] and t4.parts["launch"] / steps > 1e-6
assert t4.total / steps > 1e-5 and t4.parts["launch"] / steps > 1e-5   # the sentence above

# %% [markdown]
# ## 7. Debugging a graph
#
# Errors in symbolic code have a well-known difficulty: the mistake is made when the graph is
# *built*, but it shows when the compiled function *runs*, far away from the line that made it. The
# slides list three tools; coursekit has all three.
#
# ### Test values: errors while building
#
# With `config.compute_test_value = 'raise'` (or `'warn'`), you give the inputs sample values and
# every op is computed on them as soon as it is created. A shape mistake then raises at the line that
# makes it:

# %%
x_batch = T.fmatrix("x_batch")
W_layer = T.fmatrix("W_layer")
with theano.config.change(compute_test_value="raise"):
    x_batch.tag.test_value = np.ones((5, 10), dtype="float32")     # 5 examples, 10 features
    W_layer.tag.test_value = np.ones((4, 10), dtype="float32")     # oops: should be 10 x 4
    try:
        hidden_layer = T.tanh(T.dot(x_batch, W_layer))
    except Exception as err:
        print(f"{type(err).__name__}: {err}")

# %% [markdown]
# The message names the op, the shapes it got and the line of this cell that built it. In a
# notebook the "file" is the cell (`<ipython-input-...>` or a temporary file name, depending on the
# Jupyter version).
#
# ### `printing.Print`: values while running
#
# `theano.printing.Print(message, attrs)` is an op that prints attributes of a value as it passes and
# hands the value on unchanged. Inside a step it prints once per step, which makes it a good way to
# watch a loop (and a bad one to leave in a training loop):

# %%
# NBVAL_CHECK_OUTPUT
xs_small, h_start = T.fmatrix("xs"), T.fvector("h_start")


def watched_step(x_t, h_prev):
    h_now = T.tanh(x_t + 0.5 * h_prev)
    return theano.printing.Print("state", attrs=("min", "max"))(h_now)


watched, _ = theano.scan(watched_step, sequences=xs_small, outputs_info=h_start)
theano.function([xs_small, h_start], watched)(np.array([[1, -1], [2, 0], [0, 3]], "float32"), np.zeros(2, "float32"))

# %% [markdown]
# ### An error at run time, and `%debug`
#
# Here is an RNN step in which the recurrent matrix is passed with the wrong shape when the function
# is *called*. The error is raised inside the loop, by the `Dot` of the step, but the message names
# the line of the step function that built that `Dot`, the shapes it got, and the `Scan` node
# around it:

# %%
xs_run, h_run, U_run = T.fmatrix("xs"), T.fvector("h"), T.fmatrix("U")


def rnn_step_with_bug(x_t, h_prev, U):
    return T.tanh(x_t + T.dot(h_prev, U))


h_trace, _ = theano.scan(rnn_step_with_bug, sequences=xs_run, outputs_info=h_run, non_sequences=U_run)
run_rnn = theano.function([xs_run, h_run, U_run], h_trace)
xs_val, h_val, U_val = np.ones((3, 4), "float32"), np.zeros(4, "float32"), np.ones((5, 4), "float32")
try:
    run_rnn(xs_val, h_val, U_val)   # U should be 4 x 4
except ValueError as err:
    caught = err
    print(str(err).split("\nHINT")[0])

# %% [markdown]
# In a notebook, after a cell has stopped with an error, a new cell with the IPython magic `%debug`
# opens the Python debugger (`pdb`; the slide's `ipdb` is IPython's version of it, with colours) in
# the frame where the exception was raised, with every frame of the call stack reachable: `where`
# lists them, `up`/`down` move between them, `p expr` prints a value, `ll` lists the code, `q`
# quits. Try it: remove the `try`/`except` above, run the cell, then run `%debug` in a new cell.
#
# `%debug` waits for your keyboard, which a notebook run from start to end cannot offer, so here the
# same debugger (`pdb.post_mortem` is what `%debug` does) reads a few typed commands from a string
# instead: `where`, then `up` twice to reach your own cell, then a look at the arguments you passed.

# %%
typed = "where\nup\nup\np xs_val.shape, h_val.shape, U_val.shape\nquit\n"
captured = io.StringIO()
debugger = pdb.Pdb(stdin=io.StringIO(typed), stdout=captured)
debugger.use_rawinput = False          # read the commands from stdin (our string), not from input()
debugger.reset()
debugger.interaction(None, caught.__traceback__)

# What you would see at the keyboard, with two changes for a stored notebook: no terminal colours,
# and file names shortened (coursekit's files from its package folder, this notebook's cells as <cell>).
package_root = os.path.dirname(os.path.dirname(theano.__file__)) + os.sep
shown = re.sub(r"\x1b\[[0-9;]*m", "", captured.getvalue())
frame = caught.__traceback__
while frame is not None:
    name = frame.tb_frame.f_code.co_filename
    shown = shown.replace(name, name[len(package_root):] if name.startswith(package_root) else "<cell>")
    frame = frame.tb_next
print(shown)

# %% [markdown]
# The stack has three frames: your call, the compiled function (generated code, so it has no source
# to list), and its error handler, which raised the message above. The step's own failure is kept as
# the exception's cause (`caught.__cause__`; `%debug` can open that traceback too). With symbolic code
# the *message* is usually more useful than the debugger: the frames you can step through are the
# library's, while the line that made the mistake is the one the message names. The debugger earns
# its place when the message is not enough: here `p` shows at once that `U_val` has five rows where
# the step's `h` has four entries.
#
# ## Summary
#
# * `scan(fn, sequences, outputs_info, non_sequences, ...)` builds a loop as one op; `fn` is called
#   once to build the step; taps say which past values a step reads, and the traces leave out the
#   initial values.
# * The gradient of a scan is a backward scan (backpropagation through time); it agrees with finite
#   differences, and it shows vanishing gradients plainly. `truncate_gradient` cuts it short.
# * A loop pays a fixed price per step: microseconds of Python on a CPU (measured), a kernel launch
#   per op and step on a GPU (modelled). Vectorise when you can; the compiler does it for you in the
#   slide's case, `scan` of `dot(W, x_t)` → one GEMM, and moves state-independent products out of
#   loops it cannot remove.
# * On the GPU device the loop and its state stay in device memory: no transfer per step.
# * Debug with test values (errors at the line that builds the graph), `printing.Print` (values as
#   they pass), and error messages that name your line; `%debug` opens the frames of the last error.
#
# **Exercise:** [`exercises/08_loops_with_scan_exercises.ipynb`](../exercises/08_loops_with_scan_exercises.ipynb) ([in Colab](https://colab.research.google.com/github/coursekit/coursekit/blob/main/exercises/08_loops_with_scan_exercises.ipynb)):
# a small RNN with `scan`, finite differences to check gradients with, an op of your own whose
# gradient is a loop you write with `scan` (backpropagation through time by hand), and a generating
# loop that stops with `until`.
