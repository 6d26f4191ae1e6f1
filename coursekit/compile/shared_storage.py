"""Where shared values live, and how ``set_value`` keeps them there.

On the CPU device shared values are NumPy arrays.  On a GPU device float32
shared values live in device memory (the cell holds a device array), so a
function that reads and updates them never moves them across the bus.
"""
from __future__ import annotations

from ..devices import current
from ..devices.simarray import is_device_array


def initial_shared_storage(host_value, ttype):
    """(storage value, type) for a new shared variable, placed by ``config.device``."""
    return current().initial_shared(host_value, ttype)


def store_shared_value(var, value, borrow):
    """``set_value``: validate, copy unless borrowed, keep the variable where it lives."""
    device = getattr(var.type, "device", None)  # a GpuArrayType names the device whose memory holds the value
    if device is None:
        var.container.storage[0] = host_filter(var, value, borrow)
        return
    if device.is_device_array(value):
        where = f"the value for shared variable {var.name or '<unnamed>'}"
        data = var.type.filter(value, where=where)
        wrong = [d for d, (b, n) in enumerate(zip(var.type.broadcastable, data.shape)) if b and n != 1]
        if wrong:
            raise TypeError(f"{where} has shape {tuple(data.shape)}, but dimension(s) {wrong} of {var.type} are "
                            "broadcastable (must have length 1). Reshape the value, or make the shared variable "
                            "without broadcastable=...")
        var.container.storage[0] = data if borrow else data.copy()
        return
    host = var.type.host_type().filter(value, strict=False, allow_downcast=None,
                                       where=f"the value for shared variable {var.name or '<unnamed>'}")
    var.container.storage[0] = device.to_device(host)


def host_filter(var, value, borrow):
    """Validate ``value`` against ``var``'s type and return a host array."""
    if is_device_array(value):
        value = value.get()  # a device array given to a host variable: copy it over
        borrow = True
    data = var.type.filter(value, strict=False, allow_downcast=None,
                           where=f"the value for shared variable {var.name or '<unnamed>'}")
    if data is value and not borrow:
        data = data.copy()
    return data
