"""Launch budgets of the seed workloads (benchmarks/workloads.py W1-W4) on coursekit's CuPy code path, COUNTED on
the CuPy stand-in (never timed): kernel launches, synchronisations, host<->device copies, device allocations.

Each budget is what a GPU run of the workload may cost at most; a change that adds a launch, a copy, a sync
or a per-call allocation to one of these paths fails here on a CPU, long before anyone rents a GPU.
Where CI has a real GPU these run on the stand-in all the same: counts are not what a GPU measures.

Two paths are budgeted.  The ORDINARY call (one launch per kernel) is what a call pays before it is captured,
while a profile or DebugMode watches every op, and after any change that drops its graph; by default
(CUDA graphs on, issue 35) every later call of a fixed-shape function with its state on the device is ONE
graph launch.  The budgets, per call, ordinary launches / graphed:

| workload | ordinary | graphed | what the ordinary launches are |
|---|---|---|---|
| W1 exp into a borrowed buffer | 1 | 1 graph | the exp kernel |
| W2 two host scalars | 0 | no graph (no device work) | nothing: the scalars stay on the host |
| W3 tutorial step, data shared, cost returned | 7 | 1 graph + 1 copy home | dot(X, w) (no bias copied in), dot(w, w) for the penalty, ONE reduction for xent + its sum + the cost's tail, the gradient's fused kernel (b added inside it again), w copied into the GEMV's output + the GEMV, ONE reduction for sum(g) + b's update |
| W4 dot(m, x) + b, all shared | 2 | 1 graph + 1 copy home | b copied into the output, then one GEMM |
| lesson 5 tuned step (returns nothing) | 5 | 1 graph | dot(X, w), the gradient's fused kernel, the w copy + GEMV, one reduction for sum(g) + b's update |
| lesson 8 RNN scan, 10 steps | 32 | none: allocates per step | per step ~1.4 dot, 1 fused tanh (the bias added inside it), 1 setitem into the output |
| lesson 10 MLP step, 5 x 6 hidden | 55 | none: allocates temporaries | GEMMs (a broadcast bias is added inside the fused readers, not copied), tanh, dots, fused kernels, sums, softmax's 5 |
| lesson 10 conv-net step, 2 filters | 70 | none: allocates temporaries | convolution as pad/strided view/matmul, pooling, Adam's fused updates |

Where W3's launches went (13 before issue 35's item 1; Theano's own graph and hand-written CuPy need ~8):

* no copy of the bias before the forward GEMV: on a GPU device ``dot + b`` with a broadcast ``b`` is left to fusion
  (``rewriting/blas.py``), which recomputes a one-flop op inside each elementwise reader (``rewriting/fusion.py``);
* ``sum(sqr(w))`` is ``dot(w, w)``: one cuBLAS call that reads w once;
* ``1/N`` stays on the host: N is a shape (``CheckedShape``), and a one-element host value is a kernel's scalar
  argument, even broadcast to ``(1,)``;
* ``FusedSum`` (``tensor/mapreduce.py``, ``rewriting/fused_reduce.py``): a full sum takes the fused elementwise
  node it reads as its map and its one-element reader as its tail, ONE ``cupy.ReductionKernel``.

What is left: the gradient's GEMV still copies w into its output first (cuBLAS reads and writes y in one buffer;
only an in-place update of the shared w would spare it, which needs a destroy-aware order of w's readers).

A call whose kernels allocate device buffers while they run (softmax's and the convolution's temporaries, a
scan's per-step buffers) is never captured: after the capture the pool would hand that memory to others
while the graph still writes to it.  Those steps keep their ordinary budgets until their ops write into kept
buffers.
"""
import sys
import warnings

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
import cupy_standin
from coursekit.compile.mode import get_mode
from cupy_standin import counting

LR = 0.1
ORDINARY = get_mode("FAST_RUN").without_cuda_graphs()   # one launch per kernel: the path graphs fall back to


