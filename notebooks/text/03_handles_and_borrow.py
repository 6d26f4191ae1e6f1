# %% [markdown]
# # Lesson 3 — Device handles and `borrow=True`
#
# In lesson 2 the GPU computed `exp` of 230,400 numbers, a thousand times in a row. Each of those
# calls did two things besides running the kernel: it copied the answer back into host memory, and
# it gave you memory of your own to keep it in. Both are conveniences. Both cost time.
#
# Theano's "Using the GPU" tutorial takes them away one at a time, in three small programs. The
# tutorial's author measured, for 1000 calls (Aug 2012; the GPU was a GeForce GTX 580, the CPU row ran
# with `device=cpu` on the same machine and is no GPU figure):
#
# | program | what each call returns | 1000 calls on the CPU | 1000 calls on the GTX 580 |
# |---|---|---|---|
# | `check1.py`, `device=cpu` | a NumPy array | 3.07 s | — |
# | `check1.py`, `device=gpu` | a NumPy array, copied back from the device | — | 0.64 s |
# | `check2.py` | a handle to device memory | — | 0.35 s |
# | `check3.py` | a handle to a *borrowed* device buffer | — | 0.05 s |
#
# This lesson rebuilds those three steps. Before each experiment you write down what you expect;
# then the run shows three kinds of figure side by side, each labelled: the tutorial's measurement,
# what coursekit's **cost model** predicts for the tutorial's card and for a current one
# (`modelled (gtx580)`, `modelled (t4)`: predictions, not measurements, and "uncalibrated": the
# project measured neither card), and what your machine measures. Then it looks at what the last step costs in safety: with
# `borrow=True`, a result you saved can change under your feet. It ends with two things every GPU
# measurement has to get right: synchronising before you stop the clock, and what happens to the
# memory of intermediate results (`allow_gc`).

# %% [markdown]
# ## Setup
#
# As in lesson 2, `x` is a float32 shared variable. On a GPU device coursekit stores such a variable
# in device memory as soon as it is created, so no call has to send it across: `x.get_value()` gives
# you a host copy, `x.get_value(return_internal_type=True)` the device array itself.
#
# Without an NVIDIA GPU, `device="gpu"` falls back to the *simulated* GPU and says so. The graphs, the
# transfer ops and the handles are the same as on a real card; the timings are CPU timings, and every
# timing below is labelled with the device that produced it.

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
from coursekit import Out
from coursekit.lessons import Table, device_label, format_seconds, size, time_call
from coursekit.devices import synchronize

theano.config.floatX = "float32"
theano.config.device = "gpu"        # a real GPU when CuPy sees one, else the simulated GPU
print(device_label())

vlen = size(2 * 30 * 768, 10 * 30 * 768)   # the tutorial's 230,400 values at full size
rng = np.random.RandomState(22)
x = theano.shared(rng.rand(vlen).astype("float32"), name="x")
expected = np.exp(x.get_value())           # the NumPy reference, computed on the host

print(f"x holds {vlen:,} float32 values ({vlen * 4 / 1e6:.2f} MB);",
      f"in memory it is a {type(x.get_value(return_internal_type=True)).__name__}")

# %% [markdown]
# ## 1. The plain function: the answer comes home
#
# Compile `exp(x)` exactly as in lesson 2. The graph the function runs has two ops: the kernel,
# `GpuElemwise{exp}`, and `HostFromGpu`, a transfer that copies the kernel's output into host memory.
# That copy is why you receive an ordinary NumPy array, and why the same script runs unchanged with
# `device=cpu`.

# %%
# NBVAL_CHECK_OUTPUT
f_plain = theano.function([], T.exp(x))
print(f_plain.toposort())

# %%
r = f_plain()
print(type(r).__name__, r.dtype, r.shape, "| agrees with NumPy:", np.allclose(r, expected))

# %% [markdown]
# ## 2. Returning a handle instead
#
# If the next thing you do with the result happens on the GPU too, the trip home is wasted. Say so in
# the graph: `theano.gpu_from_host(expr)` means "I want this value in device memory". The rewrites
# see that `exp` already runs on the device, so there is nothing left to copy: `gpu_from_host` and
# `HostFromGpu` cancel out, and the graph is the kernel alone.

# %%
# NBVAL_CHECK_OUTPUT
f_handle = theano.function([], theano.gpu_from_host(T.exp(x)))
print(f_handle.toposort())

