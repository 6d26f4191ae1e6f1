# %% [markdown]
# # Lesson 1 — A tour of coursekit
#
# This course is about one question: what does an array compiler do between the line `y = T.exp(x)`
# and a kernel running on a GPU? Before any GPU appears we need the compiler itself, so this first
# lesson is a walk through **coursekit**, the small Theano the course runs on.
#
# You will meet, in this order:
#
# 1. symbolic variables — you build a *graph*, not numbers;
# 2. `function` — the graph becomes a callable;
# 3. shared variables and `updates` — state that every function sees;
# 4. `givens` — swapping part of a graph while compiling;
# 5. `grad` — derivatives are graphs too (and we check one by hand);
# 6. `debugprint` and graph pictures;
# 7. rewrites — what the compiler changed (fusion, GEMM, a numerical fix);
# 8. the profiler — where the time went;
# 9. modes — and `DebugMode` catching a broken custom op.
#
# Everything in this lesson runs on the CPU: the first code cell says so with `theano.config.device = "cpu"`,
# so it stays there even when `COURSEKIT_FLAGS=device=gpu` is set for the whole course. Lesson 2 moves
# the same kind of graph to a GPU.
#
# The imports follow Theano's spelling on purpose: old Theano scripts run after changing them.

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
from coursekit.lessons import size

plt.rcParams.update({"figure.figsize": (6, 3.5), "figure.dpi": 80})
rng = np.random.default_rng(2012)   # seeded: the numbers below are the same on every run
theano.config.device = "cpu"   # this lesson is about the compiler, on the CPU, whatever COURSEKIT_FLAGS says
print(f"device={theano.config.device}, floatX={theano.config.floatX}, mode={theano.config.mode}")

# %% [markdown]
# ## 1. Symbolic variables: a graph, not numbers
#
# In NumPy, `np.exp(a)` computes something the moment Python reaches it. In coursekit, `T.exp(x)`
# only *writes down* that you want an exponential. The variable `x` has a name and a type (a dtype and
# a number of dimensions) but no value at all.
#
# `T.dvector` makes a float64 vector; `T.fvector` would make a float32 one, and `T.vector` follows
# `theano.config.floatX`.

# %%
# NBVAL_CHECK_OUTPUT
x = T.dvector("x")
y = T.exp(x) * 2 + 1

print(type(y).__name__, "of type", y.type)
print("as a formula:", theano.printing.pp(y))

# %% [markdown]
# `y` is not an array. It is the last output of a small graph, and it remembers how it was made: its
# `owner` is an *Apply node*, which pairs an **op** (what to compute) with its **inputs** (the
# variables it reads). Following owners backwards walks the whole graph down to `x`.

# %%
# NBVAL_CHECK_OUTPUT
node = y.owner
print("y is made by", node.op, "from", node.inputs)
inner = node.inputs[0].owner
print("whose first input is made by", inner.op, "from", inner.inputs)
print("and x has no owner:", x.owner)

# %% [markdown]
# Why go to this trouble instead of computing right away? Because the compiler gets to see the
# *whole* computation as a data structure before a single number exists. It can then
#
# * **rewrite** it: merge duplicates, fuse loops, replace unstable formulas with stable ones;
# * **differentiate** it: the gradient is built as another graph;
# * **place** it: decide which ops run on the CPU and which on a GPU, and insert the copies between
#   the two memories. That last job is what the rest of this course looks at.

# %% [markdown]
# ## 2. `function`: from a graph to a callable
#
# `theano.function(inputs, outputs)` compiles the graph. It copies it, applies the rewrites, and links
# every op to its implementation. The result is called with ordinary NumPy arrays.

# %%
f = theano.function([x], y, name="f")

a = rng.standard_normal(5)
print(f(a))
print("same as NumPy:", np.allclose(f(a), np.exp(a) * 2 + 1))

# %% [markdown]
# `f.toposort()` lists the ops the function will really run, in order (a *topological* order: every op
# after the ops it depends on). We wrote three operations, `exp`, `*` and `+`, yet only one op runs:
# the compiler *fused* them into a single elementwise loop, a `Composite`. One pass over the data
# instead of three, and on a GPU one kernel launch instead of three.