@pytest.fixture
def cuda():
    """device='cuda' on the stand-in, with Theano's GPU advice allow_gc=False (intermediate buffers kept)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with cupy_standin.installed(), theano.config.change(device="cuda", floatX="float32", allow_gc=False):
            yield


def counted(f, *args, warm_up=2):
    """The counts of one call after ``warm_up`` calls (compiles and first allocations done)."""
    for _ in range(warm_up):
        f(*args)
    with counting() as c:
        result = f(*args)
    return c, result


def device_nodes(f):
    return [n for n in f.maker.fgraph.toposort() if getattr(n.op, "device", "cpu") == "gpu"]


def test_w1_exp_of_a_shared_vector_into_a_borrowed_device_buffer(cuda):
    xv = np.random.default_rng(1).random(1000).astype("float32")
    x = theano.shared(xv)
    f = theano.function([], theano.Out(theano.gpu_from_host(T.exp(x)), borrow=True), mode=ORDINARY)
    with counting() as first:
        r1 = f()
    c, r2 = counted(f)
    assert first.launches == 1 and first.allocations == 1
    assert (c.launches, c.syncs, c.allocations, c.h2d, c.d2h) == (1, 0, 0, 0, 0), c
    assert r2 is r1                                           # the same buffer, handed out again
    np.testing.assert_allclose(r2.get(), np.exp(xv), rtol=1e-6)


def test_w2_host_scalars_do_no_device_work(cuda):
    a, b = T.fscalar("a"), T.fscalar("b")
    f = theano.function([a, b], a + b)
    c, r = counted(f, np.float32(1.5), np.float32(2.25))
    assert c.device_work() == 0, c
    assert float(r) == 3.75 and not device_nodes(f)


def test_w2_without_the_host_scalars_rule_goes_to_the_device_and_back(cuda):
    a, b = T.fscalar("a"), T.fscalar("b")
    f = theano.function([a, b], a + b, mode=ORDINARY.excluding("host_scalars"))
    c, r = counted(f, np.float32(1.5), np.float32(2.25))
    assert (c.h2d, c.launches, c.d2h) == (2, 1, 1), c           # what the rule saves, counted
    assert float(r) == 3.75


def test_the_host_scalars_rule_can_be_left_out_for_every_function(cuda):
    a, b = T.fscalar("a"), T.fscalar("b")
    with theano.config.change(optimizer_excluding="host_scalars"):   # COURSEKIT_FLAGS=optimizer_excluding=...
        f = theano.function([a, b], a * b)
    assert device_nodes(f) and float(f(np.float32(2), np.float32(4))) == 8


def logistic_step(n=400, feats=50, mode=ORDINARY):
    """The tutorial's training step with the data in shared variables (the lesson's tuned version)."""
    rng = np.random.RandomState(1234)
    data = theano.shared(rng.randn(n, feats).astype("float32"), name="D_x")
    labels = theano.shared(rng.randint(size=n, low=0, high=2).astype("float32"), name="D_y")
    w = theano.shared(rng.randn(feats).astype("float32"), name="w")
    b = theano.shared(np.float32(0.0), name="b")
    p_1 = 1 / (1 + T.exp(-T.dot(data, w) - b))
    xent = -labels * T.log(p_1) - (1 - labels) * T.log(1 - p_1)
    cost = xent.mean() + 0.01 * (w ** 2).sum()
    gw, gb = T.grad(cost, [w, b])
    return theano.function([], cost, updates=[(w, w - LR * gw), (b, b - LR * gb)], mode=mode), w


def kernel_nodes(f):
    """Device nodes that compute (each needs one kernel); views and transfers need none."""
    return [n for n in device_nodes(f) if not getattr(n.op, "is_transfer", False) and not n.op.view_map]


def blas_nodes_copying_z(f):
    """GEMM/GEMV nodes that copy their ``z`` into the output first (not in place, beta != 0): one copy each."""
    return [n for n in device_nodes(f) if type(n.op).__name__ in ("GpuGemm", "GpuGemv") and not n.op.inplace]


W3_ORDINARY = 7   # the table above; issue 35 asked for 8 at most


def test_w3_logistic_regression_step_with_shared_data(cuda):
    train, w = logistic_step()
    w0 = w.get_value()
    c, cost = counted(train)
    assert c.h2d == 0, c                                      # the data and the weights never cross
    assert (c.d2h, c.d2h_bytes) == (1, 4), c                  # the cost, and nothing else
    assert c.syncs <= 1, c
    assert c.launches <= W3_ORDINARY, c.kernels
    # three cuBLAS calls: the forward product (no bias copied in: fusion adds b), the penalty's dot(w, w),
    # the gradient's GEMV (w copied into its output first: cuBLAS reads and writes y in one buffer)
    assert sorted(k for k in c.kernels if k in ("gemv", "dot")) == ["dot", "dot", "gemv"], c.kernels
    assert c.kernels.count("copy") <= len(blas_nodes_copying_z(train)) == 1, c.kernels
    # no square, no 1/N and no lone sum on the device: two reductions carry their maps and one-element tails
    assert [k for k in c.kernels if k.startswith("coursekit_sum_")] == [
        "coursekit_sum_Composite_add_sub_maximum_add_i0_i1_0_0_mul_i2", "coursekit_sum_i0"], c.kernels
    assert not {"sum", "coursekit_sqr", "coursekit_true_div"} & set(c.kernels), c.kernels
    # the updated shared variables' old buffers take the next values: nothing is allocated per step
    assert c.allocations == 0, c
    assert np.isfinite(float(cost)) and not np.array_equal(w.get_value(), w0)


def test_w3_fewer_kernels_compute_what_numpy_computes(cuda):
    """The rewrites that cut W3's launches (bias added inside the fused kernels, dot(w, w), 1/N on the host)
    keep the step NumPy's, in float64, on the device path: the cost and both updates of the first step."""
    rng = np.random.RandomState(1234)
    xv, yv = rng.randn(400, 50), rng.randint(size=400, low=0, high=2).astype("float64")
    wv = rng.randn(50).astype("float32").astype("float64")
    xv = xv.astype("float32").astype("float64")
    train, w = logistic_step()
    b = next(v for v in train.maker.fgraph.inputs if getattr(v, "name", None) == "b")
    cost = float(train())
    z = xv @ wv
    p = 1 / (1 + np.exp(-z))
    ref_cost = np.mean(np.logaddexp(0, z) - yv * z) + 0.01 * np.sum(wv ** 2)
    dz = (p - yv) / len(yv)
    np.testing.assert_allclose(cost, ref_cost, rtol=1e-5)
    np.testing.assert_allclose(w.get_value(), wv - LR * (xv.T @ dz + 0.02 * wv), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(float(b.get_value()), -LR * dz.sum(), rtol=1e-4, atol=1e-7)


def test_w3_step_budget_does_not_depend_on_the_step(cuda):
    train, _ = logistic_step()
    a, _ = counted(train)
    b, _ = counted(train, warm_up=0)
    assert (a.launches, a.syncs, a.h2d, a.d2h, a.allocations) == (b.launches, b.syncs, b.h2d, b.d2h, b.allocations)


def test_w4_dot_plus_bias_with_shared_operands_is_one_gemm(cuda):
    rng = np.random.RandomState(4)
    mv, xv, bv = (rng.rand(*s).astype("float32") for s in ((100, 100), (100, 1), (100, 1)))
    m, x, b = theano.shared(mv), theano.shared(xv), theano.shared(bv)
    f = theano.function([], T.dot(m, x) + b, mode=ORDINARY)
    c, r = counted(f)
    assert c.kernels.count("gemm") == 1 and c.launches <= 2, c.kernels   # b copied into the output, then GEMM
    assert (c.h2d, c.d2h, c.allocations, c.syncs) == (0, 1, 0, 1), c
    np.testing.assert_allclose(r, mv @ xv + bv, rtol=1e-5)


def test_w3_an_old_weight_buffer_someone_still_holds_is_never_reused(cuda):
    train, w = logistic_step()
    train()
    held = w.get_value(borrow=True, return_internal_type=True)     # the device buffer itself, kept by the caller
    before = held.get()
    c, _ = counted(train, warm_up=1)
    np.testing.assert_array_equal(held.get(), before)            # a new buffer took the update instead
    assert c.allocations == 1, c
    del held
    c, _ = counted(train, warm_up=1)
    assert c.allocations == 0, c


def test_a_device_input_is_taken_as_it_is_and_a_wrong_one_is_still_refused(cuda):
    from coursekit import devices
    x = devices.device_variable("float32", (False,), "x")
    f = theano.function([x], theano.Out(theano.gpu_from_host(T.exp(x)), borrow=True), mode=ORDINARY)
    value = devices.to_device(np.zeros(5, "float32"))
    c, r = counted(f, value)
    assert (c.h2d, c.d2h, c.launches, c.allocations) == (0, 0, 1, 0), c
    with pytest.raises(TypeError, match="float64 device array"):
        f(devices.to_device(np.zeros(5)))
    with pytest.raises(TypeError, match="on the host"):
        f(np.zeros(5, "float32"))


# ------------------------------------------------------------------ the lessons' many-launch steps
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2] / "benchmarks"))
import many_launch  # noqa: E402  (benchmarks/many_launch.py: the steps lessons 5, 8 and 10 compile)