# %% [markdown]
# What a call returns now is a *handle*: a small Python object that refers to memory on the device.
# It knows its shape and dtype without touching the data. When you want the values on the host, you
# ask for the copy: `.get()`. The tutorial's `check2.py` writes `numpy.asarray(r)` instead, which
# Theano's old `CudaNdarray` allowed, and coursekit allows it too, on the simulated GPU and on a real
# one: it is the same device-to-host copy. Either spelling is a copy *you* make, after the call: the
# function's profile does not count it among the function's transfers, but the bytes still cross the
# bus, once per copy. CuPy's own arrays refuse `numpy.asarray`, so that a hidden copy cannot slip into
# a loop unnoticed; on a real GPU the handle a coursekit function returns is a CuPy array with this one
# exception, made for Theano's code (arrays you make with CuPy keep the refusal). `.get()` says where
# the copy happens, which is why the lessons write it.

# %%
h = f_handle()
print("a call returns:", h)
host = h.get()   # the explicit device -> host copy
print("h.get() is a", type(host).__name__, "| agrees with NumPy:", np.allclose(host, expected))
as_in_check2 = np.asarray(h)   # the tutorial's spelling: the same copy
print("numpy.asarray(h) is a", type(as_in_check2).__name__, "| equals h.get():",
      np.array_equal(as_in_check2, host))

# %% [markdown]
# ## 3. Borrowing the output buffer
#
# `f_handle` no longer copies anything home, but each call still hands you *new* device memory. A
# compiled function promises that the value it returns is yours: the next call will not write into
# it. Theano kept that promise by copying every output into freshly allocated memory; coursekit lets
# the kernel allocate a new output buffer on each call. Either way every call allocates.
#
# What an allocation costs depends on who hands out the memory, and this is where the tutorial's
# story has aged. Theano 0.6 (2012) asked the CUDA driver each time: `cudaMalloc` for the new buffer,
# `cudaFree` for the old one — and `cudaFree` waits until the device has finished the work queued
# on it. For a buffer of about a megabyte that is of the order of a hundred microseconds or more,
# several times the kernel (measurements of `cudaMalloc` by size are cited in
# `coursekit/costmodel/presets.py`). Current frameworks keep a **memory pool** instead: CuPy's is on
# by default ("Memory Management" in the CuPy documentation), a freed buffer goes back to the pool,
# and the next request of the same size gets it back in about a microsecond. So on a current GPU,
# `borrow=True` saves a pool lookup (and, in Theano's design, a device-to-device copy of the output),
# not a `cudaMalloc`.
#
# `Out(expr, borrow=True)` waives the promise. The function keeps its output buffer from one call to
# the next, and every call writes into the same memory. The graph does not change at all:

# %%
# NBVAL_CHECK_OUTPUT
f_borrow = theano.function([], Out(theano.gpu_from_host(T.exp(x)), borrow=True))
print(f_borrow.toposort())

# %% [markdown]
# The difference is in what the call does after its ops have run. coursekit generates each call as a
# few lines of Python, kept in `f.source`; compare the two. The plain handle function empties its
# output cell (`o0[0] = None`) after reading it, so the next call finds no buffer and allocates one.
# The borrowing function leaves the buffer in the cell, and the kernel writes its next result into it.

# %%
print("---- f_handle: a new output buffer every call ----")
print(f_handle.source)
print("---- f_borrow: the same buffer every call ----")
print(f_borrow.source)

# %%
# NBVAL_CHECK_OUTPUT
h1 = f_handle()
h2 = f_handle()
print("f_handle: two calls returned the same object?", h1 is h2)
b1 = f_borrow()
b2 = f_borrow()
print("f_borrow: two calls returned the same object?", b1 is b2)

# %% [markdown]
# ## 4. What each copy costs
#
# ### Your prediction first
#
# The tutorial's numbers above are per 1000 calls: 0.64 ms, 0.35 ms and 0.05 ms per call. Before
# running anything, write down what you expect, per call, in microseconds:
#
# * on the tutorial's **GTX 580** (PCIe 2.0, no memory pool): how much does dropping the copy home
#   save? how much does `borrow=True` save on top?
# * on a **T4** (PCIe 3.0, CuPy's memory pool): how much does `borrow=True` save?
#
# (Hint: the copy moves 230,400 × 4 bytes = 0.92 MB across the bus; the allocation story is in
# section 3.) Write your guesses in the cell below; the cell after the run puts them beside the
# model's.

