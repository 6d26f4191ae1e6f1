# %% [markdown]
# # Lesson 7 — CUDA kernels
#
# In the earlier lessons coursekit wrote the GPU code for us: `T.exp(x)` on the device became a
# `GpuElemwise` node, and a fused chain of elementwise ops became one generated kernel. This lesson
# opens that box. We write CUDA C ourselves, compile it from Python, launch it on arrays, and
# finally plug a hand-written kernel into a compiled `theano.function` as a custom Op.
#
# The plan:
#
# 1. a first kernel, `multiply_them`, launched PyCUDA style and checked against NumPy;
# 2. threads, blocks and grids: how a launch covers an array, and the index arithmetic;
# 3. the (20, 10) matrix, two ways;
# 4. `cuda.In`, `cuda.Out`, `cuda.InOut`: which copies each one makes;
# 5. the CuPy call style on arrays that stay on the device;
# 6. a custom Op whose `gpu_perform` launches a kernel, checked by DebugMode;
# 7. shared memory and `__syncthreads()`: a block reduction, and what goes wrong without the barrier;
# 8. an out-of-bounds write, caught;
# 9. argument mistakes and the hints they come with;
# 10. what the emulator is and is not: it runs your CUDA C on the CPU, it is not a GPU.

# %% [markdown]
# ## Where do the kernels run?
#
# `coursekit.cuda` compiles real CUDA C. On a machine whose GPU CuPy can see (and with
# `COURSEKIT_FLAGS=device=gpu`), NVRTC compiles it and the GPU runs it. Everywhere else the same
# source is compiled by the host C++ compiler and run by an **emulator**: every CUDA thread becomes a
# lightweight fiber on the CPU, and every block runs its threads up to each barrier in turn. Results
# are exact; anything the emulator reports is labelled *emulator (CPU)*. When `nvcc` is installed, the
# source is also checked by the real CUDA compiler, so a kernel accepted here would compile for a GPU
# too.
#
# Compiled kernels are cached on disk, so only the first run of a notebook pays for compilation
# (one or two seconds per new source).

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
from coursekit.lessons import Table, format_seconds, size, time_call

plt.rcParams.update({"figure.figsize": (6, 3.5), "figure.dpi": 72})
rng = np.random.default_rng(2024)
N = size(1237, 1_000_003)     # irregular on purpose: it never splits into whole blocks
GPU_DEVICE = "gpu" if cuda.gpu_available() else "sim"   # for the compiled functions of section 6
print("a GPU that CuPy sees:", cuda.gpu_available())
print("N =", N)

# %% [markdown]
# ## 1. A first kernel: `multiply_them`
#
# A *kernel* is a C function marked `__global__`. It is written for **one** thread: the launch starts
# many threads, and each one runs the whole function with its own `threadIdx`. Here thread `i`
# multiplies element `i` of `a` by element `i` of `b`, and there is no loop anywhere: the loop is
# the launch.
#
# `cuda.SourceModule(source)` compiles the source once; `get_function(name)` hands back a kernel
# object we can call. Printing it shows the signature it parsed from the source and where it runs.

# %%
MULTIPLY_SOURCE = r"""
__global__ void multiply_them(float *dest, float *a, float *b)
{
    const int i = threadIdx.x;      // this thread's number inside its block
    dest[i] = a[i] * b[i];
}
"""
module = cuda.SourceModule(MULTIPLY_SOURCE)
multiply_them = module.get_function("multiply_them")
print(multiply_them)

# %% [markdown]
# The kernel takes three `float *`: addresses in *device* memory. Our arrays live in host memory,
# so the call says what to copy. `cuda.In(a)` copies `a` to the device before the launch;
# `cuda.Out(dest)` gives the kernel fresh device memory and copies it back into `dest` afterwards.
#
# `block=(400, 1, 1)` asks for one block of 400 threads, `grid=(1, 1)` for a single block: 400 threads
# for 400 elements. Then we check the answer against NumPy, as every kernel in this course is checked.

# %%
# NBVAL_CHECK_OUTPUT
a = rng.standard_normal(400).astype(np.float32)
b = rng.standard_normal(400).astype(np.float32)
dest = np.zeros_like(a)

multiply_them(cuda.Out(dest), cuda.In(a), cuda.In(b), block=(400, 1, 1), grid=(1, 1))