# %%
# NBVAL_CHECK_OUTPUT
print(f.toposort())

# %% [markdown]
# Nothing is hidden: `f.source` is the Python code generated for the call. It checks the argument,
# puts it in a storage cell, runs each op's *thunk* (a small closure reading and writing those cells),
# and hands back the output.

# %%
print(f.source)

# %% [markdown]
# In Jupyter a compiled function also shows itself: its inputs, its ops and where they run.

# %%
f

# %% [markdown]
# ## 3. Shared variables: state that every function sees
#
# Inputs like `x` are passed in on every call. Some values should not travel with each call: model
# parameters, a training set, a counter. Those live in **shared variables**. A shared variable owns a
# storage cell, and every compiled function that uses it reads and writes *that same cell*: there is
# no copy per function and no copy per call. (On a GPU device the cell lives in GPU memory, which is
# why shared variables matter so much in lessons 3 and 4.)
#
# A function changes a shared variable through `updates`, a list of `(shared_variable, new_expression)`
# pairs. Here is a counter, and a second function that only looks at it.

# %%
# NBVAL_CHECK_OUTPUT
count = theano.shared(np.int64(0), name="count")
step = T.lscalar("step")                       # l = int64, scalar = 0-d

tick = theano.function([step], count, updates=[(count, count + step)], name="tick")
peek = theano.function([], count * 10, name="peek")

print("tick returns:", tick(1), tick(1), tick(5))   # each call returns the value *before* its update
print("count is now", count.get_value(), "and peek() sees", peek())

count.set_value(np.int64(100))                 # change it from outside: every function sees it
print("after set_value, peek() =", peek())

# %% [markdown]
# Two rules make updates safe to reason about:
#
# * outputs are computed from the values *before* the call's updates (that is why `tick` returned
#   0, 1, 2 and not 1, 2, 7);
# * updates are applied together, only after every output and update of the call was computed. A
#   call that fails leaves every shared variable as it was.
#
# The second rule in action: the call with a wrong shape raises, and `total` does not move.

# %%
# NBVAL_CHECK_OUTPUT
v = T.dvector("v")
total = theano.shared(np.zeros(3), name="total")
accumulate = theano.function([v], T.sum(v * total), updates=[(total, total + v)], name="accumulate")

accumulate(np.ones(3))
try:
    accumulate(np.ones(4))                     # 4 values for a 3-vector: the product fails
except ValueError as err:
    print("ValueError:", str(err).splitlines()[0])
print("total is still", total.get_value())

# %% [markdown]
# The error message (print the whole `err` to see it) names the op that failed, the shapes and dtypes
# of its inputs, and the line of *your* code that built it. It also says that no shared variable was
# updated.
#
# ## 4. `givens`: swapping part of the graph while compiling
#
# `givens={old: new}` replaces a variable by another expression when the function is compiled. The
# classic use: the whole data set sits in a shared variable, the graph is written for one minibatch
# `batch`, and the compiled function takes only the minibatch *index*. The slice of the shared data is
# put in place of `batch`. On a GPU this means the data set is copied to the device once, and each call
# sends a single integer.

# %%
# NBVAL_CHECK_OUTPUT
data = theano.shared(rng.standard_normal((12, 3)), name="data")
batch = T.dmatrix("batch")
batch_size = 4

column_means = T.mean(batch, axis=0)            # written for any batch
i = T.lscalar("i")
batch_means = theano.function(
    [i], column_means,
    givens={batch: data[i * batch_size:(i + 1) * batch_size]},
    name="batch_means",
)

for k in range(3):
    expected = data.get_value()[k * batch_size:(k + 1) * batch_size].mean(axis=0)
    print(f"batch {k}: {np.round(batch_means(k), 3)}  matches NumPy: {np.allclose(batch_means(k), expected)}")

