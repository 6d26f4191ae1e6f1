"""The seed workloads, each timed for every available system side by side.

Each ``wN(ctx)`` appends :class:`_common.Row` objects to ``ctx.rows``. A system that is missing,
or a coursekit feature that is not there yet, becomes a row whose status says
``not available: <reason>``; nothing here is allowed to stop the run.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
import traceback
from typing import Any, Callable

import numpy as np

from _common import (REPO_ROOT, NotAvailable, Row, Target, time_calls, time_steps)


# --------------------------------------------------------------------------------------------
# Context: options, systems, devices
# --------------------------------------------------------------------------------------------
class Context:
    def __init__(self, *, quick: bool, device: str, systems, repeats: int | None, progress=None):
        self.quick = quick
        self.device_req = device          # what the user asked for: cpu | sim | gpu
        self.systems = systems
        self.repeats = repeats or (3 if quick else 5)
        self.rows: list[Row] = []
        self.notes: list[str] = []
        self.progress = progress
        self._gpu: dict | None = None

    # sizes ----------------------------------------------------------------------------------
    def calls(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    # devices --------------------------------------------------------------------------------
    def gpu(self) -> dict:
        """Facts about a real CUDA GPU, or ``{'real': False}``. Only probed with --device gpu."""
        if self._gpu is None:
            self._gpu = {"real": False}
            if self.device_req == "gpu":
                try:
                    import cupy  # noqa: F401  (only on the GPU path)
                    n = cupy.cuda.runtime.getDeviceCount()
                    if n > 0:
                        props = cupy.cuda.runtime.getDeviceProperties(0)
                        name = props["name"]
                        name = name.decode() if isinstance(name, bytes) else name
                        self._gpu = {"real": True, "name": name, "count": n,
                                     "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion()}
                except Exception as e:
                    self._gpu = {"real": False, "why": f"{type(e).__name__}: {e}".splitlines()[0]}
                if not self._gpu["real"]:
                    # No CuPy: a peer may still see the GPU (torch/jax with CUDA).
                    try:
                        import torch
                        if torch.cuda.is_available():
                            self._gpu = {"real": True, "name": torch.cuda.get_device_name(0),
                                         "count": torch.cuda.device_count(), "via": "torch"}
                    except Exception:
                        pass
        return self._gpu

    def gpu_label(self) -> str:
        g = self.gpu()
        return f"cuda:0 ({g.get('name', '?')})"

    # coursekit ------------------------------------------------------------------------------
    def coursekit(self):
        theano = self.systems.get("coursekit")
        try:
            import coursekit.tensor as T
        except Exception as e:
            raise NotAvailable(f"coursekit.tensor not importable ({type(e).__name__}: {e})") from None
        return theano, T

    def ck_device(self, theano=None, fn=None) -> str:
        """Where coursekit really ran: 'cpu', 'sim' (simulated GPU: these are CPU timings) or a
        real CUDA device. Never reports a GPU unless a real one did the work.

        A compiled function whose ops all say ``device == 'cpu'`` ran on the CPU, whatever the
        configured device (a graph with nothing to place stays on the host)."""
        if fn is not None:
            try:
                devs = {getattr(node.op, "device", None) for node in fn.maker.fgraph.toposort()}
            except Exception:
                devs = set()
            if devs and devs <= {"cpu", None} and devs != {None}:
                return "cpu"
        dev = None
        try:
            dev = str(theano.config.device) if theano is not None else None
        except Exception:
            pass
        if dev is None:
            dev = self.device_req
        if dev == "cpu":
            return "cpu"
        if dev == "sim":
            return "sim"
        # gpu / cuda: real only when coursekit itself says it is on a real device.
        real = _coursekit_reports_real_gpu(theano)
        if real is None:  # coursekit does not say: trust a visible GPU only if CuPy is loaded
            real = self.gpu()["real"] and "cupy" in sys.modules
        return self.gpu_label() if real else "sim"

    def ck_sync(self) -> Callable[[], Any] | None:
        """coursekit's own device synchronisation (falls back to CuPy's) on a real GPU."""
        if not self.gpu()["real"]:
            return None
        try:
            import coursekit.devices as ckd
            if callable(getattr(ckd, "synchronize", None)):
                return ckd.synchronize
        except Exception:
            pass
        if "cupy" in sys.modules:
            import cupy
            return lambda: cupy.cuda.Device().synchronize()
        return None

    # peers ----------------------------------------------------------------------------------
    def torch_dev(self):
        torch = self.systems.get("torch")
        if self.device_req == "gpu" and torch.cuda.is_available():
            return torch, torch.device("cuda"), f"cuda:0 ({torch.cuda.get_device_name(0)})", torch.cuda.synchronize
        return torch, torch.device("cpu"), "cpu", None

    def jax_dev(self):
        jax = self.systems.get("jax")
        if self.device_req == "gpu":
            try:
                gpus = jax.devices("gpu")
            except Exception:
                gpus = []
            if gpus:
                return jax, gpus[0], f"cuda:0 ({getattr(gpus[0], 'device_kind', 'gpu')})"
        return jax, jax.devices("cpu")[0], "cpu"

    def cupy(self):
        if self.device_req != "gpu":
            raise NotAvailable("CuPy runs only with --device gpu")
        cp = self.systems.get("cupy")
        if not self.gpu()["real"]:
            raise NotAvailable("no CUDA GPU visible")
        return cp, self.gpu_label(), (lambda: cp.cuda.Device().synchronize())


def _coursekit_reports_real_gpu(theano) -> bool | None:
    """Ask coursekit whether its current device is a real GPU, through whichever of a few
    plausible spellings it offers; ``None`` when it offers none."""
    if theano is None:
        return None
    for path in ("devices.current", "devices.current_device", "devices.get_device", "config.device_info"):
        obj = theano
        try:
            for part in path.split("."):
                obj = getattr(obj, part)
            dev = obj() if callable(obj) else obj
        except Exception:
            continue
        for attr in ("simulated", "is_simulated"):
            if hasattr(dev, attr):
                return not bool(getattr(dev, attr))
        for attr in ("real", "is_real", "is_gpu_real"):
            if hasattr(dev, attr):
                return bool(getattr(dev, attr))
        kind = getattr(dev, "kind", None) or getattr(dev, "name", None)
        if isinstance(kind, str):
            if kind.startswith("sim"):
                return False
            if kind == "cpu":
                return False
            if kind.startswith(("cuda", "gpu")):
                return True
    return None


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------
def to_numpy(v) -> np.ndarray:
    if isinstance(v, (list, tuple)) and len(v) == 1:
        v = v[0]
    if isinstance(v, np.ndarray):
        return v
    if hasattr(v, "detach"):                 # torch
        return v.detach().cpu().numpy()
    if hasattr(v, "get") and callable(v.get) and not isinstance(v, dict):  # cupy, coursekit SimArray
        try:
            return np.asarray(v.get())
        except TypeError:
            pass
    return np.asarray(v)


def close_to(ref, rtol=1e-5, atol=1e-6):
    def check(out):
        got = to_numpy(out)
        if got.shape != np.shape(ref) and got.size != np.size(ref):
            return f"shape {got.shape} != {np.shape(ref)}"
        got = got.reshape(np.shape(ref))
        if not np.allclose(got, ref, rtol=rtol, atol=atol):
            err = float(np.max(np.abs(got.astype(np.float64) - ref)))
            return f"max abs error {err:.3g}"
        return None
    return check


def op_names(fn) -> list[str]:
    try:
        nodes = fn.maker.fgraph.toposort()
    except Exception:
        return []
    return [type(n.op).__name__ for n in nodes]


def _reason(e: BaseException) -> str:
    if isinstance(e, NotAvailable):
        return str(e)
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0][:200] if msg else ''}".rstrip(": ")


def measure(ctx: Context, workload: str, system: str, what: str, build: Callable[[Row], Callable],
            *, n: int, base: str | None = None, target: Target | None = None, device: str = "cpu",
            check=None, sync=None, note: str = "", pair: Callable[[], Any] | None = None) -> Row:
    """Build (compile) a callable, time it, check its first result; never raises.

    ``pair``: the baseline's callable, timed in loops alternating with this one; the row's ratio
    (and so its verdict) then uses that paired baseline time."""
    row = Row(workload, system, what, device=device, base=base, target=target, note=note)
    if ctx.progress:
        ctx.progress(f"{workload} {system}")
    try:
        t0 = time.perf_counter()
        fn = build(row)
        row.extra.setdefault("build_s", time.perf_counter() - t0)
        timing, first = time_calls(fn, n, ctx.repeats, sync=sync, pair=pair)
        row.best, row.median, row.n, row.repeats = timing.best, timing.median, timing.n, timing.repeats
        if timing.pair is not None:
            row.extra["paired_base_best"] = timing.pair.best
            row.extra["paired_base_median"] = timing.pair.median
        row.first_call = timing.first_call
        if check is not None:
            bad = check(first)
            if bad:
                row.status = f"wrong result: {bad}"
    except Exception as e:  # noqa: BLE001  -- a row, never a crash
        row.status = f"not available: {_reason(e)}"
        if os.environ.get("BENCH_DEBUG"):
            traceback.print_exc()
    ctx.rows.append(row)
    return row


def skipped(ctx: Context, workload: str, system: str, what: str, why: str, target=None, base=None) -> Row:
    row = Row(workload, system, what, status=f"not run: {why}", target=None, base=base,
              note=("target " + target.text) if target else "")
    ctx.rows.append(row)
    return row


def pytensor_modes(ctx: Context):
    """PyTensor's default mode (Numba linker in PyTensor 3) and its C VM linker, the one that
    descends from Theano's. Returns [(label, mode or None for the default)]."""
    if not peer_enabled(ctx, "pytensor"):
        return []
    import pytensor
    modes = [(f"[{_pt_default_linker()}]", None)]
    if pytensor.config.cxx:
        note = ("PyTensor [C]: no BLAS to link (config.blas__ldflags is empty), so its C Gemm/Gemv use "
                "PyTensor's fallback")
        try:
            if not pytensor.config.blas__ldflags and note not in ctx.notes:
                ctx.notes.append(note)
        except Exception:
            pass
        try:
            modes.append(("[C]", pytensor.compile.mode.Mode(linker="cvm", optimizer="fast_run")))
        except Exception as e:  # noqa: BLE001
            ctx.notes.append(f"PyTensor C linker unavailable: {_reason(e)}")
    return modes