# %%
# Your prediction (not graded here; task 4 of exercise 3 grades one like it): microseconds saved per call
my_prediction_us = {
    "gtx580: no copy home saves": None,      # e.g. 300
    "gtx580: borrow=True then saves": None,
    "t4: borrow=True saves": None,
}

# %% [markdown]
# ### The run
#
# Now time the variants with `time_call`, which warms the function up first, synchronises the device
# before it stops the clock (section 6 explains why) and reports the best of several repeats per call,
# with BLAS pinned to one thread. Beside each measurement are the tutorial's figure and the model's
# prediction of the *whole call* at the tutorial's size (230,400 values), for the GTX 580 and for a T4:
# the card's modelled device path plus the host time coursekit spends per call on this machine. In a
# loop, a call that copies its result home waits for the GPU, so its parts add up; a call that leaves
# its result on the device only queues its kernel, and the host's next call overlaps the GPU's work.

# %%
from coursekit import costmodel
from coursekit.profiling.predict import predict_call

CARDS = {"gtx580": costmodel.model("gtx580"),    # the tutorial's card; Theano 0.6 had no memory pool
         "t4": costmodel.model("t4")}            # a current card, with CuPy's memory pool

with theano.config.change(device="cpu"):
    x_host = theano.shared(x.get_value(), name="x")
    f_cpu = theano.function([], T.exp(x_host))
t_cpu = time_call(f_cpu)

# the same three graphs at the tutorial's size, only to ask the model about them
x_tutorial = theano.shared(np.random.RandomState(22).rand(230_400).astype("float32"), name="x")
at_tutorial_size = {
    "plain (check1)": theano.function([], T.exp(x_tutorial)),
    "handle (check2)": theano.function([], theano.gpu_from_host(T.exp(x_tutorial))),
    "handle + borrow (check3)": theano.function([], Out(theano.gpu_from_host(T.exp(x_tutorial)), borrow=True)),
}
variants = [
    # name, what each call does besides the kernel, tutorial seconds for 1000 calls on the GTX 580, function here
    ("plain (check1)", "copies the result to the host; new buffer", 0.639, f_plain),
    ("handle (check2)", "new device buffer", 0.349, f_handle),
    ("handle + borrow (check3)", "nothing", 0.0503, f_borrow),
]
modelled = {name: {card: predict_call(at_tutorial_size[name], model=model) for card, model in CARDS.items()}
            for name, *_ in variants}
measured = {name: time_call(f, model=False) for name, _, _, f in variants}

rows = [["CPU (check1, device=cpu)", "no GPU involved", f"{format_seconds(3.066 / 1000)} on the CPU",
         "—", "—", f"{t_cpu} on {t_cpu.device}"]]
rows += [[name, extra, f"{format_seconds(seconds / 1000)} on the GTX 580",
          f"{format_seconds(modelled[name]['gtx580'].total)} ({modelled[name]['gtx580'].band})",
          f"{format_seconds(modelled[name]['t4'].total)} ({modelled[name]['t4'].band})",
          f"{measured[name]} (vlen {vlen:,})"] for name, extra, seconds, _ in variants]
Table(["variant", "extra work per call", "tutorial, measured 2012 (vlen 230,400)",
       f"whole call, {CARDS['gtx580'].label}", f"whole call, {CARDS['t4'].label}", "measured here"],
      rows, caption=f"exp of float32 values, per call. GPU rows measured here on: {device_label()}")

# %% [markdown]
# **Where the model's figures come from.** `predict_call(f, model=...)` runs the function a few
# times to learn the shapes its ops see and which ops get a fresh buffer, then prices each GPU op:
# a launch, a kernel (bytes over memory bandwidth), a transfer (link latency plus bytes over the
# link), an allocation (a pool lookup, or `cudaMalloc` where the preset's software had no pool), and one
# synchronisation for a call that copies home.
# `describe()` shows the parts; the picture below draws them in time order.

# %%
for name, *_ in variants:
    for card in CARDS:
        print(f"{name:<25} {modelled[name][card].describe()}")

# %%
from matplotlib.patches import Patch

from coursekit.printing.gpu_plots import PART_COLOURS, plot_timeline

