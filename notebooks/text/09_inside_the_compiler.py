# %% [markdown]
# # Lesson 9 — Inside the compiler
#
# Every earlier lesson used the compiler as a black box: we wrote `T.exp(x)`, called
# `theano.function`, and looked at what came out with `toposort()`. This lesson opens the box and adds
# to it. Between your graph and the thunks that run, coursekit applies **rewrites**: small named
# functions, registered in stages, that each replace a pattern of nodes by an equivalent one. You
# will write four kinds of rule and one op, and check each of them the way the library checks its own:
#
# 1. an **algebraic rule**, `log(exp(x)) -> x`, registered and watched as it fires in the rewrite log;
# 2. a **speed rule**, `exp(a) * exp(b) -> exp(a + b)`, then broken on purpose so that **DebugMode**
#    catches it — and a look at what DebugMode cannot catch;
# 3. a **placement rule** that keeps a scalar computation on the host and so **cuts a pair of
#    transfers**;
# 4. a new **op with a gradient**, checked with `verify_grad`, placed on the GPU device with a CUDA
#    kernel;
# 5. a **tiled matrix multiply** in CUDA C: naive against shared-memory tiles, race checks, the bytes
#    each one reads (counted), and the speed a GPU would reach (modelled).
#
# Without a GPU, the kernels run on coursekit's CUDA **emulator** (CPU), and GPU speeds come from the
# **cost model** of lesson 5: both are always labelled.

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
import numpy as np
import matplotlib.pyplot as plt

import coursekit as theano
import coursekit.tensor as T
from coursekit import cuda
from coursekit.lessons import Table, device_label, format_seconds, size, time_call
from coursekit import costmodel
from coursekit.costmodel import presets
from coursekit.devices.gpu_ops import GpuElemwise
from coursekit.devices.transfer import GpuFromHost, HostFromGpu
from coursekit.graph import Constant
from coursekit.profiling.predict import predict_call
from coursekit.rewriting import local_rewrite, registered, remove_rewrite
from coursekit.rewriting.patterns import elemwise_name, producer, single_client
from coursekit.tensor.elemwise import Elemwise
from coursekit.work import Work

plt.rcParams.update({"figure.figsize": (6, 3.5), "figure.dpi": 72})
rng = np.random.default_rng(909)
GPU_DEVICE = "gpu" if cuda.gpu_available() else "sim"   # the simulated GPU when CuPy sees none
NO_FUSION = theano.Mode("FAST_RUN").excluding("fusion")  # every op stays a node of its own: easier to read
MODEL = costmodel.model("t4")                            # the GPU the predictions are for
MODELLED = f"{MODEL.label[:-1]}, {presets.band_text(MODEL.spec)})"   # its label and error band: "uncalibrated"
                                                         # where no run on that card was measured
print("a GPU that CuPy sees:", cuda.gpu_available(), "| GPU device used below:", GPU_DEVICE)
print(device_label())   # the default device (COURSEKIT_FLAGS), used where no device is named


def ops(f):
    # the op of every node of a compiled function, in the order they run
    return [str(node.op) for node in f.toposort()]


def compile_on(device, inputs, outputs, mode=NO_FUSION):
    # compile for one device, whatever COURSEKIT_FLAGS says
    with theano.config.change(device=device):
        return theano.function(inputs, outputs, mode=mode)


# %% [markdown]
# ## 1. What does the compiler do with `log(exp(x))`?
#
# `log` undoes `exp`, so `log(exp(x))` is just `x`. Mathematically. A program computes `exp(x)` first,
# and in float32 `exp(x)` overflows to `inf` as soon as `x > 88.7`.
#
# **Predict** before running the next cell: does coursekit's compiler know that `log(exp(x))` is `x`?
# What will `f` return for `x = 100`?

# %%
# Your prediction (not graded)
my_compiler_knows = None   # True or False: does the compiled graph drop log(exp(x))?
my_f_at_100 = None         # what f returns for x = 100 (f computes 2 * log(exp(x)) in float32)

# %%
# NBVAL_CHECK_OUTPUT

x = T.fvector("x")
f = compile_on("cpu", [x], 2 * T.log(T.exp(x)))
probe = np.float32([-3.0, 0.5, 100.0])
print("ops:", ops(f))
print("rewrites that fired:", [name for _, name, _ in f.maker.fgraph.rewrite_log])
with np.errstate(over="ignore"):          # exp(100) overflows in float32 (NumPy would warn)
    print("f(-3, 0.5, 100) =", f(probe))

# %%
# your predictions beside what ran
with np.errstate(over="ignore"):
    at_100 = f(np.float32([100.0]))[0]
knows = not any(name in op for op in ops(f) for name in ("exp", "log"))
print(f"the compiled graph drops log(exp(x)): {knows}; you predicted {my_compiler_knows}")
print(f"f at x = 100: {at_100}; you predicted {my_f_at_100}")