@functools.lru_cache(maxsize=None)
def _pt_default_linker() -> str:
    import pytensor
    import pytensor.tensor as pt
    try:
        f = pytensor.function([], pt.constant(1.0) + 1)
        name = type(f.maker.linker).__name__.replace("Linker", "")
        return {"VM": "C", "CVM": "C"}.get(name, name.lower())
    except Exception:
        return "default"


def peer_enabled(ctx: Context, name: str) -> bool:
    """A peer is used when selected and importable; otherwise its absence is noted once."""
    return ctx.systems.enabled(name) and ctx.systems.available(name)


# --------------------------------------------------------------------------------------------
# W1: exp of a shared float32 vector (the tutorial's first GPU example)
# --------------------------------------------------------------------------------------------
VLEN = 10 * 30 * 768   # 10 x #cores x #threads per core = 230400


def w1(ctx: Context) -> None:
    W = "W1"
    n = ctx.calls(1000, 200)
    rng = np.random.RandomState(22)
    xv = np.asarray(rng.rand(VLEN), dtype=np.float32)
    ref = np.exp(xv)
    A, B = "numpy|np.exp(x)", "numpy|np.exp(x, out=buf)"
    chk = close_to(ref)

    measure(ctx, W, "numpy", "np.exp(x)", lambda row: (lambda: np.exp(xv)), n=n, check=chk,
            base=A)
    buf = np.empty_like(xv)
    measure(ctx, W, "numpy", "np.exp(x, out=buf)", lambda row: (lambda: np.exp(xv, out=buf)), n=n,
            check=chk, base=A)

    if ctx.systems.enabled("coursekit"):
        def ck_build(kind):
            def build(row):
                theano, T = ctx.coursekit()
                x = theano.shared(xv, name="x")
                out = T.exp(x)
                if kind == "device":
                    out = theano.gpu_from_host(out)
                elif kind == "borrow":
                    out = theano.Out(out, borrow=True)
                t0 = time.perf_counter()
                f = theano.function([], out)
                row.extra["compile_s"] = time.perf_counter() - t0
                row.extra["ops"] = op_names(f)
                row.device = ctx.ck_device(theano, f)
                if kind == "borrow":
                    a = f()
                    b = f()
                    reuses = bool(np.shares_memory(to_numpy(a), to_numpy(b)))
                    row.extra["borrow_reuses_buffer"] = reuses
                    row.note = "output buffer reused across calls" if reuses else "NOTE: output NOT reused"
                return f
            return build

        sync = ctx.ck_sync()
        buf2 = np.empty_like(xv)
        measure(ctx, W, "coursekit", "function([], exp(x))", ck_build("plain"), n=n, check=chk, base=A,
                sync=sync, pair=lambda: np.exp(xv), target=Target("ratio", 1.10, "≤ 1.10× np.exp(x)"))
        if ctx.device_req in ("gpu", "sim"):
            measure(ctx, W, "coursekit", "function([], gpu_from_host(exp(x)))", ck_build("device"), n=n,
                    check=chk, base=A, sync=sync,
                    note="result stays on the device (a handle); no copy back")
        else:
            skipped(ctx, W, "coursekit", "function([], gpu_from_host(exp(x)))",
                    "device handle needs --device gpu or sim", base=A)
        measure(ctx, W, "coursekit", "function([], Out(exp(x), borrow=True))", ck_build("borrow"), n=n,
                check=chk, base=B, sync=sync, pair=lambda: np.exp(xv, out=buf2), target=Target("ratio", 1.10, "≤ 1.10× np.exp(x, out=buf)"))

    for ml, mode in pytensor_modes(ctx):
        def pt_build(borrow, mode=mode):
            def build(row):
                import pytensor
                import pytensor.tensor as pt
                x = pytensor.shared(xv, name="x")
                out = pytensor.Out(pt.exp(x), borrow=True) if borrow else pt.exp(x)
                t0 = time.perf_counter()
                f = pytensor.function([], out, mode=mode)
                row.extra["compile_s"] = time.perf_counter() - t0
                row.extra["ops"] = op_names(f)
                return f
            return build
        measure(ctx, W, "pytensor", f"{ml} function([], exp(x))", pt_build(False), n=n, check=chk, base=A)
        measure(ctx, W, "pytensor", f"{ml} function([], Out(exp(x), borrow=True))", pt_build(True), n=n,
                check=chk, base=B)

    if peer_enabled(ctx, "jax"):
        def build(row):
            jax, dev, label = ctx.jax_dev()
            import jax.numpy as jnp
            row.device = label
            xj = jax.device_put(xv, dev)
            f = jax.jit(jnp.exp)
            return lambda: f(xj).block_until_ready()
        measure(ctx, W, "jax", "jit(jnp.exp)(x).block_until_ready()", build, n=n, check=chk, base=A,
                note="result is a JAX array on its device")

    if peer_enabled(ctx, "torch"):
        torch, tdev, tlabel, tsync = ctx.torch_dev()
        xt = torch.from_numpy(xv).to(tdev)
        bt = torch.empty_like(xt)

        def t_plain(row):
            return lambda: torch.exp(xt)

        def t_out(row):
            return lambda: torch.exp(xt, out=bt)
        measure(ctx, W, "torch", "torch.exp(x)", t_plain, n=n, check=chk, base=A, device=tlabel, sync=tsync)
        measure(ctx, W, "torch", "torch.exp(x, out=buf)", t_out, n=n, check=chk, base=B, device=tlabel,
                sync=tsync)

    if ctx.device_req == "gpu" and peer_enabled(ctx, "cupy"):
        try:
            cp, label, csync = ctx.cupy()
        except NotAvailable as e:
            ctx.notes.append(f"CuPy: {e}")
        else:
            xc = cp.asarray(xv)
            measure(ctx, W, "cupy", "cupy.exp(x) (device result)", lambda row: (lambda: cp.exp(xc)), n=n,
                    check=chk, base=A, device=label, sync=csync)
            measure(ctx, W, "cupy", "cupy.exp(x).get() (host result)", lambda row: (lambda: cp.exp(xc).get()),
                    n=n, check=chk, base=A, device=label, sync=csync)


