"""Advanced indexing: integer arrays and boolean masks anywhere in an index.

``p[T.arange(n), y]`` picks one element per row (the log-likelihood of the
right class in every logistic regression tutorial); ``x[x > 0]`` keeps the
positive elements.  The index may mix slices, ints, ``None``, integer
tensors and boolean tensors; the result follows NumPy's rules exactly,
because the op hands the decoded index to NumPy (or CuPy: the code only
uses ``xp`` indexing).

``set_subtensor(x[idx], y)`` and ``inc_subtensor(x[idx], y)`` return ``x``
with ``y`` written into / added to ``x[idx]``.  Repeated indices accumulate
in ``inc_subtensor`` (``numpy.add.at``), which is also what the gradient of
an advanced index needs.
"""
from __future__ import annotations

import numpy as np

from ..graph import Apply, Variable
from .elemwise import reduce_to_broadcast
from .math import cast, zeros_like
from .math import sum as tsum
from .subtensor import AdvancedSubtensor1, IncSubtensor, Subtensor, _describe, _encode
from .type import TensorType, host_like
from .var import as_tensor_variable
from .xpop import XpOp, add_at

_ARRAY = "array"  # placeholder kind for a tensor index input


def is_advanced(entry):
    """Is this index entry an integer/boolean array (symbolic or not)?"""
    if isinstance(entry, Variable):
        return entry.type.ndim > 0 or entry.type.dtype == "bool"
    if isinstance(entry, (list, np.ndarray)):
        return True
    return isinstance(entry, (bool, np.bool_))


def encode_index(x, index):
    """(hashable template, symbolic inputs) for an index tuple that may contain arrays."""
    if not isinstance(index, tuple):
        index = (index,)
    if any(i is Ellipsis for i in index):
        pos = index.index(Ellipsis)
        used = sum(_axes_used(i) for i in index if i is not Ellipsis)
        index = index[:pos] + (slice(None),) * (x.type.ndim - used) + index[pos + 1:]
    template, symbolic = [], []
    for entry in index:
        if is_advanced(entry):
            var = entry if isinstance(entry, Variable) else as_tensor_variable(np.asarray(entry))
            if var.type.dtype != "bool" and var.type.dtype[0] not in "iu":
                raise TypeError(f"an index array must hold integers or booleans, got {var} of type {var.type}. "
                                 "Cast it: T.cast(idx, 'int64').")
            symbolic.append(var)
            template.append((_ARRAY, var.type.dtype == "bool", var.type.ndim))
        else:
            template.append(_encode(entry, symbolic))
    used = sum(e[2] if e[0] == _ARRAY and e[1] else 0 if e[0] == "newaxis" else 1 for e in template)
    if used > x.type.ndim:
        raise IndexError(f"too many indices for {x.type}: the index uses {used} dimensions")
    return tuple(template), symbolic


def _axes_used(entry):
    if entry is None:
        return 0
    if isinstance(entry, Variable) and entry.type.dtype == "bool":
        return entry.type.ndim
    if isinstance(entry, np.ndarray) and entry.dtype == bool:
        return entry.ndim
    return 1


def decode_index(template, values):
    """The concrete index tuple for NumPy from the template and the input values."""
    it = iter(values)
    fill = lambda p: next(it) if p == "?" else p  # noqa: E731
    index = []
    for entry in template:
        kind = entry[0]
        if kind == _ARRAY:
            index.append(next(it))
        elif kind == "slice":
            index.append(slice(fill(entry[1]), fill(entry[2]), fill(entry[3])))
        elif kind == "newaxis":
            index.append(None)
        else:
            index.append(int(fill(entry[1])))
    return tuple(index)


def _output_type(x, template, index_vars):
    """dtype and broadcastable pattern of ``x[index]``, found by indexing a small stand-in array."""
    dummy = np.zeros([1 if b else 3 for b in x.type.broadcastable], dtype="int8")
    it = iter(index_vars)
    index = []
    has_mask = False
    for entry in template:
        if entry[0] == _ARRAY:
            var = next(it)
            if entry[1]:
                has_mask = True
                index.append(np.ones([1 if b else 3 for b in x.type.broadcastable][len(index):len(index)
                                                                                    + entry[2]], dtype=bool))
            else:
                index.append(np.zeros([1 if b else 2 for b in var.type.broadcastable], dtype="int64"))
        elif entry[0] == "slice":
            for part in entry[1:]:
                if part == "?":
                    next(it)
            index.append(slice(None))
        elif entry[0] == "newaxis":
            index.append(None)
        else:
            if entry[1] == "?":
                next(it)
            index.append(0)
    shape = dummy[tuple(index)].shape
    return TensorType(x.type.dtype, tuple(s == 1 and not has_mask for s in shape))


