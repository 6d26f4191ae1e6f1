"""``FusedSum``: an elementwise map, a full sum and a one-element tail as ONE reduction kernel.

A training step ends in small reductions: ``mean(xent(z, y))`` is an elementwise
kernel that writes ``xent`` to memory, a sum that reads it back, and then a
one-element kernel for ``sum / N + penalty``; the bias update ``b - lr * sum(g)``
is a sum and another one-element kernel.  On a GPU each of those is a launch
(microseconds each, against nanoseconds of work).  CuPy's ``ReductionKernel``
does map + reduce + post-map in one launch, and so does this op:

    FusedSum(map, post)(x_1, ..., x_m, p_1, ..., p_k)
        = post(sum(map(x_1, ..., x_m)), p_1, ..., p_k)

``map`` is a scalar op over the m (broadcast) arrays (``None``: the first array
itself); ``post`` is a scalar op over the sum and the k one-element values
(``None``: the sum).  The ``fused_reduce`` rewrite (:mod:`coursekit.rewriting.fused_reduce`)
makes it from a fused elementwise node, a ``Sum`` over every axis and its tail.
It is never differentiated: it only exists after ``grad`` has built the graph.
"""
from __future__ import annotations

import numpy as np

from ..graph import Apply
from ..work import reduction_work
from .type import TensorType
from .var import as_tensor_variable
from .xpop import XpOp


class FusedSum(XpOp):
    """``post(sum(map(arrays)), *scalars)`` in one pass (see the module docstring)."""
    verified_outputs = True

    __props__ = ("map_op", "n_map", "post_op", "dtype")
    gpu_name = "GpuFusedSum"
    # a one-element host value (1/N) is the kernel's scalar argument, never copied over (placement's host_scalars)
    scalar_arguments = True

    def __init__(self, map_op, n_map, post_op, dtype):
        self.map_op, self.n_map, self.post_op, self.dtype = map_op, n_map, post_op, dtype

    def __str__(self):
        inner = f"sum({self.map_op or 'i0'})"
        return f"FusedSum{{{inner}}}" if self.post_op is None else f"FusedSum{{{self.post_op}, a={inner}}}"

    def make_node(self, *inputs):
        inputs = [as_tensor_variable(v) for v in inputs]
        arrays, scalars = inputs[:self.n_map], inputs[self.n_map:]
        # a one-element map input may come as a 0-d value (placement passes a padded host scalar as it is)
        ranks = {v.type.ndim for v in arrays if not all(v.type.broadcastable)}
        if not arrays or len(ranks) > 1:
            raise TypeError(f"{self}: the mapped inputs must be arrays of one rank, got {[str(v.type) for v in arrays]}")
        if any(not all(v.type.broadcastable) for v in scalars):
            raise TypeError(f"{self}: the tail's inputs must hold one element, got {[str(v.type) for v in scalars]}")
        return Apply(self, inputs, [TensorType(self.dtype, ()).make_variable()])

    def run(self, xp, inputs, output_storage):
        """The reference (NumPy, and the simulated GPU): map, sum, tail, as the three ops computed them."""
        arrays, scalars = inputs[:self.n_map], inputs[self.n_map:]
        mapped = arrays[0] if self.map_op is None else self.map_op.impl(*arrays)
        total = xp.asarray(mapped).sum(dtype=self.dtype)
        if self.post_op is not None:
            total = self.post_op.impl(xp.asarray(total), *[xp.asarray(v).reshape(()) for v in scalars])
        output_storage[0][0] = xp.asarray(total, dtype=self.dtype)

    def device_kernel(self, device, node):
        """One generated reduction kernel where the device builds one (CuPy's ``ReductionKernel``), else ``run``."""
        build = getattr(device, "map_reduce", None)
        if build is None:
            return super().device_kernel(device, node)
        on_host = [type(v.type) is TensorType for v in node.inputs]   # one-element host values: scalar arguments
        kernel = build(self.map_op, [v.type.dtype for v in node.inputs[:self.n_map]], self.post_op,
                       [v.type.dtype for v in node.inputs[self.n_map:]], on_host[self.n_map:], self.dtype)
        cupy, dtype = device.xp, np.dtype(self.dtype)
        host_positions = [k for k, host in enumerate(on_host) if host]

        def run(inputs, output_storage):
            out = output_storage[0][0]
            if not (isinstance(out, cupy.ndarray) and out.shape == () and out.dtype == dtype):
                out = None      # the first call allocates the 0-d result; every later call writes into it
            args = list(inputs)
            for k in host_positions:                 # a loop, not a comprehension: no Python frame per call
                args[k] = args[k].reshape(()).item()
            output_storage[0][0] = kernel(*args, out=out)

        return run

    def work(self, node, shapes, dtypes):
        return reduction_work(shapes[0], dtypes[0], self.dtype, tuple(range(len(shapes[0] or ()))))

    def L_op(self, inputs, outputs, output_grads):
        raise NotImplementedError("FusedSum is made by a compile-time rewrite, after gradients are built")