# --------------------------------------------------------------------------------------------
# W2: per-call overhead of a tiny graph a + b
# --------------------------------------------------------------------------------------------
def w2(ctx: Context) -> None:
    W = "W2"
    n = ctx.calls(20000, 4000)
    rng = np.random.RandomState(2)
    cases = [
        ("float32 scalars", np.float32(1.5), np.float32(2.25)),
        ("10-element float32 vectors", rng.rand(10).astype(np.float32), rng.rand(10).astype(np.float32)),
    ]
    for label, av, bv in cases:
        ref = np.add(av, bv)
        chk = close_to(np.asarray(ref))
        A = f"numpy|np.add(a, b) — {label}"
        measure(ctx, W, "numpy", f"np.add(a, b) — {label}", lambda row: (lambda: np.add(av, bv)), n=n,
                check=chk, base=A)
        scalar = np.ndim(av) == 0

        if ctx.systems.enabled("coursekit"):
            def build(row):
                theano, T = ctx.coursekit()
                a, b = (T.fscalar("a"), T.fscalar("b")) if scalar else (T.fvector("a"), T.fvector("b"))
                t0 = time.perf_counter()
                f = theano.function([a, b], a + b)
                row.extra["compile_s"] = time.perf_counter() - t0
                row.extra["ops"] = op_names(f)
                row.device = ctx.ck_device(theano, f)
                return lambda: f(av, bv)
            measure(ctx, W, "coursekit", f"function([a, b], a + b) — {label}", build, n=n, check=chk, base=A,
                    sync=ctx.ck_sync(), target=Target("max", 1.3e-6, "≤ 1.3 µs/call") if scalar
                    else Target("max", 2e-6, "≤ 2 µs/call"))

        for ml, mode in pytensor_modes(ctx):
            def pt_build(trust, mode=mode):
                def build(row):
                    import pytensor
                    import pytensor.tensor as pt
                    a, b = (pt.fscalar("a"), pt.fscalar("b")) if scalar else (pt.fvector("a"), pt.fvector("b"))
                    f = pytensor.function([a, b], a + b, mode=mode)
                    if not trust:
                        return lambda: f(av, bv)
                    f.trust_input = True
                    a0, b0 = np.asarray(av), np.asarray(bv)   # trusted inputs must be exact ndarrays
                    return lambda: f(a0, b0)
                return build
            measure(ctx, W, "pytensor", f"{ml} function([a, b], a + b) — {label}", pt_build(False), n=n,
                    check=chk, base=A)
            measure(ctx, W, "pytensor", f"{ml} same, f.trust_input=True — {label}", pt_build(True), n=n,
                    check=chk, base=A, note="skips input validation")

        if peer_enabled(ctx, "jax"):
            def build(row):
                jax, dev, dlabel = ctx.jax_dev()
                row.device = dlabel
                aj, bj = jax.device_put(av, dev), jax.device_put(bv, dev)
                f = jax.jit(lambda a, b: a + b)
                return lambda: f(aj, bj).block_until_ready()
            measure(ctx, W, "jax", f"jit(a + b)(a, b).block_until_ready() — {label}", build, n=n, check=chk,
                    base=A)

        if peer_enabled(ctx, "torch"):
            def build(row):
                torch, tdev, tlabel, tsync = ctx.torch_dev()
                row.device = tlabel
                at = torch.as_tensor(np.asarray(av)).to(tdev)
                bt = torch.as_tensor(np.asarray(bv)).to(tdev)
                if tsync is None:
                    return lambda: torch.add(at, bt)

                def call():
                    r = torch.add(at, bt)
                    tsync()
                    return r
                return call
            measure(ctx, W, "torch", f"torch.add(a, b) — {label}", build, n=n, check=chk, base=A)

        if ctx.device_req == "gpu" and peer_enabled(ctx, "cupy"):
            def build(row):
                cp, dlabel, csync = ctx.cupy()
                row.device = dlabel
                ac, bc = cp.asarray(av), cp.asarray(bv)

                def call():
                    r = cp.add(ac, bc)
                    csync()
                    return r
                return call
            measure(ctx, W, "cupy", f"cupy.add(a, b) + sync — {label}", build, n=n, check=chk, base=A)