fig, axes = plt.subplots(2, 1, figsize=(8, 4.4), dpi=80, sharex=True)
for ax, card in zip(axes, CARDS):
    plot_timeline(modelled["plain (check1)"][card], ax=ax)
    ax.set_title(f"check1 (plain), one call at vlen 230,400, {CARDS[card].label}: a prediction, not a measurement",
                 fontsize=9)
    ax.get_legend().remove()
axes[0].set_xlabel("")
axes[1].legend(handles=[Patch(color=c, label=p) for p, c in PART_COLOURS.items()], fontsize=8, ncol=4,
               loc="lower right")
fig.tight_layout()
plt.show()


# %% [markdown]
# Each bar is a part of one modelled call, in the order the GPU does them: the allocation of the
# kernel's output, the launch, the kernel, the copy home, and the wait for it. On the GTX 580 the copy and the
# `cudaMalloc` dwarf the kernel; on the T4 the copy still does, while the allocation has all but
# vanished into the pool. Now your prediction beside the model's:

# %%
# NBVAL_IGNORE_OUTPUT
def saving(card, slower, faster):
    return modelled[slower][card].total - modelled[faster][card].total

model_says = {
    "gtx580: no copy home saves": saving("gtx580", "plain (check1)", "handle (check2)"),
    "gtx580: borrow=True then saves": saving("gtx580", "handle (check2)", "handle + borrow (check3)"),
    "t4: borrow=True saves": saving("t4", "handle (check2)", "handle + borrow (check3)"),
}
tutorial_says = {"gtx580: no copy home saves": "0.29 ms (measured 2012)",
                 "gtx580: borrow=True then saves": "0.30 ms (measured 2012)", "t4: borrow=True saves": "—"}
for what, seconds in model_says.items():
    guess = my_prediction_us[what]
    print(f"{what:<32} model: {format_seconds(seconds):>9}   tutorial: {tutorial_says[what]:<24}"
          f" you: {'(no guess)' if guess is None else f'{guess} µs'}")
print("model, both cards: plain > handle > borrow:",
      all(modelled["plain (check1)"][c].total > modelled["handle (check2)"][c].total
          >= modelled["handle + borrow (check3)"][c].total for c in CARDS))
print("model: borrow=True saves over 10x more on the GTX 580 than on the T4:",
      model_says["gtx580: borrow=True then saves"] > 10 * model_says["t4: borrow=True saves"])
check3 = modelled["handle + borrow (check3)"]["gtx580"]
print(f"check3 on the GTX 580: {check3.figure()}, the tutorial measured 50.3 µs")
assert check3.total < 0.0503e-3 and model_says["gtx580: no copy home saves"] > 0.25e-3

# %% [markdown]
# **Reading the tutorial's numbers with the model.** Dropping the copy home saved the tutorial
# 0.64 − 0.35 = 0.29 ms per call. That copy moves 0.92 MB across the bus, so the bus delivered about
# 0.92 MB / 0.29 ms ≈ 3 GB/s: the rate of copies into ordinary (pageable) host memory on PCIe 2.0,
# whose x16 link carries 8 GB/s raw and about 6 GB/s in practice with page-locked memory (PCI-SIG's
# PCIe 2.0 specification; NVIDIA's `bandwidthTest`). The model's GTX 580 preset assumes 3 GB/s
# pageable (plus the wait for the kernel), so it predicts nearly the same saving. Borrowing saved the tutorial another 0.30 ms. A
# device-side copy of 0.92 MB at the GTX 580's 192 GB/s takes about 10 µs, so the copy cannot be the
# reason; the model says what the tutorial's authors suspected: a `cudaMalloc` + `cudaFree` per call,
# priced at a preset estimate of 200 µs (the tutorial implies about 300 µs).
#
# **Where the model and the tutorial differ, and why.** For `check3` the model's whole call (printed
# above) is well under the tutorial's 50 µs: its host part is coursekit's dispatch on this machine,
# which is much lighter than Theano 0.6's Python call, C-level dispatch and output bookkeeping on a
# 2012 CPU, and a call that only queues a kernel overlaps the next one. The gap in `check2` is the
# allocation estimate. On the T4 the same three programs tell a different
# story: the copy home is still most of the call, but `borrow=True` saves only a few microseconds (the allocation plus noise in the measured host part),
# because CuPy's pool makes allocation nearly free.
#
# **Reading your measurement.** On a real GPU you should see the tutorial's ordering, with the T4's
# proportions on a current card. On the simulated GPU, do not expect it: its "kernel" is NumPy's `exp`
# running on the CPU, its "bus" is a copy within RAM, and its allocations are ordinary NumPy
# allocations. The three GPU rows measured here sit close together, and their order can swap from run
# to run. What the simulation does keep exactly is the structure the model prices: which copies and
# allocations happen, and how many bytes they move.