# %% [markdown]
# It does not: both ops are in the compiled graph, no rewrite fired, and `x = 100` gives `inf` where the
# answer is 200. Nothing is wrong with the compiler's rules; it simply has none for this pattern. So we
# write one.
#
# ## 2. Writing a rewrite
#
# A **local rewrite** is a function `rule(fgraph, node)`. The compiler shows it one node at a time; it
# returns `None` ("not my pattern") or a list with one replacement variable per output of the node.
# Registering it takes one decorator, `local_rewrite(stage, *tags, tracks=[...])`:
#
# * the **stage** says when it runs. The stages run in this order:
#   `canonicalize -> stabilize -> specialize -> fusion -> placement -> transfer`. Canonicalize puts
#   the graph in a simple normal form; that is where algebra belongs.
# * **tracks** names the op classes it looks at, so the compiler never asks it about other nodes;
# * the **tags** are labels a mode can select or exclude (`Mode(...).excluding("lesson9")`). The
#   stage, the rule's own name and `fast_run` are tags too.
#
# The helpers of `coursekit.rewriting.patterns` read a node: `elemwise_name(node)` is the name of an
# elementwise node's scalar op (`"log"`, `"exp"`, `"mul"`...), and `producer(var, "exp")` is the `exp`
# node that computed `var`, or `None`.

# %%
@local_rewrite("canonicalize", "lesson9", tracks=[Elemwise])
def log_of_exp(fgraph, node):
    # log(exp(t)) -> t
    if elemwise_name(node) != "log":
        return None
    inner = producer(node.inputs[0], "exp")
    if inner is None:
        return None
    return [inner.inputs[0]]


print([rw.name for rw in registered("canonicalize")][-3:])

# %% [markdown]
# The rule is now one of the canonicalize rewrites, and every function compiled from now on runs it.
# Compile the same graph again, and read the **rewrite log**, `f.maker.fgraph.rewrite_log`: one entry
# `(stage, rule, node it replaced)` for every rewrite that fired.

# %%
# NBVAL_CHECK_OUTPUT

g = compile_on("cpu", [x], 2 * T.log(T.exp(x)))
print("ops:", ops(g))
for stage, rule, node in g.maker.fgraph.rewrite_log:
    print(f"  {stage:12s} {rule:12s} replaced {node}")
print("g(-3, 0.5, 100) =", g(probe))

# %% [markdown]
# Two ops fewer, and `x = 100` now gives 200. The rewrite made the graph cheaper *and* more accurate:
# it never computes the `exp` that overflowed. A rewrite must never make a result wrong, though, and
# "more accurate" means "different": section 3 comes back to how to check a rule.
#
# Placement runs after canonicalize, so the rule fires on the GPU device too, before anything is
# placed: the device gets less work.

# %%
# NBVAL_CHECK_OUTPUT

on_gpu = compile_on(GPU_DEVICE, [x], 2 * T.log(T.exp(x)))
print("ops:", ops(on_gpu))
print("rules that fired:", [rule for _, rule, _ in on_gpu.maker.fgraph.rewrite_log])


# %% [markdown]
# ## 3. A speed rule, broken on purpose, and DebugMode
#
# `exp(a) * exp(b)` computes two exponentials and a product; `exp(a + b)` one exponential and a sum.
# Both are the same number (up to rounding), and an exponential costs far more than an addition.
# That is a **speed** rule, so it belongs in the `specialize` stage, after the algebra.

# %%
# NBVAL_CHECK_OUTPUT

@local_rewrite("specialize", "lesson9", tracks=[Elemwise])
def product_of_exps(fgraph, node):
    # exp(a) * exp(b) -> exp(a + b): one transcendental instead of two
    if elemwise_name(node) != "mul":
        return None
    first, second = (producer(v, "exp") for v in node.inputs)
    if first is None or second is None:
        return None
    return [T.exp(first.inputs[0] + second.inputs[0])]


a, b = T.fvector("a"), T.fvector("b")
h = compile_on("cpu", [a, b], T.exp(a) * T.exp(b))
av, bv = rng.standard_normal(7).astype(np.float32), rng.standard_normal(7).astype(np.float32)
print("ops:", ops(h))
print("same as NumPy (rtol 1e-6):", np.allclose(h(av, bv), np.exp(av) * np.exp(bv), rtol=1e-6))

# %% [markdown]
# Now the mistake. Say we typed `*` for `+` inside the rule: `exp(a) * exp(b) -> exp(a * b)`. Such a
# rule compiles, fires, and quietly returns wrong numbers; nothing about the graph looks odd. We take
# the good rule out (`remove_rewrite` returns it) and register the broken one.

# %%
good_rule = remove_rewrite("product_of_exps")


@local_rewrite("specialize", "lesson9", tracks=[Elemwise])
def product_of_exps_broken(fgraph, node):
    if elemwise_name(node) != "mul":
        return None
    first, second = (producer(v, "exp") for v in node.inputs)
    if first is None or second is None:
        return None
    return [T.exp(first.inputs[0] * second.inputs[0])]     # the bug: * instead of +


