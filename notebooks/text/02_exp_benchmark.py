# %% [markdown]
# # Lesson 2 — The exp benchmark: CPU or GPU?
#
# Theano's tutorial *Using the GPU* opens with a tiny program, `check1.py`: take a vector of
# 230,400 random float32 numbers, compile `exp` of it, call the function 1000 times, and report how
# long that took and whether the CPU or the GPU did the work. The tutorial's author measured:
#
# * a little over **3 s** with `device=cpu`,
# * just over **0.64 s** with `device=gpu` on an NVIDIA GeForce GTX 580,
# * about **46 s** for a plain loop calling `numpy.exp(x.get_value())`.
#
# This lesson runs the same experiment with coursekit and looks closely at three things the
# tutorial's program does quickly:
#
# 1. **which ops ran where**: `toposort()`, the tutorial's `isinstance(op, T.Elemwise)` test, and a
#    better one;
# 2. **the timing loop**: what the tutorial's loop measures, and how to time a function properly;
# 3. **float32 versus float64**: why the GPU path needs float32, and what happens to float64.
#
# A word on honesty before any number appears. If this machine has no NVIDIA GPU that CuPy can use,
# `device="gpu"` falls back to coursekit's **simulated GPU**: the same graphs, the same transfer ops, a
# separate "device" memory, but the work is done by NumPy on the CPU. Everything about *placement* in
# this lesson is real either way. The *timings* of a simulated GPU are CPU timings, and they are
# labelled so wherever they appear.

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
# NBVAL_CHECK_OUTPUT
import time
import warnings

import numpy as np
import matplotlib.pyplot as plt

import coursekit as theano
import coursekit.tensor as T
from coursekit.lessons import Table, device_label, format_seconds, size, time_call
from coursekit.profiling import op_kind

plt.rcParams.update({"figure.figsize": (6, 3.5), "figure.dpi": 80})

vlen = size(10 * 3 * 768, 10 * 30 * 768)   # tutorial: 10 x 30 cores x 768 threads per core = 230,400
iters = size(100, 1000)                    # tutorial: 1000 calls
rng = np.random.RandomState(22)            # the tutorial's seed, so the numbers match its printout
values = rng.rand(vlen).astype("float32")
print(f"vlen = {vlen:,} float32 numbers ({values.nbytes / 2**20:.2f} MiB), iters = {iters}")

# %% [markdown]
# At the default small size the vector is ten times shorter and the loop ten times shorter than the
# tutorial's, so the notebook runs in seconds anywhere. Set `COURSEKIT_SIZE=full` before starting
# Jupyter to run the tutorial's exact sizes (worth it on a machine with a GPU).
#
# ## 1. On the CPU
#
# The tutorial's program, written as coursekit: put the numbers in a **shared variable**, compile
# `T.exp` of it into a function with no inputs, and list its ops. `config.change(device=...)`
# switches the device inside the notebook, for the graphs and shared variables created in its block
# (Theano needed a new process for that).

# %%
# NBVAL_CHECK_OUTPUT
with theano.config.change(device="cpu"):
    x_cpu = theano.shared(values, name="x")
    exp_cpu = theano.function([], T.exp(x_cpu), name="exp_cpu")

print(exp_cpu.toposort())
r_cpu = exp_cpu()
print("Result is", r_cpu[:3], "...", r_cpu.dtype)


# %% [markdown]
# One op, `Elemwise{exp}`, a NumPy loop on the host. The first results are the tutorial's printout
# digit for digit (1.23178029, 1.61879337, 1.52278066): same seed, same numbers.
#
# The tutorial decides where the work went with one line: if any op in the graph is an `Elemwise`,
# the CPU did it. Here it is as a function, since we will use it again.

# %%
# NBVAL_CHECK_OUTPUT
def tutorial_check(fn):
    """The tutorial's test: an Elemwise op anywhere means the CPU did the work."""
    if np.any([isinstance(node.op, T.Elemwise) for node in fn.toposort()]):
        return "Used the cpu"
    return "Used the gpu"


print(tutorial_check(exp_cpu))

