# %% [markdown]
# # Lesson 6 — What a GPU accelerates
#
# The Theano tutorial gives a short list of what to expect from the GPU. In our words:
#
# * only **float32** work is accelerated; float64 was still slow on the GPUs of the time;
# * **matrix multiplication**, convolution and **large elementwise** operations can run 5–50 times
#   faster, provided the arguments are large enough to keep all of the GPU's processors busy;
# * **indexing, dimension shuffling** and constant-time reshaping are about as fast on the GPU as on
#   the CPU;
# * **summing** over the rows or columns of a tensor can be a little *slower* on the GPU;
# * **copying** large amounts of data to and from the device is slow, and often cancels the gain of one
#   or two fast functions on that data.
#
# This lesson turns each claim into a measurement: the per-call time of each kind of operation, for a
# range of sizes, on `device="cpu"` and `device="gpu"`, drawn on log-log axes. Then we explain the
# shapes of the curves with three ideas: **launch overhead**, **memory bandwidth** and
# **arithmetic intensity**.
#
# As in every lesson: without an NVIDIA GPU, `device="gpu"` is coursekit's *simulated* GPU, whose
# kernels are NumPy on the CPU. Its measured curves show what the compiler did (placement, transfers,
# copies avoided), not what a GPU would do. So every sweep also draws a third curve: the cost model's
# prediction of the whole call on a Tesla T4 (`modelled (t4)`: the T4's modelled launches, kernels and
# copies plus the host time coursekit spends per call on this machine; a prediction, never a
# measurement, and "uncalibrated": nobody measured a T4 for this project). Before each section, guess where the modelled GPU curve will sit against the
# CPU's; the end of the lesson puts the operations on a roofline of several cards.

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
from coursekit.lessons import Table, device_label, size, time_call

rng = np.random.default_rng(6)
print(device_label())
with theano.config.change(device="gpu"):
    GPU_LABEL = device_label()
GPU_SIMULATED = "simulated" in GPU_LABEL
print(GPU_LABEL)

# %% [markdown]
# ## A small benchmark harness
#
# Three helpers do all the measuring:
#
# * `on_device(expr)` compiles `expr` so that, on a GPU device, its result *stays* on the device
#   (`gpu_from_host` plus `Out(borrow=True)`): we want to time the operation, not the download of its
#   result, which gets its own section;
# * `sweep(build, sizes)` compiles `build(n)` for each size on each device, and times it with
#   `time_call` (a warm-up call first, the device synchronised, the best of three repeats of a number
#   of calls chosen so that a repeat lasts about 10 ms at the small size);
# * `plot_sweep` draws per-call time against size on log-log axes, and labels a simulated GPU as such;
# * on the GPU device `sweep` also asks the cost model for each function's whole call on a T4
#   (`predict_call`: modelled device path + measured host time), drawn dashed and labelled `modelled (t4)`.

# %%
from coursekit import costmodel
from coursekit.costmodel import presets
from coursekit.profiling.predict import predict_call, predict_scaled


def on_device(expr, inputs=()):
    keep_on_gpu = theano.config.device != "cpu" and expr.dtype == "float32"
    out = theano.gpu_from_host(expr) if keep_on_gpu else expr
    return theano.function(list(inputs), theano.Out(out, borrow=True))


REPEAT_SECONDS = size(0.01, 0.05)     # how long one timed repeat should last


def calls_per_repeat(fn, *args):
    fn(*args)                                    # the first call may compile or allocate
    start = time.perf_counter()
    fn(*args)
    once = max(time.perf_counter() - start, 1e-7)
    return max(1, min(1000, int(REPEAT_SECONDS / once)))


MODEL = costmodel.model("t4")        # the card the modelled curves are for


def sweep(build, sizes, devices=("cpu", "gpu")):
    # build(n) -> (compiled function, its arguments); returns {device: [best seconds per call]} (the best of
    # 7 repeats: a busy machine slows some repeats, rarely all of them),
    # plus, on the GPU device, the modelled whole call on MODEL under its own key
    result = {}
    for device in devices:
        with theano.config.change(device=device, warn_float64="ignore"):
            result[device] = []
            for n in sizes:
                fn, *args = build(n)
                number = calls_per_repeat(fn, *args)
                result[device].append(time_call(fn, *args, number=number, repeat=7, model=False).best)
                if device == "gpu":
                    result.setdefault(f"gpu, {MODEL.label}", []).append(predict_call(fn, *args, model=MODEL).total)
    return result