def _check_bounds(xp, x, index, what):
    """``x[index]``, or an IndexError that says which index and which axis, instead of NumPy's terse one.

    NumPy checks integer arrays itself; CuPy does not (an index past the end wraps around), so on a GPU
    each integer array is checked against its axis first."""
    if xp is not np:
        axis = 0
        for entry in index:
            if getattr(entry, "ndim", 0) and entry.dtype != bool:
                size = x.shape[axis]
                if entry.size and (int(entry.max()) >= size or int(entry.min()) < -size):
                    _bounds_error(x, index, what, f"index {int(entry.max())} or {int(entry.min())} is out of "
                                                  f"bounds for axis {axis} with size {size}")
            axis += 0 if entry is None else entry.ndim if getattr(entry, "dtype", None) == bool else 1
    try:
        return x[index]
    except IndexError as exc:
        _bounds_error(x, index, what, exc)


def _bounds_error(x, index, what, reason):
    described = ", ".join(_describe_value(i) for i in index)
    raise IndexError(f"{what}: the index [{described}] does not fit an array of shape {x.shape}: {reason}. "
                     "Check the index values (and that they are computed for this array).") from None


def _describe_value(i):
    if isinstance(i, slice):
        return ":".join("" if p is None else str(p) for p in (i.start, i.stop)) + (f":{i.step}" if i.step else "")
    if i is None:
        return "None"
    if getattr(i, "ndim", 0):
        return f"{i.dtype} array of shape {i.shape}" + (f" (values {int(i.min())}..{int(i.max())})"
                                                          if i.size and i.dtype != bool else "")
    return str(i)


class _AdvancedIndexOp(XpOp):
    """What the advanced-indexing ops share: index arrays live with the data (on the GPU when it is there);
    scalar slice bounds and ints stay on the host.  ``first_index``: the position of the first index input."""
    verified_outputs = True

    first_index = 1

    def host_input(self, position, var):
        return position >= self.first_index and var.type.ndim == 0


class AdvancedSubtensor(_AdvancedIndexOp):
    """``x[index]`` where the index holds integer or boolean arrays (a copy, as in NumPy)."""
    verified_outputs = True

    __props__ = ("template",)
    gpu_name = "GpuAdvancedSubtensor"

    def __init__(self, template):
        self.template = tuple(template)

    def __str__(self):
        return "AdvancedSubtensor{" + ", ".join(_describe_entry(e) for e in self.template) + "}"

    def make_node(self, x, *index_vars):
        x = as_tensor_variable(x)
        return Apply(self, [x, *index_vars], [_output_type(x, self.template, index_vars).make_variable()])

    def run(self, xp, inputs, output_storage):
        x, *values = inputs
        result = _check_bounds(xp, x, decode_index(self.template, values), "advanced indexing")
        output_storage[0][0] = xp.asarray(result)

    def L_op(self, inputs, outputs, output_grads):
        x, *values = inputs
        gx = AdvancedIncSubtensor(self.template)(zeros_like(x), output_grads[0], *values)
        return [gx] + [None] * len(values)