# %% [markdown]
# ## 5. `grad`: derivatives are graphs too
#
# `theano.grad(cost, wrt)` walks the graph of a scalar `cost` backwards (reverse mode) and builds a
# *new graph* for the derivative. Nothing is computed yet; the gradient is compiled like any other
# expression.
#
# A check by hand. For a vector of weights $w$ and an input $v$,
#
# $$C(w) = \sum_k \tanh(w_k v_k)^2 \qquad\Rightarrow\qquad
# \frac{\partial C}{\partial w_k} = 2\,\tanh(w_k v_k)\,\bigl(1 - \tanh^2(w_k v_k)\bigr)\,v_k .$$

# %%
# NBVAL_CHECK_OUTPUT
w = theano.shared(rng.standard_normal(4), name="w")
v = T.dvector("v")
cost = T.sum(T.tanh(w * v) ** 2)
gw = theano.grad(cost, w)                       # a symbolic vector, like w
grad_fn = theano.function([v], gw, name="grad_fn")

vv = rng.standard_normal(4)
automatic = grad_fn(vv)

t = np.tanh(w.get_value() * vv)
by_hand = 2 * t * (1 - t ** 2) * vv
print("grad   :", np.round(automatic, 6))
print("by hand:", np.round(by_hand, 6))
print("agree:", np.allclose(automatic, by_hand))


# %% [markdown]
# A third opinion costs nothing: a finite difference, $(C(w + h e_k) - C(w - h e_k)) / 2h$, computed in
# plain NumPy. (`theano.gradient.verify_grad` does this for you on random points; the library's tests
# use it for every op.)

# %%
# NBVAL_CHECK_OUTPUT
def cost_numpy(w_value):
    return np.sum(np.tanh(w_value * vv) ** 2)

h = 1e-6
w0 = w.get_value()
finite_diff = np.array([(cost_numpy(w0 + h * e) - cost_numpy(w0 - h * e)) / (2 * h) for e in np.eye(4)])
print("finite differences agree:", np.allclose(automatic, finite_diff, atol=1e-6))

# %% [markdown]
# ## 6. Looking at graphs: `debugprint` and pictures
#
# `theano.printing.debugprint` prints a graph as an indented tree, one line per variable, with an id
# so that shared sub-expressions can be recognised. Here is the gradient *as `grad` built it*: a
# mechanical application of the chain rule. Look for `[id G]`: the same `tanh` node is used in
# several places, printed in full only the first time.

# %%
theano.printing.debugprint(gw)

# %% [markdown]
# After compilation the same gradient is a handful of ops: the rewrites cleaned up and fused the chain
# rule's output. `debugprint` of a compiled function prints the graph that really runs.

# %%
theano.printing.debugprint(grad_fn)

# %% [markdown]
# `theano.printing.pydotprint` draws the graph: inputs on top, outputs at the bottom, each op a box
# coloured by where it runs. Transfer ops between host and GPU memory are drawn in red; you will meet
# them in Lesson 2. Give it a variable to see the graph as you wrote it, or a compiled function to see
# what will run.

# %%
theano.printing.pydotprint(y)       # as written: three ops

# %%
theano.printing.pydotprint(f)       # as compiled: one fused op

# %% [markdown]
# ## 7. What the rewrites did
#
# A rewrite is a small function that recognises a pattern in the graph and replaces it with something
# equivalent but better. They run in stages: *canonicalize* (put things in a standard form),
# *stabilize* (numerically safer formulas), *specialize* (faster special cases), *fusion*, and then
# the GPU stages of later lessons. Which stages run is chosen by the **mode**:
#
# * `FAST_RUN` (the default) runs them all;
# * `FAST_COMPILE` skips most of them: compilation is quicker, and the graph runs as you wrote it.
#
# Take one layer of a logistic regression and the log of its output, which is how a cross-entropy
# starts:  $\log\sigma(XW + b)$.

# %% [markdown]
# **Predict** before running the next cell. `FAST_COMPILE` runs this graph as written: a `Dot`, a
# broadcast of `bias`, an `add`, a `sigmoid` and a `log`, five ops. How many ops will `FAST_RUN` run?
# And for a very confident "no", a logit of $z = -800$, what will the graph *as written* return:
# $-800$, $-\infty$, or NaN? Write your answers down; section 7's last cell reads them back.