LESSON_STEPS = {   # builder at a small size -> (ordinary launches, graphed launches): the table above
    "lesson 5 tuned": (lambda mode: many_launch.logistic("tuned", n=40, feats=30, mode=mode), 5, 1),
    "lesson 8 RNN": (lambda mode: many_launch.rnn_scan(steps=10, hidden=8, mode=mode), 32, None),
    "lesson 10 MLP": (lambda mode: many_launch.mlp_step(n=30, features=8, width=6, mode=mode), 55, None),
    "lesson 10 conv net": (lambda mode: many_launch.convnet_step(n=12, filters=2, mode=mode), 70, None),
}


@pytest.mark.parametrize("step", LESSON_STEPS)
def test_the_lessons_steps_keep_their_budgets_ordinary_and_graphed(cuda, step):
    build, ordinary, graphed = LESSON_STEPS[step]
    _, plain, args = build(ORDINARY)
    c, _ = counted(plain, *args)
    assert c.launches <= ordinary and (c.h2d, c.d2h) == (0, 0), (step, c.launches, c.kernels)
    _, default, args = build(None)
    c, _ = counted(default, *args)
    if graphed is None:   # its kernels allocate while they run: never captured, and it says so
        assert default.cuda_graph.graph is None and "allocates" in default.cuda_graph.reason
        assert c.launches <= ordinary and c.graph_launches == 0
    else:
        assert (c.graph_launches, c.launches, c.h2d, c.d2h) == (graphed, 0, 0, 0), (step, c)