quietly_wrong = compile_on("cpu", [a, b], T.exp(a) * T.exp(b))
print("ops:", ops(quietly_wrong))
print("first values:", quietly_wrong(av, bv)[:3], " NumPy:", (np.exp(av) * np.exp(bv))[:3])

# %% [markdown]
# **DebugMode** is how a compiler developer finds such a rule. Each call of a function compiled with
# `mode="DebugMode"` also runs a *reference* copy of the graph, to which only the stages that define
# the meaning of a graph were applied (canonicalize and stabilize) — not the speed stages
# (specialize, fusion, placement) — and compares every output. It also runs every node's thunk
# against its op's NumPy `perform` (that is how lesson 7 caught a kernel). So a wrong speed rule shows
# at the first call, and the error lists the rules that were applied:

# %%
checked = compile_on("cpu", [a, b], T.exp(a) * T.exp(b), mode="DebugMode")
try:
    checked(av, bv)
except theano.debugmode.DebugModeError as err:
    print(f"{type(err).__name__}:\n{err}")


# %% [markdown]
# **What DebugMode cannot catch.** The reference itself went through canonicalize. A wrong
# *canonicalize* rule therefore changes the reference and the checked graph alike, and the comparison
# passes. Here is a deliberately wrong algebraic rule, `log(exp(t)) -> t + 1`, under DebugMode:

# %%
# NBVAL_CHECK_OUTPUT

@local_rewrite("canonicalize", "lesson9", tracks=[Elemwise])
def log_of_exp_off_by_one(fgraph, node):
    inner = producer(node.inputs[0], "exp") if elemwise_name(node) == "log" else None
    return [inner.inputs[0] + 1] if inner is not None else None


remove_rewrite("log_of_exp")               # so that the wrong rule is the one that fires
fooled = compile_on("cpu", [x], T.log(T.exp(x)), mode="DebugMode")
print("DebugMode raised nothing; f(0.5) =", fooled(np.float32([0.5])))

# %% [markdown]
# No error, and the answer is 1.5. An algebraic rule needs a check from outside the compiler: compare
# the compiled function with the graph **as written** (`mode="FAST_COMPILE"` applies no algebra) or
# with NumPy, on random inputs. That is how the exercise grades your rules.

# %%
# NBVAL_CHECK_OUTPUT

as_written = compile_on("cpu", [x], T.log(T.exp(x)), mode="FAST_COMPILE")
sample = rng.standard_normal(11).astype(np.float32)
print("FAST_COMPILE ops:", ops(as_written))
print("rewritten graph agrees with the graph as written:", np.allclose(fooled(sample), as_written(sample), rtol=1e-5))

# clean up: the broken rules go, the good ones come back
remove_rewrite("log_of_exp_off_by_one")
remove_rewrite("product_of_exps_broken")
local_rewrite("canonicalize", "lesson9", tracks=[Elemwise])(log_of_exp)
local_rewrite(good_rule.stage, *good_rule.tags, tracks=good_rule.tracks)(good_rule.fn)
print("lesson 9 rules registered:", sorted(rw.name for rw in registered() if "lesson9" in rw.tags))

# %% [markdown]
# ## 4. A placement rule that cuts a pair of transfers
#
# Placement (lesson 4) moves every op that has a GPU version to the device when the function is
# compiled for a GPU, and puts a transfer wherever a value crosses over. That is right for arrays. For
# a **scalar** it is not: a learning-rate schedule such as `lr * 0.5 ** (step / 100)` is one number. On
# a GPU device, its two inputs are copied over, one kernel is launched for one element, and the result
# is copied back.
#
# coursekit's placement now avoids that by itself: its `host_scalars` rule keeps one-element work on
# the host, as Theano's GPU optimiser did. To see the problem, and to build that rule yourself, we
# compile here **without** it: `WITHOUT_RULE = theano.Mode("FAST_RUN").excluding("host_scalars")`
# (any built-in rule can be left out by its name this way).
#
# **Predict:** how many transfer ops does the compiled schedule have on the GPU device, and what does
# the model say one call costs on a T4?

# %%
# NBVAL_CHECK_OUTPUT

lr, step = T.fscalar("lr"), T.fscalar("step")
schedule = lr * 0.5 ** (step / 100)
args = (np.float32(0.1), np.float32(250))
WITHOUT_RULE = theano.Mode("FAST_RUN").excluding("host_scalars")   # coursekit's own rule left out


def transfers(f):
    return sum(isinstance(node.op, (GpuFromHost, HostFromGpu)) for node in f.toposort())


placed = compile_on(GPU_DEVICE, [lr, step], schedule, mode=WITHOUT_RULE)
before = predict_call(placed, *args, model=MODEL)
print("ops:", ops(placed))
print("transfer ops:", transfers(placed))
print(before.describe())


# %% [markdown]
# Three transfers and one launch for one number: on the modelled T4 the transfers' latency dominates
# (a copy costs several microseconds before the first byte moves). The fix is a **placement rule**:
# where a device result of a scalar elementwise op goes straight back to the host (`HostFromGpu`), and
# its inputs came from the host (`GpuFromHost`) or are constants, compute it on the host instead.
#
# It runs in the `transfer` stage, after placement, and tracks `HostFromGpu`. A GPU op keeps the CPU
# op it was made from in `op.cpu_op` (lesson 7), so the rule rebuilds the host version from it.