# %% [markdown]
# ## 2. On the GPU device
#
# Now the same three lines under `device="gpu"`. Two things change, both at the moment they happen:
#
# * creating the float32 shared variable **copies its value into device memory**: from now on it
#   lives there;
# * compiling runs the **placement** rewrite: an op whose inputs live on the device is replaced by
#   its GPU twin, and a transfer op is inserted wherever a value must cross between host and device.
#
# Without a usable GPU, coursekit says once, in a warning, that it is using the simulated one.

# %%
with theano.config.change(device="gpu"):
    x_gpu = theano.shared(values, name="x")
    exp_gpu = theano.function([], T.exp(x_gpu), name="exp_gpu")
    gpu_label = device_label()

print(gpu_label)

# %%
# NBVAL_CHECK_OUTPUT
print(exp_gpu.toposort())
r_gpu = exp_gpu()
print("Result is", r_gpu[:3].round(5), "...", type(r_gpu).__name__, r_gpu.dtype)   # 5 decimals: a real GPU's exp may differ from NumPy's in the last bit
print(tutorial_check(exp_gpu))

# %% [markdown]
# Two ops now, the same two as in the tutorial's GTX 580 listing:
#
# * `GpuElemwise{exp}` computes the exponentials on the device, where `x` lives;
# * `HostFromGpu` copies the result back to host memory, because a function returns a NumPy array
#   unless you ask otherwise (Lesson 3 asks otherwise).
#
# In the picture, the transfer is the red box. Counting red boxes is a habit worth forming: every one
# of them is a copy across the PCI Express bus on every call.

# %%
theano.printing.pydotprint(exp_gpu)


# %% [markdown]
# ### A better answer to "where did it run?"
#
# The tutorial's test looks for one class and draws a conclusion about the whole graph. It says
# "Used the gpu" for *any* graph without an `Elemwise` — a function that is only a matrix product on
# the CPU, for instance. coursekit gives every op an explicit `device` attribute, and
# `coursekit.profiling.op_kind` reads it (never the class name) and says `cpu`, `gpu` or `transfer`.
# Ask each op:

# %%
# NBVAL_CHECK_OUTPUT
def where_ops_ran(fn):
    return [(type(node.op).__name__, op_kind(node.op)) for node in fn.toposort()]


print("exp_cpu:", where_ops_ran(exp_cpu))
print("exp_gpu:", where_ops_ran(exp_gpu))

A = T.fmatrix("A")
with theano.config.change(device="cpu"):     # on the host, whatever COURSEKIT_FLAGS says
    only_a_dot = theano.function([A], T.dot(A, A), name="only_a_dot")
print("only_a_dot:", where_ops_ran(only_a_dot), "->", tutorial_check(only_a_dot), "(wrong!)")

# %% [markdown]
# ### Same numbers?
#
# The tutorial warns that a GPU does not always produce exactly the CPU's floating-point numbers:
# its second result was 1.61879337 on the CPU and 1.61879349 on the GPU, a difference in the last
# bit of a float32. GPU math libraries may round `exp` differently. Compare with a tolerance, never
# with `==`:

# %%
difference = np.max(np.abs(r_gpu.astype("float64") - r_cpu) / r_cpu)
print(f"largest relative difference: {difference:.1e}")
print("close at float32 precision:", np.allclose(r_gpu, r_cpu, rtol=1e-6))


# %% [markdown]
# On the simulated GPU the difference is exactly zero: the "device" runs the same NumPy code. On a
# real GPU expect something around $10^{-7}$, the size of one float32 rounding step.
#
# ## 3. Timing it, the tutorial's way and the right way
#
# The tutorial times the loop like this:

# %%
def tutorial_loop(fn, iters):
    t0 = time.time()
    for i in range(iters):
        r = fn()
    t1 = time.time()
    return t1 - t0


with theano.config.change(device="cpu"):
    fresh = theano.function([], T.exp(x_cpu), name="fresh")   # never called yet
print(f"Looping {iters} times took {tutorial_loop(fresh, iters):.4f} seconds")

