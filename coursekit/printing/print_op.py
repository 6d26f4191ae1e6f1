"""``printing.Print``: print a value while a compiled function runs (Theano's debugging op).

``x_printed = Print("x is")(x)`` is ``x`` itself, plus a line on stdout each
time the function computes it.  Use ``x_printed`` in place of ``x`` so that
the print is part of the graph.  ``attrs`` chooses what to show: ``('shape',)``,
``('__str__',)`` (the default: the value), ``('min', 'max')`` ...  A custom
``global_fn(op, value)`` replaces the printing.  The gradient passes straight
through, so a Print never changes what a model learns.
"""
from __future__ import annotations

import numpy as np

from ..graph import Apply, Op
from ..tensor.type import host_like
from ..tensor.var import as_tensor_variable


class Print(Op):
    """Print ``message`` and some attributes of the value, then pass the value on unchanged."""
    verified_outputs = True

    __props__ = ("message", "attrs")
    view_map = {0: [0]}
    fold_constants = False  # printing is the point: never compute it away at compile time

    def __init__(self, message="", attrs=("__str__",), global_fn=None):
        self.message, self.attrs = message, tuple(attrs)
        self.global_fn = global_fn or _default_print

    def make_node(self, x):
        x = as_tensor_variable(x)
        return Apply(self, [x], [host_like(x)])

    def perform(self, node, inputs, output_storage):
        value = inputs[0]
        self.global_fn(self, value)
        output_storage[0][0] = value

    def L_op(self, inputs, outputs, output_grads):
        return [output_grads[0]]


def _default_print(op, value):
    host = value if isinstance(value, np.ndarray) or not hasattr(value, "get") else value.get()
    for attr in op.attrs:
        shown = getattr(host, attr)
        if callable(shown):
            shown = shown()
        print(op.message, attr, "=", shown)
