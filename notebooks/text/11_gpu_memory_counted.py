# %% [markdown]
# # Lesson 11 — GPU memory, counted
#
# Lesson 9 counted the *bytes* a matrix product reads. A GPU never moves one byte, or one float, at a
# time. The 32 threads of a **warp** issue each load or store together, as one **request**, and the
# memory system answers it in fixed units:
#
# * **global memory** in **32-byte sectors** (four of them make a 128-byte cache line): a request whose
#   32 floats sit side by side needs 4 sectors; one whose floats are far apart needs 32, and moves 8
#   times the bytes it uses;
# * **shared memory** in **32 banks** of 4-byte words: a request is served in one pass (a
#   **wavefront**) when its 32 lanes use 32 different banks, and in up to 32 passes when they all want
#   different words of the same bank (a **bank conflict**);
# * **atomics**: lanes that update the *same* address in one request take turns.
#
# Whether a kernel is **coalesced**, **conflict-free** or **contended** is therefore a count, and
# coursekit's CUDA emulator makes it: `SourceModule(source, backend="emulator", counts=True)`, and after
# each launch `kernel.counts` says what its warps asked for. In this lesson you will predict those
# counts, measure them, check them against a formula, and let the cost model of lesson 5 say what they
# would cost on a GPU:
#
# 1. one warp, one load: sectors per request as the stride between threads grows;
# 2. a matrix transpose three ways: naive, through a shared-memory tile, and with that tile padded;
# 3. a prefix sum (a *scan*), the parallel pattern behind sorting and stream compaction;
# 4. a histogram with atomics, and what contention does to it;
# 5. half precision: what `__half` arithmetic rounds away, and the tensor-core roof.
#
# **Labels.** Counts come from the emulator's model of a 32-thread warp (*emulated*, exact for that
# model; no caches). Times on a GPU come from the cost model's T4 preset (*modelled*: a prediction from
# datasheet figures, not a measurement). The model has been compared with one real card, an H100 lent
# on 2026-11-24, on calls of one to four launches from lessons 2 to 5 (`docs/gpu-model.md`); nobody has
# measured a T4 for this course, nor any of this lesson's kernels on a GPU, so read its ratios rather
# than its milliseconds). The emulator's own run time is CPU time and is never shown as a GPU time.

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

from coursekit import cuda
from coursekit.lessons import Table, format_seconds
from coursekit.cuda.warp_counts import SECTOR_BYTES
from coursekit import costmodel
from coursekit.work import Work

plt.rcParams.update({"figure.figsize": (6, 3.2), "figure.dpi": 72})
rng = np.random.default_rng(1111)
MODEL = costmodel.model("t4")          # the GPU the modelled times are for


def counting_module(source):
    # kernels that count what their warps ask of memory (always on the CPU emulator)
    return cuda.SourceModule(source, backend="emulator", counts=True)


def modelled_seconds(load_sectors, store_sectors, threads):
    # what the cost model says the global-memory traffic of one launch costs on the T4
    work = Work(bytes_read=SECTOR_BYTES * load_sectors, bytes_written=SECTOR_BYTES * store_sectors,
                launches=1, threads=threads)
    return MODEL.cost(work).total


print("counts: emulated;", "GPU times:", MODEL.label, "-", MODEL.spec.name)

# %% [markdown]
# ## 1. One warp, one load: how many sectors?
#
# Thread `i` of a launch copies `src[i * stride]` to `dst[i]`. With `stride = 1` the 32 lanes of a warp
# read 32 neighbouring floats, 128 bytes. With `stride = 2` they read every other float: the same 32
# floats are used, but they are spread over 256 bytes.
#
# **Predict** before running the next cells: how many 32-byte sectors does one warp's load request
# touch for each stride? Write your guesses in the dictionary (they are read back below).

# %%
# Your prediction: sectors touched by one warp's load request, per stride
my_prediction = {1: None, 2: None, 4: None, 8: None, 32: None}      # e.g. {1: 1, 2: 2, ...}