def plot_sweep(ax, sizes, result, title, xlabel):
    for device, seconds in result.items():
        label = device
        modelled = "modelled" in device
        if "gpu" in device and GPU_SIMULATED and not modelled:
            label += " (simulated: CPU time)"
        ax.loglog(sizes, seconds, "o--" if modelled else "o-",
                  label=label + (f": whole call, a prediction ({presets.band_text(MODEL.spec)})" if modelled else ""))
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("seconds per call")
    ax.legend(fontsize=8)


def shared_array(shape, dtype="float32"):
    return theano.shared(rng.standard_normal(shape).astype(dtype))


# %% [markdown]
# ## 1. Matrix multiplication
#
# An n × n product does 2n³ floating-point operations on 3n² numbers: the work grows faster than the
# data. That is the best case for a GPU. We time `T.dot(A, B)` with both matrices in shared variables
# (so, on a GPU device, already in device memory) and also report the rate in GFLOP/s.
#
# *Predict:* at the largest size here, will the modelled T4 curve sit above or below the CPU's? By how much?

# %%
def build_matmul(n, dtype="float32"):
    A, B = shared_array((n, n), dtype), shared_array((n, n), dtype)
    return (on_device(T.dot(A, B)),)


matmul_sizes = size([32, 96, 288], [128, 256, 512, 1024, 2048, 4096])
matmul = sweep(build_matmul, matmul_sizes)

fig, axes = plt.subplots(1, 2, figsize=(10, 3.5), dpi=70)
plot_sweep(axes[0], matmul_sizes, matmul, "dot(A, B), n x n, float32", "n")
for device, seconds in matmul.items():
    axes[1].semilogx(matmul_sizes, [2 * n ** 3 / t / 1e9 for n, t in zip(matmul_sizes, seconds)], "o-", label=device)
axes[1].set_xlabel("n")
axes[1].set_ylabel("GFLOP/s")
axes[1].legend(fontsize=8)
fig.tight_layout()
plt.show()


# %% [markdown]
# A practical warning if a curve jumps by a factor of 100 between two neighbouring sizes: NumPy's
# multi-threaded BLAS starts its threads above some size, and on a machine whose cores are already
# busy (a shared server, a CI runner) those threads wait for each other. Start Jupyter with
# `OPENBLAS_NUM_THREADS=1` (or `OMP_NUM_THREADS=1`) to measure one core cleanly.
#
# The rate grows with n: small products are dominated by fixed costs (the Python call, the function's
# bookkeeping), large ones by arithmetic. On a real GPU the rising part of the curve continues much
# further: a single modern GPU sustains tens of TFLOP/s in float32 once n is a few thousand.
#
# ## 2. Large elementwise operations
#
# `exp(x) * 2 + 1` on a vector of n numbers: three operations per element, which coursekit fuses into
# one loop (one kernel on a GPU). An `exp` costs more than a multiply: coursekit's cost model counts it
# as 8 floating-point operations (`coursekit.work.TRANSCENDENTAL_FLOPS`), so the chain is 10 FLOPs per
# element. Each element is read once and written once, so the work and the data
# grow together. The interesting rate here is memory traffic, in GB/s.

# %%
def build_elementwise(n, dtype="float32"):
    x = shared_array(n, dtype)
    return (on_device(T.exp(x) * 2 + 1),)


vector_sizes = size([10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6], [10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6, 10 ** 7, 10 ** 8])
elementwise = sweep(build_elementwise, vector_sizes)

fig, axes = plt.subplots(1, 2, figsize=(10, 3.5), dpi=70)
plot_sweep(axes[0], vector_sizes, elementwise, "exp(x) * 2 + 1, float32", "elements")
for device, seconds in elementwise.items():
    axes[1].semilogx(vector_sizes, [8 * n / t / 1e9 for n, t in zip(vector_sizes, seconds)], "o-", label=device)
