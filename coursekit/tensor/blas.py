"""Matrix products: ``Dot`` (any of vector/matrix), and the BLAS-shaped ``Gemv``/``Gemm``.

``Gemm`` computes ``beta * z + alpha * dot(x, y)`` in one BLAS call.  Users
never write it: the ``gemm`` rewrite recognises ``dot(x, y) + b`` (possibly
scaled) and replaces it, which saves a temporary and a pass over memory.
"""
from __future__ import annotations

import numpy as np

from ..graph import Apply, Constant
from ..work import matmul_work
from .. import tensor as _tensor  # this package: modules that build on this one are reached through it when code runs
from .dimshuffle import reduce_to_broadcast
from .type import TensorType
from .var import as_tensor_variable
from .xpop import XpOp


def _result_dtype(*vars_):
    return np.result_type(*[v.type.dtype for v in vars_]).name


class Dot(XpOp):
    """``numpy.dot`` on vectors and matrices."""
    verified_outputs = True

    __props__ = ()
    gpu_name = "GpuDot"

    def make_node(self, x, y):
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        if x.type.ndim not in (1, 2) or y.type.ndim not in (1, 2):
            raise TypeError(f"dot takes vectors and matrices, got {x.type} and {y.type} "
                            "(for scalars use *, for higher ranks use T.tensordot-style reshapes)")
        bx, by = x.type.broadcastable, y.type.broadcastable
        bcast = (bx[:-1] if x.type.ndim == 2 else ()) + (by[1:] if y.type.ndim == 2 else ())
        return Apply(self, [x, y], [TensorType(_result_dtype(x, y), bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        x, y = inputs
        out = output_storage[0][0]
        if (xp is not np and isinstance(out, xp.ndarray) and out.dtype == np.result_type(x.dtype, y.dtype)
                and out.shape == x.shape[:-1] + y.shape[1:] and out.flags.c_contiguous):
            xp.dot(x, y, out=out)   # on a GPU: the previous buffer takes the product, nothing allocated per call
            return
        output_storage[0][0] = xp.asarray(xp.dot(x, y))  # vector . vector gives a scalar

    def work(self, node, shapes, dtypes):
        return matmul_work(shapes[0], shapes[1], node.outputs[0].type.dtype)

    def make_thunk(self, node, storage_map):
        a, b = (storage_map[v] for v in node.inputs)
        cell = storage_map[node.outputs[0]]
        dot, asarray = np.dot, np.asarray

        def thunk():
            cell[0] = asarray(dot(a[0], b[0]))

        return thunk

    def grad(self, inputs, output_grads):
        M = _tensor.math
        x, y = inputs
        (gz,) = output_grads
        if x.type.ndim == 1 and y.type.ndim == 1:
            gx, gy = gz * y, gz * x
        elif x.type.ndim == 2 and y.type.ndim == 1:
            gx, gy = M.outer(gz, y), M.dot(x.T, gz)
        elif x.type.ndim == 1 and y.type.ndim == 2:
            gx, gy = M.dot(y, gz), M.outer(x, gz)
        else:
            gx, gy = M.dot(gz, y.T), M.dot(x.T, gz)

        return [reduce_to_broadcast(gx, x), reduce_to_broadcast(gy, y)]


class Gemm(XpOp):
    """``z <- beta * z + alpha * dot(x, y)`` for matrices (BLAS GEMM).

    ``inplace=True`` overwrites the ``z`` buffer (only used by the compiler
    when ``z`` is an intermediate nobody else reads).
    """
    verified_outputs = True

    __props__ = ("inplace",)
    gpu_name = "GpuGemm"
    host_inputs = (1, 4)  # alpha and beta: host scalars

    def __init__(self, inplace=False):
        self.inplace = inplace
        self.destroy_map = {0: [0]} if inplace else {}

    def __str__(self):
        return "Gemm{inplace}" if self.inplace else "Gemm{no_inplace}"

    def make_node(self, z, alpha, x, y, beta):
        z, alpha, x, y, beta = map(as_tensor_variable, (z, alpha, x, y, beta))
        dot_out = Dot().make_node(x, y).outputs[0].type
        return Apply(self, [z, alpha, x, y, beta], [TensorType(_result_dtype(z, x, y), dot_out.broadcastable)
                                                    .make_variable()])

    def run(self, xp, inputs, output_storage):
        z, alpha, x, y, beta = inputs
        output_storage[0][0] = gemm(xp.dot, z, float(alpha), x, y, float(beta), self.inplace)

    def device_kernel(self, device, node):
        """On a device with a BLAS library (``device.blas``: cuBLAS on a real GPU), ONE gemm/gemv call into the
        output buffer, after copying ``z`` there when it is not overwritten in place; else ``run``."""
        dtypes = {v.type.dtype for v in (node.inputs[0], node.inputs[2], node.inputs[3], node.outputs[0])}
        if getattr(device, "blas", None) is None or len(dtypes) != 1 or dtypes & {"float32", "float64"} != dtypes:
            return super().device_kernel(device, node)
        return blas_call(device.xp, device.blas, self.inplace, node.inputs[3].type.ndim == 1)

    def work(self, node, shapes, dtypes):
        """``beta·z + alpha·x·y``: the product's FLOPs plus the scaling; reads z, x, y."""
        return matmul_work(shapes[2], shapes[3], node.outputs[0].type.dtype, z_shape=shapes[0], scale=True)

    def make_thunk(self, node, storage_map):
        """Read constant alpha/beta once, at link time (as Python floats, and as 0-d arrays for the float path)."""
        cells = [storage_map[v] for v in node.inputs]
        out = storage_map[node.outputs[0]]
        alpha_var, beta_var = node.inputs[1], node.inputs[4]
        inplace, dot = self.inplace, np.dot
        if not (isinstance(alpha_var, Constant) and isinstance(beta_var, Constant)):
            return super().make_thunk(node, storage_map)
        alpha, beta = float(alpha_var.data), float(beta_var.data)
        z_cell, x_cell, y_cell = cells[0], cells[2], cells[3]
        dtype = np.dtype(node.outputs[0].type.dtype)
        if inplace or dtype.kind != "f" or node.inputs[0].type.dtype != dtype:
            def thunk():
                out[0] = gemm(dot, z_cell[0], alpha, x_cell[0], y_cell[0], beta, inplace)

            return thunk
        # not in place, one float type: the same steps as gemm(), with alpha and beta as 0-d arrays of
        # that type and a z of length 1 everywhere (a bias b given axes) read as 0-d: on W3's vectors
        # each is ~0.3 us cheaper (the same values: a Python float takes the array's type too)
        alpha0, beta0 = np.asarray(alpha, dtype), np.asarray(beta, dtype)
        narrow_z = all(node.inputs[0].type.broadcastable)
        ndarray, multiply, add = np.ndarray, np.multiply, np.add

        def thunk():
            prod = dot(x_cell[0], y_cell[0])
            z = z_cell[0]
            if type(prod) is not ndarray or prod.dtype != dtype:
                out[0] = gemm(dot, z, alpha, x_cell[0], y_cell[0], beta, inplace)
                return
            if alpha != 1:
                multiply(prod, alpha0, out=prod)
            if beta != 0:
                if narrow_z:
                    z = z.reshape(())
                add(prod, z if beta == 1 else multiply(z, beta0), out=prod)
            out[0] = prod

        return thunk

    def grad(self, inputs, output_grads):
        raise NotImplementedError("Gemm is created by rewrites after gradients are taken; take grad of dot instead")


class Gemv(Gemm):
    """``z <- beta * z + alpha * dot(A, x)`` with a vector ``x`` (BLAS GEMV)."""
    verified_outputs = True

    gpu_name = "GpuGemv"

    def __str__(self):
        return "Gemv{inplace}" if self.inplace else "Gemv{no_inplace}"


def blas_call(xp, blas, inplace, vector):
    """``run(inputs, output_storage)`` of a Gemm/Gemv through a BLAS module shaped like ``cupy.cublas``.

    The product lands in the previous output buffer when it fits (no allocation after the first call);
    ``z`` is copied there first unless ``beta`` is 0 (BLAS then never reads it) or ``z`` itself is the
    buffer (in place).
    """
    ndarray = xp.ndarray

    def run(inputs, output_storage):
        z, alpha, x, y, beta = inputs
        alpha, beta = float(alpha), float(beta)
        shape = (x.shape[0],) if vector else (x.shape[0], y.shape[1])
        if inplace and z.shape == shape and z.flags.c_contiguous:
            out = z
        else:
            out = output_storage[0][0]
            if not (isinstance(out, ndarray) and out.shape == shape and out.dtype == x.dtype
                    and out.flags.c_contiguous) or out is z:
                out = xp.empty(shape, x.dtype)
            if beta != 0:
                xp.copyto(out, z)
        if vector:
            blas.gemv("N", alpha, x, y, beta, out)
        else:
            blas.gemm("N", "N", x, y, out=out, alpha=alpha, beta=beta)
        output_storage[0][0] = out

    return run


def gemm(dot, z, alpha, x, y, beta, inplace=False):
    """beta*z + alpha*dot(x, y) with one product and no temporary beyond it (any array module's ``dot``).

    The one GEMM combine: ``run`` and every GPU twin call it, and so does the CPU thunk where its
    float fast path (``Gemm.make_thunk``) does not apply.
    With ``inplace`` the result goes into ``z`` when the shapes agree.
    """
    prod = dot(x, y)
    if alpha != 1:
        prod *= alpha
    if beta == 0:
        return prod
    if inplace and z.shape == prod.shape:
        if beta != 1:
            z *= beta
        z += prod
        return z
    if beta != 1:
        prod += beta * z
    else:
        prod += z
    return prod