print("same as NumPy's a * b:", np.array_equal(dest, a * b))
print("largest difference:", float(np.abs(dest - a * b).max()))

# %% [markdown]
# A float32 product is exactly rounded on a GPU as in NumPy, so we can ask for `array_equal`.
# Kernels that add many numbers in a different order (section 7) are compared with a tolerance.

# %% [markdown]
# ## 2. Threads, blocks and grids
#
# One block cannot grow without limit: a block holds **at most 1024 threads**. Its threads run on
# the same multiprocessor, can share fast `__shared__` memory and can wait for each other at a
# barrier. For more work we launch a **grid** of blocks. Blocks are independent: the hardware runs
# them in any order, as many at a time as fit on the chip.
#
# Inside the kernel each thread finds its place from four built-in variables:
#
# | variable | meaning |
# |---|---|
# | `threadIdx.x` | the thread's number in its block, `0 … blockDim.x - 1` |
# | `blockDim.x`  | threads per block (the `block=` of the launch) |
# | `blockIdx.x`  | the block's number in the grid, `0 … gridDim.x - 1` |
# | `gridDim.x`   | blocks in the grid (the `grid=` of the launch) |
#
# and the global index of the element it owns is `i = blockIdx.x * blockDim.x + threadIdx.x`.
#
# The number of blocks is rounded **up** so every element gets a thread: `(n + threads - 1) // threads`.
# The last block then has threads with nothing to do, and the kernel must say so with a guard,
# `if (i < n)`. The picture shows 37 elements covered by blocks of 8 threads.

# %%
# Your prediction (not graded), before the picture: n = 1000 elements, blocks of 256 threads
my_blocks_for_1000 = None     # how many blocks does the launch need?
my_idle_for_1000 = None       # how many threads does the guard send home?


# %%
def draw_1d_grid(n, threads):
    blocks = (n + threads - 1) // threads
    colours = plt.cm.tab10.colors
    fig, ax = plt.subplots(figsize=(6, 1.9))
    for blk in range(blocks):
        for t in range(threads):
            i = blk * threads + t
            idle = i >= n
            ax.add_patch(plt.Rectangle((i, 0), 1, 1, facecolor="white" if idle else colours[blk % 10],
                                       edgecolor="grey", hatch="//" if idle else None, alpha=0.8))
            ax.text(i + 0.5, 0.5, str(t), ha="center", va="center", fontsize=6)
        ax.text(blk * threads + threads / 2, 1.25, f"block {blk}", ha="center", fontsize=8)
    ax.set_xlim(0, blocks * threads)
    ax.set_ylim(0, 1.6)
    ax.set_yticks([])
    ax.set_xlabel(f"global index i = blockIdx.x * {threads} + threadIdx.x   (hatched: i >= n = {n}, idle)")
    ax.set_title(f"grid={blocks} blocks x block={threads} threads covering {n} elements", fontsize=9)
    fig.tight_layout()
    plt.show()


draw_1d_grid(37, 8)

# %% [markdown]
# The same arithmetic in NumPy, for those 37 elements: each row is one block, each entry the index
# its thread would handle, and `-` a thread the guard sends home.

# %%
# NBVAL_CHECK_OUTPUT
n, threads = 37, 8
blocks = (n + threads - 1) // threads
for block_idx in range(blocks):
    thread_idx = np.arange(threads)
    i = block_idx * threads + thread_idx
    print(f"block {block_idx}:", " ".join(f"{v:2d}" if v < n else " -" for v in i))
print(f"{blocks * threads} threads launched for {n} elements; {blocks * threads - n} idle")

# %%
# your prediction beside the same arithmetic for n = 1000, blocks of 256
n_big, threads_big = 1000, 256
blocks_big = (n_big + threads_big - 1) // threads_big
print(f"n = {n_big}, {threads_big} threads per block: {blocks_big} blocks, "
      f"{blocks_big * threads_big - n_big} idle threads in the last one")
print(f"you predicted {my_blocks_for_1000} blocks and {my_idle_for_1000} idle threads")

# %% [markdown]
# Here is the kernel that works for any `n`: the global index, the guard, and `n` passed as an `int`.
# The length is an `int` parameter, so we pass a NumPy `int32`; section 9 shows what happens with a
# bare Python `int`. We launch it on `N` elements with blocks of 256 threads.