# --------------------------------------------------------------------------------------------
# W3: the tutorial's logistic regression (N=400, feats=784)
# --------------------------------------------------------------------------------------------
N_EX, FEATS, LR = 400, 784, 0.1


def w3_data():
    rng = np.random.RandomState(1234)
    D = (rng.randn(N_EX, FEATS).astype(np.float32), rng.randint(size=N_EX, low=0, high=2).astype(np.float32))
    w0 = rng.randn(FEATS).astype(np.float32)
    b0 = np.float32(0.0)
    return D, w0, b0


def _softplus(z):
    return np.logaddexp(np.zeros((), z.dtype), z)


def numpy_trainer(D, w0, b0, dtype=np.float32):
    """Hand-written NumPy training step with manual gradients (the baseline).

    d(mean xent)/dz = (p - y) / N exactly; xent is computed in its stable form
    softplus(z) - y*z (the same value as -y log p - (1-y) log(1-p), without log(0))."""
    x = D[0].astype(dtype)
    y = D[1].astype(dtype)
    st = {"w": w0.astype(dtype).copy(), "b": dtype(b0)}
    n = dtype(x.shape[0])
    xT = x.T

    def step():
        w, b = st["w"], st["b"]
        z = x @ w + b
        p = 1 / (1 + np.exp(-z))             # exp(-z) may overflow to inf: p is then exactly 0
        pred = p > 0.5
        xent = _softplus(z) - y * z
        dz = (p - y) / n
        gw = xT @ dz + dtype(0.02) * w
        gb = dz.sum()
        st["w"] = w - dtype(LR) * gw
        st["b"] = b - dtype(LR) * gb
        return pred, xent
    return step, st