# %%
here = {name: t.best for name, t in measured.items()}
plain, handle, borrow = (name for name, *_ in variants)
note = "(simulated GPU: CPU timings)" if measured[plain].simulated else ""
print(f"measured here:     plain / handle = {here[plain] / here[handle]:.2f}, plain / borrow = {here[plain] / here[borrow]:.2f}", note)
for card in CARDS:
    d = {name: modelled[name][card].total for name in modelled}
    print(f"{modelled[plain][card].label + ':':<18} plain / handle = {d[plain] / d[handle]:.2f}, "
          f"plain / borrow = {d[plain] / d[borrow]:.2f}  (whole calls, vlen 230,400)")
print(f"tutorial:          plain / handle = {0.639 / 0.349:.2f}, plain / borrow = {0.639 / 0.0503:.2f}  (GTX 580, measured)")

# %% [markdown]
# ### The same three programs on a real H100
#
# The project measured exactly these three calls (vlen 230,400) on an H100 lent on 2026-11-24
# (`benchmarks/results/2026-11-24-h100-lent-model-accuracy*`: two runs each). Here they are beside the model's whole
# calls for that card, with the band the model states for it (measured held out, on calls of one kernel launch); the host part of each modelled call is the
# one measured in the same run on that machine, so that both sides describe the same computer:

# %%
# NBVAL_IGNORE_OUTPUT
# benchmarks/results/2026-11-24-h100-lent-model-accuracy*.json: two runs of each call, each with
# (measured seconds per call, the host part of it measured on that machine)
H100_RUNS = {"plain (check1)": [(128.9e-6, 3.5e-6), (118.3e-6, 3.3e-6)],            # W1 exp, copy back
             "handle (check2)": [(11.8e-6, 4.6e-6), (10.6e-6, 3.0e-6)],             # W1 exp, device handle
             "handle + borrow (check3)": [(10.0e-6, 1.7e-6), (8.6e-6, 1.6e-6)]}     # W1 exp, borrow=True
ratios = {}
for name, runs in H100_RUNS.items():
    device_path = predict_call(at_tutorial_size[name], model=costmodel.model("h100"))
    pairs = [(measured, device_path.with_host(host)) for measured, host in runs]
    ratios[name] = [measured / call.total for measured, call in pairs]
    print(f"{name:<25} " + "; ".join(f"{call.figure()} vs {format_seconds(measured)} measured" for measured, call in pairs)
          + f"  (measured / modelled {min(ratios[name]):.2f}-{max(ratios[name]):.2f})")
band_low, band_high = costmodel.presets.get("h100").band   # the held-out band
assert all(band_low <= r <= band_high for rs in ratios.values() for r in rs)

# %% [markdown]
# Every measurement falls inside the model's band (asserted above). These runs are rows of the corpus the
# band was measured on, so that is in-sample agreement: the band's held-out width, not this agreement, is
# what a new program may expect. On a current card the copy home
# is nearly the whole call, and without it a call costs about what queuing one kernel costs the host.

# %% [markdown]
# ## 5. The price of borrowing: aliasing
#
# A borrowed result is only on loan. The next call writes into the same buffer, so any result you
# kept from an earlier call changes too: the two names are *aliases* of one piece of memory.
#
# To see it, we need a function whose result differs from call to call. `counter` is a small shared
# vector that every call increments (an update), and the function returns ten times its value,
# borrowed. Each call does produce the right answer; the trouble starts when you keep one.

# %%
# NBVAL_CHECK_OUTPUT
counter = theano.shared(np.arange(4, dtype="float32"), name="counter")
tenfold = theano.function([], Out(theano.gpu_from_host(counter * 10), borrow=True),
                          updates=[(counter, counter + 1)])

counter.set_value(np.arange(4, dtype="float32"))   # start from 0 1 2 3 every time this cell runs
first = tenfold()
print("first call returned  ", first.get())
second = tenfold()
print("second call returned ", second.get())
print("first, looked at now ", first.get(), "<- overwritten by the second call")
print("first is second:", first is second)

# %% [markdown]
# The same bug hides well inside ordinary-looking code. A list comprehension that collects three
# results holds three references to one buffer, and all three show the last value:

