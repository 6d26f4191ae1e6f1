"""Two workloads about the compiler rather than the arithmetic (issue 17).

* ``compile``: ``T.grad`` of an MLP with 2/10/50/100/200 layers, compiled into a training step.
  Reports the compile time of each depth and the time per layer: a compiler that re-walks the
  whole graph after every rewrite grows quadratically, one that works locally stays flat.
  Peers: PyTensor (``pytensor.function`` of the same graph) and JAX (``jit(grad)``, lowered and
  compiled by XLA).
* ``memory``: the peak memory of an UNFUSED 20-op elementwise chain over one big float32 vector,
  measured with ``tracemalloc`` (NumPy reports its array allocations to it), in units of one
  vector.  With ``allow_gc=True`` a buffer can be freed (or reused) right after its last reader
  ran, so a chain needs about 2 intermediate buffers, not 20.  NumPy written by hand is the
  baseline; PyTensor's VM (which also frees at last use) is a peer.  JAX allocates outside
  Python's allocator, so tracemalloc cannot see it and it is not shown.
"""
from __future__ import annotations

import gc
import os
import time
import tracemalloc
import traceback

import numpy as np

from _common import Row, Target

DEPTHS = (2, 10, 50, 100, 200)
QUICK_DEPTHS = (2, 10, 50)
WIDTH = 16
GIVE_UP_AFTER_S = 30.0   # a depth that took this long is not followed by a deeper one
CHAIN_OPS = 20