def rel_error(w, b, w_ref, b_ref) -> float:
    got = np.concatenate([np.ravel(np.asarray(w, np.float64)), np.ravel(np.asarray(b, np.float64))])
    ref = np.concatenate([np.ravel(np.asarray(w_ref, np.float64)), np.ravel(np.asarray(b_ref, np.float64))])
    if not np.all(np.isfinite(got)):
        return float("nan")
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def w3(ctx: Context) -> None:
    W = "W3"
    steps = ctx.calls(1000, 100)
    chunks = ctx.repeats * 2
    D, w0, b0 = w3_data()
    A = "numpy|train step (manual gradients)"
    err_target = Target("max", 1e-4, "≤ 1e-4 and finite")

    # Reference weights: float32 NumPy, and a float64 calibration of how far float32 itself drifts.
    ref_step, ref_state = numpy_trainer(D, w0, b0, np.float32)
    with np.errstate(over="ignore"):
        t = time_steps(ref_step, steps, chunks)
    ctx.rows.append(Row(W, "numpy", "train step (manual gradients)", unit="s/step", best=t.best,
                        median=t.median, n=t.n, repeats=t.repeats, first_call=t.first_call, base=A,
                        note=f"{steps} steps, float32"))
    w_ref, b_ref = ref_state["w"], ref_state["b"]
    s64, st64 = numpy_trainer(D, w0, b0, np.float64)
    with np.errstate(over="ignore"):
        for _ in range(steps):
            s64()
    ctx.rows.append(Row(W, "numpy", "final weights: float32 vs float64 NumPy", unit="rel. error",
                        best=rel_error(w_ref, b_ref, st64["w"], st64["b"]),
                        note="calibration: how far float32 rounding alone drifts"))

    def record(system, t, compile_s, get_wb, device, *, targets: bool, note="", extra=None, what_prefix=""):
        r = Row(W, system, what_prefix + "train step", device=device, unit="s/step", best=t.best, median=t.median,
                n=t.n, repeats=t.repeats, first_call=t.first_call, base=A, note=note,
                target=Target("ratio", 1.0, "≤ 1.0× NumPy") if targets else None)
        r.extra.update(extra or {})
        ctx.rows.append(r)
        if compile_s is not None:
            ctx.rows.append(Row(W, system, what_prefix + "compile train function", device=device, unit="s",
                                best=compile_s, target=Target("max", 0.1, "≤ 0.1 s") if targets else None))
        what = what_prefix + "final weights vs NumPy"
        try:
            w, b = get_wb()
            err = rel_error(w, b, w_ref, b_ref)
        except Exception as e:  # noqa: BLE001  -- reading the weights back failed
            if os.environ.get("BENCH_DEBUG"):
                traceback.print_exc()
            ctx.rows.append(Row(W, system, what, unit="rel. error", target=err_target if targets else None,
                                status=f"not available: reading weights back: {_reason(e)}"))
            return
        ctx.rows.append(Row(W, system, what, device=device, unit="rel. error", best=err,
                            target=err_target if targets else None,
                            status="ok" if np.isfinite(err) else "wrong result: non-finite weights"))

    def fail(system, e, targets, what_prefix=""):
        reason = _reason(e)
        if os.environ.get("BENCH_DEBUG"):
            traceback.print_exc()
        for what, unit, tg in (("train step", "s/step", Target("ratio", 1.0, "≤ 1.0× NumPy")),
                               ("compile train function", "s", Target("max", 0.1, "≤ 0.1 s")),
                               ("final weights vs NumPy", "rel. error", err_target)):
            ctx.rows.append(Row(W, system, what_prefix + what, unit=unit, base=A if unit == "s/step" else None,
                                status=f"not available: {reason}", target=tg if targets else None))

    # coursekit -------------------------------------------------------------------------------
    if ctx.systems.enabled("coursekit"):
        if ctx.progress:
            ctx.progress("W3 coursekit")
        try:
            theano, T = ctx.coursekit()
            x = T.matrix("x")
            y = T.vector("y")
            w = theano.shared(w0.copy(), name="w")
            b = theano.shared(np.asarray(b0, dtype=np.float32), name="b")
            p_1 = 1 / (1 + T.exp(-T.dot(x, w) - b))
            prediction = p_1 > 0.5
            xent = -y * T.log(p_1) - (1 - y) * T.log(1 - p_1)
            cost = xent.mean() + 0.01 * (w ** 2).sum()
            t0 = time.perf_counter()
            gw, gb = T.grad(cost, [w, b])
            grad_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            train = theano.function(inputs=[x, y], outputs=[prediction, xent],
                                    updates=[(w, w - LR * gw), (b, b - LR * gb)], name="train")
            compile_s = time.perf_counter() - t0
            ops = op_names(train)
            used = ("gpu" if any(o in ("GpuGemm", "GpuGemv") for o in ops) else
                    "cpu" if any(o in ("Gemv", "CGemv", "Gemm", "CGemm") for o in ops) else "neither")
            device = ctx.ck_device(theano, train)
            pair_step, _ = numpy_trainer(D, w0, b0, np.float32)   # a second NumPy run, timed in alternation
            with np.errstate(over="ignore"):
                tt = time_steps(lambda: train(D[0], D[1]), steps, chunks, sync=ctx.ck_sync(), pair=pair_step)
            record("coursekit", tt, compile_s, lambda: (w.get_value(), b.get_value()), device, targets=True,
                   note=f"tutorial check says: used the {used}; T.grad took {grad_s * 1e3:.1f} ms",
                   extra={"ops": ops, "grad_s": grad_s, "paired_base_best": tt.pair.best,
                          "paired_base_median": tt.pair.median})
        except Exception as e:  # noqa: BLE001
            fail("coursekit", e, True)

    # PyTensor ----------------------------------------------------------------------------------
    for ml, mode in pytensor_modes(ctx):
        if ctx.progress:
            ctx.progress(f"W3 pytensor {ml}")
        try:
            import pytensor
            import pytensor.tensor as pt
            x = pt.matrix("x", dtype="float32")
            y = pt.vector("y", dtype="float32")
            w = pytensor.shared(w0.copy(), name="w")
            b = pytensor.shared(np.asarray(b0, dtype=np.float32), name="b")
            p_1 = 1 / (1 + pt.exp(-pt.dot(x, w) - b))
            prediction = p_1 > 0.5
            xent = -y * pt.log(p_1) - (1 - y) * pt.log(1 - p_1)
            cost = xent.mean() + np.float32(0.01) * (w ** 2).sum()
            gw, gb = pytensor.grad(cost, [w, b])
            t0 = time.perf_counter()
            train = pytensor.function(inputs=[x, y], outputs=[prediction, xent], mode=mode,
                                      updates=[(w, w - np.float32(LR) * gw), (b, b - np.float32(LR) * gb)])
            compile_s = time.perf_counter() - t0
            tt = time_steps(lambda: train(D[0], D[1]), steps, chunks)
            record("pytensor", tt, compile_s, lambda: (w.get_value(), b.get_value()), "cpu", targets=False,
                   what_prefix=f"{ml} ",
                   note="same graph; compile time includes its C/Numba compilation (cached across runs)")
        except Exception as e:  # noqa: BLE001
            fail("pytensor", e, False, what_prefix=f"{ml} ")

    # JAX -----------------------------------------------------------------------------------------
    if peer_enabled(ctx, "jax"):
        if ctx.progress:
            ctx.progress("W3 jax")
        try:
            jax, dev, label = ctx.jax_dev()

            def loss(w, b, x, y):
                z = x @ w + b
                # -log p = softplus(-z), -log(1-p) = softplus(z): the stable form of the same cost
                xent = y * jax.nn.softplus(-z) + (1 - y) * jax.nn.softplus(z)
                return xent.mean() + 0.01 * (w ** 2).sum(), (jax.nn.sigmoid(z) > 0.5, xent)

            @jax.jit
            def step(w, b, x, y):
                (_, (pred, xent)), (gw, gb) = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(w, b, x, y)
                return w - LR * gw, b - LR * gb, pred, xent

            xj, yj = jax.device_put(D[0], dev), jax.device_put(D[1], dev)
            st = {"w": jax.device_put(w0.copy(), dev), "b": jax.device_put(np.float32(b0), dev)}

            def one():
                st["w"], st["b"], pred, xe = step(st["w"], st["b"], xj, yj)
                st["w"].block_until_ready()
            t0 = time.perf_counter()
            step.lower(st["w"], st["b"], xj, yj).compile()
            compile_s = time.perf_counter() - t0
            tt = time_steps(one, steps, chunks)
            record("jax", tt, compile_s, lambda: (np.asarray(st["w"]), np.asarray(st["b"])), label, targets=False,
                   note="jit(value_and_grad), stable softplus form of the same cost")
        except Exception as e:  # noqa: BLE001
            fail("jax", e, False)

    # PyTorch -------------------------------------------------------------------------------------
    if peer_enabled(ctx, "torch"):
        if ctx.progress:
            ctx.progress("W3 torch")
        try:
            torch, tdev, tlabel, tsync = ctx.torch_dev()
            F = torch.nn.functional
            xt = torch.from_numpy(D[0]).to(tdev)
            yt = torch.from_numpy(D[1]).to(tdev)
            wt = torch.from_numpy(w0.copy()).to(tdev).requires_grad_(True)
            bt = torch.zeros((), dtype=torch.float32, device=tdev, requires_grad=True)

            def one():
                z = xt @ wt + bt
                xent = yt * F.softplus(-z) + (1 - yt) * F.softplus(z)
                cost = xent.mean() + 0.01 * (wt ** 2).sum()
                cost.backward()
                with torch.no_grad():
                    wt.sub_(LR * wt.grad)
                    bt.sub_(LR * bt.grad)
                    wt.grad = None
                    bt.grad = None
                    pred = torch.sigmoid(z) > 0.5
                return pred, xent
            tt = time_steps(one, steps, chunks, sync=tsync)
            record("torch", tt, None, lambda: (wt.detach().cpu().numpy(), bt.detach().cpu().numpy()), tlabel,
                   targets=False, note="eager autograd (no compile step), stable softplus form")
        except Exception as e:  # noqa: BLE001
            fail("torch", e, False)


