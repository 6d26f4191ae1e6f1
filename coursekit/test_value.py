"""Test values: run each op on sample data *while the graph is being built*.

Theano's ``config.compute_test_value`` debugging aid: give the inputs sample
values (``x.tag.test_value = numpy.random.rand(5, 10)``) and every new
variable gets ``tag.test_value`` computed immediately.  A shape mistake then
raises at the line that builds the bad node, not later inside a compiled
function.  The flag's values mean what they meant in Theano:

* ``'off'``: nothing is computed (the default);
* ``'raise'``: an input without a test value is an error;
* ``'warn'``: ... a warning, and the new variable gets no test value;
* ``'ignore'``: ... silently skipped;
* ``'pdb'``: an input without a test value starts the debugger.

Shared variables and constants bring their own values.
"""
from __future__ import annotations

import numpy as np

from .config import config
from .graph import Constant, format_trace, user_trace, warn_at_user_line


class TestValueError(ValueError):
    """An op failed on the test values, or an input has none (``compute_test_value='raise'``)."""

    __test__ = False  # not a pytest test class


def _value_of(var):
    """(found, value) for one input of a node."""
    if isinstance(var, Constant):
        return True, var.data
    container = getattr(var, "container", None)
    if container is not None:  # a shared variable
        value = container.storage[0]
        return True, value if isinstance(value, np.ndarray) or not hasattr(value, "get") else value.get()
    if hasattr(var.tag, "test_value"):
        value = var.tag.test_value
        if hasattr(var.type, "filter") and not getattr(var.tag, "test_value_checked", False):
            value = var.type.filter(value, where=f"the test value of {var}, first used at {format_trace(user_trace())}")
            var.tag.test_value, var.tag.test_value_checked = value, True
        return True, value
    return False, None


def compute_test_values(node):
    """Give every output of ``node`` a ``tag.test_value`` (or explain why it cannot be done)."""
    mode = config.compute_test_value
    values = []
    for var in node.inputs:
        found, value = _value_of(var)
        if not found:
            message = (f"compute_test_value: input {var} ({var.type}) of {node.op} has no test value, so the "
                       f"new variable built at {format_trace(user_trace())} gets none. Give it one: "
                       f"{var.name or 'var'}.tag.test_value = numpy.random.rand(...).astype('{var.type.dtype}'), "
                       "or set config.compute_test_value='off'.")
            if mode == "raise":
                raise TestValueError(message)
            if mode == "warn":
                warn_at_user_line(message)
            elif mode == "pdb":
                import pdb

                pdb.set_trace()
            return
        values.append(value)
    storage = [[None] for _ in node.outputs]
    try:
        node.op.perform(node, values, storage)
    except Exception as exc:  # noqa: BLE001 -- any error of the op on test values is re-raised naming the node
        shapes = [getattr(v, "shape", "?") for v in values]
        raise TestValueError(
            f"compute_test_value: {node.op} failed on the test values (input shapes {shapes}): "
            f"{type(exc).__name__}: {exc}\nThe node is built by your code at {format_trace(user_trace())}."
        ) from None
    for var, cell in zip(node.outputs, storage):
        var.tag.test_value = cell[0]
