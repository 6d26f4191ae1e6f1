"""GpuArrayType: the type of values that live in GPU (or simulated GPU) memory.

It is a TensorType (same dtype/broadcastable rules, same operators), but its
values are device arrays, and its ``filter`` refuses host arrays: mixing up
host and device data is an error with a hint, never a silent copy.
"""
from __future__ import annotations

from ..tensor.type import TensorType


class GpuArrayType(TensorType):
    def __init__(self, dtype, broadcastable, device):
        super().__init__(dtype, broadcastable)
        self.device = device  # the Device object whose memory holds the values

    def __eq__(self, other):
        return (type(self) is type(other) and self.dtype == other.dtype
                and self.broadcastable == other.broadcastable and self.device.name == other.device.name)

    def __hash__(self):
        return hash((type(self), self.dtype, self.broadcastable, self.device.name))

    def __str__(self):
        return f"GpuArrayType({self.dtype}, {self.kind_name()})"

    __repr__ = __str__

    def host_type(self):
        return TensorType(self.dtype, self.broadcastable)

    def filter(self, value, strict=False, allow_downcast=None, where="value"):
        device = self.device
        if not device.is_device_array(value):
            raise TypeError(
                f"{where} must be an array in {device.label} memory, but it is a {type(value).__name__} on the "
                "host. Transfer it first with coursekit.devices.to_device(value) (a host-to-device copy), or give "
                "the function a host input such as T.fvector('x').")
        if str(value.dtype) != self.dtype:
            raise TypeError(f"{where} is a {value.dtype} device array; this input needs {self.dtype}. "
                            "Cast on the device (x.astype(...)) before calling.")
        if value.ndim != self.ndim:
            raise TypeError(f"{where} has {value.ndim} dimensions; this input needs {self.ndim} ({self})")
        return value
