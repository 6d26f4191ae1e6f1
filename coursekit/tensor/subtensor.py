"""Indexing: ``x[1:3, i]`` (basic, a view), ``x[int_vector]`` (advanced, a copy).

Basic indices may be symbolic integer scalars.  The op keeps a template of
the index (``idx_list``) with placeholders where symbolic values go; those
values are extra inputs of the node.  Slices are stored as tuples because
Python's slice objects are not hashable and ops must be.
"""
from __future__ import annotations

import numpy as np

from ..graph import Apply, Variable
from .. import tensor as _tensor  # this package: modules that build on this one are reached through it when code runs
from .dimshuffle import reduce_to_broadcast
from .type import TensorType, host_like
from .var import as_tensor_variable, get_vector_length, vector_length_from
from .xpop import XpOp, add_at, check_rows

_SYM = "?"  # placeholder for a symbolic integer in idx_list


def _encode(entry, symbolic):
    """Turn one index entry into a hashable template; collect symbolic parts."""
    def part(v):
        if v is None:
            return None
        if isinstance(v, Variable):
            if v.type.ndim != 0 or v.type.dtype[0] not in "iu":
                raise TypeError(f"an index must be an integer scalar, got {v.type}")
            symbolic.append(v)
            return _SYM
        if isinstance(v, (int, np.integer)):
            return int(v)
        raise TypeError(f"index entries must be ints, slices, None or integer scalars; got {v!r}")

    if isinstance(entry, slice):
        return ("slice", part(entry.start), part(entry.stop), part(entry.step))
    if entry is None:
        return ("newaxis",)
    return ("int", part(entry))


def _decode(idx_list, values):
    it = iter(values)
    fill = lambda p: int(next(it)) if p == _SYM else p  # noqa: E731  (Python ints: CuPy wants them)
    index = []
    for entry in idx_list:
        if entry[0] == "slice":
            index.append(slice(fill(entry[1]), fill(entry[2]), fill(entry[3])))
        elif entry[0] == "newaxis":
            index.append(None)
        else:
            index.append(int(fill(entry[1])))
    return tuple(index)


def _output_bcast(idx_list, bcast):
    out, axis = [], 0
    for entry in idx_list:
        if entry[0] == "newaxis":
            out.append(True)
            continue
        if entry[0] == "slice":
            whole = entry[1] is None and entry[2] is None and entry[3] in (None, 1)
            out.append(bcast[axis] if whole else False)
        axis += 1
    return tuple(out) + tuple(bcast[axis:])


