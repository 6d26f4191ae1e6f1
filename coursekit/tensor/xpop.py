"""Ops written once: one class computes on the CPU and, through its GPU twin, on any GPU device.

An op that may run on a GPU declares, besides ``make_node`` and ``grad``:

* ``run(xp, inputs, output_storage)`` -- the computation, written against the
  array module ``xp`` (NumPy on the CPU and the simulated GPU, CuPy on a
  real one).  ``output_storage[i][0]`` holds the previous result (or None):
  reuse it when it fits, or store a new array;
* ``gpu_name`` -- the class name of its GPU twin, as students see it in
  ``toposort()`` (``"GpuGemm"``).  ``None`` (the default) keeps the op on the host;
* ``host_inputs`` -- positions of inputs that stay in host memory (shapes,
  scalars, indices): placement never copies them to the device.

Optional, for ops whose kernel the device builds: ``device_kernel(device,
node)`` returns ``f(inputs, output_storage)`` (``Elemwise`` asks the device for
one generated elementwise kernel); ``gpu_supported(node)`` says whether this
node can run on a GPU at all.

The GPU twin itself is never written by hand: :func:`coursekit.devices.gpu_ops.gpu_twin`
makes it from the class (``docs/adding-an-op.md`` has a worked example).
"""
from __future__ import annotations

import functools

import numpy as np

from ..graph import Op


class XpOp(Op):
    """Base class for ops written once against ``xp`` (see the module docstring)."""
    verified_outputs = True

    gpu_name = None     # class name of the GPU twin; None: this op stays on the host
    host_inputs = ()    # input positions that stay in host memory

    def host_input(self, position, var):
        """Does input ``position`` (the variable ``var``) stay on the host when the op runs on a GPU?"""
        return position in self.host_inputs

    def gpu_supported(self, node):
        """Can this node run on a GPU?  (Yes, unless an op says otherwise.)"""
        return True

    def run(self, xp, inputs, output_storage):
        raise NotImplementedError(f"{type(self).__name__}.run(xp, inputs, output_storage)")

    def perform(self, node, inputs, output_storage):
        self.run(np, inputs, output_storage)

    def device_kernel(self, device, node):
        """``f(inputs, output_storage)`` on ``device``'s arrays: ``run`` with the device's array module."""
        return functools.partial(self.run, device.xp)


def add_at(xp, out, index, y):
    """``out[index] += y`` with repeated indices accumulating: ``numpy.add.at``, ``cupyx.scatter_add`` on CuPy."""
    if xp is np:
        np.add.at(out, index, y)
    else:
        import cupyx  # reached only with CuPy arrays, so CuPy is installed

        cupyx.scatter_add(out, index, y)


def check_rows(x, idx, what):
    """NumPy's bounds check of ``x[idx]`` for an integer vector ``idx``, made explicit: CuPy wraps around instead."""
    n = x.shape[0]
    if idx.size and (int(idx.max()) >= n or int(idx.min()) < -n):
        raise IndexError(f"{what}: index {int(idx.max())} or {int(idx.min())} is out of bounds for axis 0 with "
                         f"size {n} (an array of shape {x.shape}). Check the index values (and that they are "
                         "computed for this array).")
