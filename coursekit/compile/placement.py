"""Where shared values live.  On the CPU device: NumPy arrays in host memory.

The GPU device (see :mod:`coursekit.devices`) replaces these two hooks'
behaviour for float32 data so that shared values live in device memory.
"""
from __future__ import annotations

import numpy as np


def initial_shared_storage(var, value, borrow):
    """What to put in a new shared variable's storage cell."""
    from ..devices import current

    return current().store_shared(var, value, borrow=borrow)


def store_shared_value(var, value, borrow):
    """``set_value``: validate, copy unless borrowed, keep the device placement."""
    from ..devices import current

    var.container.storage[0] = current().store_shared(var, value, borrow=borrow,
                                                      previous=var.container.storage[0])


def host_filter(var, value, borrow):
    """Validate ``value`` against ``var``'s type and return a host array."""
    if not isinstance(value, np.ndarray):
        if hasattr(value, "get") and not isinstance(value, (list, tuple, dict)):
            value = value.get()  # a device array given to a host variable: copy it over
            borrow = True
    data = var.type.filter(value, strict=False, allow_downcast=None,
                           where=f"the value for shared variable {var.name or '<unnamed>'}")
    if data is value and not borrow:
        data = data.copy()
    return data
