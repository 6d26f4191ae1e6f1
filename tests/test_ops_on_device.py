"""Advanced indexing, sort and ifelse run on a GPU device (issue 12): written once against ``xp``, their GPU
twins are made by ``gpu_twin`` and placed from their declarations.  Values match NumPy on ``cpu`` and ``sim``,
gradients are checked, and on ``sim`` the compiled graph keeps these ops on the device."""
import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit.devices.gpu_ops import GpuOp
from coursekit.gradient import verify_grad
from coursekit.ifelse import ifelse

HOST_ONLY_BEFORE = {"AdvancedSubtensor", "AdvancedIncSubtensor", "AdvancedSubtensor1", "AdvancedIncSubtensor1",
                    "Sort", "ArgSort", "UnsortGrad", "SortLike", "IfElse"}


def op_names(f):
    return [type(n.op).__name__ for n in f.toposort()]


def assert_on_device_when_sim(f, device, expected):
    names = op_names(f)
    if device == "sim":
        assert not HOST_ONLY_BEFORE & set(names), f"left on the host: {names}"
        assert set(expected) <= set(names), names
        assert all(isinstance(n.op, GpuOp) for n in f.toposort() if type(n.op).__name__ in expected)
    else:
        assert set(e[3:] for e in expected) <= set(names), names


def test_advanced_indexing_values_and_gradients(device):
    rng = np.random.default_rng(3)
    pv, wv = rng.standard_normal((6, 5)).astype("float32"), rng.standard_normal((6, 5)).astype("float32")
    yv, rows = np.array([4, 0, 2, 2, 1, 3]), np.array([5, 0, 5, 2])
    p, w, y, r = T.fmatrix("p"), T.fmatrix("w"), T.lvector("y"), T.lvector("r")
    picked = p[T.arange(p.shape[0]), y]            # the tutorials' log-likelihood index
    masked = T.sum(p[p > 0])
    gathered = p[r]                                # AdvancedSubtensor1
    cost = T.sum(T.log(abs(picked) + 1)) + masked + T.sum(gathered * w[r])
    outs = [picked, masked, gathered, T.set_subtensor(p[r, 1], 7.0), T.inc_subtensor(p[r], 1.0), T.grad(cost, p)]
    f = theano.function([p, w, y, r], outs)
    got = [np.asarray(v) for v in f(pv, wv, yv, rows)]
    ref_picked = pv[np.arange(6), yv]
    np.testing.assert_allclose(got[0], ref_picked, rtol=1e-6)
    np.testing.assert_allclose(got[1], pv[pv > 0].sum(), rtol=1e-5)
    np.testing.assert_allclose(got[2], pv[rows], rtol=1e-6)
    ref_set = pv.copy()
    ref_set[rows, 1] = 7.0
    ref_inc = pv.copy()
    np.add.at(ref_inc, rows, 1.0)
    np.testing.assert_allclose(got[3], ref_set)
    np.testing.assert_allclose(got[4], ref_inc, rtol=1e-6)
    ref_grad = (pv > 0).astype("float32")
    np.add.at(ref_grad, (np.arange(6), yv), np.sign(ref_picked) / (np.abs(ref_picked) + 1))
    np.add.at(ref_grad, rows, wv[rows])
    np.testing.assert_allclose(got[5], ref_grad, rtol=1e-5)
    assert_on_device_when_sim(f, device, {"GpuAdvancedSubtensor", "GpuAdvancedIncSubtensor",
                                          "GpuAdvancedSubtensor1", "GpuAdvancedIncSubtensor1"})


def test_an_index_out_of_range_on_the_device_names_the_index(device):
    p, y = T.fmatrix("p"), T.lvector("y")
    f = theano.function([p, y], [p[T.arange(2), y], p[y]])
    with pytest.raises(IndexError, match=r"index.*out of bounds.*size 3"):
        f(np.ones((2, 3), "float32"), np.array([0, 3]))


def test_sort_argsort_and_gradients_of_every_order(device):
    rng = np.random.default_rng(4)
    xv, wv = rng.standard_normal((3, 7)).astype("float32"), rng.standard_normal((3, 7)).astype("float32")
    x, w = T.fmatrix("x"), T.fmatrix("w")
    s = T.sort(x, axis=1)
    g = T.grad(T.sum(s ** 3 * w), x)
    h = T.grad(T.sum(g * w), x)                    # second order: the gradient of a scatter is a gather
    f = theano.function([x, w], [s, T.argsort(x, axis=None), g, h])
    got = [np.asarray(v) for v in f(xv, wv)]
    order = np.argsort(xv, axis=1, kind="stable")
    w_at = np.empty_like(wv)
    np.put_along_axis(w_at, order, wv, axis=1)     # the weight each element meets after sorting
    np.testing.assert_array_equal(got[0], np.sort(xv, axis=1))
    np.testing.assert_array_equal(got[1], np.argsort(xv, axis=None, kind="stable"))
    np.testing.assert_allclose(got[2], 3 * xv ** 2 * w_at, rtol=1e-5)
    np.testing.assert_allclose(got[3], 6 * xv * w_at * wv, rtol=1e-5)
    assert_on_device_when_sim(f, device, {"GpuSort", "GpuArgSort", "GpuUnsortGrad", "GpuSortLike"})


def test_second_order_sort_gradients_against_finite_differences():
    w = np.random.default_rng(5).standard_normal((2, 5))
    verify_grad(lambda x: T.grad(T.sum(T.sort(x, axis=1) ** 3 * w), x), [np.random.default_rng(6).random((2, 5))])
    verify_grad(lambda x: T.grad(T.sum(T.sort(x, axis=None) ** 3 * w.reshape(-1)), x),
                [np.random.default_rng(7).random((2, 5))])


def test_ifelse_runs_only_the_chosen_branch_on_the_device(device):
    a, b = T.fscalars("a", "b")
    x, y = T.fvectors("x", "y")
    z = ifelse(T.lt(a, b), T.exp(x) * 2, T.sum(y) * y)
    f = theano.function([a, b, x, y], [z, T.grad(T.sum(z * z), x)])
    xv, yv = np.linspace(0, 1, 5, dtype="float32"), np.arange(5, dtype="float32")
    z1, g1 = f(1, 2, xv, yv)
    z2, g2 = f(2, 1, xv, yv)
    np.testing.assert_allclose(z1, 2 * np.exp(xv), rtol=1e-6)
    np.testing.assert_allclose(g1, 8 * np.exp(2 * xv), rtol=1e-5)
    np.testing.assert_allclose(z2, yv.sum() * yv, rtol=1e-6)
    np.testing.assert_array_equal(g2, 0)
    assert_on_device_when_sim(f, device, {"GpuIfElse"})
    if device == "sim":
        node = [n for n in f.toposort() if type(n.op).__name__ == "GpuIfElse"][0]
        then_fn, else_fn = node.op.cpu_op.device_fns["sim"]
        assert "GpuElemwise" in op_names(then_fn) and "HostFromGpu" not in op_names(then_fn)
        assert "GpuCAReduce" in op_names(else_fn) and "Elemwise" not in op_names(else_fn)
