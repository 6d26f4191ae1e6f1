"""What the tutorial's PyCUDA op needs, piece by piece (issue 12): ``gpu_contiguous``, nodes that a host op's
``make_node`` builds on the device, ``CudaNdarray.zeros``, and Theano 0.7's 4-argument ``make_thunk``."""
import numpy as np
import pytest

import coursekit as theano
import coursekit.devices as devices
import coursekit.tensor as T
from coursekit.cuda import SourceModule
from coursekit.devices import DeviceError
from coursekit.theano.sandbox import cuda
from coursekit.devices.kernel_inputs import GpuContiguous, gpu_contiguous
from coursekit.devices.kernel_inputs import as_device_variable as as_cuda_ndarray_variable

TRIPLE = """
__global__ void triple(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3 * x[i];
}"""


class TripleOp(theano.Op):
    """Written as Theano users wrote GPU ops: device inputs from make_node, a thunk over storage cells."""

    __props__ = ()

    def make_node(self, x):
        x = gpu_contiguous(as_cuda_ndarray_variable(x))
        return theano.Apply(self, [x], [x.type()])

    def make_thunk(self, node, storage_map, compute_map, no_recycling):
        kernel = SourceModule(TRIPLE).get_function("triple")
        x_cell, y_cell = storage_map[node.inputs[0]], storage_map[node.outputs[0]]

        def thunk():
            x = x_cell[0]
            if y_cell[0] is None or y_cell[0].shape != x.shape:
                y_cell[0] = cuda.CudaNdarray.zeros(x.shape)
            kernel(x, y_cell[0], np.int32(x.size), block=(64, 1, 1), grid=((x.size + 63) // 64, 1))

        return thunk


def test_gpu_contiguous_values_and_gradient_match_numpy(device):
    rng = np.random.default_rng(11)
    v, w = rng.standard_normal((5, 3)).astype("float32"), rng.standard_normal((3, 5)).astype("float32")
    x, wv = T.fmatrix("x"), T.fmatrix("w")
    c = gpu_contiguous(x.T)
    f = theano.function([x, wv], [c, T.grad(T.sum(T.tanh(c) * wv), x)])
    got, grad = (np.asarray(r) for r in f(v, w))
    np.testing.assert_array_equal(got, v.T)
    np.testing.assert_allclose(grad, ((1 - np.tanh(v.T) ** 2) * w).T, rtol=1e-5)
    kinds = [type(n.op).__name__ for n in f.toposort()]
    assert ("GpuContiguous" in kinds) == (device == "sim") and ("Contiguous" in kinds) == (device == "cpu")


def test_contiguous_copies_only_what_is_not_contiguous():
    with theano.config.change(device="sim"):
        x = theano.shared(np.arange(12, dtype="float32").reshape(3, 4))
        f = theano.function([], [gpu_contiguous(x), gpu_contiguous(x.T)])
    node = [n for n in f.toposort() if isinstance(n.op, GpuContiguous)][0]
    assert node.op.view_map == {0: [0]} and node.op.device == "gpu"
    same, transposed = f()
    np.testing.assert_array_equal(same, np.arange(12).reshape(3, 4))
    np.testing.assert_array_equal(transposed, np.arange(12).reshape(3, 4).T)


def test_a_host_ops_device_nodes_are_placed_on_the_functions_device():
    v = np.linspace(-1, 1, 200, dtype="float32").reshape(10, 20)
    with theano.config.change(device="sim"):
        x = T.fmatrix("x")
        out = TripleOp()(x.T)  # transposed: gpu_contiguous must copy before the kernel reads it linearly
        f = theano.function([x], out)
    nodes = f.toposort()
    assert [type(n.op).__name__ for n in nodes] == ["GpuFromHost", "GpuDimShuffle", "GpuContiguous", "TripleOp",
                                                    "HostFromGpu"]
    sim = devices.get("sim")
    assert all(o.type.device is sim for n in nodes[:-1] for o in n.outputs), "every device value is on sim"
    np.testing.assert_allclose(f(v), 3 * v.T)
    np.testing.assert_allclose(f(2 * v), 6 * v.T)  # the output buffer is reused when it fits


def test_a_host_op_that_needs_device_memory_is_refused_on_the_cpu_with_the_users_line():
    x = T.fmatrix("x")
    y = TripleOp()(x)  # the line the error names
    with pytest.raises(DeviceError, match=r"TripleOp works on device memory.*y = TripleOp\(\)\(x\).*device='sim'"):
        theano.function([x], y)


def test_cuda_ndarray_allocates_on_the_kernel_device_and_is_not_a_constructor():
    z = cuda.CudaNdarray.zeros((2, 3))
    assert devices.is_device_array(z) and z.dtype == np.float32 and z.shape == (2, 3)
    np.testing.assert_array_equal(z.get(), 0)
    with pytest.raises(TypeError, match="CudaNdarray.zeros"):
        cuda.CudaNdarray((2, 3))
