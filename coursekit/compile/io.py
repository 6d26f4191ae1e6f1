"""``In`` and ``Out``: how a compiled function takes inputs and gives outputs."""
from __future__ import annotations

from ..graph import Variable
from ..tensor.var import as_tensor_variable


class In:
    """A function input with options: a default ``value``, a ``name`` for keyword calls,
    ``strict`` (no conversion at all), ``allow_downcast``."""

    def __init__(self, variable, name=None, value=None, strict=False, allow_downcast=None,
                 borrow=False, mutable=False):
        if not isinstance(variable, Variable):
            raise TypeError(f"In() wraps a symbolic variable, got {type(variable).__name__}")
        self.variable, self.name = variable, name or variable.name
        self.value, self.strict, self.allow_downcast = value, strict, allow_downcast
        self.borrow, self.mutable = borrow, mutable


class Out:
    """A function output.  ``borrow=True`` hands you the function's own buffer.

    That saves a copy, but the buffer is reused: the next call overwrites the
    array you received.  Copy it if you need to keep it.
    """

    def __init__(self, variable, borrow=False):
        if not isinstance(variable, Variable):
            variable = as_tensor_variable(variable)
        self.variable, self.borrow = variable, borrow


class Param(In):
    """Theano 0.7's ``Param(variable, default=None, name=None, ...)``: an input with a default value (``In``)."""

    def __init__(self, variable, default=None, name=None, mutable=False, strict=False, allow_downcast=None,
                 implicit=None, borrow=None):
        super().__init__(variable, name=name, value=default, strict=strict, allow_downcast=allow_downcast,
                         borrow=bool(borrow), mutable=mutable)