# %%
# Your prediction (not graded): write your answers in place of None
my_fast_run_ops = None          # how many ops FAST_RUN runs for log(sigmoid(X·W + bias))
my_as_written_at_minus_800 = None   # what FAST_COMPILE returns at z = -800: -800, -np.inf or np.nan

# %%
# NBVAL_CHECK_OUTPUT
X = T.dmatrix("X")
W = T.dmatrix("W")
bias = T.dvector("bias")
log_p = T.log(T.nnet.sigmoid(T.dot(X, W) + bias))

as_written = theano.function([X, W, bias], log_p, mode="FAST_COMPILE", name="as_written")
rewritten = theano.function([X, W, bias], log_p, mode="FAST_RUN", name="rewritten")

print("FAST_COMPILE runs:")
for apply in as_written.toposort():
    print("   ", apply)
print("FAST_RUN runs:")
for apply in rewritten.toposort():
    print("   ", apply)

# %% [markdown]
# Five ops became three. `f.maker.fgraph.rewrite_log` says which rewrites fired, in order, as
# `(stage, rewrite, what it matched)`:

# %%
# NBVAL_CHECK_OUTPUT
for stage, rewrite, matched in rewritten.maker.fgraph.rewrite_log:
    print(f"{stage:>11} | {rewrite:<16} | {matched}")

# %% [markdown]
# Three different kinds of improvement:
#
# * **stabilize — `log_sigmoid`**: $\log\sigma(z)$ became $-\mathrm{softplus}(-z)$. They are equal
#   in exact arithmetic, but for a very negative $z$ the sigmoid underflows to 0 and its log is
#   $-\infty$, while softplus is computed without ever forming that tiny number.
# * **specialize — `dot_plus_to_gemm`**: `dot(X, W) + bias` became one `Gemm`, the BLAS routine
#   $C \leftarrow \alpha AB + \beta C$. The addition happens inside the matrix product instead of
#   in a second pass over the result. On a GPU this is `GpuGemm`.
# * **fusion — `fuse_elemwise`**: the remaining elementwise chain (`neg`, `softplus`, `neg`) became a
#   single `Composite` loop: one pass over memory, and on a GPU one generated kernel.
#
# The pictures side by side, before and after:

# %%
theano.printing.pydotprint(as_written)

# %%
theano.printing.pydotprint(rewritten)

# %% [markdown]
# The stabilisation is not cosmetic. Feed both functions a logit of $-800$ (a very confident "no"):
# the graph as written returns $-\infty$, the rewritten one returns the right answer, $-800$. At
# $z = 30$ the rewritten one is also the more accurate of the two: $\log\sigma(30) = -\mathrm{e}^{-30}
# \approx -9.3576\times 10^{-14}$.

# %%
# NBVAL_CHECK_OUTPUT
X1 = np.array([[1.0]])
W1 = np.array([[1.0]])
for z in (-800.0, -30.0, 30.0):
    with np.errstate(divide="ignore"):     # log(0) warns in NumPy; we want to see the -inf
        literal = as_written(X1 * z, W1, np.zeros(1))[0, 0]
    stable = rewritten(X1 * z, W1, np.zeros(1))[0, 0]
    print(f"z = {z:7.1f}   FAST_COMPILE: {literal:.6e}   FAST_RUN: {stable:.6e}   "
          f"exact: {-np.logaddexp(0, -z):.6e}")

# %%
# your predictions beside what ran
with np.errstate(divide="ignore"):
    at_minus_800 = as_written(X1 * -800.0, W1, np.zeros(1))[0, 0]
print(f"FAST_RUN ran {len(rewritten.toposort())} ops (FAST_COMPILE {len(as_written.toposort())}); "
      f"you predicted {my_fast_run_ops}")
print(f"as written, z = -800 gave {at_minus_800}; you predicted {my_as_written_at_minus_800}")