axes[1].set_xlabel("elements")
axes[1].set_ylabel("GB/s (read + write)")
axes[1].legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# Each curve has a fixed cost per call and a cost per element. Where the fixed cost dominates the
# curve is flat; where the per-element cost does, time grows in proportion to n and the rate settles
# at what memory can deliver. The next cell reads the curves above: how much each one grows over the
# sweep, and up to which size the modelled T4 call stays within 1.5× of its smallest figure. On a GPU
# the flat part is higher (each kernel launch costs the host several microseconds) and lasts longer (a
# GPU needs hundreds of thousands of elements to fill its cores); the rising part is lower, by the
# ratio of memory bandwidths.
#
# ## 3. Reductions
#
# Summing a matrix over its rows (`sum(axis=0)`) or its columns (`sum(axis=1)`) reads every element
# once but writes only one row of results. A CPU core does this with a running total; a GPU has to
# split each sum over many threads and combine the partial sums, which costs synchronisation.

# %%
# NBVAL_IGNORE_OUTPUT
modelled_key = f"gpu, {MODEL.label}"
for key, seconds in elementwise.items():
    print(f"{key:<22} {seconds[-1] / seconds[0]:8.1f}x longer at {vector_sizes[-1]:,} than at {vector_sizes[0]:,} elements")
t4_curve = elementwise[modelled_key]
flat_until = max(n for n, t in zip(vector_sizes, t4_curve) if t < 1.5 * t4_curve[0])
print(f"{MODEL.label} whole call: within 1.5x of its smallest figure up to {flat_until:,} elements")
assert flat_until >= 10 ** 5 and elementwise["cpu"][-1] / elementwise["cpu"][0] > t4_curve[-1] / t4_curve[0]
assert t4_curve[0] > elementwise["cpu"][0]   # small arrays: the GPU call sits above the CPU's (section 8 says so)


# %%
def build_sum(axis):
    def build(n, dtype="float32"):
        M = shared_array((n, n), dtype)
        return (on_device(M.sum(axis=axis)),)
    return build


square_sizes = size([64, 256, 1024], [256, 1024, 2048, 4096, 8192])
sum_rows = sweep(build_sum(0), square_sizes)
sum_cols = sweep(build_sum(1), square_sizes)

fig, ax = plt.subplots(figsize=(6, 3.5), dpi=70)
plot_sweep(ax, square_sizes, {f"{d}, axis=0": t for d, t in sum_rows.items()}, "M.sum(axis), n x n", "n")
for device, seconds in sum_cols.items():
    ax.loglog(square_sizes, seconds, "s--", label=f"{device}, axis=1")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## 4. Indexing and dimension shuffling
#
# A transpose, a `dimshuffle` that adds a broadcastable axis, or a basic slice such as `x[::2, 1:]` does
# not touch the data: it returns a *view*, a new shape and new strides over the same buffer. Its cost
# does not depend on the size at all, on either device. That is why the tutorial calls them "equally
# fast". *Advanced* indexing with an integer array (`x[idx]`) is different: it gathers rows into a new
# array. Look first at where coursekit places each of them on the GPU device:

# %%
# NBVAL_CHECK_OUTPUT
with theano.config.change(device="gpu"):
    M = shared_array((50, 40))
    idx = T.ivector("idx")
    for name, expr, inputs in [("M.T", M.T, []),
                               ("M.dimshuffle(1, 'x', 0)", M.dimshuffle(1, "x", 0), []),
                               ("M[::2, 1:]", M[::2, 1:], []),
                               ("M[idx]", M[idx], [idx])]:
        fn = theano.function(inputs, expr)
        print(f"{name:<24}", [type(node.op).__name__ for node in fn.toposort()])