# %%
# NBVAL_CHECK_OUTPUT
counter.set_value(np.arange(4, dtype="float32"))
results = [tenfold() for _ in range(3)]
print([r.get().tolist() for r in results])

# %% [markdown]
# The fix is to copy what you want to keep *before* the next call: `.get()` if you want it on the
# host, `.copy()` if it should stay on the device. You pay for one copy of the results you keep,
# not for one per call. (The same holds for a borrowed host output on the CPU: keep `r.copy()`.)

# %%
# NBVAL_CHECK_OUTPUT
counter.set_value(np.arange(4, dtype="float32"))
kept_on_host = [tenfold().get() for _ in range(3)]        # host copies
kept_on_device = [tenfold().copy() for _ in range(3)]     # device copies, still handles
print([r.tolist() for r in kept_on_host])
print([r.get().tolist() for r in kept_on_device])


# %% [markdown]
# The tutorial's advice stands: `borrow=True` made a dramatic difference in a graph that does almost
# nothing but allocate its output, and it matters much less in larger graphs where the kernels take
# most of the time. Reach for it in a tight loop after you have measured, and keep the copies in mind.

# %% [markdown]
# ## 6. Why GPU timings need `synchronize()`
#
# A GPU does not run a kernel while your Python code waits. Launching a kernel puts it in a queue
# (a CUDA *stream*) and returns at once; the GPU works through the queue in order, while the host
# thread goes on to the next line. A loop of 1000 calls to `f_borrow` can therefore end long before
# the GPU has finished the 1000 kernels. Stop the clock at that moment and you have measured how fast
# Python can queue work, not how fast the GPU does it.
#
# `coursekit.devices.synchronize()` waits until the queue is empty. `time_call` calls it before
# stopping the clock (unless you pass `sync=False`), and the profiler synchronises after every GPU
# op. The plain function needs no help: its `HostFromGpu` copy cannot start before the kernel has finished, so each call waits for
# the GPU by itself. That waiting is one more hidden cost of copying every result home.
#
# Here is a loop timed both ways:

# %%
def queued_and_finished(f, calls):
    # seconds per call when the clock stops right after the loop, and after synchronize()
    f()                        # warm up
    synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        f()
    queued = time.perf_counter() - start       # the loop is over: every kernel is at least queued
    synchronize()
    finished = time.perf_counter() - start     # the device is idle: every kernel has run
    return queued / calls, finished / calls

n_calls = size(200, 1000)
best = [min(pair) for pair in zip(*(queued_and_finished(f_borrow, n_calls) for _ in range(3)))]
print(f"{n_calls} calls of f_borrow on {device_label()}")
print(f"  clock stopped without synchronize(): {format_seconds(best[0])} per call")
print(f"  clock stopped after synchronize():   {format_seconds(best[1])} per call")

# %% [markdown]
# **On the simulated GPU the two numbers are the same** (up to noise), and that is the honest result:
# nothing there is asynchronous. Each "kernel" is a NumPy call that has finished when it returns, and
# `synchronize()` has nothing to wait for.
#
# **On a real GPU they differ.** Without synchronising you would see only the launch cost, several
# microseconds per call, however large the vector; with it, you see the kernels as well. The
# *asynchronous* simulated GPU below shows it without a GPU. The
# tutorial's own loops did not synchronise. For `check3.py` that hardly matters: its kernel reads and
# writes 1.8 MB, about 10 µs at the GTX 580's memory bandwidth, so the 0.05 ms per call it reports is
# mostly Python and launch overhead. For a heavier kernel, an unsynchronised loop can look many times
# faster than the GPU really is.
#
# Asynchrony has a second consequence: an error in a kernel may only be reported at a later
# synchronisation point, by some other line of your program. Setting the environment variable
# `CUDA_LAUNCH_BLOCKING=1` makes every launch wait for its kernel: slower, but errors and profiles
# point at the right place.

# %% [markdown]
# ### The same experiment on the asynchronous simulated GPU
#
# `coursekit.costmodel.timeline.Timeline` lays the simulated GPU's work out on a modelled clock: a
# launch costs the host the card's launch latency and returns, the kernel runs on its stream for the
# model's time, a copy from ordinary host memory keeps the host waiting, and `synchronize()` waits for
# every stream. The numbers come from the model's virtual clock, not from the wall clock, so they are
# the same on every machine and every run: modelled figures, labelled as such. We repeat the loop
# above with `f_borrow` and with a heavier kernel (`exp` of 2²¹ values, 8 MiB), on a T4.
#
# *Predict first:* for which of the two will the unsynchronised clock be further off?