# %% [markdown]
# The row for $z = -30$ needs a word. The graph as written is off in the sixth digit there, yet
# float64 has digits to spare: $\sigma(-30) \approx 9.4\times10^{-14}$ is an ordinary float64 number.
# The error comes from *how* coursekit computes a sigmoid: as $\tfrac12\,(1 + \tanh(z/2))$, which never
# overflows and is fast, but at $z = -30$ adds two numbers, 1 and $\tanh(-15)$, that agree in their first
# 13 digits, and keeps only the few digits that differ. The log then shows that loss. The same formula in
# plain NumPy gives the same wrong digits; the textbook $1/(1 + e^{-z})$ does not:

# %%
# NBVAL_CHECK_OUTPUT
z = -30.0
tanh_form = 0.5 * (1 + np.tanh(z / 2))          # how coursekit's sigmoid computes it
textbook = 1 / (1 + np.exp(-z))
print(f"log of the tanh form: {np.log(tanh_form):.6e}   log of 1/(1+exp(-z)): {np.log(textbook):.6e}")
assert abs(np.log(tanh_form) - as_written(X1 * z, W1, np.zeros(1))[0, 0]) < 1e-9   # the row above, reproduced

# %% [markdown]
# ## 8. The profiler: where did the time go?
#
# Compile with `profile=True` and the function records, on every call, how long each op took. The
# first call is not timed (it pays for one-time work such as allocating buffers), and on a real GPU
# the profiler waits for the device before reading the clock, so it measures work done rather than
# work queued.
#
# A bigger example this time: a hidden layer and the gradient of a cost with respect to its weights,
# in float32 (coursekit's default `floatX`, and the type GPUs are fast at).

# %%
n, feats, hidden = size((600, 100, 50), (4000, 784, 500))

inputs = T.fmatrix("inputs")
W_h = theano.shared((0.1 * rng.standard_normal((feats, hidden))).astype("float32"), name="W_h")
b_h = theano.shared(np.zeros(hidden, dtype="float32"), name="b_h")
activity = T.tanh(T.dot(inputs, W_h) + b_h)
energy = T.mean(T.sum(activity ** 2, axis=1))

layer = theano.function([inputs], [energy, theano.grad(energy, W_h)], profile=True, name="layer")
batch_values = rng.standard_normal((n, feats)).astype("float32")
for _ in range(30):
    layer(batch_values)
print(len(layer.toposort()), "ops per call")

# %% [markdown]
# `profile.summary()` prints the same tables as Theano's profiler: totals for the function, then the
# time per op **Class**, per **Op** (class and parameters), and per **Apply** node (one op at one
# place in the graph, with the shapes it saw). The `<where>` column says whether the op ran on the CPU,
# on the GPU, or was a transfer between them. Your timings will differ from run to run.

# %%
layer.profile.summary(n_ops_to_print=6, n_apply_to_print=4)

# %% [markdown]
# The last line of the summary is the one the GPU lessons care about: how the time split between CPU
# ops, GPU ops and transfer ops. Here everything is on the CPU, so it is 100% CPU; in Lesson 2 the same
# line shows GPU ops and transfers.
#
# `profile.plot()` draws the same numbers as a bar chart, and the profile also renders as a table if
# it is the last expression of a cell (try `layer.profile`).

# %%
fig, ax = plt.subplots()
layer.profile.plot(ax=ax, by="class")
ax.set_title("layer: time per op class (CPU, your machine)")
fig.tight_layout()
plt.show()


# %% [markdown]
# Read it from the top: a few ops take most of the time. Here they are usually the matrix products
# (`Gemm`, `Dot`) and the fused elementwise gradient, while the `DimShuffle`s (transposes and
# broadcasts, no data copied) cost almost nothing. At these small sizes one slow call (the operating
# system running something else for a moment) can push a cheap op up the list: if a result surprises
# you, profile more calls before drawing conclusions. Find the few ops that matter before optimising
# anything.
#
# ## 9. Modes, and `DebugMode` catching a broken op
#
# A **mode** chooses which rewrites run and how the graph is executed:
#
# | mode | rewrites | checks | use it for |
# |---|---|---|---|
# | `FAST_RUN` (default) | all | none | real work |
# | `FAST_COMPILE` | few | none | quick experiments, big graphs that compile slowly |
# | `DebugMode` | all | many, on every call | when a result looks wrong |
#
# `DebugMode` compiles like `FAST_RUN`, then distrusts everything: on each call it also runs an
# unoptimised reference copy of the graph and compares the results, checks that no op wrote into its
# inputs or produced NaN from finite numbers, and compares each op's fast implementation with its
# slow, simple reference (`perform`).
#
# That last check is what you want when you write your own op. Below is a custom op for $x^3$. Its
# `perform` is the obviously-right NumPy reference; its `make_thunk` is a hand-"optimised" fast path
# with a bug: it forgets the sign of negative numbers.