# %%
MULTIPLY_N_SOURCE = r"""
__global__ void multiply_n(float *dest, const float *a, const float *b, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)                      // the last block has idle threads
        dest[i] = a[i] * b[i];
}
"""
multiply_n = cuda.SourceModule(MULTIPLY_N_SOURCE).get_function("multiply_n")

a = rng.standard_normal(N).astype(np.float32)
b = rng.standard_normal(N).astype(np.float32)
dest = np.empty_like(a)
threads = 256
blocks = (N + threads - 1) // threads
multiply_n(cuda.Out(dest), cuda.In(a), cuda.In(b), np.int32(N), block=(threads, 1, 1), grid=(blocks, 1))
print(f"{blocks} blocks of {threads} threads for {N} elements:", np.array_equal(dest, a * b))

# %% [markdown]
# ## 3. The (20, 10) matrix
#
# How do we multiply two matrices of shape (20, 10) elementwise? Two answers.
#
# **Flatten it.** A C-contiguous (20, 10) array is 200 floats in a row, so the 1-D kernel above
# already works: it never looks at the shape, only at `n = a.size`.

# %%
# NBVAL_CHECK_OUTPUT
A = rng.standard_normal((20, 10)).astype(np.float32)
B = rng.standard_normal((20, 10)).astype(np.float32)
C = np.empty_like(A)
multiply_n(cuda.Out(C), cuda.In(A), cuda.In(B), np.int32(A.size), block=(256, 1, 1), grid=(1, 1))
print("flattened:", C.shape, np.array_equal(C, A * B))

# %% [markdown]
# **Use two dimensions.** Blocks and grids have an `x`, a `y` and a `z`. A block of `(10, 20, 1)`
# threads has one thread per matrix element: `threadIdx.x` walks along a row (the column number) and
# `threadIdx.y` down the columns (the row number). Note the order: `x` is the *fast* index, the one
# that moves along contiguous memory, so it goes with the column. The element at `(row, col)` of a
# C-contiguous matrix sits at `row * cols + col`.

# %%
# NBVAL_CHECK_OUTPUT
MATRIX_ONE_BLOCK_SOURCE = r"""
__global__ void multiply_20x10(float *dest, const float *a, const float *b)
{
    const int col = threadIdx.x;            // 0 .. 9
    const int row = threadIdx.y;            // 0 .. 19
    const int k = row * blockDim.x + col;   // blockDim.x == 10 == number of columns
    dest[k] = a[k] * b[k];
}
"""
multiply_20x10 = cuda.SourceModule(MATRIX_ONE_BLOCK_SOURCE).get_function("multiply_20x10")
C = np.empty_like(A)
multiply_20x10(cuda.Out(C), cuda.In(A), cuda.In(B), block=(10, 20, 1), grid=(1, 1))
print("one 2-D block:", np.array_equal(C, A * B))


# %% [markdown]
# That kernel only works for 200 elements, since one block holds at most 1024 threads. For a matrix
# of any size we tile it with a 2-D **grid** of 2-D blocks: the column is
# `blockIdx.x * blockDim.x + threadIdx.x`, the row is the same with `y`, and a guard on both keeps
# the edge blocks inside the matrix. The picture shows the (20, 10) matrix covered by blocks of 8×8
# threads: a grid of 2 blocks across and 3 down, with the threads outside the matrix left idle. The
# first exercise asks you to write this kernel.