# %% [markdown]
# It gives a number, but a fragile one, for four reasons:
#
# 1. **The first call is included.** The first call of a function pays one-time costs: allocating
#    buffers and, on a real GPU, creating the CUDA context, loading or compiling kernels and making
#    the first transfer. That is not what you want to know when you will call it a thousand times.
# 2. **A GPU works asynchronously.** A kernel launch returns as soon as the work is *queued*. If the
#    result stays on the device (Lesson 3), the loop can end while the GPU is still busy, and you
#    time the queue, not the work. Call the device's `synchronize()` before stopping the clock. (Here
#    `HostFromGpu` happens to wait for the result on every call, which hides the problem.)
# 3. **One measurement is noisy.** Other processes, frequency scaling and caches all disturb a
#    single run. Repeat the measurement a few times and keep the **best**: the run that was
#    disturbed least is the closest to what the code costs.
# 4. **`time.time()` is a wall clock**: it can jump, and on some systems ticks coarsely.
#    `time.perf_counter()` is made for measuring intervals.
#
# `time_call` from `coursekit.lessons` does all four: it calls the function once untimed, then
# times several repeats of many calls with `perf_counter`, synchronises the device before each clock
# read, and keeps the best. It also labels the result with the device that really ran it. (In the
# exercise you will write this loop yourself.)

# %% [markdown]
# ### Predict first
#
# The tutorial's GTX 580 ran 1000 calls in 0.64 s, its CPU in 3.07 s. Before timing anything here,
# write down your guesses: how much faster than that CPU would the same GTX 580 be by the model's
# account, and how much faster a current data-centre GPU (an H100) would be? And what share of one
# GPU call is the copy back to the host (`HostFromGpu`)? The answers come from the run below: what
# this machine measures, and what coursekit's cost model predicts for those cards (labelled
# `modelled (...)`: a prediction, not a measurement, with the error band the project measured for it,
# or "uncalibrated" for a card nobody measured). The project did measure this very call on an H100;
# that figure appears beside the model's.

# %%
# Your prediction (not graded): write numbers in place of None
my_speedup_gtx580 = None      # tutorial CPU time / modelled GTX 580 time, 1000 calls at vlen 230,400
my_speedup_h100 = None        # the same for an H100
my_transfer_share_percent = None   # share of one GPU call spent copying the result home (GTX 580)

# %%
from coursekit import costmodel
from coursekit.profiling.predict import predict_call

t_cpu = time_call(exp_cpu, device=device_label())
t_gpu = time_call(exp_gpu, device=gpu_label, model=False)
print("device=cpu:", t_cpu)
print("device=gpu:", t_gpu)
print("measured on:", t_gpu.device)

# the tutorial's own size, only to ask the cost model about it (nothing here is timed)
with theano.config.change(device="gpu"):
    x_tutorial = theano.shared(np.random.RandomState(22).rand(230_400).astype("float32"), name="x")
    exp_tutorial = theano.function([], T.exp(x_tutorial), name="exp_tutorial")
CARDS = ("gtx580", "t4", "h100")
tutorial_cpu_seconds = 3.06635117531   # 1000 calls, device=cpu, the tutorial's machine (2012)
tutorial_seconds_gpu_per_call = 0.638810873032 / 1000   # the tutorial's GTX 580, per call
modelled = {card: predict_call(exp_tutorial, model=costmodel.model(card)) for card in CARDS}
# the same call (W1, copy back, vlen 230,400) measured on the H100 lent on 2026-11-24, in three runs:
# benchmarks/results/2026-11-24-intel-xeon-16c-gpu-h100-80gb-hbm3-quick.md (115.3 µs) and
# benchmarks/results/2026-11-24-h100-lent-model-accuracy*.json (118.3 µs, 128.9 µs)
H100_MEASURED = (115.3e-6, 118.3e-6, 128.9e-6)

# %%
# NBVAL_IGNORE_OUTPUT
for card, call in modelled.items():
    speedup = tutorial_cpu_seconds / (call.total * 1000)
    copy_back = 100 * call.parts["transfer"] / call.total
    print(f"{call.figure()} per whole call at vlen 230,400 (device path + host time measured here): "
          f"{speedup:4.1f} times the tutorial's CPU; copy back {copy_back:.0f}% of the call")
low, high = min(H100_MEASURED), max(H100_MEASURED)
print(f"measured on an H100 (2026-11-24): {format_seconds(low)} to {format_seconds(high)} per call, "
      f"{tutorial_cpu_seconds / (high * 1000):.0f} to {tutorial_cpu_seconds / (low * 1000):.0f} times the tutorial's CPU")