# ------------------------------------------------------------------ CUDA graphs by default, and their fallbacks
def test_graphs_are_on_by_default_and_compute_what_the_ordinary_call_computes(cuda):
    plain, w_plain = logistic_step()
    graphed, w_graphed = logistic_step(mode=None)               # no flag: the default mode
    costs = [(float(plain()), float(graphed())) for _ in range(2)]
    assert graphed.cuda_graph.graph is not None and graphed.cuda_graph.reason is None
    for _ in range(3):
        with counting() as c:
            cost = float(graphed())
        costs.append((float(plain()), cost))
        # W3 on the default path: one graph launch, the cost home, nothing uploaded or allocated
        assert (c.graph_launches, c.launches, c.h2d, c.d2h, c.allocations) == (1, 0, 0, 1, 0), c
    np.testing.assert_allclose([a for a, _ in costs], [b for _, b in costs], rtol=1e-6)
    np.testing.assert_allclose(w_plain.get_value(), w_graphed.get_value(), rtol=1e-6)


def test_with_allow_gc_the_graph_keeps_its_buffers_and_still_captures(cuda):
    with theano.config.change(allow_gc=True):                  # the default a user has
        graphed, w = logistic_step(mode=None)
        plain, w_plain = logistic_step()
    for _ in range(4):
        np.testing.assert_allclose(float(graphed()), float(plain()), rtol=1e-6)
    assert graphed.cuda_graph.graph is not None
    c, _ = counted(graphed, warm_up=0)
    assert (c.graph_launches, c.launches, c.allocations) == (1, 0, 0), c


def test_a_shape_change_falls_back_to_ordinary_launches_then_captures_again(cuda):
    x = T.fvector("x")
    f = theano.function([x], T.exp(x) * 2 + x)
    small, large = np.arange(3, dtype="float32"), np.arange(5, dtype="float32")
    counted(f, small)
    assert f.cuda_graph.graph is not None
    with counting() as c:
        np.testing.assert_allclose(f(large), np.exp(large) * 2 + large, rtol=1e-6)
    assert c.graph_launches == 0 and c.launches >= 1 and "changed shape" in f.cuda_graph.reason
    c, r = counted(f, large)
    assert c.graph_launches == 1 and f.cuda_graph.captures == 2
    np.testing.assert_allclose(r, np.exp(large) * 2 + large, rtol=1e-6)