# %%
@local_rewrite("transfer", "lesson9", tracks=[HostFromGpu])
def scalar_work_on_host(fgraph, node):
    # HostFromGpu(GpuElemwise(GpuFromHost(a), ...)) on scalars -> the CPU op on the host values
    gpu_node = node.inputs[0].owner
    if gpu_node is None or not isinstance(gpu_node.op, GpuElemwise) or node.outputs[0].type.ndim != 0:
        return None
    if not single_client(fgraph, gpu_node.outputs[0]):
        return None                        # another device op reads the result: leave it there
    host_inputs = []
    for var in gpu_node.inputs:
        if var.owner is not None and isinstance(var.owner.op, GpuFromHost):
            host_inputs.append(var.owner.inputs[0])                    # the value before it was copied
        elif isinstance(var, Constant):
            host_inputs.append(T.constant(var.type.device.to_host(var.data)))
        else:
            return None                    # computed on the device: moving it would cost a copy
    return [gpu_node.op.cpu_op(*host_inputs)]


# %%
# NBVAL_CHECK_OUTPUT

kept_home = compile_on(GPU_DEVICE, [lr, step], schedule, mode=WITHOUT_RULE)   # ours runs, not the built-in
after = predict_call(kept_home, *args, model=MODEL)
print("ops:", ops(kept_home))
print("transfer ops:", transfers(kept_home))
print("last rule that fired:", kept_home.maker.fgraph.rewrite_log[-1][:2])
print("same value:", placed(*args) == kept_home(*args), float(kept_home(*args)))
print(after.describe())
built_in = compile_on(GPU_DEVICE, [lr, step], schedule, mode="FAST_RUN")
print("with coursekit's host_scalars instead:", ops(built_in))


# %%
parts = ["transfer", "launch", "kernel", "alloc"]
fig, ax = plt.subplots(figsize=(7, 2.6))
for row, (label, call) in enumerate([("placed on the GPU", before), ("scalar_work_on_host", after)]):
    left = 0.0
    for part, colour in zip(parts, ["tab:red", "tab:orange", "tab:green", "tab:grey"]):
        width = call.parts.get(part, 0.0) * 1e6
        ax.barh(row, width, left=left, color=colour, label=part if row == 0 else None)
        left += width
ax.text(0.5, 1, f"{after.device * 1e6:.0f} µs: nothing runs on the device", va="center", fontsize=8)
ax.set_yticks([0, 1], ["placed on the GPU", "after scalar_work_on_host"])
ax.set_xlabel(f"device time per call, µs — {MODELLED}: a prediction, not a measurement")
ax.set_title("The learning-rate schedule: where one call's device time goes", fontsize=9)
ax.legend(fontsize=8, loc="lower right")
fig.tight_layout()
plt.show()

# %% [markdown]
# The rule removed the `GpuFromHost`/`HostFromGpu` pairs around the scalar and the launch with them:
# modelled device time 0, because nothing runs on the device any more. (On the host the computation
# costs about as much as the Python call around it.) Theano kept scalar arithmetic on the CPU for this
# reason. The rule is careful where it must be: a scalar computed *on the device* from a large array
# (say a `sum`) stays there, since moving its producer would mean copying the array. coursekit's
# `host_scalars` decides the same before placement instead of after it, and also hands a host scalar to a
# device kernel as the kernel's scalar argument, so it never needs a copy at all.
#
# ### What one launch costs, and what a CUDA graph removes
#
# Each device op is one kernel launch, and every launch costs the host and the GPU a few microseconds
# before any work starts. A training step of a small model is dozens of tiny kernels, so its time can
# be mostly launches. A **CUDA graph** records the kernels of a call once and replays them all with
# *one* launch. coursekit does this by default on a real GPU: a function is captured after its first two
# calls wherever that is safe (inputs of the same shapes, state on the device, no buffer allocated while its
# kernels run, no profile or DebugMode watching every op); `theano.Mode("FAST_RUN").without_cuda_graphs()`
# turns it off, and `f.cuda_graph.reason` says in words why a function was not captured.
#

# %%
# NBVAL_CHECK_OUTPUT

rng5 = np.random.RandomState(5)


def logistic_step(graphs):
    # the lesson-5 training step, data in shared variables; graphs (the default): replay its kernels as one graph
    mode = theano.Mode("FAST_RUN") if graphs else theano.Mode("FAST_RUN").without_cuda_graphs()
    with theano.config.change(device=GPU_DEVICE, floatX="float32", allow_gc=False):
        data = theano.shared(rng5.randn(400, 784).astype("float32"), name="data")
        labels = theano.shared(rng5.randint(0, 2, 400).astype("float32"), name="labels")
        w5, b5 = theano.shared(np.zeros(784, "float32"), name="w"), theano.shared(np.float32(0), name="b")
        p5 = T.nnet.sigmoid(T.dot(data, w5) + b5)
        cost5 = T.nnet.binary_crossentropy(p5, labels).mean()
        g_w, g_b = T.grad(cost5, [w5, b5])
        return theano.function([], cost5, updates=[(w5, w5 - 0.1 * g_w), (b5, b5 - 0.1 * g_b)], mode=mode)