print(f"you predicted: GTX 580 {my_speedup_gtx580} times, H100 {my_speedup_h100} times")
h100 = modelled["h100"]
# the measurements against the modelled call without this machine's host time (it varies with the
# machine and its load; the H100's own host was in the measurement): inside the model's stated (held-out) band
band_low, band_high = costmodel.presets.get("h100").band
assert all(band_low <= m / (h100.total - (h100.host or 0)) <= band_high for m in H100_MEASURED)
assert modelled["gtx580"].total < tutorial_seconds_gpu_per_call          # a little less than the tutorial measured


# %% [markdown]
# Two NumPy baselines complete the picture: the tutorial's loop over `numpy.exp(x.get_value())` —
# `get_value()` returns a fresh host copy of the shared value on every call, which for a value in
# device memory means a device-to-host copy — and, for reference, `numpy.exp` of an array that is
# already on the host.

# %%
t_numpy_get_value = time_call(lambda: np.exp(x_gpu.get_value()), device="NumPy on the CPU (value copied from the device)")
t_numpy = time_call(np.exp, values, device="NumPy on the CPU")
print("numpy.exp(x.get_value()):", t_numpy_get_value)
print("numpy.exp(values):       ", t_numpy)

# %% [markdown]
# ### The results, beside the tutorial's and the model's
#
# The table puts each figure as *seconds per 1000 calls*, each with what it is: the tutorial's 2012
# measurement, the cost model's prediction for the tutorial's GTX 580 at the tutorial's size, and your
# measurement. Read the comparison with care:
#
# * the tutorial's numbers come from 2012 hardware (and its NumPy loop from NumPy of that time);
# * at the default small size your vector is ten times shorter than the tutorial's — run with
#   `COURSEKIT_SIZE=full` for a like-for-like comparison;
# * a **simulated** GPU row is CPU time. It tells you what the simulation costs, not what a GPU would
#   do: that is the model's column.

# %%
tutorial_seconds = {"numpy": 46.0, "cpu": 3.06635117531, "gpu": 0.638810873032}
rows = [
    ("numpy.exp(x.get_value()) loop", t_numpy_get_value, tutorial_seconds["numpy"], None),
    ("coursekit, device=cpu", t_cpu, tutorial_seconds["cpu"], None),
    ("coursekit, device=gpu", t_gpu, tutorial_seconds["gpu"], modelled["gtx580"]),
    ("numpy.exp(values), host array", t_numpy, None, None),
]
results = Table(
    ["what", "tutorial, measured 2012 (vlen 230,400)", f"modelled (gtx580), whole call, {modelled['gtx580'].band} (vlen 230,400)",
     f"measured here (vlen {vlen:,})", "measured on"],
    [(name, "-" if theirs is None else theirs, "-" if call is None else round(call.total * 1000, 4),
      round(t.best * 1000, 4), t.device) for name, t, theirs, call in rows],
    caption="exp of a float32 vector, seconds per 1000 calls: best of 5 repeats, first call excluded",
)
results

# %%
labels = ["NumPy loop\n(get_value)", "coursekit\ncpu", "coursekit\ngpu"]
yours = [t_numpy_get_value.best * 1000, t_cpu.best * 1000, t_gpu.best * 1000]
seed = [tutorial_seconds["numpy"], tutorial_seconds["cpu"], tutorial_seconds["gpu"]]

fig, ax = plt.subplots()
positions = np.arange(len(labels))
ax.bar(positions - 0.27, seed, width=0.27, label="tutorial, measured (2012, GTX 580, vlen 230,400)", color="#bbbbbb")
ax.bar([positions[2]], [modelled["gtx580"].total * 1000], width=0.27, color="#ddaa33",
       label=f"modelled (gtx580), whole call ({modelled['gtx580'].band}), vlen 230,400: a prediction")
bars = ax.bar(positions + 0.27, yours, width=0.27, label=f"measured here (vlen {vlen:,})", color="#4477aa")
if t_gpu.simulated:
    bars[2].set_hatch("//")
    bars[2].set_color("#cc6677")
    ax.annotate("simulated GPU:\nCPU time", (positions[2] + 0.27, yours[2]), ha="center", va="bottom", fontsize=8)
