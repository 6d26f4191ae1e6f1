"""Stand-in ops for printing and profiling tests: they only *declare* GPU placement and transfers.

The printer and the profiler must go by ``op.device`` and ``op.is_transfer``, never by class
names, so these fakes (plain NumPy underneath) must be drawn and timed like the real ops.
"""
import numpy as np

import coursekit as theano


class FakeTransfer(theano.Op):
    """Declared a transfer (GpuFromHost/HostFromGpu); nothing else about it is special."""

    is_transfer = True
    device = "gpu"
    __props__ = ("direction",)

    def __init__(self, direction):
        self.direction = direction

    def __str__(self):
        return self.direction

    def make_node(self, x):
        return theano.Apply(self, [x], [x.type.make_variable()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0].copy()


class FakeGpuExp(theano.Op):
    """Declared a GPU op; computes exp with NumPy."""

    device = "gpu"

    def make_node(self, x):
        return theano.Apply(self, [x], [x.type.make_variable()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = np.exp(inputs[0])