step = logistic_step(graphs=True)
for _ in range(3):
    step()
call = predict_call(step, model=MODEL)
launch = MODEL.spec.launch_latency
print(f"kernel launches per step: {call.launches}")
print(f"{MODELLED}: launch overhead {call.launches} x {launch * 1e6:.0f} µs = "
      f"{call.launches * launch * 1e6:.0f} µs per step; as one graph: 1 launch, {launch * 1e6:.0f} µs")


# %%
# what this machine did: measured only where a real GPU ran the step, never on the simulated GPU
print("graph captured:", step.cuda_graph.graph is not None, "|", step.cuda_graph.reason or "")
if step.cuda_graph.graph is not None:                      # a real GPU: time both, CUDA events + sync
    plain = logistic_step(graphs=False)
    for label, fn in [("ordinary calls", plain), ("one CUDA graph", step)]:
        print(f"measured on {step.device.label}: {label}: {format_seconds(time_call(fn, model=False).best)} per step")


# %% [markdown]
# On a GPU, that step would pay its launch latency once per kernel; replayed as one graph, once per
# step. The saving is modelled here from the T4 preset's launch latency (an estimate, see
# `docs/gpu-model.md`), not measured, and it leaves out what a graph launch itself costs per node. On
# the simulated GPU nothing is launched, so no graph is captured, and the cell above says why; where a
# real GPU ran it, the same cell measures both versions. The project's
# tests count such a step on a CuPy stand-in (`tests/cuda_c/test_cuda_graphs.py`, counts, never times): once
# captured, each call is 1 graph launch and no other kernel launch, with the same weights as ordinary calls.
#

# %% [markdown]
# ## 5. An op with a gradient, on the GPU with a kernel
#
# A new op is a class (lesson 7 and `docs/adding-an-op.md`): `make_node` builds the node,
# `perform` computes with NumPy (the reference), and `gpu_perform` launches a CUDA kernel. To be
# differentiable it adds **`grad(inputs, output_grads)`**: given the gradient `g` of the cost with
# respect to the op's output, it returns the gradient with respect to each input, *as a graph*.
#
# Our op is the **softsign**, `x / (1 + |x|)`, a cheaper cousin of `tanh`. Its derivative is
# `1 / (1 + |x|)²`, so the chain rule gives `g / (1 + |x|)²`.

# %%
SOFTSIGN_SOURCE = r'''
__global__ void softsign(float *out, const float *in, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] / (1.0f + fabsf(in[i]));
}
'''