# --------------------------------------------------------------------------------------------
# W4: matpalm's y = dot(m, x) + b, inputs passed vs shared
# --------------------------------------------------------------------------------------------
def w4(ctx: Context) -> None:
    W = "W4"
    n = ctx.calls(1000, 200)
    rng = np.random.RandomState(4)
    M = rng.rand(1000, 1000).astype(np.float32)
    X = rng.rand(1000, 1).astype(np.float32)
    Bv = rng.rand(1000, 1).astype(np.float32)
    ref = (M.astype(np.float64) @ X + Bv).astype(np.float32)
    chk = close_to(ref, rtol=1e-4, atol=1e-3)
    A = "numpy|np.dot(m, x) + b"
    measure(ctx, W, "numpy", "np.dot(m, x) + b", lambda row: (lambda: np.dot(M, X) + Bv), n=n, check=chk, base=A,
            note="m 1000×1000, x 1000×1, b 1000×1, float32")

    if ctx.systems.enabled("coursekit"):
        def build_inputs(row):
            theano, T = ctx.coursekit()
            m, x, b = T.fmatrix("m"), T.fmatrix("x"), T.fmatrix("b")
            t0 = time.perf_counter()
            f = theano.function([m, x, b], T.dot(m, x) + b)
            row.extra["compile_s"] = time.perf_counter() - t0
            row.extra["ops"] = op_names(f)
            row.device = ctx.ck_device(theano, f)
            return lambda: f(M, X, Bv)

        def build_shared(row):
            theano, T = ctx.coursekit()
            m, x, b = theano.shared(M, name="m"), theano.shared(X, name="x"), theano.shared(Bv, name="b")
            t0 = time.perf_counter()
            f = theano.function([], T.dot(m, x) + b)
            row.extra["compile_s"] = time.perf_counter() - t0
            row.extra["ops"] = op_names(f)
            row.note = "ops: " + ", ".join(row.extra["ops"])
            row.device = ctx.ck_device(theano, f)
            return f
        sync = ctx.ck_sync()
        measure(ctx, W, "coursekit", "(a) function([m, x, b], dot(m, x) + b)", build_inputs, n=n, check=chk,
                base=A, sync=sync, pair=lambda: np.dot(M, X) + Bv)
        measure(ctx, W, "coursekit", "(b) m, x, b shared", build_shared, n=n, check=chk, base=A, sync=sync,
                pair=lambda: np.dot(M, X) + Bv,
                target=Target("ratio_median", 0.97, "median ≤ 0.97× NumPy"))

    for ml, mode in pytensor_modes(ctx):
        def pt_inputs(row, mode=mode):
            import pytensor
            import pytensor.tensor as pt
            m, x, b = pt.fmatrix("m"), pt.fmatrix("x"), pt.fmatrix("b")
            f = pytensor.function([m, x, b], pt.dot(m, x) + b, mode=mode)
            row.extra["ops"] = op_names(f)
            return lambda: f(M, X, Bv)

        def pt_shared(row, mode=mode):
            import pytensor
            import pytensor.tensor as pt
            m, x, b = pytensor.shared(M), pytensor.shared(X), pytensor.shared(Bv)
            f = pytensor.function([], pt.dot(m, x) + b, mode=mode)
            row.extra["ops"] = op_names(f)
            row.note = "ops: " + ", ".join(row.extra["ops"])
            return f
        measure(ctx, W, "pytensor", f"{ml} (a) function([m, x, b], dot(m, x) + b)", pt_inputs, n=n, check=chk,
                base=A)
        measure(ctx, W, "pytensor", f"{ml} (b) m, x, b shared", pt_shared, n=n, check=chk, base=A)

    if peer_enabled(ctx, "jax"):
        def jx(kind):
            def build(row):
                jax, dev, label = ctx.jax_dev()
                row.device = label
                f = jax.jit(lambda m, x, b: m @ x + b)
                if kind == "a":
                    return lambda: f(M, X, Bv).block_until_ready()
                mj, xj, bj = (jax.device_put(v, dev) for v in (M, X, Bv))
                return lambda: f(mj, xj, bj).block_until_ready()
            return build
        measure(ctx, W, "jax", "(a) jit(m @ x + b)(numpy arrays)", jx("a"), n=n, check=chk, base=A)
        measure(ctx, W, "jax", "(b) jit(m @ x + b)(device arrays)", jx("b"), n=n, check=chk, base=A)

    if peer_enabled(ctx, "torch"):
        torch, tdev, tlabel, tsync = ctx.torch_dev()

        def t_inputs(row):
            def call():
                m, x, b = (torch.from_numpy(v).to(tdev) for v in (M, X, Bv))
                return (m @ x + b).cpu().numpy()
            return call

        def t_shared(row):
            m, x, b = (torch.from_numpy(v).to(tdev) for v in (M, X, Bv))
            return lambda: torch.addmm(b, m, x)
        measure(ctx, W, "torch", "(a) from_numpy → m @ x + b → numpy", t_inputs, n=n, check=chk, base=A,
                device=tlabel, sync=tsync)
        measure(ctx, W, "torch", "(b) torch.addmm(b, m, x), tensors kept", t_shared, n=n, check=chk, base=A,
                device=tlabel, sync=tsync)

    if ctx.device_req == "gpu" and peer_enabled(ctx, "cupy"):
        try:
            cp, label, csync = ctx.cupy()
        except NotAvailable as e:
            ctx.notes.append(f"CuPy: {e}")
        else:
            def c_inputs(row):
                return lambda: (cp.asarray(M) @ cp.asarray(X) + cp.asarray(Bv)).get()

            def c_shared(row):
                mc, xc, bc = cp.asarray(M), cp.asarray(X), cp.asarray(Bv)
                return lambda: mc @ xc + bc
            measure(ctx, W, "cupy", "(a) asarray → m @ x + b → get()", c_inputs, n=n, check=chk, base=A,
                    device=label, sync=csync)
            measure(ctx, W, "cupy", "(b) m @ x + b on device arrays", c_shared, n=n, check=chk, base=A,
                    device=label, sync=csync)


