"""Shared variables: values that live *in* the compiled functions.

A shared variable owns a storage cell (a one-element list).  Every function
that uses it reads and writes that very cell, which is why an update made by
one function is seen by all the others, and why ``set_value`` takes effect
without recompiling.  On a GPU device the cell holds a device array: the
data stays on the device between calls (that is the lesson of lesson 4).
"""
from __future__ import annotations

import itertools
import threading

import numpy as np

from ..devices.simarray import is_device_array
from ..graph import Variable
from ..tensor.type import TensorType
from ..tensor.var import _TensorMethods
from .shared_storage import initial_shared_storage, store_shared_value


class Container:
    """The storage cell of a shared variable, plus what may be stored in it.

    ``lock`` is held by every call of a function that *updates* the variable,
    from reading it to storing the new value, and by ``set_value``: two threads
    updating one shared variable take turns, so no update is lost.  ``order``
    is the order in which a call takes several such locks (always the same
    order, so two functions cannot each wait for the other).
    """

    __slots__ = ("storage", "type", "name", "lock", "order")
    _created = itertools.count()

    def __init__(self, type, value, name):
        self.type, self.storage, self.name = type, [value], name
        self.lock, self.order = threading.RLock(), next(Container._created)

    def __getstate__(self):  # a lock does not pickle: an unpickled container gets a fresh one
        return self.type, self.storage, self.name

    def __setstate__(self, state):
        self.type, self.storage, self.name = state
        self.lock, self.order = threading.RLock(), next(Container._created)

    @property
    def value(self):
        return self.storage[0]


class SharedVariable(Variable):
    """A variable with a value that persists across function calls."""

    def __init__(self, type, value, name=None, strict=False, allow_downcast=None):
        super().__init__(type, None, None, name)
        value = type.filter(value, strict=strict, allow_downcast=allow_downcast,
                            where=f"shared variable {name or ''}".strip())
        self.container = Container(type, value, name)

    def get_value(self, borrow=False, return_internal_type=False):
        """The current value: a copy unless ``borrow=True``.

        On a GPU device the value lives in device memory; you get a host copy
        unless ``return_internal_type=True``: then the device array itself
        (``borrow=True``) or a device copy, as the device hands arrays out (on a
        real GPU a handle, whose ``numpy.asarray`` is a host copy as in Theano).
        """
        value = self.container.storage[0]
        if not isinstance(value, np.ndarray):  # a device array
            if return_internal_type:
                device = getattr(self.type, "device", None)  # a GpuArrayType names the Device holding the value
                value = value if borrow else value.copy()
                return value if device is None else device.handle(value)
            return value.get()  # always a host copy
        return value if borrow else value.copy()

    def set_value(self, value, borrow=False):
        """Replace the value.  ``borrow=True`` lets coursekit keep your array without copying."""
        with self.container.lock:  # not in the middle of a call that updates this variable
            store_shared_value(self, value, borrow)

    def clone(self):
        return self

    @property
    def value(self):  # convenience for the REPL
        return self.get_value()

    def zero(self):
        self.set_value(np.zeros_like(self.get_value(borrow=True)), borrow=True)


class TensorSharedVariable(_TensorMethods, SharedVariable):
    """A shared variable that can be used in tensor expressions."""


def shared(value, name=None, borrow=False, strict=False, allow_downcast=None, broadcastable=None):
    """Make a shared variable holding ``value`` (copied unless ``borrow=True``).

    The dtype is the value's own (float64 NumPy data stays float64: cast to
    float32 yourself for a GPU).  No dimension is broadcastable by default,
    because the value may later be replaced by one of another shape.
    """
    if isinstance(value, Variable):
        raise TypeError("shared() takes a value (an array or a number), not a symbolic variable")
    if is_device_array(value):
        host = value.get()  # a device array: start from a host copy, placement decides where it lives
    else:
        host = np.array(value, copy=not borrow) if not (borrow and isinstance(value, np.ndarray)) else value
    if host.dtype == object:
        raise TypeError(f"shared() needs numeric data, got {type(value).__name__}")
    bcast = tuple(broadcastable) if broadcastable is not None else (False,) * host.ndim
    if len(bcast) != host.ndim:
        raise ValueError(f"shared(): broadcastable has {len(bcast)} entries for a {host.ndim}-d value")
    wrong = [d for d, (b, n) in enumerate(zip(bcast, host.shape)) if b and n != 1]
    if wrong:
        raise ValueError(f"shared(): the value has shape {host.shape}, but broadcastable={bcast} says dimension(s) "
                         f"{wrong} have length 1. A broadcastable dimension must have length 1 (it is repeated "
                         "to match the other operand); leave broadcastable out, or reshape the value.")
    storage, ttype = initial_shared_storage(host, TensorType(host.dtype, bcast))
    var = TensorSharedVariable.__new__(TensorSharedVariable)
    Variable.__init__(var, ttype, None, None, name)
    var.container = Container(ttype, storage, name)
    return var
