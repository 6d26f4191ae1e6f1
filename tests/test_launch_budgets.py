"""Launch budgets of the seed workloads (benchmarks/workloads.py W1-W4) on coursekit's CuPy code path, COUNTED on
the CuPy stand-in (never timed): kernel launches, synchronisations, host<->device copies, device allocations.

Each budget is what a GPU run of the workload may cost at most; a change that adds a launch, a copy, a sync
or a per-call allocation to one of these paths fails here on a CPU, long before anyone rents a GPU.
Where CI has a real GPU these run on the stand-in all the same: counts are not what a GPU measures."""
import warnings

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
import cupy_standin
from cupy_standin import counting

LR = 0.1


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
    f = theano.function([], theano.Out(theano.gpu_from_host(T.exp(x)), borrow=True))
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
    f = theano.function([a, b], a + b, mode=theano.compile.mode.get_mode("FAST_RUN").excluding("host_scalars"))
    c, r = counted(f, np.float32(1.5), np.float32(2.25))
    assert (c.h2d, c.launches, c.d2h) == (2, 1, 1), c           # what the rule saves, counted
    assert float(r) == 3.75


def test_the_host_scalars_rule_can_be_left_out_for_every_function(cuda):
    a, b = T.fscalar("a"), T.fscalar("b")
    with theano.config.change(optimizer_excluding="host_scalars"):   # COURSEKIT_FLAGS=optimizer_excluding=...
        f = theano.function([a, b], a * b)
    assert device_nodes(f) and float(f(np.float32(2), np.float32(4))) == 8


def logistic_step(n=400, feats=50):
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
    return theano.function([], cost, updates=[(w, w - LR * gw), (b, b - LR * gb)]), w


def kernel_nodes(f):
    """Device nodes that compute (each needs one kernel); views and transfers need none."""
    return [n for n in device_nodes(f) if not getattr(n.op, "is_transfer", False) and not n.op.view_map]


def blas_nodes_copying_z(f):
    """GEMM/GEMV nodes that copy their ``z`` into the output first (not in place, beta != 0): one copy each."""
    return [n for n in device_nodes(f) if type(n.op).__name__ in ("GpuGemm", "GpuGemv") and not n.op.inplace]


def test_w3_logistic_regression_step_with_shared_data(cuda):
    train, w = logistic_step()
    w0 = w.get_value()
    c, cost = counted(train)
    kernels, copies = len(kernel_nodes(train)), len(blas_nodes_copying_z(train))
    assert c.h2d == 0, c                                      # the data and the weights never cross
    assert (c.d2h, c.d2h_bytes) == (1, 4), c                  # the cost, and nothing else
    assert c.syncs <= 1, c
    # the budget is launches <= kernels (11); each GEMV not in place first copies its z into its output
    # (cuBLAS reads and writes y in one buffer): the forward pass's z is the bias b broadcast (stride 0, which
    # cuBLAS cannot take as y), the gradient's is w itself, which only an in-place update of w would spare
    assert c.launches <= kernels + copies and c.kernels.count("copy") <= copies, (c.kernels, kernels, copies)
    assert c.kernels.count("gemv") == 2, c.kernels            # forward and gradient: one cuBLAS call each
    # the updated shared variables' old buffers take the next values: nothing is allocated per step
    assert c.allocations == 0, c
    assert np.isfinite(float(cost)) and not np.array_equal(w.get_value(), w0)


def test_w3_step_budget_does_not_depend_on_the_step(cuda):
    train, _ = logistic_step()
    a, _ = counted(train)
    b, _ = counted(train, warm_up=0)
    assert (a.launches, a.syncs, a.h2d, a.d2h, a.allocations) == (b.launches, b.syncs, b.h2d, b.d2h, b.allocations)


def test_w4_dot_plus_bias_with_shared_operands_is_one_gemm(cuda):
    rng = np.random.RandomState(4)
    mv, xv, bv = (rng.rand(*s).astype("float32") for s in ((100, 100), (100, 1), (100, 1)))
    m, x, b = theano.shared(mv), theano.shared(xv), theano.shared(bv)
    f = theano.function([], T.dot(m, x) + b)
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
    f = theano.function([x], theano.Out(theano.gpu_from_host(T.exp(x)), borrow=True))
    value = devices.to_device(np.zeros(5, "float32"))
    c, r = counted(f, value)
    assert (c.h2d, c.d2h, c.launches, c.allocations) == (0, 0, 1, 0), c
    with pytest.raises(TypeError, match="float64 device array"):
        f(devices.to_device(np.zeros(5)))
    with pytest.raises(TypeError, match="on the host"):
        f(np.zeros(5, "float32"))
