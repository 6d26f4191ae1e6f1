"""``ViewOp``: the identity as an op of its own, for ops that change only what flows back.

Theano's ``theano.compile.ViewOp`` returns its input (a view, nothing computed) and passes gradients through
unchanged.  Its use is to be subclassed: a user's op that overrides ``grad`` (clip it, scale it) and is
taken out of the compiled graph by a rewrite (``OpRemove`` registered at canonicalize) once the gradient
graph is built::

    class GradClip(coursekit.compile.ViewOp):
        def __init__(self, lo, hi): self.lo, self.hi = lo, hi
        def grad(self, inputs, output_grads): return [T.clip(g, self.lo, self.hi) for g in output_grads]

coursekit's own identity ops of this kind are in :mod:`coursekit.tensor.gradient_gates`.
"""
from __future__ import annotations

from ..graph import Apply
from ..tensor.type import host_like
from ..tensor.var import as_tensor_variable
from ..tensor.xpop import XpOp

__all__ = ["ViewOp", "view_op"]


class ViewOp(XpOp):
    """Returns its input, as a view; the gradient passes through unchanged (subclasses change it)."""

    view_map = {0: [0]}
    __props__ = ()
    gpu_name = "GpuViewOp"

    def make_node(self, x):
        x = as_tensor_variable(x)
        return Apply(self, [x], [host_like(x)])

    def run(self, xp, inputs, output_storage):
        output_storage[0][0] = inputs[0]

    def infer_shape(self, node, input_shapes):
        return input_shapes

    def grad(self, inputs, output_grads):
        return list(output_grads)

    def __str__(self):
        return type(self).__name__


view_op = ViewOp()