class Subtensor(XpOp):
    """Basic indexing; the output is a view of the input."""
    verified_outputs = True

    __props__ = ("idx_list",)
    view_map = {0: [0]}
    gpu_name = "GpuSubtensor"

    def host_input(self, position, var):
        return position > 0  # symbolic indices are host integers

    def __init__(self, idx_list):
        self.idx_list = tuple(idx_list)

    def __str__(self):
        return "Subtensor{" + ", ".join(_describe(e) for e in self.idx_list) + "}"

    def make_node(self, x, *index_vars):
        n_axes = sum(e[0] != "newaxis" for e in self.idx_list)
        if n_axes > x.type.ndim:
            raise IndexError(f"too many indices ({n_axes}) for {x.type}")
        bcast = _output_bcast(self.idx_list, x.type.broadcastable)
        return Apply(self, [x, *index_vars], [TensorType(x.type.dtype, bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        x, *values = inputs
        index = _decode(self.idx_list, values)
        try:
            result = x[index]
        except IndexError as exc:
            raise IndexError(f"index {index} is out of bounds for an array of shape {x.shape}: {exc}") from None
        # an int index on every axis gives a NumPy scalar (which has .shape too): keep it a 0-d array
        output_storage[0][0] = np.asarray(result) if isinstance(result, np.generic) else result

    def grad(self, inputs, output_grads):
        M = _tensor.math
        x, *values = inputs
        gx = IncSubtensor(self.idx_list)(M.zeros_like(x), output_grads[0], *values)
        return [gx] + [None] * len(values)


@vector_length_from.register(Subtensor)
def _sliced_length(op, var):
    """A constant slice of a vector of known length (``x.shape[2:]``); None for anything else."""
    node = var.owner
    if len(node.inputs) == 1:
        (entry,) = op.idx_list
        if entry[0] == "slice":
            return len(range(get_vector_length(node.inputs[0]))[slice(*entry[1:])])
    return None


class IncSubtensor(XpOp):
    """``x`` with ``y`` added to (or written into) ``x[index]``; returns a new array."""
    verified_outputs = True

    __props__ = ("idx_list", "set_instead_of_inc")
    gpu_name = "GpuIncSubtensor"

    def host_input(self, position, var):
        return position > 1  # symbolic indices are host integers; y moves with x

    def __init__(self, idx_list, set_instead_of_inc=False):
        self.idx_list, self.set_instead_of_inc = tuple(idx_list), set_instead_of_inc

    def make_node(self, x, y, *index_vars):
        return Apply(self, [x, as_tensor_variable(y), *index_vars], [host_like(x)])

    def run(self, xp, inputs, output_storage):
        x, y, *values = inputs
        out = x.copy()
        index = _decode(self.idx_list, values)
        if self.set_instead_of_inc:
            out[index] = y
        else:
            out[index] += y
        output_storage[0][0] = out

    def grad(self, inputs, output_grads):
        M = _tensor.math
        x, y, *values = inputs
        (gz,) = output_grads
        gx = IncSubtensor(self.idx_list, True)(gz, 0, *values) if self.set_instead_of_inc else gz
        gy = Subtensor(self.idx_list)(gz, *values)
        if gy.type.ndim > y.type.ndim:
            gy = M.sum(gy, axis=tuple(range(gy.type.ndim - y.type.ndim)))
        return [gx, reduce_to_broadcast(gy, y) if gy.type.ndim == y.type.ndim else gy] + [None] * len(values)


class AdvancedSubtensor1(XpOp):
    """``x[int_vector]``: gather rows (a copy)."""
    verified_outputs = True

    gpu_name = "GpuAdvancedSubtensor1"

    def make_node(self, x, idx):
        if idx.type.ndim != 1 or idx.type.dtype[0] not in "iu":
            raise TypeError(f"advanced indexing takes an integer vector, got {idx.type}")
        bcast = (False,) + x.type.broadcastable[1:]
        return Apply(self, [x, idx], [TensorType(x.type.dtype, bcast).make_variable()])

    def run(self, xp, inputs, output_storage):
        x, idx = inputs
        check_rows(x, idx, "x[idx]")
        output_storage[0][0] = x[idx]

    def grad(self, inputs, output_grads):
        return [_adv_inc(inputs, output_grads), None]


def _adv_inc(inputs, output_grads):
    return AdvancedIncSubtensor1()(_tensor.math.zeros_like(inputs[0]), output_grads[0], inputs[1])


class AdvancedIncSubtensor1(XpOp):
    """``x`` with ``y`` added at rows ``idx`` (repeated rows accumulate)."""
    verified_outputs = True

    gpu_name = "GpuAdvancedIncSubtensor1"

    def make_node(self, x, y, idx):
        return Apply(self, [x, y, idx], [host_like(x)])

    def run(self, xp, inputs, output_storage):
        x, y, idx = inputs
        out = x.copy()
        check_rows(out, idx, "inc_subtensor(x[idx], y)")
        add_at(xp, out, idx, y)
        output_storage[0][0] = out

    def grad(self, inputs, output_grads):
        (gz,) = output_grads
        return [gz, AdvancedSubtensor1()(gz, inputs[2]), None]


def _describe(entry):
    if entry[0] == "newaxis":
        return "newaxis"
    if entry[0] == "int":
        return str(entry[1])
    return ":".join("" if p is None else str(p) for p in entry[1:3]) + (f":{entry[3]}" if entry[3] else "")


def make_subtensor(x, index):
    """Build the node for ``x[index]``."""
    if not isinstance(index, tuple):
        index = (index,)
    if len(index) == 1 and _is_int_vector(index[0]):
        return AdvancedSubtensor1()(x, as_tensor_variable(index[0]) if not isinstance(index[0], Variable)
                                    else index[0])
    advanced = _tensor.advanced
    if any(advanced.is_advanced(i) for i in index):
        return advanced.advanced_subtensor(x, index)
    if any(i is Ellipsis for i in index):
        pos = index.index(Ellipsis)
        fill = x.type.ndim - (len(index) - 1 - sum(i is None for i in index))
        index = index[:pos] + (slice(None),) * fill + index[pos + 1:]
    symbolic = []
    idx_list = tuple(_encode(e, symbolic) for e in index)
    return Subtensor(idx_list)(x, *symbolic)


def _is_int_vector(entry):
    if isinstance(entry, Variable):
        return entry.type.ndim == 1 and entry.type.dtype[0] in "iu"
    if isinstance(entry, (list, np.ndarray)):
        arr = np.asarray(entry)
        return arr.ndim == 1 and arr.dtype.kind in "iu"
    return False
