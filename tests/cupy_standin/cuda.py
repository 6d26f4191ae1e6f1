"""``cupy.cuda``: one device, streams (with graph capture), events, the runtime's device queries, the pool.

Timings from events are host ``perf_counter`` readings (the stand-in runs
everything on the CPU, synchronously): fine for code paths, meaningless as GPU
figures.  Nothing in coursekit's tests reads them.
"""
from __future__ import annotations

import time
import types

from . import _runtime as rt
from ._array import DEVICE0, Device
from .kernels import CompileException

__all__ = ["Device", "Stream", "Event", "Graph", "get_elapsed_time", "get_current_stream", "is_available",
           "runtime", "compiler", "MemoryPool"]

NAME = "CuPy stand-in (NumPy + coursekit's CUDA emulator, CPU)"


def is_available():
    return True


def _properties(index=0):
    """What ``runtime.getDeviceProperties`` answers: an sm_80-like card (figures are placeholders, not a GPU)."""
    Device(index)
    return {"name": NAME.encode(), "totalGlobalMem": 16 << 30, "multiProcessorCount": 8, "maxThreadsPerBlock": 1024,
            "sharedMemPerBlock": 48 << 10, "sharedMemPerMultiprocessor": 164 << 10, "warpSize": 32, "major": 8,
            "minor": 0, "clockRate": 1_000_000, "memoryClockRate": 1_000_000, "memoryBusWidth": 256,
            "l2CacheSize": 4 << 20, "regsPerBlock": 65536, "maxThreadsPerMultiProcessor": 2048,
            "maxGridSize": (2**31 - 1, 65535, 65535), "maxThreadsDim": (1024, 1024, 64)}


runtime = types.SimpleNamespace(
    CUDARuntimeError=rt.CUDARuntimeError,
    getDeviceCount=lambda: 1,
    getDevice=lambda: 0,
    getDeviceProperties=_properties,
    runtimeGetVersion=lambda: 12000,
    driverGetVersion=lambda: 12000,
    deviceSynchronize=lambda: rt.host_waits("cudaDeviceSynchronize"),
    is_hip=False,
)

compiler = types.SimpleNamespace(CompileException=CompileException)


class Stream:
    """A CUDA stream.  ``with stream:`` (or ``stream.use()``) makes it the one CuPy launches on."""

    null = None           # set below: the legacy default stream

    def __init__(self, null=False, non_blocking=False, ptds=False):
        self.ptr = 0 if null else id(self)
        self._previous = []

    def use(self):
        rt.STATE.current = None if self.ptr == 0 else self
        return self

    def __enter__(self):
        self._previous.append(rt.STATE.current)
        return self.use()

    def __exit__(self, *exc):
        rt.STATE.current = self._previous.pop()
        return False

    def synchronize(self):
        rt.host_waits("Stream.synchronize()")

    @property
    def done(self):
        return True

    def begin_capture(self, mode=None):
        """Record, instead of running, what is launched on this stream until ``end_capture``."""
        rt.begin(self)

    def is_capturing(self):
        return rt.STATE.capture is not None and rt.STATE.capture.stream is self

    def end_capture(self):
        """The captured work as a :class:`Graph` (nothing of it has run)."""
        return Graph(rt.end(self))

    def __repr__(self):
        return f"<Stream {self.ptr:#x} (stand-in)>"


Stream.null = Stream(null=True)


def get_current_stream(device_id=None):
    return rt.STATE.current or Stream.null


class Graph:
    """A captured sequence of launches; ``launch()`` runs all of them as ONE graph launch."""

    def __init__(self, steps):
        self._steps = steps

    def upload(self, stream=None):
        pass

    def launch(self, stream=None):
        if rt.STATE.capture is not None:
            raise rt.CUDARuntimeError("cudaErrorStreamCaptureUnsupported", "launching a graph during capture")
        for step in self._steps:
            step()
        rt.TOTAL.graph_launches += 1

    @property
    def nodes(self):
        """How many kernels the graph holds (a CUDA graph's kernel nodes)."""
        return len(self._steps)


class Event:
    """A point in a stream; its "time" is the host clock when recorded (the stand-in is synchronous)."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self._t = None

    def record(self, stream=None):
        self._t = time.perf_counter()

    def synchronize(self):
        rt.host_waits("Event.synchronize()")

    @property
    def done(self):
        return True


def get_elapsed_time(start_event, end_event):
    """Milliseconds between two recorded events (host clock: the stand-in's, not a GPU's)."""
    return (end_event._t - start_event._t) * 1e3


class MemoryPool:
    """``cupy.get_default_memory_pool()``: the bytes live device arrays hold."""

    def used_bytes(self):
        return rt.POOL.used

    def total_bytes(self):
        return rt.POOL.used

    def free_bytes(self):
        return 0

    def n_free_blocks(self):
        return 0

    def free_all_blocks(self, stream=None):
        pass

    def set_limit(self, size=None, fraction=None):
        rt.POOL.limit = size or 0

    def get_limit(self):
        return rt.POOL.limit


DEFAULT_POOL = MemoryPool()


def get_device_id():
    return DEVICE0.id