# %% [markdown]
# Views stay on the device (`GpuDimShuffle`, `GpuSubtensor`), and so does the integer-array gather
# (`GpuAdvancedSubtensor1`): only the small index vector is copied to the device, and the rows are
# gathered where they live. Unlike a view, a gather moves data: it reads and writes every row it picks, so
# its cost grows with the size. (An op without a GPU version would cost more: the compiler would have to
# download its whole input with a `HostFromGpu` first.)
#
# Now the timings. Computing a view costs almost nothing; what it costs to *return* depends on
# `borrow`. With `Out(borrow=True)` coursekit hands back the view itself, which aliases `M`: writing
# into it would change `M`, and that is the bargain `borrow=True` makes. Without it, the view is
# copied on the way out, and we would be timing an n × n copy. To compare like with like, each
# view below returns one row (n numbers), and the gather keeps its n/2 gathered rows on the device, so
# no result crosses the bus and what we time is the ops themselves:

# %%
def build_view(kind):
    def build(n, dtype="float32"):
        M = shared_array((n, n), dtype)
        view = M.T if kind == "transpose" else M[::2, 1:]
        return (on_device(view[1]),)      # one row of the view: see the note above
    return build


def build_gather(n, dtype="float32"):
    M = shared_array((n, n), dtype)
    idx = T.ivector("idx")
    rows = rng.integers(0, n, size=n // 2).astype("int32")
    return on_device(M[idx], [idx]), rows           # the gathered rows stay on the device, like the views


transposes = sweep(build_view("transpose"), square_sizes)
slices = sweep(build_view("slice"), square_sizes)
gathers = sweep(build_gather, square_sizes)

fig, ax = plt.subplots(figsize=(6, 3.5), dpi=70)
plot_sweep(ax, square_sizes, {f"{d}, M.T[1]": t for d, t in transposes.items()}, "views and a gather, n x n", "n")
for device, seconds in slices.items():
    ax.loglog(square_sizes, seconds, "s--", label=f"{device}, M[::2, 1:][1]")
for device, seconds in gathers.items():
    ax.loglog(square_sizes, seconds, "^:", label=f"{device}, M[idx] (n/2 rows)")
ax.legend(fontsize=7)
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
with theano.config.change(device="gpu"):
    gather_fn, _ = build_gather(64)
print("gather graph:", [type(node.op).__name__ for node in gather_fn.toposort()])
assert not any(type(node.op).__name__ == "HostFromGpu" for node in gather_fn.toposort())


# %% [markdown]
# ## 5. Transfers
#
# A transfer is the price of admission to the GPU. We time the upload of a host vector
# (`GpuFromHost`, a function whose only op is the transfer) and the download of a device vector
# (`HostFromGpu`). Only the GPU device has transfers.

# %%
def build_upload(n, dtype="float32"):
    x = T.vector("x", dtype=dtype)
    return theano.function([x], theano.Out(theano.gpu_from_host(x), borrow=True)), rng.standard_normal(n).astype(dtype)


def build_download(n, dtype="float32"):
    x = shared_array(n, dtype)
    return (theano.function([], theano.host_from_gpu(x)),)


uploads = sweep(build_upload, vector_sizes, devices=("gpu",))
downloads = sweep(build_download, vector_sizes, devices=("gpu",))
with theano.config.change(device="gpu"):
    print("upload graph:  ", [type(n.op).__name__ for n in build_upload(10)[0].toposort()])
    print("download graph:", [type(n.op).__name__ for n in build_download(10)[0].toposort()])

fig, ax = plt.subplots(figsize=(6, 3.5), dpi=70)
modelled_key = f"gpu, {MODEL.label}"
plot_sweep(ax, vector_sizes, {"gpu, upload": uploads["gpu"], "gpu, download": downloads["gpu"],
                              "gpu, exp(x) * 2 + 1 on the device": elementwise["gpu"],
                              f"upload, {MODEL.label}": uploads[modelled_key],
                              f"download, {MODEL.label}": downloads[modelled_key],
                              f"exp(x) * 2 + 1, {MODEL.label}": elementwise[modelled_key]},
           "moving n float32 vs computing on them", "elements")
plt.show()
copy_over_kernel = [(up + down) / kernel for up, down, kernel in
                    zip(uploads[modelled_key], downloads[modelled_key], elementwise[modelled_key])]
print(f"{MODEL.label}: upload + download / the kernel's whole call, by size:",
      ", ".join(f"{r:.1f}x" for r in copy_over_kernel))
assert all(r > 1 for r in copy_over_kernel) and copy_over_kernel[-1] > 5

# %% [markdown]
# On a real GPU the upload and the download run over the PCIe bus: about 3–6 GB/s on PCIe 2.0 (the
# tutorial's era) and up to about 50 GB/s from page-locked memory on PCIe 5.0 (an H100; PCI-SIG's
# 63 GB/s raw per direction), much less from ordinary pageable NumPy memory (the project measured
# 9.1 GB/s on an H100 host) — ten to a hundred times slower than the GPU reading its own memory. The
# dashed modelled T4 curves show it (the line under the picture): the round trip costs more than the
# kernel's whole call at every size, and several times more at the largest. On the simulated GPU the
# measured curves say the opposite, because its "bus" is a copy within RAM. So an elementwise operation on data
# that must first be uploaded and then downloaded spends most of its time in the copies: exactly the
# tutorial's warning, and the reason lesson 5 moved the data into shared variables.
#
# ## 6. float32 and float64
#
# The tutorial's first rule: only float32 is accelerated. coursekit follows old Theano here and keeps
# float64 work on the host even when `device="gpu"`: compare the graphs.

# %%
# NBVAL_CHECK_OUTPUT
with theano.config.change(device="gpu", warn_float64="ignore"):
    for dtype in ("float32", "float64"):
        A = shared_array((30, 30), dtype)
        fn = theano.function([], T.tanh(T.dot(A, A)))
        print(dtype, [type(node.op).__name__ for node in fn.toposort()])

# %% [markdown]
# The float64 graph has no GPU op at all. On the CPU, float64 costs about twice float32 wherever memory
# is the limit (twice the bytes), and about twice for arithmetic too (half as many numbers per vector
# instruction):

# %%
dtypes = {}
for dtype in ("float32", "float64"):
    dtypes[f"matmul {dtype}"] = sweep(lambda n: build_matmul(n, dtype), matmul_sizes, devices=("cpu",))["cpu"]
    dtypes[f"elementwise {dtype}"] = sweep(lambda n: build_elementwise(n, dtype), vector_sizes, devices=("cpu",))["cpu"]

fig, axes = plt.subplots(1, 2, figsize=(10, 3.5), dpi=70)
plot_sweep(axes[0], matmul_sizes, {k: v for k, v in dtypes.items() if "matmul" in k}, "dot(A, B) on the CPU", "n")
plot_sweep(axes[1], vector_sizes, {k: v for k, v in dtypes.items() if "elementwise" in k},
           "exp(x) * 2 + 1 on the CPU", "elements")
fig.tight_layout()
plt.show()

# %% [markdown]
# On GPUs the gap depends on the card. The slides' Tesla K40 peaks at 4.29 TFLOP/s in float32 and
# 1.43 TFLOP/s in float64 (base clocks): a factor of three. Today's data-centre cards compute float64 at
# **half** the float32 rate (A100: 9.7 against 19.5 TFLOP/s; H100 SXM: 34 against 67 TFLOP/s, NVIDIA's
# datasheets), while consumer and inference cards keep only a token float64 unit: **1/32** on a T4
# (0.25 against 8.1 TFLOP/s) and **1/64** on recent GeForce cards.
#
# ## 7. Arithmetic intensity: one number that explains the curves
#
# An operation's **arithmetic intensity** is the number of floating-point operations it does per byte
# it moves to or from memory. A device has a peak compute rate (FLOP/s) and a peak memory bandwidth
# (bytes/s); their ratio is its *ridge point*. Below the ridge point an operation is
# **memory-bound**: it runs at intensity × bandwidth, whatever the compute rate. Above it, it is
# **compute-bound**. With the K40's figures from the slides (4.29 TFLOP/s float32, 288 GB/s):

# %%
# NBVAL_CHECK_OUTPUT
from coursekit.work import TRANSCENDENTAL_FLOPS

peak_flops, bandwidth = 4.29e12, 288e9           # Tesla K40, float32, base clocks (from the slides)
ridge = peak_flops / bandwidth
n = 4096
ops = [  # name, flops, bytes moved (float32: 4 bytes a number)
    ("dot(A, B), n x n", 2 * n ** 3, 4 * 3 * n ** 2),
    ("exp(x) * 2 + 1, n^2 elements", (TRANSCENDENTAL_FLOPS + 2) * n ** 2, 4 * 2 * n ** 2),   # exp counts 8
    ("M.sum(axis=0), n x n", n * (n - 1), 4 * (n ** 2 + n)),
    ("upload n^2 numbers", 0, 4 * n ** 2),
]
rows = []
for name, flops, moved in ops:
    intensity = flops / moved
    attainable = min(peak_flops, intensity * bandwidth)
    rows.append([name, f"{intensity:.2f}", "compute" if intensity >= ridge else "memory",
                 f"{attainable / 1e9:,.0f}", f"{100 * attainable / peak_flops:.1f} %"])
print(f"ridge point of the K40: {ridge:.1f} FLOP per byte")
Table(["operation (n = 4096)", "FLOP / byte", "bound by", "attainable GFLOP/s", "of peak"], rows)

# %% [markdown]
# This table is the tutorial's list in numbers. Matrix multiplication, at n/6 ≈ 683 FLOP per byte, can use
# the whole chip: that is where the 5–50× comes from. An elementwise chain does about one FLOP
# per byte (the same 1.25 the roofline below prints, counting an `exp` as 8) and can only be as fast
# as memory — still a large gain, because a GPU's memory is an
# order of magnitude faster than a CPU's, but nothing like the compute ratio. A reduction is
# memory-bound too, and pays for the cooperation between threads on top. A transfer does no arithmetic
# at all and, over PCIe, is bounded by a bandwidth lower than the CPU's own memory.
#
# ## What a real GPU shows, and why

# %% [markdown]
# ### The roofline of several cards
#
# The same idea as a picture. Each line is one card's *roof*: `min(peak FLOP/s, intensity ×
# bandwidth)`, from its datasheet. Each dot is one of this lesson's operations at the largest size of
# its sweep at full size (matmul n = 4096, elementwise 10⁸ elements, sum n = 8192), placed at its
# arithmetic intensity and at the FLOP/s the cost model gives it on a T4 — launch latency and wave
# quantisation included. Dashed roofs are the tensor cores of the cards that have them: float16 matrix
# products run there (a float32 product, as here, stays on the solid roof, since CuPy leaves TF32 off). *Predict first:* which of the three sits on the sloped (memory) part of the
# T4's roof, and which near its flat top?

# %%
# Your prediction (not graded): the names, among "matmul", "elementwise" and "sum(axis=0)"
my_memory_bound = None      # e.g. ["matmul"]: the ones on the sloped (memory) part of the T4's roof

# %%
from coursekit.printing.gpu_plots import plot_roofline, roofline_points

with theano.config.change(device="gpu"):
    small = {"matmul": (build_matmul(96), {96: 4096}),
             "elementwise": (build_elementwise(10_000), {10_000: 10 ** 8}),
             "sum(axis=0)": (build_sum(0)(256), {256: 8192})}
points = []
for name, ((fn, *args), sizes) in small.items():
    call = predict_scaled(fn, *args, sizes=sizes, model=MODEL)
    for p in roofline_points(call):
        points.append(dict(p, name=f"{name} ({p['bound']}-bound)"))
ax = plot_roofline(points, gpu_models=("gtx580", "k40", "t4", "a100", "h100"),
                   label=f"Roofline from datasheet peaks; dots: {MODEL.label}, a prediction")
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
for p in points:
    print(f"{p['name']:<34} intensity {p['intensity']:8.2f} FLOP/byte")

# %%
# your prediction beside the model's bounds (T4 preset, at the full-size points above)
memory_bound = sorted(p["name"].split(" (")[0] for p in points if p["bound"] == "memory")
compute_bound = sorted(p["name"].split(" (")[0] for p in points if p["bound"] != "memory")
print(f"on the sloped (memory) part: {', '.join(memory_bound)}; at the flat top: {', '.join(compute_bound)}")
print(f"you predicted on the slope: {my_memory_bound}")

# %%
if GPU_SIMULATED:
    print("The 'gpu' curves above were measured on the SIMULATED GPU: NumPy on this machine's CPU.\n"
          "They show coursekit's placement and copies, not GPU speed. On a real GPU, expect the following.")
else:
    print(f"The 'gpu' curves above were measured on a real GPU: {GPU_LABEL}. Compare them with the following.")

# %%
# NBVAL_CHECK_OUTPUT
with theano.config.change(device="gpu"):
    exp_230400 = on_device(T.exp(shared_array(230_400)))
for card in ("gtx580", "h100"):
    call = predict_call(exp_230400, model=costmodel.model(card))
    node, cost = next((node, cost) for node, cost in call.rows if cost.work.launches)
    spec = costmodel.model(card).spec
    print(f"{call.label[:-1] + ', ' + call.band + ')':<30} exp of 230,400 float32: {cost.waves} wave(s) of {spec.resident_threads:,} threads;"
          f" kernel {cost.kernel * 1e6:.2f} µs, launch {cost.launch * 1e6:.1f} µs -> {cost.bound}-bound")
# the same call (W1 exp, borrow=True) measured on the H100 lent on 2026-11-24, with the host time of each run:
# benchmarks/results/2026-11-24-h100-lent-model-accuracy*.json
h100_call = predict_call(exp_230400, model=costmodel.model("h100"))
for measured, host in ((10.0e-6, 1.7e-6), (8.6e-6, 1.6e-6)):
    print(f"measured on an H100 (2026-11-24): {measured * 1e6:.1f} µs per call; "
          f"{h100_call.with_host(host).figure()} with that run's host time")

# %% [markdown]
# * **Launch overhead.** Every GPU kernel costs the host several microseconds to launch (the cell above
#   prints the model's figure), and every call through Python costs more. For small arrays the GPU curve is a flat line *above* the CPU's: the tutorial's
#   exp benchmark (lesson 2) used 230 400 elements — "10 × 30 cores × 768 threads" — to fill its GTX 580
#   (16 SMs × 1536 resident threads = 24 576 at once: about ten waves). On an H100 (132 SMs × 2048 =
#   270 336 resident threads) the same 230 400 elements are *under one wave*, and the kernel reads and
#   writes its 1.8 MB in well under a microsecond: the benchmark there measures launch and Python
#   overhead, not the GPU (the cell above asks the model).
# * **Bandwidth.** Once arrays are large, elementwise ops and reductions run at memory speed: hundreds
#   of GB/s on a GPU (288 GB/s for the K40, several TB/s today) against tens of GB/s for a CPU socket.
#   The curves become parallel lines, the GPU's lower by that ratio.
# * **Arithmetic intensity.** Matrix products keep getting faster per FLOP as n grows, up to the
#   compute peak; this is where the GPU's advantage is largest.
# * **Reductions.** The partial sums must be combined across threads and blocks: on the GPUs of the
#   tutorial a sum over rows or columns could be slower than on the CPU; today's reductions are
#   well-tuned but still reach a smaller share of bandwidth than a plain elementwise op.
# * **Views** cost the same microseconds on both devices: no data moves. A gather copies the rows it
#   picks, on the device where they live.
# * **Transfers** run at PCIe speed and are usually the first thing the profiler shows.
# * **Tensor cores** run matrix products only: in float16 at several times the vector units' peak (the
#   dashed roofs), and on A100/H100 in float64 too; elementwise work never reaches them.
# * **float64** runs at half the float32 rate on A100/H100, a third on the K40, and a thirty-second to a
#   sixty-fourth on consumer and inference cards; coursekit keeps it on the host anyway.
#
# To see it for yourself, run this notebook on a machine with an NVIDIA GPU and CuPy, with
# `COURSEKIT_SIZE=full`.
#
# **Exercise:** [`exercises/06_what_a_gpu_accelerates_exercises.ipynb`](../exercises/06_what_a_gpu_accelerates_exercises.ipynb) ([in Colab](https://colab.research.google.com/github/coursekit/coursekit/blob/main/exercises/06_what_a_gpu_accelerates_exercises.ipynb)) — write the benchmark helper, compute
# arithmetic intensities, derive a machine's roofline from measurements of it (this machine's, among
# others), and build a dimshuffle/slice expression that stays on the device.
