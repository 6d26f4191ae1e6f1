"""A user's Op with a CUDA kernel (the tutorial's double op) inside compiled functions."""
import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit import cuda
from coursekit.debugmode import DebugModeError

DOUBLE_SOURCE = r"""
__global__ void double_them(float *dest, const float *src, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dest[i] = 2.0f * src[i];
}
"""


class DoubleOp(theano.Op):
    """x * 2: NumPy on the CPU, a CUDA kernel on a GPU device."""

    __props__ = ()
    scale = 2.0

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        if x.type.dtype != "float32":
            raise TypeError("DoubleOp works on float32 data")
        return theano.Apply(self, [x], [x.type.make_variable()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0] * np.float32(self.scale)

    def gpu_perform(self, node, inputs, output_storage):
        (x,) = inputs
        kernel = cuda.SourceModule(self.source()).get_function("double_them")
        out = cuda.empty(x.shape, x.dtype)
        n = x.size
        kernel(((n + 127) // 128,), (128,), (out, x, np.int32(n)))
        output_storage[0][0] = out

    def source(self):
        return DOUBLE_SOURCE

    def grad(self, inputs, output_grads):
        return [output_grads[0] * self.scale]


class WrongDouble(DoubleOp):
    def source(self):
        return DOUBLE_SOURCE.replace("2.0f", "3.0f")


@pytest.fixture(params=["cpu", "sim"])
def device(request):
    with theano.config.change(device=request.param):
        yield request.param


def test_double_op_on_a_4x5_matrix(device):
    x = T.fmatrix("x")
    f = theano.function([x], DoubleOp()(x))
    names = [type(n.op).__name__ for n in f.toposort()]
    assert ("GpuCustomOp" in names) == (device == "sim")
    value = np.random.default_rng(0).random((4, 5), dtype="float32")
    np.testing.assert_array_equal(f(value), value * 2)


@pytest.mark.parametrize("view", [lambda m: m.T, lambda m: m[1:, ::2], lambda m: m[::-1]])
def test_double_op_on_strided_inputs(device, view):
    x = T.fmatrix("x")
    f = theano.function([x], DoubleOp()(view(x)) + 1)
    value = np.random.default_rng(1).random((6, 7), dtype="float32")
    np.testing.assert_allclose(f(value), view(value) * 2 + 1, rtol=1e-6)


def test_double_op_gradient(device):
    x = T.fvector("x")
    g = theano.function([x], T.grad(DoubleOp()(x).sum(), x))
    np.testing.assert_array_equal(g(np.ones(5, "float32")), 2)


def test_debugmode_checks_the_kernel_against_perform():
    with theano.config.change(device="sim"):
        x = T.fvector("x")
        good = theano.function([x], DoubleOp()(x), mode="DebugMode")
        np.testing.assert_array_equal(good(np.ones(3, "float32")), 2)
        bad = theano.function([x], WrongDouble()(x), mode="DebugMode")
        with pytest.raises(DebugModeError, match="GpuWrongDouble.*differs"):
            bad(np.ones(3, "float32"))


def test_gpu_perform_must_store_device_arrays():
    class HostOutput(DoubleOp):
        def gpu_perform(self, node, inputs, output_storage):
            output_storage[0][0] = np.zeros(inputs[0].shape, "float32")

    with theano.config.change(device="sim"):
        x = T.fvector("x")
        f = theano.function([x], HostOutput()(x))
        with pytest.raises(TypeError, match="must store device arrays.*cuda.empty"):
            f(np.ones(3, "float32"))


def test_storage_cell_style_gpu_thunk():
    class CellDouble(DoubleOp):
        def make_gpu_thunk(self, node, storage_map):
            kernel = cuda.SourceModule(DOUBLE_SOURCE).get_function("double_them")
            src, dst = storage_map[node.inputs[0]], storage_map[node.outputs[0]]

            def thunk():
                x = src[0]
                out = dst[0]
                if out is None or out.shape != x.shape:
                    out = dst[0] = cuda.empty(x.shape, x.dtype)
                kernel(((x.size + 63) // 64,), (64,), (out, x, np.int32(x.size)))

            return thunk

    with theano.config.change(device="sim"):
        x = T.fvector("x")
        f = theano.function([x], CellDouble()(x))
        np.testing.assert_array_equal(f(np.arange(4, dtype="float32")), [0, 2, 4, 6])