class AdvancedIncSubtensor(_AdvancedIndexOp):
    """``x`` with ``y`` added at (or, with ``set_instead_of_inc``, written to) ``x[index]``."""
    verified_outputs = True

    __props__ = ("template", "set_instead_of_inc")
    gpu_name = "GpuAdvancedIncSubtensor"
    first_index = 2

    def __init__(self, template, set_instead_of_inc=False):
        self.template, self.set_instead_of_inc = tuple(template), set_instead_of_inc

    def __str__(self):
        kind = "set" if self.set_instead_of_inc else "inc"
        return f"AdvancedIncSubtensor{{{kind}; " + ", ".join(_describe_entry(e) for e in self.template) + "}"

    def make_node(self, x, y, *index_vars):
        x, y = as_tensor_variable(x), as_tensor_variable(y)
        target = _output_type(x, self.template, index_vars)
        if y.type.ndim > target.ndim:
            raise TypeError(f"{'set' if self.set_instead_of_inc else 'inc'}_subtensor: the value {y} ({y.type}) "
                            f"has more dimensions than the indexed part of {x} ({target.ndim})")
        if y.type.dtype != x.type.dtype:
            y = cast(y, x.type.dtype)
        return Apply(self, [x, y, *index_vars], [host_like(x)])

    def run(self, xp, inputs, output_storage):
        x, y, *values = inputs
        out = x.copy()
        index = decode_index(self.template, values)
        _check_bounds(xp, out, index, "set_subtensor" if self.set_instead_of_inc else "inc_subtensor")
        if self.set_instead_of_inc:
            out[index] = y
        else:
            add_at(xp, out, _masks_to_ints(index), y)
        output_storage[0][0] = out

    def L_op(self, inputs, outputs, output_grads):
        x, y, *values = inputs
        (gz,) = output_grads
        gx = AdvancedIncSubtensor(self.template, True)(gz, 0, *values) if self.set_instead_of_inc else gz
        gy = AdvancedSubtensor(self.template)(gz, *values)
        if gy.type.ndim > y.type.ndim:
            gy = tsum(gy, axis=tuple(range(gy.type.ndim - y.type.ndim)))
        return [gx, reduce_to_broadcast(gy, y)] + [None] * len(values)


def _masks_to_ints(index):
    """``add.at`` wants integer arrays: a boolean mask becomes its ``nonzero()`` arrays."""
    result = []
    for i in index:
        if getattr(i, "ndim", 0) and i.dtype == bool:
            result.extend(i.nonzero())
        else:
            result.append(i)
    return tuple(result)


def _describe_entry(entry):
    if entry[0] == _ARRAY:
        return "bool mask" if entry[1] else "int array"
    return _describe(entry)


def advanced_subtensor(x, index):
    template, symbolic = encode_index(x, index)
    return AdvancedSubtensor(template)(x, *symbolic)


# ------------------------------------------------------ set_subtensor / inc_subtensor
def set_subtensor(x, y, inplace=False, tolerate_inplace_aliasing=False):
    """``x`` here is ``a[idx]``; returns ``a`` with ``a[idx] = y`` (Theano's ``T.set_subtensor``)."""
    return _inc_or_set(x, y, set_instead_of_inc=True, what="set_subtensor")


def inc_subtensor(x, y, inplace=False, set_instead_of_inc=False, tolerate_inplace_aliasing=False):
    """``x`` here is ``a[idx]``; returns ``a`` with ``a[idx] += y`` (repeated indices accumulate)."""
    return _inc_or_set(x, y, set_instead_of_inc=set_instead_of_inc, what="inc_subtensor")


def _inc_or_set(sub, y, set_instead_of_inc, what):
    sub = as_tensor_variable(sub)
    node = sub.owner
    if node is None or not isinstance(node.op, (Subtensor, AdvancedSubtensor, AdvancedSubtensor1)):
        made_by = "an input" if node is None else f"{node.op}"
        raise TypeError(f"{what}(x, y): x must be an indexed tensor such as a[1:3] or a[idx, 0], "
                        f"but {sub} is {made_by}. Write {what}(a[index], y).")
    y = as_tensor_variable(y)
    if y.type.ndim > sub.type.ndim:
        raise TypeError(f"{what}: the value {y} ({y.type}) has more dimensions than {sub} ({sub.type})")
    base = node.inputs[0]
    if y.type.dtype != base.type.dtype:
        y = cast(y, base.type.dtype)
    if isinstance(node.op, Subtensor):
        return IncSubtensor(node.op.idx_list, set_instead_of_inc)(base, y, *node.inputs[1:])
    if isinstance(node.op, AdvancedSubtensor1):
        template = ((_ARRAY, False, 1),)
    else:
        template = node.op.template
    return AdvancedIncSubtensor(template, set_instead_of_inc)(base, y, *node.inputs[1:])