# %%
# NBVAL_CHECK_OUTPUT
from coursekit import devices
from coursekit.costmodel.timeline import Timeline

x_heavy = theano.shared(np.ones(2 ** 21, dtype="float32"), name="x_heavy")
f_heavy = theano.function([], Out(theano.gpu_from_host(T.exp(x_heavy)), borrow=True))


def virtual_queued_and_finished(f, calls, card="t4"):
    # the loop of section 6 on a modelled timeline: (queued, finished) seconds per call, virtual clock
    timeline = Timeline(card)
    timeline.watch(f)
    with timeline.attached(devices.get("sim")):
        f()
        synchronize()
        start = timeline.now()
        for _ in range(calls):
            f()
        queued = timeline.now() - start
        synchronize()
        finished = timeline.now() - start
    timeline.unwatch(f)
    return queued / calls, finished / calls, timeline.label


for name, f in (("f_borrow", f_borrow), ("exp of 2**21 values", f_heavy)):
    queued, finished, label = virtual_queued_and_finished(f, 50)
    print(f"{name:<20} {label}: without synchronize() {format_seconds(queued)} per call, "
          f"after it {format_seconds(finished)}: the unsynchronised clock under-reports {finished / queued:.1f}x")
under = virtual_queued_and_finished(f_heavy, 50)
assert under[1] / under[0] >= 5

# %% [markdown]
# For `f_borrow` at this notebook's size the kernel is shorter than its launch, so the GPU keeps up
# with the host and the two clocks agree; for the 8 MiB kernel the loop "finishes" long before the GPU
# does, and the clock read without `synchronize()` is several times too small.
#
# Streams are the other half of asynchrony. Work queued on one stream runs in order; work on two
# streams may overlap. With page-locked (pinned) host memory a copy is asynchronous too, so a copy on
# a second stream can run while a kernel works on other data. The same timeline shows what that saves,
# for one upload of 8 MiB and one kernel:

# %%
# NBVAL_CHECK_OUTPUT
v = T.fvector("v")
f_upload = theano.function([v], Out(theano.gpu_from_host(v), borrow=True))
host_data = np.ones(2 ** 21, dtype="float32")
pair = {}
for how in ("one stream", "copy on a second stream"):
    timeline = Timeline("t4", pinned=True)
    timeline.watch(f_upload), timeline.watch(f_heavy)
    with timeline.attached(devices.get("sim")):
        start = timeline.now()
        if how == "one stream":
            f_upload(host_data)
            f_heavy()
        else:
            with timeline.stream("copies"):
                f_upload(host_data)
            f_heavy()
        synchronize()
        pair[how] = timeline.now() - start
    timeline.unwatch(f_upload), timeline.unwatch(f_heavy)
    print(f"{how:<24} {format_seconds(pair[how])}  ({timeline.label})")
assert pair["copy on a second stream"] < pair["one stream"]


# %% [markdown]
# ## 7. `allow_gc`: freeing or reusing intermediate buffers
#
# A graph of several ops has intermediate results: `exp(x).sum()` computes `exp(x)` into a buffer that
# only the sum reads. By default (`allow_gc=True`) coursekit, like Theano, lets go of every
# intermediate at the end of a call, so its memory can be returned; the next call allocates it again.
# With `allow_gc=False` the function keeps its intermediates between calls, and ops that can write
# into an existing buffer (elementwise kernels can) reuse it.
#
# Theano's tutorial recommends `allow_gc=False` on the GPU for speed. In 2012 that was sound: Theano
# called `cudaMalloc` and `cudaFree` for every buffer, and `cudaFree` waits for the device, a
# synchronisation that interrupts the queue of section 6. With a memory pool (CuPy's default; Theano
# gained one, CNMeM, in 2015) a freed buffer goes back to the pool without a synchronisation and the
# next allocation is a lookup, so most of the gain is gone. The
# price is memory: every intermediate stays allocated as long as the function lives. The flag is read
# when a function is compiled, so set it around `theano.function`. (On a GPU device coursekit would
# fuse this exponential into the sum's own kernel, one reduction that never writes `exp(x)` to memory;
# to have an intermediate to look at, the example leaves that rewrite, `fused_reduce`, out.)