def test_another_device_buffer_as_input_falls_back_and_reads_the_new_buffer(cuda):
    from coursekit import devices
    x = devices.device_variable("float32", (False,), "x")
    f = theano.function([x], theano.Out(theano.gpu_from_host(T.exp(x)), borrow=True))
    first = devices.to_device(np.zeros(4, "float32"))
    counted(f, first)
    assert f.cuda_graph.graph is not None
    other = devices.to_device(np.ones(4, "float32"))              # same shape and dtype, another buffer
    with counting() as c:
        r = f(other)
    np.testing.assert_allclose(r.get(), np.e, rtol=1e-6)           # a replay would have read `first`
    assert c.graph_launches == 0 and "another buffer" in f.cuda_graph.reason


def test_a_dtype_change_of_a_device_input_falls_back(cuda):
    from coursekit import devices
    x = devices.device_variable("float32", (False,), "x")
    f = theano.function([x], theano.Out(theano.gpu_from_host(T.exp(x)), borrow=True))
    value = devices.to_device(np.zeros(4, "float32"))
    counted(f, value)
    assert f.cuda_graph.graph is not None
    with pytest.raises(TypeError, match="float64 device array"):  # refused as before, never replayed
        f(devices.to_device(np.zeros(4)))
    assert f.cuda_graph.graph is None and "dtype" in f.cuda_graph.reason


def test_a_profiled_function_sees_every_op_and_is_never_captured(cuda):
    rng = np.random.RandomState(3)
    x = theano.shared(rng.rand(50).astype("float32"))
    g = theano.function([], T.exp(x).sum() + (x * 2).max(), profile=True)   # the default mode: graphs on
    c, _ = counted(g, warm_up=4)
    assert g.cuda_graph.graph is None and "hooks" in g.cuda_graph.reason and c.graph_launches == 0
    record = g.profile.records[0]
    assert record.timed_calls >= 4 and all(t > 0 for t in record.apply_time), record.apply_time  # every op timed


def test_a_profile_attached_after_capture_sees_every_op_and_the_graph_returns_after(cuda):
    f, _ = logistic_step(mode=None)
    counted(f)
    assert f.cuda_graph.graph is not None
    profile = theano.profiling.ProfileStats(name="later", atexit_print=False)
    record = profile.attach(f)
    c, _ = counted(f, warm_up=1)
    assert c.graph_launches == 0 and c.launches > 1 and "hooks" in f.cuda_graph.reason
    assert record.timed_calls >= 1 and all(t > 0 for t in record.apply_time)
    f.remove_hook(record)
    c, _ = counted(f)
    assert c.graph_launches == 1 and f.cuda_graph.reason is None


def test_debugmode_checks_every_op_and_is_never_captured(cuda):
    rng = np.random.RandomState(5)
    x = theano.shared(rng.rand(20).astype("float32"))
    f = theano.function([], T.exp(x) * 3 - x, mode="DebugMode")
    c, r = counted(f, warm_up=3)
    assert c.graph_launches == 0 and c.launches >= 1
    assert f.cuda_graph is None or f.cuda_graph.graph is None
    np.testing.assert_allclose(np.asarray(r), np.exp(x.get_value()) * 3 - x.get_value(), rtol=1e-5)


# ------------------------------------------------------------------ host dispatch per ordinary call (counted)
def test_w3_ordinary_call_dispatches_no_more_than_hand_written_cupy(cuda):
    """benchmarks/device_host_work.py's count: coursekit's own Python calls plus its calls into CuPy, per
    ordinary W3 call, against the same step written by hand in CuPy (one call per operation).  Issue 35
    asks for 1.0x at most; counted the same way it was 125 against 32 before the step's launches were cut
    (13 -> 7) and its per-kernel Python trimmed; 31 after (benchmarks/results/, 2026-11-28)."""
    import device_host_work as dhw
    (_, w3, args), = [w for w in dhw.workloads(graphs=False) if w[0].startswith("W3")]
    ours = dhw.dispatch(*dhw.measure(w3, args, calls=5))
    _, step, step_args = dhw.naive_cupy_w3()
    by_hand = dhw.dispatch(*dhw.measure(step, step_args, calls=5))
    assert ours <= by_hand, (ours, by_hand)