ax.set_yscale("log")
ax.set_xticks(positions, labels)
ax.set_ylabel("seconds per 1000 calls (log scale)")
ax.set_title("exp of a float32 vector")
ax.legend(fontsize=7, loc="upper right")
fig.tight_layout()
plt.show()

# %% [markdown]
# What the tutorial's figures say: its GPU ran the loop about 4.8 times faster than its CPU, and both
# were an order of magnitude faster than the NumPy loop. The model, from the GTX 580's datasheet,
# predicts a little less time than the tutorial measured (asserted above): it counts the GPU's work (a
# launch, the kernel, the copy home and the wait for it, a `cudaMalloc` because Theano 0.6 had no
# memory pool) plus coursekit's own host time per call measured on this machine, which is smaller than
# the Python and C dispatch of 2012's Theano on 2012's CPU. For a current card the model's speed-up is
# far larger, and the copy home takes most of the call. On the H100 the project measured the same call,
# and the measurement falls inside the model's band (asserted above). That is in-sample agreement, not a test:
# these runs are part of the corpus the band comes from. The band itself (−24%/+79%) was measured held out,
# each workload judged by a band fitted without it, on calls of one kernel launch like this one. The GTX 580
# and T4 have no measurement behind them, so their figures say "uncalibrated".
#
# What your measured figures say depends on your machine. On the simulated GPU, `device=gpu` is about
# as fast as `device=cpu` or slower: it does the same NumPy work, plus a real copy for the simulated
# `HostFromGpu`. The copy is the next point.
#
# ## 4. Where the time goes on the device
#
# The profiler splits the function's time by where each op ran (the first call is excluded, and on
# a real GPU each op is timed with the device synchronised):

# %%
with theano.config.change(device="gpu"):
    exp_profiled = theano.function([], T.exp(x_gpu), profile=True, name="exp_profiled")
for _ in range(iters):
    exp_profiled()
split = exp_profiled.profile.device_split()
print(exp_profiled.profile.device_line())
print(f"copy back, measured here: {split['transfer']['percent']:.0f}% of the time in ops",
      "(simulated GPU: CPU times)" if exp_profiled.profile.simulated else "")

# %%
# NBVAL_IGNORE_OUTPUT
for card in CARDS:
    here = predict_call(exp_gpu, model=costmodel.model(card))
    print(f"copy back, {here.label:<18}: {100 * here.parts['transfer'] / here.total:.0f}% of the whole call at "
          f"vlen {vlen:,}, {100 * modelled[card].parts['transfer'] / modelled[card].total:.0f}% at vlen 230,400")
print(f"you predicted {my_transfer_share_percent}% (GTX 580)")
# shares of the device path (this machine's host time, which varies with its load, left out)
share = {card: modelled[card].parts["transfer"] / (modelled[card].total - (modelled[card].host or 0)) for card in CARDS}
assert 0.5 < share["gtx580"] < share["h100"] and share["h100"] > 0.75


# %% [markdown]
# Measured on the simulated GPU, the copy back is the smaller part of each call: there the "kernel" is
# NumPy's `exp` on one CPU core and the "copy" is a `memcpy` within RAM. On a real GPU the proportions
# turn over, and the model says by how much: the copy back is the larger part of the call on the
# tutorial's GTX 580, and most of it on a current card, whose kernel finishes in a few microseconds
# while the copy from ordinary (pageable) host memory is only a few times faster than in 2012. The tutorial's next
# section removes the copy by keeping the result on the device, and then lets the function reuse its
# output buffer with `borrow=True`: that is Lesson 3.
#
# ## 5. float32 versus float64
#
# GPUs of the tutorial's era were fast only in float32. Today it depends on the card. Data-centre GPUs
# built for simulation compute float64 at **half** their float32 rate (A100: 9.7 against 19.5 TFLOP/s;
# H100 SXM: 34 against 67 TFLOP/s, from NVIDIA's A100 and H100 datasheets), but consumer and inference
# cards keep only a token float64 unit: **1/32** of float32 on a T4 (0.25 against 8.1 TFLOP/s, T4
# datasheet) and **1/64** on recent GeForce cards (Ampere and Ada GA10x/AD10x whitepapers). The GPU a
# student is most likely to be lent is of the second kind. So coursekit keeps **float64 on the host**
# even when the device is a GPU, as Theano's original CUDA backend (`device=gpu`) did; Theano's later
# GpuArray backend (`device=cuda`) did run float64 on the GPU, which pays off only on the data-centre
# cards. In coursekit a float64 shared variable stays in host
# memory, and ops computing in float64 stay on the CPU. It does not do this silently: there is a
# warning for each, and `warn_float64="raise"` turns them into errors.