# %%
def intermediate_buffers(allow_gc):
    # compile exp(x).sum() with this allow_gc; return the exp buffer after each of two calls, and the function
    with theano.config.change(allow_gc=allow_gc):   # fused_reduce left out: see the note above
        f = theano.function([], T.exp(x).sum(), mode=theano.Mode("FAST_RUN").excluding("fused_reduce"))
    exp_output = f.toposort()[0].outputs[0]     # the first op is the exp kernel
    cell = f.storage_map[exp_output]            # the storage cell where it writes its result
    f()
    after_first = cell[0]
    f()
    return after_first, cell[0], f

for gc in (True, False):
    after_first, after_second, f = intermediate_buffers(gc)
    if after_first is None:
        what = "freed after each call (the next call allocates it again)"
    else:
        what = f"kept between calls; the second call reused the same buffer: {after_first is after_second}"
    print(f"allow_gc={gc!s:5}: {f.toposort()[0]} output {what}")

# %%
_, _, f_gc = intermediate_buffers(True)
_, _, f_no_gc = intermediate_buffers(False)
print(f"allow_gc=True:  {time_call(f_gc)}")
print(f"allow_gc=False: {time_call(f_no_gc)}")
print(f"sum agrees with NumPy: {np.allclose(f_no_gc(), expected.sum(dtype=np.float64), rtol=1e-4)}")

# %% [markdown]
# On the simulated GPU the difference is small, and noise can flip its sign: the "allocation" is a
# NumPy allocation on the CPU. The model prices the same two functions with and without a pool (the
# GTX 580 preset has none, the T4's has CuPy's):

# %%
# NBVAL_IGNORE_OUTPUT
gc_saving = {}
for card in ("gtx580", "t4"):
    with_gc, without_gc = (predict_call(f, model=costmodel.model(card)) for f in (f_gc, f_no_gc))
    gc_saving[card] = with_gc.device - without_gc.device   # the device path: no measurement noise
    print(f"{with_gc.label:<18} allow_gc=True {with_gc.figure()}, allow_gc=False {without_gc.figure()}: "
          f"the device path saves {format_seconds(gc_saving[card])} (allocations {format_seconds(with_gc.parts['alloc'])} "
          f"vs {format_seconds(without_gc.parts['alloc'])})")
assert gc_saving["gtx580"] > 10 * max(gc_saving["t4"], 1e-9)

# %% [markdown]
# Without a pool, keeping the intermediates saves a `cudaMalloc` + `cudaFree` per call and per
# intermediate; with one, the saving is about a microsecond. Note that `allow_gc=False` is about
# *intermediate* buffers, inside one call; `borrow=True` is about the *output* you receive. Neither
# changes the numbers the function computes.

# %% [markdown]
# ## Summary
#
# * A plain GPU function copies each result home (`HostFromGpu`) and gives you new memory every call.
# * `theano.gpu_from_host(expr)` keeps the result on the device: the call returns a **handle**, and
#   `.get()` is the explicit copy back (`numpy.asarray(handle)` makes the same copy, as in Theano).
# * `Out(expr, borrow=True)` reuses the output buffer, so a saved result is overwritten by the next
#   call. Copy (`.get()` or `.copy()`) what you keep.
# * GPU work is queued: time it only after `synchronize()` (`time_call` and the profiler do). On the
#   simulated GPU nothing is queued, so both timings agree.
# * `allow_gc=False` keeps intermediate buffers for reuse, at the cost of memory. What it saves is an
#   allocation and a free per intermediate: the model prices that high without a memory pool (the
#   GTX 580 preset) and at about nothing with CuPy's pool (the T4's); the simulated GPU measured no
#   reliable difference.
# * The tutorial's 0.64 s → 0.35 s → 0.05 s came from removing a 0.92 MB copy across the bus, then
#   a `cudaMalloc` without a memory pool, from every call. The model reproduces both steps for the
#   GTX 580; on a current GPU with CuPy's pool the copy home still costs, but `borrow=True` saves only
#   a pool lookup.
#
# **Exercise:** [`exercises/03_handles_and_borrow_exercises.ipynb`](../exercises/03_handles_and_borrow_exercises.ipynb) ([in Colab](https://colab.research.google.com/github/coursekit/coursekit/blob/main/exercises/03_handles_and_borrow_exercises.ipynb)):
# return a handle and copy it back, keep borrowed results correctly, and detect aliasing.
