"""The stand-in's device runtime: one queue (the current stream), stream capture, and the counts.

Every piece of device work the stand-in does is reported here, once, so the
counts and the capture rules cannot disagree:

* ``launch(kind, replay, writes)``: a kernel ran.  While a stream captures,
  it is recorded instead (``replay`` runs it again on the same buffers when
  the graph is launched), and the buffers it wrote are put back as they were
  when capture ends: on a GPU nothing captured runs before ``Graph.launch``.
* ``host_waits(what)``, ``h2d(nbytes)``, ``d2h(nbytes)``: the host touched the
  device; during capture each is the error CUDA gives (the capture is then
  invalidated, as CUDA does).
* ``allocated(buffer)``: a new device buffer (from the memory pool).
"""
from __future__ import annotations

import weakref

import numpy as np

from ._counts import TOTAL


class CUDARuntimeError(RuntimeError):
    """What ``cupy.cuda.runtime`` raises: the CUDA error's name and text."""

    def __init__(self, status, message):
        self.status = status
        super().__init__(f"{status}: {message}")


class _Pool:
    """Bytes held by live device buffers (a rough ``MemoryPool.used_bytes``)."""

    used = 0
    limit = 0


POOL = _Pool()


class Capture:
    """The graph being recorded on one stream."""

    def __init__(self, stream):
        self.stream = stream
        self.steps = []            # replay callables, in launch order
        self.saved = {}            # id(buffer) -> (buffer, its content when capture began)
        self.new = []              # buffers allocated during capture: garbage until the graph runs
        self.invalid = None        # why CUDA invalidated this capture, or None


class State:
    current = None                 # the current Stream (None: the legacy default stream)
    capture = None                 # the active Capture, or None


STATE = State()


def _during_capture(what):
    """The error for ``what`` while a stream captures (and the capture becomes invalid, as in CUDA)."""
    capture = STATE.capture
    if capture.stream is not STATE.current:
        status, text = ("cudaErrorStreamCaptureImplicit", f"{what} on another stream while stream "
                        f"{capture.stream!r} is capturing (a legacy-stream operation would join the capture)")
    else:
        status, text = ("cudaErrorStreamCaptureUnsupported", f"{what} is not permitted when the stream is "
                        "capturing (the host cannot wait for, or copy from pageable memory, work that has "
                        "not run)")
    capture.invalid = capture.invalid or text
    return CUDARuntimeError(status, text)


def launch(kind, replay=None):
    """A kernel of ``kind`` ran on the current stream.  During capture it is recorded: ``replay`` runs it
    again on the same buffers (what it wrote in place was saved by ``before_write`` first)."""
    capture = STATE.capture
    if capture is not None:
        if capture.stream is not STATE.current:
            raise _during_capture(f"launching {kind}")
        if replay is None:
            raise _during_capture(f"{kind} (it cannot be recorded)")
        capture.steps.append(replay)
    TOTAL.launch(kind)


def before_write(buffers):
    """Called before a launch writes ``buffers`` in place: during capture their content is saved, to be put back."""
    capture = STATE.capture
    if capture is None:
        return
    if capture.stream is not STATE.current:
        raise _during_capture("launching a kernel")
    for buf in buffers:
        root = root_of(buf)
        if id(root) not in capture.saved and not any(root is b for b in capture.new):
            capture.saved[id(root)] = (root, root.copy())


def host_waits(what="a synchronisation"):
    if STATE.capture is not None:
        raise _during_capture(what)
    TOTAL.syncs += 1


def h2d(nbytes):
    if STATE.capture is not None:
        raise _during_capture("a host-to-device copy from pageable memory")
    TOTAL.h2d += 1
    TOTAL.h2d_bytes += int(nbytes)


def d2h(nbytes):
    """A device -> host copy into pageable memory: the host waits for it (one sync, counted too)."""
    if STATE.capture is not None:
        raise _during_capture("a device-to-host copy")
    TOTAL.d2h += 1
    TOTAL.d2h_bytes += int(nbytes)
    TOTAL.syncs += 1


def _freed(nbytes):
    POOL.used -= nbytes


def allocated(buffer):
    """A new device buffer: counted, its bytes held in the pool until it is garbage-collected."""
    TOTAL.allocations += 1
    if buffer.nbytes:
        POOL.used += buffer.nbytes
        weakref.finalize(buffer, _freed, buffer.nbytes)
    if STATE.capture is not None:
        STATE.capture.new.append(buffer)


def root_of(array):
    """The array that owns ``array``'s memory (NumPy keeps ``base`` pointing at the owner)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def begin(stream):
    if STATE.capture is not None:
        raise CUDARuntimeError("cudaErrorIllegalState", "a stream is already capturing")
    if stream is None or stream.ptr == 0:
        raise CUDARuntimeError("cudaErrorStreamCaptureUnsupported",
                               "the legacy default stream cannot be captured; capture a cupy.cuda.Stream()")
    STATE.capture = Capture(stream)


def end(stream):
    """Stop capturing: put back what the captured work wrote, make the new buffers garbage, return the steps."""
    capture = STATE.capture
    if capture is None or capture.stream is not stream:
        raise CUDARuntimeError("cudaErrorIllegalState", "this stream is not capturing")
    STATE.capture = None
    for root, content in capture.saved.values():
        root[...] = content
    for buffer in capture.new:
        if buffer.flags.writeable and buffer.flags.c_contiguous and buffer.nbytes:
            buffer.reshape(-1).view(np.uint8).fill(0xFF)      # what it would hold: nothing has run yet
    if capture.invalid is not None:
        raise CUDARuntimeError("cudaErrorStreamCaptureInvalidated",
                               f"the capture was invalidated: {capture.invalid}")
    return capture.steps