# %%
# NBVAL_CHECK_OUTPUT
class Cube(theano.Op):
    """x ** 3, with a fast path that has a bug."""

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return theano.Apply(self, [x], [x.type.make_variable()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        output_storage[0][0] = x ** 3                  # the slow, obviously right reference

    def make_thunk(self, node, storage_map):
        source, target = storage_map[node.inputs[0]], storage_map[node.outputs[0]]

        def thunk():
            value = source[0]
            target[0] = value * value * np.abs(value)  # BUG: should be value * value * value
        return thunk


z = T.dvector("z")
cube = theano.function([z], Cube()(z), name="cube")
z_values = np.array([-2.0, -0.5, 1.5, 3.0])
print("fast path:", cube(z_values))
print("right    :", z_values ** 3)

# %% [markdown]
# `FAST_RUN` ran the fast path and returned a wrong answer, without a word. The same graph compiled in
# `DebugMode` refuses:

# %%
from coursekit.debugmode import DebugModeError

cube_checked = theano.function([z], Cube()(z), mode="DebugMode", name="cube_checked")
try:
    cube_checked(z_values)
except DebugModeError as err:
    print(err)


# %% [markdown]
# The message names the op, the check that failed (the fast path disagrees with `perform`, by as
# much as 16 here: $(-2)^3$ came out as $+8$), and where in your code the node was made. Fix the thunk and `DebugMode` is satisfied:

# %%
# NBVAL_CHECK_OUTPUT
class FixedCube(Cube):
    def make_thunk(self, node, storage_map):
        source, target = storage_map[node.inputs[0]], storage_map[node.outputs[0]]

        def thunk():
            value = source[0]
            target[0] = value * value * value
        return thunk


cube_fixed = theano.function([z], FixedCube()(z), mode="DebugMode", name="cube_fixed")
print(cube_fixed(z_values), np.allclose(cube_fixed(z_values), z_values ** 3))

# %% [markdown]
# `DebugMode` is slow on purpose (it runs everything at least twice). Use it to find a bug, not to
# train a model. In Lesson 7 you will write GPU kernels for custom ops, and `DebugMode` checks them
# against their `perform` in exactly this way.
#
# ## What to remember
#
# * Build a graph with symbolic variables; `theano.function` compiles it (rewrites, then linking).
# * Shared variables are storage cells that every function reads and writes; `updates` change them
#   only after the whole call succeeded; `givens` substitute part of a graph at compile time.
# * `theano.grad` builds the derivative as a graph; check new gradients against a hand derivative or
#   finite differences.
# * `f.toposort()`, `debugprint`, `pydotprint` and `rewrite_log` show what the compiler made of your
#   graph; `profile=True` shows where the time goes.
# * `FAST_RUN` for work, `FAST_COMPILE` for quick experiments, `DebugMode` when something looks wrong.
#
# ## Your turn
#
# Open **[`exercises/01_tour_exercises.ipynb`](../exercises/01_tour_exercises.ipynb) ([in Colab](https://colab.research.google.com/github/coursekit/coursekit/blob/main/exercises/01_tour_exercises.ipynb))**. You will build a running mean with shared variables and
# updates, derive a gradient symbolically and check it, feed minibatches with `givens`, and write the
# rewrite that makes $\log\sigma$ numerically stable yourself: a rule of the stabilize stage, checked
# with the library's own `log_sigmoid` rule switched off. The cells tagged *graded* check your answers.