def _reason(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"


# --------------------------------------------------------------------------------------------
# compile time
# --------------------------------------------------------------------------------------------
def _mlp_params(depth, seed=0):
    rng = np.random.RandomState(seed)
    return [(rng.randn(WIDTH, WIDTH).astype(np.float32) * 0.1, np.zeros(WIDTH, np.float32)) for _ in range(depth)]


def _ck_compile(ctx, depth):
    theano, T = ctx.coursekit()
    x, y = T.matrix("x"), T.matrix("y")
    params = [(theano.shared(W, name=f"W{i}"), theano.shared(b, name=f"b{i}"))
              for i, (W, b) in enumerate(_mlp_params(depth))]
    h = x
    for W, b in params:
        h = T.tanh(T.dot(h, W) + b)
    cost = ((h - y) ** 2).mean()
    flat = [p for pair in params for p in pair]
    t0 = time.perf_counter()
    grads = T.grad(cost, flat)
    t1 = time.perf_counter()
    theano.function([x, y], cost, updates=[(p, p - 0.01 * g) for p, g in zip(flat, grads)])
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def _pt_compile(depth):
    import pytensor
    import pytensor.tensor as pt
    x, y = pt.matrix("x", dtype="float32"), pt.matrix("y", dtype="float32")
    params = [(pytensor.shared(W, name=f"W{i}"), pytensor.shared(b, name=f"b{i}"))
              for i, (W, b) in enumerate(_mlp_params(depth))]
    h = x
    for W, b in params:
        h = pt.tanh(pt.dot(h, W) + b)
    cost = ((h - y) ** 2).mean()
    flat = [p for pair in params for p in pair]
    t0 = time.perf_counter()
    grads = pytensor.grad(cost, flat)
    t1 = time.perf_counter()
    pytensor.function([x, y], cost, updates=[(p, p - np.float32(0.01) * g) for p, g in zip(flat, grads)])
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def _jax_compile(depth):
    import jax
    import jax.numpy as jnp
    params = [(jnp.asarray(W), jnp.asarray(b)) for W, b in _mlp_params(depth)]

    def loss(params, x, y):
        h = x
        for W, b in params:
            h = jnp.tanh(h @ W + b)
        return jnp.mean((h - y) ** 2)

    def step(params, x, y):
        g = jax.grad(loss)(params, x, y)
        return [(W - 0.01 * gW, b - 0.01 * gb) for (W, b), (gW, gb) in zip(params, g)]

    x = jnp.zeros((8, WIDTH), jnp.float32)
    t0 = time.perf_counter()
    jax.jit(step).lower(params, x, x).compile()
    return None, time.perf_counter() - t0


def compile_time(ctx) -> None:
    W = "compile"
    depths = QUICK_DEPTHS if ctx.quick else DEPTHS
    systems = [("coursekit", lambda d: _ck_compile(ctx, d))]
    if ctx.systems.enabled("pytensor"):
        systems.append(("pytensor", _pt_compile))
    if ctx.systems.enabled("jax"):
        systems.append(("jax", _jax_compile))
    per_layer = {}
    for system, run in systems:
        if system != "coursekit" and not ctx.systems.available(system):
            continue
        if system == "coursekit" and not ctx.systems.enabled("coursekit"):
            continue
        stopped = None
        for depth in depths:
            what = f"compile train step, MLP of {depth} layers"
            if stopped:
                ctx.rows.append(Row(W, system, what, unit="s", status=f"not run: {stopped}"))
                continue
            if ctx.progress:
                ctx.progress(f"compile {system} {depth}")
            try:
                gc.collect()
                grad_s, compile_s = run(depth)
            except Exception as e:  # noqa: BLE001
                if os.environ.get("BENCH_DEBUG"):
                    traceback.print_exc()
                ctx.rows.append(Row(W, system, what, unit="s", status=f"not available: {_reason(e)}",
                                    target=_compile_target(system, depth)))
                continue
            note = f"{compile_s / depth * 1e3:.2f} ms per layer"
            if grad_s is not None:
                note += f"; T.grad took {grad_s * 1e3:.1f} ms" if system == "coursekit" else f"; grad took {grad_s * 1e3:.1f} ms"
            ctx.rows.append(Row(W, system, what, unit="s", best=compile_s, note=note,
                                target=_compile_target(system, depth)))
            per_layer[(system, depth)] = compile_s / depth
            if compile_s > GIVE_UP_AFTER_S:
                stopped = f"{depth} layers took {compile_s:.0f} s"
    lo, hi = min(depths[1:]), max(depths)
    for system, _ in systems:
        if (system, lo) in per_layer and (system, hi) in per_layer:
            growth = per_layer[(system, hi)] / per_layer[(system, lo)]
            ctx.rows.append(Row(W, system, f"time per layer at {hi} ÷ at {lo} layers", unit="ratio", best=growth,
                                note="1.0 is linear compile time",
                                target=Target("max", 1.5, "≤ 1.5 (flat)") if system == "coursekit" else None))


def _compile_target(system, depth):
    if system != "coursekit":
        return None
    return {100: Target("max", 0.5, "≤ 0.5 s"), 200: Target("max", 1.0, "≤ 1.0 s")}.get(depth)


# --------------------------------------------------------------------------------------------
# memory
# --------------------------------------------------------------------------------------------
def _chain(mod, x, n=CHAIN_OPS):
    """20 cheap elementwise ops (the same in every system): exp/mul/tanh/add in turn."""
    for i in range(n):
        k = i % 4
        x = mod.exp(x) if k == 0 else x * 0.5 if k == 1 else mod.tanh(x) if k == 2 else x + 1.0
    return x


def _peak_buffers(call, nbytes):
    """Peak traced memory during ``call()`` (after a warm-up call), in units of ``nbytes``."""
    call()
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = call()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    del result
    return peak / nbytes


def memory(ctx) -> None:
    Wl = "memory"
    n = 10**6 if ctx.quick else 10**7
    xv = np.random.RandomState(0).rand(n).astype(np.float32) * 0.1
    nbytes = xv.nbytes
    base_key = "numpy|20-op chain, hand-written"
    note = f"{n:,} float32 = {nbytes / 2**20:.0f} MiB per buffer; peak above the input, in buffers (result included)"
    ctx.rows.append(Row(Wl, "numpy", "20-op chain, hand-written", unit="buffers",
                        best=_peak_buffers(lambda: _chain(np, xv), nbytes), note=note))
    if ctx.systems.enabled("coursekit"):
        try:
            theano, T = ctx.coursekit()
            x = T.vector("x")
            unfused = theano.Mode("FAST_RUN", ("canonicalize", "stabilize", "specialize")).excluding("fusion")
            for label, mode, gc_flag, target in (
                    ("unfused, allow_gc=True", unfused, True, Target("max", 4.0, "≤ 3 intermediate buffers + result")),
                    ("unfused, allow_gc=False", unfused, False, None),
                    ("fused (FAST_RUN)", None, True, None)):
                with theano.config.change(allow_gc=gc_flag):
                    f = theano.function([x], _chain(T, x), mode=mode)
                ops = len(f.toposort())
                ctx.rows.append(Row(Wl, "coursekit", f"20-op chain, {label}", unit="buffers",
                                    best=_peak_buffers(lambda: f(xv), nbytes), target=target, base=base_key,
                                    note=f"{ops} nodes"))
        except Exception as e:  # noqa: BLE001
            if os.environ.get("BENCH_DEBUG"):
                traceback.print_exc()
            ctx.rows.append(Row(Wl, "coursekit", "20-op chain, unfused, allow_gc=True", unit="buffers",
                                status=f"not available: {_reason(e)}", target=Target("max", 4.0, "≤ 3 + result")))
    if ctx.systems.enabled("pytensor") and ctx.systems.available("pytensor"):
        try:
            import pytensor
            import pytensor.tensor as pt
            x = pt.vector("x", dtype="float32")
            mode = pytensor.compile.mode.Mode(linker="cvm", optimizer="fast_run").excluding("fusion")
            f = pytensor.function([x], _chain(pt, x), mode=mode)
            ctx.rows.append(Row(Wl, "pytensor", "20-op chain, unfused (C VM, allow_gc default)", unit="buffers",
                                best=_peak_buffers(lambda: f(xv), nbytes), base=base_key,
                                note=f"{len(f.maker.fgraph.apply_nodes)} nodes"))
        except Exception as e:  # noqa: BLE001
            ctx.rows.append(Row(Wl, "pytensor", "20-op chain, unfused", unit="buffers",
                                status=f"not available: {_reason(e)}"))