# --------------------------------------------------------------------------------------------
# Import time
# --------------------------------------------------------------------------------------------
def _wall(cmd: list[str], env: dict, k: int) -> float:
    best = float("inf")
    for _ in range(k):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
        dt = time.perf_counter() - t0
        if r.returncode != 0:
            raise RuntimeError((r.stderr.strip().splitlines() or ["failed"])[-1])
        best = min(best, dt)
    return best


def import_time(ctx: Context) -> None:
    W = "import"
    if ctx.progress:
        ctx.progress("import")
    env = dict(os.environ)
    env.pop("COURSEKIT_FLAGS", None)          # a student's plain `import coursekit`
    env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    py = sys.executable
    k = 5
    A = "python|python -c 'import numpy'"
    # Interleaved: one round = pass, numpy, coursekit; best of k rounds each, so a busy machine slows
    # all three alike (Python's own start-up is shown and subtracted for scale).
    codes = [("python", "python -c 'pass'", "pass"), ("python", "python -c 'import numpy'", "import numpy")]
    if ctx.systems.enabled("coursekit"):
        codes.append(("coursekit", "python -c 'import coursekit'", "import coursekit"))
    best = {what: float("inf") for _, what, _ in codes}
    failed = {}
    for _ in range(k):
        for system, what, code in codes:
            if what in failed:
                continue
            try:
                best[what] = min(best[what], _wall([py, "-c", code], env, 1))
            except Exception as e:  # noqa: BLE001
                failed[what] = _reason(e)
    for system, what, code in codes:
        target = Target("max", 0.3, "≤ 0.3 s") if system == "coursekit" else None
        if what in failed:
            ctx.rows.append(Row(W, system, what, unit="s", status=f"not available: {failed[what]}", target=target))
            continue
        note = "best of 5, whole subprocess" if system == "coursekit" else "best of 5, for scale"
        ctx.rows.append(Row(W, system, what, unit="s", best=best[what], base=A, note=note, target=target))
    if not ctx.systems.enabled("coursekit") or "python -c 'import coursekit'" in failed:
        return
    ctx.rows.append(Row(W, "coursekit", "import coursekit minus python -c 'pass'", unit="s",
                        best=best["python -c 'import coursekit'"] - best["python -c 'pass'"],
                        note="what the import itself adds, NumPy included"))
    probe = ("import sys, time; t = time.perf_counter(); import coursekit; dt = time.perf_counter() - t; "
             "print(dt); print('cupy' in sys.modules)")
    try:
        runs = []
        for _ in range(3):
            r = subprocess.run([py, "-c", probe], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                               timeout=120)
            dt, cupy_loaded = r.stdout.split()
            runs.append(float(dt))
        ctx.rows.append(Row(W, "coursekit", "import coursekit (in-process, after Python start)", unit="s",
                            best=min(runs), note="best of 3; includes importing NumPy"))
        ctx.rows.append(Row(W, "coursekit", "cupy not in sys.modules after import", unit="bool",
                            best=cupy_loaded == "False", target=Target("true", None, "cupy not imported"),
                            note="GPU libraries load lazily"))
    except Exception as e:  # noqa: BLE001
        ctx.rows.append(Row(W, "coursekit", "cupy not in sys.modules after import", unit="bool",
                            status=f"not available: {_reason(e)}", target=Target("true", None, "cupy not imported")))


WORKLOADS = {"W1": w1, "W2": w2, "W3": w3, "W4": w4, "import": import_time}


from compile_memory import compile_time, memory  # noqa: E402  (issue 17's two compiler workloads)

WORKLOADS.update({"compile": compile_time, "memory": memory})