class Softsign(theano.Op):
    # x / (1 + |x|): NumPy in perform, a CUDA kernel in gpu_perform, and a gradient

    __props__ = ()

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        if x.type.dtype not in ("float32", "float64"):
            raise TypeError(f"Softsign works on float32 or float64 data, got {x.type.dtype}")
        return theano.Apply(self, [x], [x.type.make_variable()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        output_storage[0][0] = x / (1 + np.abs(x))

    def grad(self, inputs, output_grads):
        (x,), (g,) = inputs, output_grads
        return [g / T.sqr(1 + abs(x))]

    def gpu_perform(self, node, inputs, output_storage):
        (x,) = inputs                                     # a C-contiguous float32 device array
        kernel = cuda.SourceModule(SOFTSIGN_SOURCE).get_function("softsign")
        out = cuda.empty(x.shape, x.dtype)
        kernel(((x.size + 255) // 256,), (256,), (out, x, np.int32(x.size)))
        output_storage[0][0] = out


softsign = Softsign()

# %% [markdown]
# **`verify_grad`** checks `grad` against finite differences: it turns the op's output into a scalar
# with a random projection, differentiates that symbolically, and compares with
# `(cost(x + ε) - cost(x - ε)) / 2ε` element by element, in float64. It raises when they disagree, and
# prints nothing when they agree. Then the classic mistake, a sign error:

# %%
# NBVAL_CHECK_OUTPUT

point = rng.standard_normal((5, 4))               # float64: finite differences need the precision
with theano.config.change(device="cpu"):         # the mathematics first; the device comes after
    theano.gradient.verify_grad(softsign, [point])
print("Softsign: verify_grad agrees with finite differences")


class SoftsignSignError(Softsign):
    def grad(self, inputs, output_grads):
        (x,), (g,) = inputs, output_grads
        return [-g / T.sqr(1 + abs(x))]                   # the bug


try:
    with theano.config.change(device="cpu"):
        theano.gradient.verify_grad(SoftsignSignError(), [point])
except AssertionError as err:
    print("SoftsignSignError: verify_grad raised AssertionError")
    wrong_sign = err

# %% [markdown]
# The message names the input, the worst element, and both values: here they have opposite signs.

# %%
print(wrong_sign)

# %% [markdown]
# On the GPU device, placement sees `gpu_perform` and moves the op there (`GpuSoftsign`, a
# `GpuCustomOp`); its gradient is ordinary elementwise ops, which become one fused `GpuElemwise`.
# DebugMode runs the kernel and `perform` side by side on every call. Without a GPU the kernel runs on
# the **emulator**, on the CPU.

# %%
# NBVAL_CHECK_OUTPUT

xm = T.fmatrix("xm")
y = softsign(xm)
both = compile_on(GPU_DEVICE, [xm], [y, T.grad(y.sum(), xm)], mode="DebugMode")
print("ops:", ops(both))
values = rng.standard_normal(size((37, 23), (1001, 997))).astype(np.float32)
out, slope = both(values)
print("kernel agrees with NumPy:", np.allclose(out, values / (1 + np.abs(values)), rtol=1e-6))
print("gradient agrees with 1 / (1 + |x|)^2:", np.allclose(slope, 1 / (1 + np.abs(values)) ** 2, rtol=1e-6))

# %%
# where the kernel ran depends on this machine: the emulator here, the GPU where CuPy sees one
print("the kernel ran on:", cuda.SourceModule(SOFTSIGN_SOURCE).get_function("softsign").backend)

# %% [markdown]
# ## 6. A tiled matrix multiply in CUDA C
#
# The compiler hands `dot` to a library (cuBLAS, as `GpuGemm`). What does that library do that a
# first kernel does not? Write the first kernel and see.
#
# The **naive** kernel gives each thread one element of `C = A B` (`A` is M×K, `B` is K×N): it walks a
# row of `A` and a column of `B`, K steps, two reads from global memory per multiply-add.
#
# **Predict:** how many floats does the naive kernel read from global memory in all, for M×K times K×N?
# How many times is each element of `A` read?

# %%
MATMUL_SOURCE = r'''
#define TILE 16

// C = A B, row-major: A is M x K, B is K x N, C is M x N.  Each kernel adds the number of floats
// its threads read from global memory to *reads (one atomicAdd per thread), so that we can count them.

__global__ void matmul_naive(float *C, const float *A, const float *B, int M, int N, int K,
                             unsigned long long *reads)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        unsigned long long my_reads = 0;
        for (int k = 0; k < K; ++k) {
            acc += A[row * K + k] * B[k * N + col];    // two global reads per multiply-add
            my_reads += 2;
        }
        C[row * N + col] = acc;
        atomicAdd(reads, my_reads);
    }
}

__global__ void matmul_tiled(float *C, const float *A, const float *B, int M, int N, int K,
                             unsigned long long *reads)
{
    __shared__ float A_tile[TILE][TILE];
    __shared__ float B_tile[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    unsigned long long my_reads = 0;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        // each thread loads one element of each tile; outside the matrices it stores a harmless 0
        const int a_col = t * TILE + tx, b_row = t * TILE + ty;
        if (row < M && a_col < K) { A_tile[ty][tx] = A[row * K + a_col]; ++my_reads; }
        else A_tile[ty][tx] = 0.0f;
        if (b_row < K && col < N) { B_tile[ty][tx] = B[b_row * N + col]; ++my_reads; }
        else B_tile[ty][tx] = 0.0f;
        __syncthreads();                       // both tiles are complete before anyone reads them
        for (int k = 0; k < TILE; ++k)
            acc += A_tile[ty][k] * B_tile[k][tx];
        __syncthreads();                       // nobody overwrites a tile another thread still reads
    }
    if (row < M && col < N) C[row * N + col] = acc;
    atomicAdd(reads, my_reads);
}
'''
TILE = 16
matmul_module = cuda.SourceModule(MATMUL_SOURCE)
matmul_naive = matmul_module.get_function("matmul_naive")
matmul_tiled = matmul_module.get_function("matmul_tiled")
print(matmul_tiled)


# %% [markdown]
# The **tiled** kernel works on 16×16 blocks of `C`. The block's 256 threads walk along K one tile at a
# time: together they copy a 16×16 tile of `A` and one of `B` into `__shared__` memory (one element
# each), wait at a barrier, and then every thread does 16 multiply-adds from shared memory, which is
# on the chip and far faster than global memory. Each element loaded is used by 16 threads, so global
# memory is read 16 times less. The second barrier keeps a fast thread from overwriting a tile that
# its neighbours are still reading.
#
# Both kernels are launched the same way, one thread per element of `C`, on sizes that are **not**
# multiples of 16, so the edge blocks have threads outside the matrices: that is what the guards are
# for. `check="races"` runs every block twice, threads first-to-last and last-to-first, and compares.

# %%
# NBVAL_CHECK_OUTPUT

def matmul(kernel, A, B, check=False):
    # C = A B with one of the kernels; returns C and the floats read from global memory
    (M, K), N = A.shape, B.shape[1]
    C = np.empty((M, N), np.float32)
    reads = np.zeros(1, np.uint64)
    grid = ((N + TILE - 1) // TILE, (M + TILE - 1) // TILE)
    kernel(cuda.Out(C), cuda.In(A), cuda.In(B), np.int32(M), np.int32(N), np.int32(K), cuda.InOut(reads),
           block=(TILE, TILE, 1), grid=grid, check=check)
    return C, int(reads[0])


M, K, N = size((45, 37, 29), (300, 257, 301))
A = rng.standard_normal((M, K)).astype(np.float32)
B = rng.standard_normal((K, N)).astype(np.float32)
print(f"A {A.shape} @ B {B.shape}")
for name, kernel in [("naive", matmul_naive), ("tiled", matmul_tiled)]:
    C, _ = matmul(kernel, A, B, check="races")
    print(f"{name}: check='races' passed; same as NumPy (rtol 1e-4):", np.allclose(C, A @ B, rtol=1e-4, atol=1e-4))

# %% [markdown]
# **Forget the second barrier.** On a GPU this kernel may give the right answer on one run and a wrong
# one on the next: only the 32 threads of a *warp* are scheduled together, and the 8 warps of a 16×16
# block run independently, so a fast warp can overwrite a tile that a slower warp is still reading. Such
# a race depends on timing, which is why it can hide in testing. On the emulator the threads of a block run one after the
# other up to each barrier, so a thread that finishes tile `t` goes straight on to load tile `t+1` over
# the values its neighbours have not used yet: the result is wrong, and `check="races"` says why.

# %%
RACY_SOURCE = MATMUL_SOURCE.replace(
    "        __syncthreads();                       // nobody overwrites a tile another thread still reads\n", "")
assert RACY_SOURCE != MATMUL_SOURCE
racy_tiled = cuda.SourceModule(RACY_SOURCE, backend="emulator").get_function("matmul_tiled")
C, _ = matmul(racy_tiled, A, B)
print("without the second barrier, same as NumPy:", np.allclose(C, A @ B, rtol=1e-4, atol=1e-4))
try:
    matmul(racy_tiled, A, B, check="races")
except cuda.RaceConditionError as err:
    print(f"\nRaceConditionError: {err}")


# %% [markdown]
# ### The bytes each version reads, counted
#
# Both kernels counted their reads from global memory as they ran. The counts follow exact formulas:
# the naive kernel reads `2·M·N·K` floats (every element of `A` is read `N` times, every element of `B`
# `M` times); the tiled kernel reads each element of `A` once per column of blocks and each element of
# `B` once per row of blocks: `M·K·⌈N/16⌉ + K·N·⌈M/16⌉`. Both do `2·M·N·K` floating-point operations.
# **Work per byte** (FLOPs per byte read or written) is what decides whether a GPU kernel waits for
# memory or for arithmetic.

# %%
# NBVAL_CHECK_OUTPUT

def formula_reads(name, M, N, K):
    if name == "naive":
        return 2 * M * N * K
    return M * K * -(-N // TILE) + K * N * -(-M // TILE)


def work(name, M, N, K):
    # what one launch does, from the counts: FLOPs, bytes read and written, threads
    return Work(flops=2 * M * N * K, bytes_read=4 * formula_reads(name, M, N, K), bytes_written=4 * M * N,
                launches=1, threads=M * N)


rows = []
for name, kernel in [("naive", matmul_naive), ("tiled", matmul_tiled)]:
    _, counted = matmul(kernel, A, B)
    assert counted == formula_reads(name, M, N, K)
    w = work(name, M, N, K)
    rows.append([name, f"{counted:,}", f"{formula_reads(name, M, N, K):,}", f"{w.flops:,.0f}", f"{w.intensity:.2f}"])
Table(["kernel", "floats read (counted on the emulator)", "formula", "FLOPs", "FLOPs per byte"], rows,
      caption=f"C = A B for {M}x{K} times {K}x{N}, float32, tiles of {TILE}x{TILE}")

# %% [markdown]
# ### How fast? Emulator times are CPU times; the GPU speed is modelled
#
# The emulator runs each CUDA thread as a fiber on the CPU. Its times say how long the *emulation*
# took, nothing about a GPU:

# %%
emulator_rows = []
for name, kernel in [("naive", matmul_naive), ("tiled", matmul_tiled)]:
    timing = time_call(lambda: matmul(kernel, A, B), repeat=3, device=kernel.backend)
    emulator_rows.append([name, f"{kernel.backend}: CPU time, not a GPU timing", format_seconds(timing.best)])
numpy_timing = time_call(lambda: A @ B, repeat=3)
emulator_rows.append(["NumPy A @ B", "CPU (BLAS, one thread)", format_seconds(numpy_timing.best)])
Table(["what ran", "where", "best of 3, measured"], emulator_rows, caption=f"{M}x{K} times {K}x{N}")

# %% [markdown]
# For a GPU we use the **cost model** (lesson 5) with the counted work: a kernel takes
# `max(bytes / bandwidth, FLOPs / peak)` plus a launch, on the T4 preset's datasheet figures. Read the
# model's predictions as what the counted traffic allows, with two simplifications that favour the
# tiled kernel: every global read is priced as a read from DRAM (a real GPU's caches absorb part of the
# naive kernel's repeats), and shared memory, occupancy and bank conflicts cost nothing. No run on a T4 has been
# measured for the project's model-vs-measured corpus yet, so every T4 figure here says "uncalibrated": the
# model cannot yet say how far from a real card it may be.

# %%
sizes = [64, 128, 256, 512, 1024, 2048, 4096]
spec = MODEL.spec
ridge = spec.fp32_flops * spec.compute_efficiency / (spec.memory_bandwidth * spec.memory_efficiency)
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
intensity = np.logspace(-1.5, 2.5, 100)
roof = np.minimum(intensity * spec.memory_bandwidth * spec.memory_efficiency,
                  spec.fp32_flops * spec.compute_efficiency)
left.loglog(intensity, roof / 1e12, color="black", label="roofline")
for name, colour in [("naive", "tab:red"), ("tiled", "tab:blue")]:
    w = work(name, 1024, 1024, 1024)
    left.loglog([w.intensity], [w.flops / MODEL.cost(w).total / 1e12], "o", color=colour, label=name)
    right.loglog(sizes, [MODEL.cost(work(name, n, n, n)).total * 1e3 for n in sizes], "o-", color=colour,
                 label=name)
left.set_xlabel("work per byte (FLOPs per byte of global memory, counted)")
left.set_ylabel("TFLOP/s, modelled")
left.set_title(f"{MODELLED}: n = 1024", fontsize=9)
left.legend(fontsize=8)
right.set_xlabel("n (C = A B, all n x n, float32)")
right.set_ylabel("ms per product, modelled")
right.set_title(f"{MODELLED}: a prediction, not a measurement", fontsize=9)
right.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# NBVAL_CHECK_OUTPUT

n = 1024
naive_cost, tiled_cost = MODEL.cost(work("naive", n, n, n)), MODEL.cost(work("tiled", n, n, n))
print(f"n = {n}, {MODELLED}:")
print(f"  naive: {format_seconds(naive_cost.total)}, bound by {naive_cost.bound}")
print(f"  tiled: {format_seconds(tiled_cost.total)}, bound by {tiled_cost.bound}")
print(f"  counting every load as memory traffic, the model's ratio is {naive_cost.total / tiled_cost.total:.1f}x "
      f"(an upper bound, see below); the ridge of the roofline is at {ridge:.1f} FLOPs per byte")

# %% [markdown]
# Both kernels sit left of the ridge. The model charges every global load as a trip to memory, so the
# kernel that issues 16 times fewer loads comes out about 16 times faster. That is an upper bound, not a
# prediction to trust: the naive kernel's loads are already coalesced (neighbouring threads read
# neighbouring elements of `B`, and a warp's threads share each element of `A`), and the GPU's caches
# serve most of its repeated reads, so its real memory traffic is far below its load count. Published
# measurements of exactly this step, from a coalesced naive kernel to shared-memory tiles, show about
# **1.5×** (S. Boehm's CUDA matmul worklog, on an A6000: 1986 to 2980 GFLOP/s), not 16×. With 16×16 tiles the tiled kernel still reaches only about 4 FLOPs
# per byte, far from the ridge. That is why cuBLAS goes further: larger tiles (64 or 128 wide), each
# thread computing several outputs from registers, and loads of 128 bits at a time. Every step raises
# the work per byte until the kernel finally waits for arithmetic instead of memory.
#
# ## What you saw
#
# * A rewrite is a small function: `rule(fgraph, node) -> replacements | None`, registered with
#   `local_rewrite(stage, tags, tracks=...)`; `rewrite_log` shows it fire, `remove_rewrite` takes it out.
# * DebugMode checks the speed stages against the graph after canonicalize and stabilize, and every
#   op against its `perform`; an algebraic rule needs a check against the graph as written.
# * Placement is rules too: `scalar_work_on_host` cut the transfers of a scalar computation, as
#   coursekit's own `host_scalars` does; a CUDA graph turns a call's many launches into one.
# * An op becomes differentiable with `grad`, checked by `verify_grad`; `gpu_perform` puts its kernel on
#   the device, and DebugMode checks the kernel.
# * Tiling in shared memory divides the global reads of a matrix product by the tile size; the
#   barriers are what make it correct, and the emulator's `check="races"` finds a missing one.
#
# ## Your turn
#
# Open **[`exercises/09_inside_the_compiler_exercises.ipynb`](../exercises/09_inside_the_compiler_exercises.ipynb) ([in Colab](https://colab.research.google.com/github/coursekit/coursekit/blob/main/exercises/09_inside_the_compiler_exercises.ipynb))**.
# It asks you for:
#
# 1. a rewrite that turns `x - x` into zeros and `x / x` into ones, graded by what the compiled graph
#    contains and by its values on random inputs (any correct rule earns the points);
# 2. an op for `log(cosh(x))` with its gradient, graded by finite differences;
# 3. a tiled matrix multiply in CUDA C, graded on sizes that are not multiples of the tile, with the
#    race and bounds checks on.
