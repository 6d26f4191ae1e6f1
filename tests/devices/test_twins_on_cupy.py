"""The GPU twins no other test drives through CuPy's code path, run on it (a real GPU where CuPy sees one, else
the CuPy stand-in) against NumPy: max/min reductions, log_softmax, eye, batched_dot, gpu_contiguous, and the
multinomial sampler's SearchCDF + OneHot.  With test_ops_on_device, test_tutorial_programs, test_gpu_twins,
test_devices and test_launch_budgets, every op that declares a GPU twin has run there at least once."""
import warnings

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
import cupy_standin
from coursekit.devices.gpu_ops import GpuOp
from coursekit.devices.kernel_inputs import gpu_contiguous
from coursekit.random import MRG_RandomStreams


@pytest.fixture(params=[cupy_standin.cuda_case()])
def cuda(request):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with cupy_standin.on(request.param), theano.config.change(device="cuda", floatX="float32"):
            yield


def on_device(f, name):
    assert any(isinstance(n.op, GpuOp) and type(n.op.cpu_op).__name__ == name for n in f.toposort()), \
        [str(n.op) for n in f.toposort()]


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_max_and_min(cuda, dtype):
    v = (np.random.default_rng(1).standard_normal((4, 6)) * 10).astype(dtype)
    x = T.matrix("x", dtype=dtype)
    f = theano.function([x], [T.max(x, axis=1), T.min(x, axis=0)])
    got = f(v)
    np.testing.assert_array_equal(got[0], v.max(axis=1))
    np.testing.assert_array_equal(got[1], v.min(axis=0))
    on_device(f, "Max")
    on_device(f, "Min")


def test_log_softmax(cuda):
    v = np.random.default_rng(2).standard_normal((3, 5)).astype("float32")
    x = T.fmatrix("x")
    f = theano.function([x], T.nnet.log_softmax(x))
    shifted = v - v.max(axis=1, keepdims=True)
    np.testing.assert_allclose(f(v), shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True)), rtol=1e-5)
    on_device(f, "LogSoftmax")


def test_eye_and_batched_dot(cuda):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 3, 4)).astype("float32"), rng.standard_normal((2, 4, 5)).astype("float32")
    x, y, n = T.ftensor3("x"), T.ftensor3("y"), T.lscalar("n")
    f = theano.function([x, y, n], [T.batched_dot(x, y), T.eye(n, dtype="float32")])
    prod, eye = f(a, b, 4)
    np.testing.assert_allclose(prod, np.einsum("bij,bjk->bik", a, b), rtol=1e-5)
    np.testing.assert_array_equal(eye, np.eye(4, dtype="float32"))
    on_device(f, "BatchedDot")
    on_device(f, "Eye")


def test_gpu_contiguous_copies_a_transposed_matrix(cuda):
    v = np.arange(12, dtype="float32").reshape(3, 4)
    x = T.fmatrix("x")
    f = theano.function([x], gpu_contiguous(x.T))
    np.testing.assert_array_equal(np.asarray(f(v)), v.T)
    on_device(f, "Contiguous")


def test_multinomial_sampling(cuda):
    pvals = T.fmatrix("p")
    draw = MRG_RandomStreams(seed=5).multinomial(pvals=pvals, dtype="float32")
    f = theano.function([pvals], draw)
    p = np.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]], "float32")
    counts = np.asarray(f(p))
    assert counts.shape == (2, 3) and (counts.sum(axis=1) == 1).all() and counts[0, 1] == 1 and counts[1, 1] == 0
    on_device(f, "SearchCDF")
    on_device(f, "OneHot")
