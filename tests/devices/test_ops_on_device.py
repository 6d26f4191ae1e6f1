"""Ops written once against ``xp`` run on a GPU device (issue 12): advanced indexing, sort, ifelse,
set/inc_subtensor on slices, join, tile, repeat and specify_shape.  Their GPU twins are made by
``gpu_twin`` and placed from their declarations.  Values match NumPy on ``cpu`` and ``sim``, gradients are
checked, and on ``sim`` (and a real GPU, where CuPy sees one) the compiled graph keeps these ops on the device."""
import warnings

import numpy as np
import pytest

import cupy_standin

import coursekit as theano
import coursekit.tensor as T
from coursekit.devices.gpu_ops import GpuOp
from coursekit.gradient import verify_grad
from coursekit.ifelse import ifelse
from coursekit.tensor.signal import pool

HOST_ONLY_BEFORE = {"AdvancedSubtensor", "AdvancedIncSubtensor", "AdvancedSubtensor1", "AdvancedIncSubtensor1",
                    "Sort", "ArgSort", "UnsortGrad", "SortLike", "IfElse", "IncSubtensor", "Join", "Tile", "TileGrad",
                    "Repeat", "RepeatGrad", "SpecifyShape"}


DEVICES = ["cpu", "sim", cupy_standin.cuda_case()]


@pytest.fixture(params=DEVICES)
def device(request):
    """cpu, the simulated GPU and CuPy's code path: on a real GPU where CuPy sees one, else on the CuPy stand-in."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with cupy_standin.on(request.param), theano.config.change(device=request.param):
            yield request.param


def op_names(f):
    return [type(n.op).__name__ for n in f.toposort()]


def assert_on_device_unless_cpu(f, device, expected):
    names = op_names(f)
    if device != "cpu":
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
    assert_on_device_unless_cpu(f, device, {"GpuAdvancedSubtensor", "GpuAdvancedIncSubtensor",
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
    assert_on_device_unless_cpu(f, device, {"GpuSort", "GpuArgSort", "GpuUnsortGrad", "GpuSortLike"})


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
    assert_on_device_unless_cpu(f, device, {"GpuIfElse"})
    if device != "cpu":
        node = [n for n in f.toposort() if type(n.op).__name__ == "GpuIfElse"][0]
        (then_fn, else_fn), = node.op.cpu_op.device_fns.values()
        assert "GpuElemwise" in op_names(then_fn) and "HostFromGpu" not in op_names(then_fn)
        assert "GpuCAReduce" in op_names(else_fn) and "Elemwise" not in op_names(else_fn)


def test_slices_set_and_joins_tiles_repeats_on_the_device(device):
    """set_subtensor/inc_subtensor on slices, concatenate/stack, tile, repeat and specify_shape, with gradients."""
    rng = np.random.default_rng(8)
    xv, yv = rng.standard_normal((3, 4)).astype("float32"), rng.standard_normal(4).astype("float32")
    counts = np.array([1, 0, 2])
    x, y, i, r = T.fmatrix("x"), T.fvector("y"), T.lscalar("i"), T.lvector("r")
    outs = [T.set_subtensor(x[1:3, i], y[:2]), T.inc_subtensor(x[:, 0], y[:3]), T.concatenate([x, x * 2], axis=1),
            T.stack([y, y]), T.tile(x, (2, 1)), T.repeat(x, r, axis=0), T.specify_shape(x, (3, 4))]
    weights = [rng.standard_normal(shape).astype("float32") for shape in
               [(3, 4), (3, 4), (3, 8), (2, 4), (6, 4), (3, 4), (3, 4)]]
    cost = sum(T.sum(o * w) for o, w in zip(outs, weights))
    f = theano.function([x, y, i, r], outs + T.grad(cost, [x, y]))
    got = [np.asarray(v) for v in f(xv, yv, 2, counts)]
    ref_set, ref_inc = xv.copy(), xv.copy()
    ref_set[1:3, 2] = yv[:2]
    ref_inc[:, 0] += yv[:3]
    refs = [ref_set, ref_inc, np.concatenate([xv, 2 * xv], axis=1), np.stack([yv, yv]), np.tile(xv, (2, 1)),
            np.repeat(xv, counts, axis=0), xv]
    for value, ref in zip(got, refs):
        np.testing.assert_allclose(value, ref, rtol=1e-6)
    # d cost / d x and d y, written out from each output's definition
    w_set, w_inc, w_cat, w_stack, w_tile, w_rep, w_spec = weights
    gx = w_set.copy()
    gx[1:3, 2] = 0
    gx += w_inc + w_cat[:, :4] + 2 * w_cat[:, 4:] + w_tile[:3] + w_tile[3:] + w_spec
    owners = np.repeat(np.arange(3), counts)
    np.add.at(gx, owners, w_rep)
    gy = w_stack.sum(axis=0)
    gy[:2] += w_set[1:3, 2]
    gy[:3] += w_inc[:, 0]
    np.testing.assert_allclose(got[-2], gx, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[-1], gy, rtol=1e-5, atol=1e-6)
    assert_on_device_unless_cpu(f, device, {"GpuIncSubtensor", "GpuJoin", "GpuTile", "GpuTileGrad", "GpuRepeat",
                                          "GpuRepeatGrad", "GpuSpecifyShape"})


def test_second_order_gradients_of_conv_and_max_pool_on_the_device(device):
    """A gradient penalty (the gradient of a gradient) through a dilated conv and a max pooling: the same numbers
    on cpu and sim (checked against finite differences in test_nnet_conv.py), and on sim every op on the device."""
    rng = np.random.default_rng(9)
    xv, wv = rng.standard_normal((2, 1, 8, 8)).astype("float32"), rng.standard_normal((3, 1, 3, 3)).astype("float32")
    x, w = T.ftensor4("x"), T.ftensor4("w")
    hidden = pool.pool_2d(T.nnet.conv2d(x, w, border_mode="half", filter_dilation=(2, 1),
                                        filter_shape=(3, 1, 3, 3)), ws=(2, 2), ignore_border=True)
    gx = T.grad(T.sum(T.tanh(hidden)), x)
    f = theano.function([x, w], T.grad(T.sum(gx ** 2), w))
    got = np.asarray(f(xv, wv))
    with theano.config.change(device="cpu"):
        expected = theano.function([x, w], T.grad(T.sum(gx ** 2), w))(xv, wv)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert_on_device_unless_cpu(f, device, {"GpuConv2d", "GpuConv2dGradInput", "GpuConv2dGradWeights", "GpuPoolGrad",
                                          "GpuMaxPoolGradGrad"})