# %%
with theano.config.change(device="gpu"):
    x64 = theano.shared(values.astype("float64"), name="x64")
    exp_float64 = theano.function([], T.exp(x64), name="exp_float64")

# %%
# NBVAL_CHECK_OUTPUT
print(exp_float64.toposort())
print(where_ops_ran(exp_float64))
print(tutorial_check(exp_float64))

# %% [markdown]
# The device was `gpu`, yet the graph is one CPU `Elemwise` and no transfer: nothing of it went to the
# device. This is the most common way to lose a GPU without noticing, because float64 sneaks in
# easily: `T.dvector` instead of `T.vector`, a NumPy array created as float64 (the default for
# `np.random.rand`), or mixing int32 with float32 (the result is float64):

# %%
# NBVAL_CHECK_OUTPUT
f32 = T.fvector("f32")
i32 = T.ivector("i32")
print("float32 * 2       ->", (f32 * 2).dtype)
print("float32 * int32   ->", (f32 * i32).dtype)
print("np.random.rand(3) ->", np.random.rand(3).dtype)

# %% [markdown]
# Does float32 lose anything for `exp`? Compare with the float64 result. A float32 number carries
# 24 significant bits, so one rounding step is a relative $2^{-24}$ to $2^{-23}$ (about $6\times10^{-8}$
# to $1.2\times10^{-7}$), and NumPy's float32 `exp` is accurate to a few such steps. The difference
# you see is of that size: for numbers drawn from $[0, 1)$, float64 carries digits this problem does
# not need.

# %%
r64 = exp_float64()
relative = np.max(np.abs(r_cpu.astype("float64") - r64) / r64)
print(f"float32 vs float64, largest relative difference: {relative:.2e}")
print(f"float32 rounding step: {2.0 ** -24:.2e} to {2.0 ** -23:.2e}")

# %% [markdown]
# And the cost of the extra digits, on the host (both measured with `time_call`; same device, so
# the ratio means something):

# %%
t64 = time_call(exp_float64, device=device_label())
print("float32:", t_cpu)
print("float64:", t64)
print(f"float64 / float32 time: {t64.best / t_cpu.best:.1f}")

# %% [markdown]
# Twice the bytes to read and write, and on the CPU often a slower `exp` too. On a consumer or
# inference GPU the gap is larger still (1/32 to 1/64 of the float32 rate); on an A100 or H100 it is
# about the CPU's factor of two. Keep `floatX=float32` (coursekit's default), create data with `.astype("float32")`,
# and check `toposort()` for stray float64 ops.
#
# ## What to remember
#
# * Under `device="gpu"`, float32 shared variables move to the device, ops on them become `Gpu…` ops,
#   and transfer ops (`HostFromGpu`, `GpuFromHost`) appear where values cross — in red in the picture.
# * To see where each op ran, read each op's device (`op_kind`), not one class name.
# * Time with a warm-up call excluded, the device synchronised before the clock stops, and the best
#   of several repeats — and label every number with the device that produced it. A simulated GPU's
#   numbers are CPU numbers.
# * float64 stays on the host, with a warning. Use float32 for GPU work.
#
# ## Your turn
#
# Open **[`exercises/02_exp_benchmark_exercises.ipynb`](../exercises/02_exp_benchmark_exercises.ipynb) ([in Colab](https://colab.research.google.com/github/coursekit/coursekit/blob/main/exercises/02_exp_benchmark_exercises.ipynb))**. You will write the timing loop yourself (warm-up,
# synchronisation, best of repeats), compile `exp` on a given device and report which op classes ran,
# check that float64 stays on the host, and compare float32 with float64 results. The cells tagged
# *graded* check your answers.
