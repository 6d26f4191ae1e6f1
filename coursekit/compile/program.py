"""``f.fn``: a compiled function's linked program, as Theano's introspection reads it.

Theano programs look inside a compiled function through ``f.fn`` (Theano's VM): ``f.fn.nodes`` and
``f.fn.thunks`` in the order they run, ``f.fn.storage_map`` (variable -> one-element storage cell), and
``f.fn()``, which runs the thunks on whatever the input cells hold -- no argument checks, no updates
applied, no copy of the outputs -- after a caller put values in ``f.input_storage[i].storage[0]`` and before
it reads ``f.output_storage[k].storage[0]``.  That is the fast path Theano's own code took to call a small
function many times; ``f(...)`` is the checked call.
"""
from __future__ import annotations

__all__ = ["LinkedProgram", "Cell"]


class Cell:
    """Theano's ``Container`` as programs read it: ``.storage`` (the one-element cell) and ``.data`` (its value)."""

    def __init__(self, variable, storage):
        self.variable, self.storage = variable, storage

    @property
    def data(self):
        return self.storage[0]

    @data.setter
    def data(self, value):
        self.storage[0] = value

    def __repr__(self):
        return f"<Cell of {self.variable}: {self.storage[0]!r}>"


class LinkedProgram:
    """The nodes, thunks and storage of one compiled function; calling it runs the thunks once, in order."""

    def __init__(self, function):
        self.function = function
        self.nodes = list(function.nodes)
        self.thunks = list(function.thunks)
        self.storage_map = function.storage_map
        self.call_counts = [0] * len(self.nodes)

    def __call__(self):
        for k, thunk in enumerate(self.thunks):
            thunk()
            self.call_counts[k] += 1

    def __len__(self):
        return len(self.nodes)

    def __repr__(self):
        return f"<linked program of {len(self.nodes)} nodes: {[str(n.op) for n in self.nodes]}>"