# %%
def draw_2d_grid(rows, cols, bx, by):
    gx, gy = (cols + bx - 1) // bx, (rows + by - 1) // by
    colours = plt.cm.tab10.colors
    fig, ax = plt.subplots()
    for r in range(gy * by):
        for c in range(gx * bx):
            blk = (r // by) * gx + c // bx
            idle = r >= rows or c >= cols
            ax.add_patch(plt.Rectangle((c, r), 1, 1, facecolor="white" if idle else colours[blk % 10],
                                       edgecolor="grey", lw=0.3, hatch="//" if idle else None, alpha=0.75))
    for j in range(gy):
        for i in range(gx):
            ax.add_patch(plt.Rectangle((i * bx, j * by), bx, by, fill=False, edgecolor="black", lw=1.5))
            ax.text(i * bx + bx / 2, j * by + by / 2, f"block\n({i},{j})", ha="center", va="center", fontsize=8)
    ax.add_patch(plt.Rectangle((0, 0), cols, rows, fill=False, edgecolor="red", lw=2))
    ax.set_xlim(0, gx * bx)
    ax.set_ylim(gy * by, 0)
    ax.set_aspect("equal")
    ax.set_xlabel("x: column = blockIdx.x * blockDim.x + threadIdx.x")
    ax.set_ylabel("y: row")
    ax.set_title(f"({rows}, {cols}) matrix (red), block=({bx}, {by}), grid=({gx}, {gy})", fontsize=9)
    fig.tight_layout()
    plt.show()


draw_2d_grid(20, 10, 8, 8)

# %% [markdown]
# ## 4. `In`, `Out`, `InOut`: what gets copied
#
# The GPU has its own memory. The wrappers decide which copies a PyCUDA-style call makes around the
# launch:
#
# | wrapper | before the launch | after the launch |
# |---|---|---|
# | `cuda.In(a)` | copy `a` host → device | nothing: changes the kernel makes to its copy are lost |
# | `cuda.Out(a)` | allocate device memory, copy nothing | copy device → host into `a` |
# | `cuda.InOut(a)` | copy host → device | copy device → host into `a` |
#
# Two consequences are worth seeing. Writing through an `In` argument changes only the device copy.
# And an `Out` buffer starts as whatever the device memory held before: it is *not* your array's old
# values, and not zeros. (The emulator fills it with `0xFF` bytes, which read as NaN in float32, so
# forgotten elements show up.) The kernel below adds one to the first `n` elements of `x` and leaves
# the rest alone.

# %%
ADD_ONE_SOURCE = r"""
__global__ void add_one(float *x, int n)
{
    const int i = threadIdx.x;
    if (i < n) x[i] = x[i] + 1.0f;
}
"""
add_one = cuda.SourceModule(ADD_ONE_SOURCE).get_function("add_one")
x = np.zeros(6, np.float32)

add_one(cuda.In(x), np.int32(4), block=(6, 1, 1))
print("In:   ", x)
add_one(cuda.InOut(x), np.int32(4), block=(6, 1, 1))
print("InOut:", x)
add_one(cuda.Out(x), np.int32(4), block=(6, 1, 1))
print("Out:  ", x)

# %% [markdown]
# `In` left `x` untouched; `InOut` brought the +1 back; `Out` sent nothing in, so the kernel added
# one to garbage and the two elements it skipped came back as garbage too.
#
# Every PyCUDA-style launch pays its copies again. For `multiply_n` on `N` floats that is two arrays
# in and one out on *every* call — the "curse of GpuFromHost" of lesson 4, now by hand:

# %%
# NBVAL_CHECK_OUTPUT
nbytes = N * 4
Table(["per launch of multiply_n", "host -> device", "device -> host"],
      [["In(a), In(b), Out(dest)", f"{2 * nbytes:,} bytes", f"{nbytes:,} bytes"],
       ["device arrays (section 5)", "0 bytes", "0 bytes"]],
      caption=f"N = {N:,} float32 elements")

# %% [markdown]
# ## 5. Arrays that stay on the device: the CuPy call style
#
# To avoid those copies, put the data on the device once and pass device arrays to the kernel.
# `cuda.to_device(a)` copies a host array over, `cuda.empty(shape, dtype)` and `cuda.zeros(...)`
# allocate device memory, and `.get()` copies a result back when we really need it on the host.
# Without a GPU these are arrays of the simulated GPU: a separate memory space, even though it sits
# in the same RAM, that refuses to be mixed up with NumPy arrays.
#
# Kernels accept a second call style, CuPy's: `kernel(grid, block, args)`. Here we compute
# `a * b * b` with two launches and no copy in between.

# %%
d_a = cuda.to_device(a)
d_b = cuda.to_device(b)
d_ab = cuda.empty(a.shape, np.float32)
d_abb = cuda.empty(a.shape, np.float32)
print(d_a)

grid, block = ((N + 255) // 256,), (256,)
multiply_n(grid, block, (d_ab, d_a, d_b, np.int32(N)))       # stays on the device
multiply_n(grid, block, (d_abb, d_ab, d_b, np.int32(N)))     # reads the first result in place
result = d_abb.get()                                          # the only device -> host copy
print("a * b * b:", np.array_equal(result, (a * b) * b))

# %% [markdown]
# ## 6. A kernel inside a compiled function: a custom Op
#
# Theano let users add their own operations, and PyCUDA kernels could live inside them. coursekit
# keeps that shape. A `coursekit.Op` has
#
# * `make_node(*inputs)`: checks the inputs and builds the `Apply` node with its output variables;
# * `perform(node, inputs, output_storage)`: the NumPy version — the reference, and what runs on
#   the CPU;
# * `gpu_perform(node, inputs, output_storage)`: the GPU version. Its inputs are device arrays; it
#   allocates its outputs with `cuda.empty`, launches a kernel, and stores them in
#   `output_storage[k][0]`.
#
# When a function is compiled for a GPU device, placement sees that the op brings its own GPU code and
# moves it to the device: it appears as `Gpu<Name>` between the transfer ops. Our example doubles its
# input.

# %%
DOUBLE_SOURCE = r"""
__global__ void double_them(float *out, const float *in, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}
"""


class DoubleOp(theano.Op):
    """2 * x: NumPy in perform (the reference), a CUDA kernel in gpu_perform."""

    __props__ = ()
    source = DOUBLE_SOURCE
    threads = 256

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        if x.type.dtype != "float32":
            raise TypeError(f"{type(self).__name__} works on float32 data, got {x.type.dtype}")
        return theano.Apply(self, [x], [x.type.make_variable()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        output_storage[0][0] = np.float32(2) * x

    def gpu_perform(self, node, inputs, output_storage):
        (x,) = inputs                                   # a C-contiguous device array
        kernel = cuda.SourceModule(self.source).get_function("double_them")   # cached after the first call
        out = cuda.empty(x.shape, x.dtype)
        blocks = (x.size + self.threads - 1) // self.threads
        kernel((blocks,), (self.threads,), (out, x, np.int32(x.size)))
        output_storage[0][0] = out


# %% [markdown]
# First on the CPU, then on the GPU device (the simulated one when there is no GPU). The graph
# shows where the kernel runs: on the device, between the two transfers.

# %%
# NBVAL_CHECK_OUTPUT
x = T.fmatrix("x")
m45 = np.arange(20, dtype=np.float32).reshape(4, 5)

with theano.config.change(device="cpu"):   # on the host, whatever COURSEKIT_FLAGS says
    f_cpu = theano.function([x], DoubleOp()(x))
print("cpu:", [type(node.op).__name__ for node in f_cpu.toposort()])
with theano.config.change(device=GPU_DEVICE):
    f_gpu = theano.function([x], DoubleOp()(x))
    print("gpu:", [str(node.op) for node in f_gpu.toposort()])
    print(f_gpu(m45))
    print("matches perform:", np.array_equal(f_gpu(m45), f_cpu(m45)))

# %% [markdown]
# **Strided inputs.** A transposed matrix or a slice with a step is a *view*: the same memory read
# with other strides. Our kernel assumes element `i` sits at `in[i]`, which is only true for a
# C-contiguous array. coursekit protects it: before `gpu_perform` runs, non-contiguous device inputs
# are copied into contiguous ones. The answers are right, at the price of one extra copy per call —
# the exercise asks for a kernel that reads the strided data directly.

# %%
# NBVAL_CHECK_OUTPUT
with theano.config.change(device=GPU_DEVICE):
    for label, view in [("x.T", x.T), ("x[::2]", x[::2])]:
        f = theano.function([x], DoubleOp()(view))
        expected = 2 * (m45.T if label == "x.T" else m45[::2])
        print(f"{label:7s}", [str(node.op).split("{")[0] for node in f.toposort()], np.array_equal(f(m45), expected))


# %% [markdown]
# **DebugMode** runs every node twice — the GPU version and the reference `perform` — and
# compares them. That is the right way to test a kernel inside a graph. Suppose a kernel forgets
# `blockIdx`: every block then writes the first 256 elements, and the rest are never written. On the
# (4, 5) matrix, one block covers everything, so the bug hides. DebugMode on a larger input finds it
# and names the node.

# %%
class ForgetfulDoubleOp(DoubleOp):
    source = DOUBLE_SOURCE.replace("blockIdx.x * blockDim.x + threadIdx.x", "threadIdx.x")


big = rng.standard_normal((37, 23)).astype(np.float32)      # 851 elements: four blocks
with theano.config.change(device=GPU_DEVICE):
    good = theano.function([x], DoubleOp()(x), mode="DebugMode")
    print("DoubleOp, (4, 5) and (37, 23):", np.array_equal(good(m45), 2 * m45), np.array_equal(good(big), 2 * big))
    bad = theano.function([x], ForgetfulDoubleOp()(x), mode="DebugMode")
    print("ForgetfulDoubleOp, (4, 5):", np.array_equal(bad(m45), 2 * m45))
    try:
        bad(big)
    except Exception as err:
        print(f"ForgetfulDoubleOp, (37, 23): {type(err).__name__}:")
        print(str(err).splitlines()[0])

# %% [markdown]
# ## 7. Shared memory and `__syncthreads()`: a block reduction
#
# Elementwise kernels never need their threads to cooperate. A sum does. The classic plan gives each
# block a slice of the array and a `__shared__` scratch array, one slot per thread, visible to the
# whole block and fast. Each thread loads its element. Then half the threads each add a partner's
# value from the upper half onto their own; then a quarter do the same; and so on, until slot 0
# holds the block's total. One launch leaves one partial sum per block; adding those few numbers up
# is cheap (on the host here, or with a second launch).
#
# Between every two rounds, **all threads of the block must wait** until the previous round has
# been written: that is `__syncthreads()`, the block barrier. Every thread of the block must reach
# it, so it never sits inside an `if` that only some threads enter.

# %%
BLOCK_SUM_SOURCE = r"""
#define BLOCK 256
__global__ void block_sum(const float *in, float *partial, int n)
{
    __shared__ float s[BLOCK];                 // one slot per thread of this block
    const int t = threadIdx.x;
    const int i = blockIdx.x * BLOCK + t;
    s[t] = (i < n) ? in[i] : 0.0f;             // idle threads add a harmless 0
    __syncthreads();                           // every slot is loaded
    for (int half = BLOCK / 2; half > 0; half /= 2) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();                       // this round is finished before the next reads it
    }
    if (t == 0) partial[blockIdx.x] = s[0];
}
"""
block_sum = cuda.SourceModule(BLOCK_SUM_SOURCE).get_function("block_sum")

v = rng.random(N).astype(np.float32)
n_blocks = (N + 255) // 256
partial = np.empty(n_blocks, np.float32)
block_sum(cuda.In(v), cuda.Out(partial), np.int32(N), block=(256, 1, 1), grid=(n_blocks, 1))
total = partial.sum(dtype=np.float64)
print(f"{n_blocks} partial sums; total matches NumPy (rtol 1e-5):",
      np.isclose(total, v.sum(dtype=np.float64), rtol=1e-5))

# %% [markdown]
# Now delete the barrier inside the loop. On a real GPU this kernel often *still gives the right
# answer*: the threads of one warp often happen to run side by side, and the timing works out. Nothing
# guarantees it. Since Volta (compute capability 7.0) every thread has its own program counter, and the
# threads of a warp may be interleaved in any order ("Independent Thread Scheduling" in the CUDA C++
# Programming Guide), so another GPU, another block size or another compiler version can change the
# answer. That is what makes a missing barrier so dangerous.
#
# The emulator makes the bug loud. Run normally, its threads go one after the other up to the next
# barrier, so thread 0 does every round before the others have done even the first, and the sum is
# simply wrong. With `check="races"` it runs every block twice, threads first-to-last and then
# last-to-first, and compares: a correct kernel cannot depend on that order, so any difference is an
# error that says what differed.

# %%
RACY_SOURCE = BLOCK_SUM_SOURCE.replace(
    "        __syncthreads();                       // this round is finished before the next reads it\n", "")
assert RACY_SOURCE != BLOCK_SUM_SOURCE
racy_sum = cuda.SourceModule(RACY_SOURCE, backend="emulator").get_function("block_sum")

racy_sum(cuda.In(v), cuda.Out(partial), np.int32(N), block=(256, 1, 1), grid=(n_blocks, 1))
print("without the barrier, total matches NumPy:", np.isclose(partial.sum(dtype=np.float64), v.sum(dtype=np.float64), rtol=1e-5))
try:
    racy_sum(cuda.In(v), cuda.Out(partial), np.int32(N), block=(256, 1, 1), grid=(n_blocks, 1), check="races")
except cuda.RaceConditionError as err:
    print(f"\nRaceConditionError: {err}")

# %% [markdown]
# The checks are the emulator's (here `backend="emulator"` asks for it even on a GPU machine). The
# correct kernel passes the same check:

# %%
# NBVAL_CHECK_OUTPUT
checked_sum = cuda.SourceModule(BLOCK_SUM_SOURCE, backend="emulator").get_function("block_sum")
checked_sum(cuda.In(v), cuda.Out(partial), np.int32(N), block=(256, 1, 1), grid=(n_blocks, 1), check="races")
print("with the barrier, check='races' passes; total matches:",
      np.isclose(partial.sum(dtype=np.float64), v.sum(dtype=np.float64), rtol=1e-5))

# %% [markdown]
# ## 8. Writing past the end
#
# Forget the guard and the idle threads of the last block write past the end of the output. A GPU
# rarely stops you: the write lands in some other allocation, and something unrelated breaks later.
# The emulator without checks is no better — the stray write can corrupt the Python process's own
# memory and kill the notebook's kernel. So for a kernel you do not trust, ask for
# `check="memory"`: the launch then runs in a separate process built with AddressSanitizer, and a bad
# access comes back as a `MemoryAccessError` that names the line, the argument and the thread.
#
# In the kernel below the read is guarded but the write is not. 1000 elements in blocks of 256 means
# 24 threads too many.

# %%
UNGUARDED_SOURCE = r"""
__global__ void scale(float *dest, const float *src, float factor, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float value = (i < n) ? src[i] : 0.0f;    // the read is guarded...
    dest[i] = factor * value;                       // ...the write is not
}
"""
scale = cuda.SourceModule(UNGUARDED_SOURCE, backend="emulator").get_function("scale")
src = np.arange(1000, dtype=np.float32)
out = np.empty_like(src)
try:
    scale(cuda.Out(out), cuda.In(src), np.float32(3), np.int32(src.size), block=(256, 1, 1), grid=(4, 1),
          check="memory")
except cuda.MemoryAccessError as err:
    print(f"MemoryAccessError: {err}")
    print("\nerr.line =", err.line)

# %% [markdown]
# The notebook is still alive. With exactly 1000 threads (a grid of 8 blocks of 125) nobody writes
# out of bounds, and the checked run agrees:

# %%
# NBVAL_CHECK_OUTPUT
scale(cuda.Out(out), cuda.In(src), np.float32(3), np.int32(src.size), block=(125, 1, 1), grid=(8, 1),
      check="memory")
print("still running; out == 3 * src:", np.array_equal(out, 3 * src))


# %% [markdown]
# ## 9. Argument mistakes
#
# A real launch hands the kernel raw bytes for each parameter and checks nothing. A Python number has
# no fixed C type: a Python `float` travels as an 8-byte double, of which a `float` parameter reads
# half; a float64 array passed for a `float *` is read as halves of doubles. Nothing crashes, the
# numbers are just wrong (or right by luck, until they are not). coursekit parses the kernel's
# signature and checks every argument first, on the emulator and on a GPU alike. Each message says
# which argument is wrong and how to fix it.

# %%
def show_error(launch):
    try:
        launch()
    except cuda.CudaError as err:
        print(f"{type(err).__name__}: {err}\n")
    else:
        print("no error\n")


small = np.ones(10, np.float32)
small_out = np.empty_like(small)
show_error(lambda: multiply_n(cuda.Out(small_out), cuda.In(small), cuda.In(small), 10, block=(16, 1, 1)))
show_error(lambda: multiply_n(cuda.Out(small_out), cuda.In(small.astype(np.float64)), cuda.In(small),
                              np.int32(10), block=(16, 1, 1)))
show_error(lambda: multiply_n(small_out, cuda.In(small), cuda.In(small), np.int32(10), block=(16, 1, 1)))
show_error(lambda: multiply_n(cuda.Out(small_out), cuda.In(small), cuda.In(small), np.int32(10),
                              block=(2048, 1, 1)))

# %% [markdown]
# Mistakes in the CUDA C itself are caught when the module is compiled. The error gives the line
# number counted in *your* source string, and the compiler's own words:

# %%
try:
    cuda.SourceModule(r"""
__global__ void typo(float *x, int n)
{
    const int i = threadIdx.x;
    if (i < n) x[i] = 2.0f * y[i];
}
""")
except cuda.CompileError as err:
    print("CompileError on line", err.line)
    print(str(err)[:600])

# %% [markdown]
# ## 10. The emulator is not a GPU
#
# The emulator exists so that you can write, run and debug real CUDA C anywhere, and it is strict
# where a GPU is lax. Its **speed tells you nothing** about a GPU. Here is the same multiplication on
# `N` elements, with the data already in device memory, next to NumPy. Without a GPU, both rows are
# CPU time.

# %%
numpy_time = time_call(lambda: a * b, repeat=3)
emulator_time = time_call(lambda: multiply_n(grid, block, (d_ab, d_a, d_b, np.int32(N))), repeat=3,
                          device=multiply_n.backend)
where = (f"{multiply_n.backend}: CPU time, not a GPU timing" if multiply_n.backend.startswith("emulator")
         else f"{multiply_n.backend}: GPU time, device synchronised")
Table(["what ran", "where", "best time per call"],
      [["NumPy a * b", "CPU", format_seconds(numpy_time.best)],
       ["multiply_n kernel", where, format_seconds(emulator_time.best)]],
      caption=f"N = {N:,}, data already in device memory")

# %% [markdown]
# On a GPU the kernel would take microseconds; here every one of the `N` threads is a fiber the CPU
# switches to in turn. What else a GPU does that the emulator does not imitate:
#
# * **Warps, and no lockstep.** A GPU issues instructions for groups of 32 threads, a *warp*; when
#   threads of a warp take different branches, the paths run one after the other. Before Volta a warp
#   ran in lockstep; since Volta (2017) its threads are scheduled independently and may diverge and
#   reconverge anywhere, so code must not assume lockstep and must exchange data through `__syncwarp()`
#   or the `*_sync` warp functions (CUDA C++ Programming Guide, "Independent Thread Scheduling"). The
#   emulator runs threads one by one; it implements the warp functions (`__shfl_sync`,
#   `__ballot_sync`, …) but not the cost of divergence.
# * **Scheduling.** A GPU keeps thousands of threads in flight on dozens of multiprocessors, switching
#   warps whenever one waits for memory — that is how it hides memory latency. The emulator runs one
#   block at a time, each up to its next barrier, in a fixed order (or two orders, when checking).
# * **Memory performance.** Coalesced accesses, caches, shared-memory bank conflicts: none of it
#   exists here, so nothing about memory layout shows in emulator timings.
# * **Not emulated at all:** `__constant__` memory set from the host, textures, half precision,
#   cooperative groups, streams and events (every launch here finishes before the call returns). An
#   endless loop hangs the emulator as it would hang a GPU.
#
# The numbers a kernel computes, on the other hand, are the ones a GPU computes, and the checks —
# argument types, launch limits, divergent barriers, missing barriers, out-of-bounds accesses — catch
# bugs that a GPU would let slip. Time kernels on a GPU (`time_kernel=True` on a GPU launch returns a
# CUDA-event timing); debug them anywhere.

# %% [markdown]
# ## Your turn
#
# Open **[`exercises/07_cuda_kernels_exercises.ipynb`](../exercises/07_cuda_kernels_exercises.ipynb) ([in Colab](https://colab.research.google.com/github/coursekit/coursekit/blob/main/exercises/07_cuda_kernels_exercises.ipynb))**. It asks you for, in CUDA C plus a little Python:
#
# 1. the (20, 10) matrix and any other shape, with a 2-D grid of 2-D blocks;
# 2. an Op for `x * y` whose GPU version is your kernel;
# 3. an Op with **two outputs**, `x + y` and `x - y`, from **one** kernel;
# 4. a kernel that reads **strided** inputs (a transpose, a slice with a step) without copying them;
# 5. a shared-memory **block maximum**, checked with `check="races"`.
#
# Graded cells check your work against NumPy on random data of awkward sizes; without a GPU, the
# emulator runs them.