# %%
GATHER_SOURCE = r'''
__global__ void gather(float *dst, const float *src, int n, int stride)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[(long long)i * stride % n];   // wraps around, so every stride reads n floats
}
'''
gather = counting_module(GATHER_SOURCE).get_function("gather")
n = 1 << 14
src = rng.standard_normal(n).astype(np.float32)
dst = np.empty_like(src)
strides = [1, 2, 4, 8, 16, 32]
gathered = {}
for stride in strides:
    gather(cuda.Out(dst), cuda.In(src), np.int32(n), np.int32(stride), block=(256, 1, 1), grid=(n // 256, 1))
    assert np.array_equal(dst, src[np.arange(n) * stride % n])
    gathered[stride] = gather.counts
print(gathered[2])

# %% [markdown]
# The table is the whole launch (`n` = 16,384 threads, 512 warps). The closed form: a warp's 32 floats
# span `32 · 4 · stride` bytes, so its request touches `min(32, 4 · stride)` sectors (the span starts on a
# sector boundary, as every row of 32 does here). The stores to `dst` are coalesced in every row.

# %%
# NBVAL_CHECK_OUTPUT
rows = []
for stride in strides:
    loads = gathered[stride].loads["src"]
    closed_form = min(32, 4 * stride)
    assert loads.sectors == loads.requests * closed_form and gathered[stride].stores["dst"].sectors == n // 8
    guess = my_prediction.get(stride)
    rows.append([stride, loads.requests, loads.sectors, f"{loads.sectors_per_request:.0f}", closed_form,
                 f"{loads.efficiency:.0%}", "-" if guess is None else guess])
Table(["stride", "load requests", "sectors (emulated)", "per request", "min(32, 4 stride)", "bytes used",
       "you said"], rows, caption=f"gather of n = {n:,} floats, blocks of 256 threads")

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
per_request = [gathered[s].loads["src"].sectors_per_request for s in strides]
left.plot(strides, per_request, "o-", label="counted (emulated)")
left.plot(strides, [min(32, 4 * s) for s in strides], "k:", label="min(32, 4 stride)")
left.set_xscale("log", base=2)
left.set_xlabel("stride between neighbouring threads (floats)")
left.set_ylabel("sectors per warp request")
left.legend(fontsize=8)
big = 1 << 24                                             # a 64 MiB array, where launch latency is noise
times = [modelled_seconds(big // 8 * min(32, 4 * s) // 4, big // 8, big) for s in strides]
right.bar([str(s) for s in strides], [t * 1e3 for t in times], color="tab:red")
right.set_xlabel("stride")
right.set_ylabel("ms, modelled")
right.set_title(f"gather of 2^24 floats, {MODEL.label}", fontsize=9)
fig.tight_layout()
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
print(f"modelled ({MODEL.spec.key}): a gather of 2^24 floats takes {format_seconds(times[0])} at stride 1 and "
      f"{format_seconds(times[-1])} at stride 32: {times[-1] / times[0]:.1f}x longer for the same data")

# %% [markdown]
# From stride 8 on every lane has a sector of its own: 32 sectors, 1,024 bytes moved for 128 used
# (12.5%). Past that point the stride no longer matters: one float per sector is as bad as it gets.
# The model prices each sector as traffic to DRAM, so the strided gather is predicted several times
# slower (not a full 8×, because the coalesced stores to `dst` cost the same in both). A real GPU's
# caches can soften this when neighbouring warps reuse the sectors, but only if the data stays in
# cache until they do.
#
# ## 2. A transpose, three ways
#
# `out[x][y] = in[y][x]` for an `n × n` matrix. One thread per element and blocks of 32 × 8 threads
# (each thread moves 4 elements, `TILE / ROWS`). The **naive** kernel reads a row of `in` along `x` —
# coalesced — and so writes a *column* of `out`: neighbouring lanes write floats `n` apart.
#
# The **tiled** kernel first copies a 32 × 32 tile of `in` into `__shared__` memory with coalesced
# loads, waits at a barrier, and writes the tile back transposed, reading it down a column so that its
# stores to `out` are coalesced too. The cost moves into shared memory: a column of `float tile[32][32]`
# is 32 words that are 32 words apart, which is 32 times the same bank.
#
# The **padded** kernel is the tiled one with one unused float at the end of each row,
# `tile[32][33]`: a column's words are then 33 apart, and 33 mod 32 = 1 puts each in a bank of its
# own.
#
# **Predict:** how many sectors per store request for the naive kernel? How many wavefronts per
# shared-memory load request for the tiled kernel, and for the padded one?

# %%
# Your prediction
my_prediction_transpose = {"naive: sectors per store request": None,
                           "tiled: wavefronts per shared load request": None,
                           "padded: wavefronts per shared load request": None}

# %%
TRANSPOSE_SOURCE = r'''
#define TILE 32
#define ROWS 8      // blocks of 32 x 8 threads; each thread moves TILE / ROWS = 4 elements

__global__ void transpose_naive(float *out, const float *in, int n)
{
    const int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        out[x * n + (y + j)] = in[(y + j) * n + x];       // read along a row, write down a column
}

__global__ void transpose_tiled(float *out, const float *in, int n)
{
    __shared__ float tile[TILE][TILE + PAD];              // PAD is 0 or 1, set below
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];       // coalesced read, row of the tile
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;                  // the transposed tile's place in out
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];      // column of the tile, coalesced write
}
'''
kernels = {"naive": counting_module("#define PAD 0\n" + TRANSPOSE_SOURCE).get_function("transpose_naive"),
           "tiled": counting_module("#define PAD 0\n" + TRANSPOSE_SOURCE).get_function("transpose_tiled"),
           "padded": counting_module("#define PAD 1\n" + TRANSPOSE_SOURCE).get_function("transpose_tiled")}


def transpose_counts(name, n):
    a = rng.standard_normal((n, n)).astype(np.float32)
    out = np.full_like(a, np.nan)
    kernel = kernels[name]
    kernel(cuda.Out(out), cuda.In(a), np.int32(n), block=(32, 8, 1), grid=(n // 32, n // 32), check="races")
    assert np.array_equal(out, a.T), name
    return kernel.counts


print(transpose_counts("tiled", 64))

# %% [markdown]
# Closed forms, for `n` a multiple of 32: moving the matrix once takes `n²/32` warp requests. Coalesced,
# each touches 4 sectors (`n²/8` in all); the naive kernel's column stores touch 32 each (`n²`). The
# tiled kernel's shared-memory stores go along rows (1 wavefront each), its loads down columns: 32
# wavefronts each without padding (`n²`), 1 with it (`n²/32`). The cell checks every count at two sizes.

# %%
# NBVAL_CHECK_OUTPUT
closed_form = {   # (load sectors, store sectors, shared load wavefronts, shared store wavefronts)
    "naive": lambda n: (n * n // 8, n * n, 0, 0),
    "tiled": lambda n: (n * n // 8, n * n // 8, n * n, n * n // 32),
    "padded": lambda n: (n * n // 8, n * n // 8, n * n // 32, n * n // 32),
}
rows = []
for n in (96, 256):
    for name, formula in closed_form.items():
        c = transpose_counts(name, n)
        counted = (c.global_loads.sectors, c.global_stores.sectors, c.shared_loads.wavefronts, c.shared_stores.wavefronts)
        assert counted == formula(n), (name, n, counted, formula(n))
        rows.append([n, name, *counted, c.bank_conflicts])
Table(["n", "kernel", "load sectors", "store sectors", "shared load wavefronts", "shared store wavefronts",
       "bank conflicts"], rows, caption="transpose of n x n float32, counted on the emulator = closed form")

# %%
# NBVAL_CHECK_OUTPUT
n = 256
per_request = {name: transpose_counts(name, n) for name in closed_form}
said = my_prediction_transpose
print("naive: sectors per store request:", per_request["naive"].global_stores.sectors_per_request,
      "| you said:", said["naive: sectors per store request"])
for name in ("tiled", "padded"):
    s = per_request[name].shared_loads
    print(f"{name}: wavefronts per shared load request:", s.wavefronts / s.requests,
          "| you said:", said[f"{name}: wavefronts per shared load request"])

# %%
big = 4096        # priced at a size where the launch is noise; the counts are the closed forms above
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.8))
names = list(closed_form)
loads, stores, shared_loads, _ = zip(*(closed_form[name](256) for name in names))
x = np.arange(len(names))
left.bar(x - 0.2, loads, 0.4, label="global load sectors")
left.bar(x + 0.2, stores, 0.4, label="global store sectors")
left.plot(x, shared_loads, "ks", label="shared load wavefronts")
left.set_xticks(x, names)
left.set_yscale("log")
left.set_title("n = 256, counted (emulated)", fontsize=9)
left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2)
modelled = {name: modelled_seconds(*closed_form[name](big)[:2], big * big // 4) for name in names}
right.bar(names, [t * 1e3 for t in modelled.values()], color="tab:red")
right.set_ylabel("ms, modelled")
right.set_title(f"n = {big}: global traffic only, {MODEL.label}", fontsize=9)
fig.tight_layout()
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
print(f"n = {big}, {MODEL.label}, global-memory traffic only:")
for name, seconds in modelled.items():
    print(f"  {name:<7} {format_seconds(seconds)}")
print(f"  the model predicts the tiled transposes {modelled['naive'] / modelled['tiled']:.1f}x faster than the naive one")

# %% [markdown]
# Tiling turns the naive kernel's 32-sector stores into 4-sector ones: the global traffic falls from
# `n²/8 + n²` sectors to `n²/4`, and the model predicts the gain from that alone. It has no price for
# shared memory: the tiled and padded kernels look the same to it, while the counts say the unpadded
# one needs 32 wavefronts for every load from its tile, 31 of them replays. On a GPU those replays
# occupy the shared-memory pipeline that every warp of the SM shares; the padded kernel's one float
# per row costs 128 bytes of shared memory per block and removes them all.
#
# The cost model can be extended by a term of our own: each SM's shared memory serves one wavefront
# per clock. With the preset's 40 SMs and the T4's datasheet boost clock (the preset has no clock, so
# the cell states it), the wavefronts have a price too. Whether that time overlaps the global traffic
# (other warps load while one waits for its replays) or adds to it is not something the counts can
# say, so the cell gives both ends:

# %%
# NBVAL_CHECK_OUTPUT
T4_BOOST_CLOCK = 1.59e9      # Hz, from the T4 datasheet: an assumption of this cell, not in the preset


def shared_seconds(wavefronts):
    # every SM serves one wavefront per clock, all SMs busy: the shared-memory pipeline's best case
    return wavefronts / (MODEL.spec.sm_count * T4_BOOST_CLOCK)


print(f"n = {big}, {MODEL.label} + shared memory at 1 wavefront per SM per clock:")
for name in names:
    _, _, shared_loads, shared_stores = closed_form[name](big)
    g, s = modelled[name], shared_seconds(shared_loads + shared_stores)
    print(f"  {name:<7} global {format_seconds(g):>9}, shared {format_seconds(s):>9}: "
          f"{format_seconds(max(g, s)):>9} if they overlap, {format_seconds(g + s):>9} if they add up")

# %% [markdown]
# Without padding the bank conflicts add about half the global time again if nothing overlaps them,
# and nothing if everything does; with padding the shared-memory term is a few per cent either way.
# Which end a real card sits nearer is a measurement this course has not made: the one card the
# project measured (an H100, 2026-11-24) ran the calls of lessons 2 to 5, not these kernels. The counts
# are exact, the seconds are a model's.
#
# ## 3. A prefix sum in parallel
#
# `out[i] = x[0] + x[1] + … + x[i]` (an *inclusive scan*). On one thread it is a loop of `n − 1`
# additions, each waiting for the one before. That chain is why a scan looks serial, and why it is
# worth learning: scans are how a GPU sorts (radix sort), compacts a stream (keep the elements that
# pass a test, without gaps) and allocates output space in parallel.
#
# First, the kernel a sequential mind writes: thread 0 of each block walks the block's 256 elements
# alone. **Predict:** how many load requests and sectors does it need for `n` elements?

# %%
SERIAL_SCAN_SOURCE = r'''
#define BLOCK 256
__global__ void scan_serial(int *out, const int *in, int n)
{
    if (threadIdx.x != 0) return;                         // one thread per block does all the work
    const int start = blockIdx.x * BLOCK, stop = min(start + BLOCK, n);
    int running = 0;
    for (int i = start; i < stop; ++i) {
        running += in[i];
        out[i] = running;
    }
}
'''
scan_serial = counting_module(SERIAL_SCAN_SOURCE).get_function("scan_serial")
n = 4096
values = rng.integers(-9, 10, n).astype(np.int32)
out = np.empty_like(values)
scan_serial(cuda.Out(out), cuda.In(values), np.int32(n), block=(256, 1, 1), grid=(n // 256, 1))
blocks_ok = all(np.array_equal(out[b:b + 256], np.cumsum(values[b:b + 256])) for b in range(0, n, 256))
print("each block of 256 scanned correctly:", blocks_ok)
print(scan_serial.counts)

# %% [markdown]
# Every load is a request of one lane: `n` requests touching `n` sectors, eight times the sectors that
# `n` coalesced floats need (`n/8`), and each sector's other 28 bytes thrown away — a GPU's L1 cache
# would keep some of them for the next iteration, but the request count, one per element, remains. And
# 255 threads of every block sit idle.
#
# **The parallel idea (Hillis and Steele).** Give each of the 256 threads one element. In step 1 every
# element adds the one 1 place to its left; in step 2 the one 2 places to its left; then 4, 8, …, 128.
# After step `k` element `i` holds the sum of the `2^k` elements ending at `i`, so after
# `log2(256) = 8` steps it holds them all. Each step reads values the previous step wrote, so there is
# a barrier between steps, and a thread must read its neighbour's value *before* anyone overwrites it.
#
# **Predict:** how many additions does this do for 256 elements, against the loop's 255?

# %%
# Your prediction
my_prediction_scan = {"additions, 256 elements": None, "steps": None}


# %%
# NBVAL_CHECK_OUTPUT
def hillis_steele(x):
    # the parallel scan's steps, in NumPy: returns the result and the additions done
    x, additions, offset = x.copy(), 0, 1
    while offset < x.size:
        shifted = x[:-offset].copy()       # everyone reads first (the barrier between read and write)
        x[offset:] += shifted
        additions += shifted.size
        offset *= 2
    return x, additions


block = values[:256]
scanned, additions = hillis_steele(block)
print("same as np.cumsum:", np.array_equal(scanned, np.cumsum(block)))
print(f"additions: {additions} in {int(np.log2(block.size))} steps (the loop: {block.size - 1} in {block.size - 1} steps)")
print("closed form n log2(n) - (n - 1):", block.size * int(np.log2(block.size)) - (block.size - 1))
print("you said:", my_prediction_scan)

# %%
fig, ax = plt.subplots(figsize=(7, 2.8))
n_show = 16
for step in range(int(np.log2(n_show)) + 1):
    offset = 2 ** step
    for i in range(n_show):
        ax.plot(i, -step, "o", color="tab:blue" if step else "black", ms=5)
        if step < int(np.log2(n_show)) and i + offset < n_show:
            ax.annotate("", xy=(i + offset, -step - 1), xytext=(i, -step),
                        arrowprops=dict(arrowstyle="->", color="0.6", lw=0.6))
ax.set_yticks([-s for s in range(int(np.log2(n_show)) + 1)], ["input"] + [f"after step {s}" for s in range(1, 5)])
ax.set_xticks(range(n_show))
ax.set_xlabel("element (one thread each)")
ax.set_title("Hillis-Steele scan of 16 elements: element i adds element i - 2^(k-1) in step k", fontsize=9)
fig.tight_layout()
plt.show()

# %% [markdown]
# `n log2 n − (n − 1)` additions, 1,793 for 256 elements: seven times the loop's work, done in 8 steps
# instead of 255. On a GPU the steps are what cost time, as long as the extra work keeps the arithmetic
# units busy rather than waiting for them. (Blelloch's *work-efficient* scan does `2(n − 1)` additions
# in `2 log2 n` steps, with an up-sweep and a down-sweep over a tree; its textbook version has bank
# conflicts, which the counts here would show you.)
#
# A whole array is longer than a block. The usual plan has three phases: each block scans its part and
# writes its total to `block_sums`; the block sums are scanned; each block then adds the scanned sum
# of the blocks before it to its elements. **You write the kernel of the first phase in exercise 11**,
# graded on correctness *and* on its counts: it must read its input once, with coalesced requests.
#
# ## 4. A histogram, and atomics that wait for each other
#
# Counting how often each value occurs: `bins[values[i]] += 1` for every `i`. Many threads update the
# same bin, so the update must be an **atomic** read-modify-write, `atomicAdd(&bins[v], 1)`, or
# increments get lost. Atomics to *different* addresses proceed together; the lanes of a request that
# hit the *same* address take turns.
#
# **Predict:** for 256 bins and `n` values, how many serialized steps does the histogram need when the
# values are spread evenly (`i % 256`), random, or all the same?

# %%
# Your prediction: serialized steps for n = 8,192 values (256 warp requests)
my_prediction_histogram = {"spread (i % 256)": None, "random": None, "all the same": None}

# %%
HISTOGRAM_SOURCE = r'''
__global__ void histogram_global(unsigned int *bins, const int *values, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[values[i]], 1u);
}
'''
histogram_global = counting_module(HISTOGRAM_SOURCE).get_function("histogram_global")
n, nbins = 8192, 256
datasets = {"spread (i % 256)": np.arange(n) % nbins, "random": rng.integers(0, nbins, n),
            "all the same": np.full(n, 7)}
atomic_counts = {}
for label, data in datasets.items():
    data = data.astype(np.int32)
    bins = np.zeros(nbins, np.uint32)
    histogram_global(cuda.InOut(bins), cuda.In(data), np.int32(n), block=(256, 1, 1), grid=(n // 256, 1))
    assert np.array_equal(bins, np.bincount(data, minlength=nbins))
    atomic_counts[label] = histogram_global.counts.atomics["bins"]


# %%
# NBVAL_CHECK_OUTPUT
def serialized_steps(data):
    # closed form from the data: per warp of 32 consecutive values, the most of them in one bin
    return sum(int(np.bincount(data[w:w + 32]).max()) for w in range(0, data.size, 32))


rows = []
for label, data in datasets.items():
    a = atomic_counts[label]
    assert a.serialized == serialized_steps(data)
    guess = my_prediction_histogram[label]
    rows.append([label, a.requests, a.lanes, a.serialized, f"{a.serialized / a.requests:.2f}",
                 "-" if guess is None else guess])
Table(["values", "atomic requests", "lanes", "serialized steps (emulated)", "per request", "you said"], rows,
      caption=f"histogram of n = {n:,} values into {nbins} bins, one global atomicAdd per value")

# %% [markdown]
# Spread values never collide inside a warp: one step per request, `n/32` in all. All-equal values
# collide 32 times in every request: `n` steps, and every one of them on the same bin's memory, so the
# whole GPU queues behind one address. Random values fall in between (a few lanes share a bin now and
# then). Real data — pixel intensities, word counts — is often skewed like the last case.
#
# The cure is **privatization**: each block counts into its own bins in `__shared__` memory (shared-
# memory atomics are fast and only the block's threads compete), then adds its bins to the global ones
# with one atomic per bin. The global atomics drop from `n` to `blocks × bins`. The cost model has no
# figure for atomics, so this lesson prices them only as counts; exercise 11's third task asks you to
# write the privatized kernel and grades it by those counts.

# %% [markdown]
# ## 5. Half precision: what rounding costs, and the tensor-core roof
#
# A `float` has a 24-bit significand; CUDA's `__half` (float16) has 11. Every value is rounded to about
# 3 decimal digits, and the largest finite one is 65,504. What you get for it: half the bytes per
# element (twice the elements per sector) and, on GPUs with **tensor cores**, a far higher peak for
# matrix products, which multiply float16 inputs and may add in float32.
#
# The emulator computes `__half` arithmetic as CUDA does: each operation in float, then rounded to
# float16. **Predict:** summing 4,096 values of 0.1 in one `__half` accumulator, how far off is the
# total?

# %%
HALF_SOURCE = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__global__ void sum_half(float *out, const float *in, int n)
{   // one thread adds n values in a __half accumulator (to show the rounding, not to be fast)
    __half total = __float2half(0.0f);
    for (int i = 0; i < n; ++i) total = __hadd(total, __float2half(in[i]));
    *out = __half2float(total);
}

__global__ void sum_bfloat16(float *out, const float *in, int n)
{   // the same in bfloat16: float32's range, 8 significant bits
    __nv_bfloat16 total = __float2bfloat16(0.0f);
    for (int i = 0; i < n; ++i) total = __hadd(total, __float2bfloat16(in[i]));
    *out = __bfloat162float(total);
}

__global__ void dot_rows(float *out, const float *a, const float *b, int rows, int k, int half_accumulator)
{   // out[r] = a[r, :] . b: float16 inputs, float16 or float32 accumulator (as a tensor core may)
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    __half acc16 = __float2half(0.0f);
    float acc32 = 0.0f;
    for (int j = 0; j < k; ++j) {
        const __half x = __float2half(a[r * k + j]), y = __float2half(b[j]);
        if (half_accumulator) acc16 = __hfma(x, y, acc16);
        else acc32 += __half2float(x) * __half2float(y);
    }
    out[r] = half_accumulator ? __half2float(acc16) : acc32;
}
'''
half_module = cuda.SourceModule(HALF_SOURCE, backend="emulator")
sum_half, dot_rows = half_module.get_function("sum_half"), half_module.get_function("dot_rows")
total = np.zeros(1, np.float32)
sum_half(cuda.Out(total), cuda.In(np.full(4096, 0.1, np.float32)), np.int32(4096), block=(1, 1, 1), grid=(1, 1))
total_bf16 = np.zeros(1, np.float32)
half_module.get_function("sum_bfloat16")(cuda.Out(total_bf16), cuda.In(np.full(4096, 0.1, np.float32)), np.int32(4096),
                                         block=(1, 1, 1), grid=(1, 1))

# %%
# NBVAL_CHECK_OUTPUT
print(f"4,096 x 0.1 in a __half accumulator: {total[0]:g} (exact: 409.6; float32: {np.float32(0.1) * 4096:g})")
print("the same, rounded by NumPy's float16 one addition at a time:",
      np.cumsum(np.full(4096, 0.1, np.float16), dtype=np.float16)[-1])
print(f"in a bfloat16 accumulator: {total_bf16[0]:g}")

# %% [markdown]
# The sum stops growing: once the total reaches 256, the gap between neighbouring float16 numbers is
# 0.25, and 0.1 is less than half of it, so every further addition rounds back to the same total.
# NumPy's float16 gives the same number: the emulator rounds after every operation as the hardware
# does. bfloat16, the other 16-bit format of recent GPUs, keeps float32's exponent (no overflow at
# 65,504) but only 8 significant bits, so its sum stops far earlier, at 32, where its gap is 0.25 too. This is why tensor cores (and mixed-precision training) keep float16 *inputs* but add in
# float32. The products `a · b` of two float16 numbers are exact in float32; what float32 accumulation
# removes is the rounding of every running sum. Measured on the emulator for rows of growing length:

# %%
# NBVAL_CHECK_OUTPUT
rows_ = []
for k in (64, 1024, 8192):
    a = rng.random((256, k)).astype(np.float32)
    b = rng.random(k).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    row = [k]
    for half_acc in (1, 0):
        out = np.empty(256, np.float32)
        dot_rows(cuda.Out(out), cuda.In(a), cuda.In(b), np.int32(256), np.int32(k), np.int32(half_acc),
                 block=(128, 1, 1), grid=(2, 1))
        row.append(f"{np.max(np.abs(out - exact) / exact):.1e}")
    row.append(f"{np.max(np.abs((a @ b) - exact) / exact):.1e}")
    rows_.append(row)
Table(["k (row length)", "float16 accumulator", "float16 inputs, float32 accumulator", "float32 throughout"],
      rows_, caption="largest relative error of a row of A @ b, values in [0, 1), measured on the emulator")

# %%
# NBVAL_CHECK_OUTPUT
import dataclasses

spec = MODEL.spec
TENSOR_CORE_FP16 = 65e12       # the T4 datasheet's float16 tensor-core peak (float32 accumulation)
tensor = costmodel.CostModel(dataclasses.replace(spec, key="t4-tensor-cores", fp16_flops=TENSOR_CORE_FP16))
n = 4096
print(f"C = A B, n = {n}, each operand read once per 128-wide tile of the other:")
for dtype, item, model in [("float32", 4, MODEL), ("float16", 2, MODEL), ("float16", 2, tensor)]:
    work = Work(flops=2 * n ** 3, bytes_read=2 * n * n * item * (n // 128), bytes_written=n * n * item,
                launches=1, matrix=(n, n), dtype=dtype)
    cost = model.cost(work)
    print(f"  {dtype}, peak {model.spec.peak_flops(dtype) / 1e12:4.1f} TFLOP/s: {format_seconds(cost.total):>9}, "
          f"bound by {cost.bound:<7} ({model.label})")

# %% [markdown]
# The T4 preset's float16 peak is its plain (non-tensor-core) rate, twice the float32 one. The
# modelled product does not simply halve: float16 also halves the bytes, and at 16.2 TFLOP/s the
# product is already bound by **memory** (22.65 ms in float32, bound by compute; 8.54 ms in float16).
# With the datasheet's tensor-core peak the roof rises eight-fold over float32, and the prediction
# does not move at all: 8.54 ms again, bound by memory. A higher arithmetic roof buys nothing once
# the data cannot arrive faster. The same tiles that left the float32 kernel waiting for the
# arithmetic units leave the tensor cores waiting for data, which is why tensor-core kernels use far
# larger tiles (more work per byte) than the 128 priced here. What the tensor cores sell is arithmetic;
# what they charge is 3 significant digits per input and, with a float16 accumulator, an error that
# grows with the length of the sum, as measured above. With float32 accumulation the error stayed at
# about 1e-4 or below at every length.
#
# ## What you saw
#
# * A warp's request is served in 32-byte sectors: coalesced float loads need 4 per request, a stride of
#   8 floats or more needs 32. Counted on the emulator; the closed form is `min(32, 4 · stride)`.
# * A transpose cannot read and write along rows at once, unless a shared-memory tile turns the data
#   round; a column of a `[32][32]` tile is one bank (32 wavefronts per request), and one float of
#   padding per row spreads it over all 32.
# * A scan trades work for steps: `n log2 n − (n − 1)` additions in `log2 n` steps; a serial loop on one
#   thread needs a request per element.
# * Atomics on one address serialize within a warp and queue across the GPU; privatizing in shared
#   memory cuts the global atomics from one per value to one per bin per block.
# * float16 halves the bytes and raises the arithmetic roof; accumulate in float32 or pay an error that
#   grows with the sum.
#
# ## Your turn
#
# Open **[`exercises/11_gpu_memory_counted_exercises.ipynb`](../exercises/11_gpu_memory_counted_exercises.ipynb) ([in Colab](https://colab.research.google.com/github/coursekit/coursekit/blob/main/exercises/11_gpu_memory_counted_exercises.ipynb))**.
# It asks you for three kernels, each graded on correctness **and** on its counts:
#
# 1. a transpose that is coalesced both ways and free of bank conflicts, on sizes that are not multiples
#    of 32;
# 2. the first phase of a parallel prefix sum: each block scans its 256 elements, reading its input
#    once with coalesced requests;
# 3. a privatized histogram: shared-memory atomics per value, one global atomic per bin per block.
#
# Back to lesson 10: [`notebooks/10_afternoon_project.ipynb`](10_afternoon_project.ipynb).
