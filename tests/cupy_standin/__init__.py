"""A CuPy stand-in: coursekit's REAL CuPy code path (``device='cuda'``) run on a CPU, with its device work counted.

Installed by ``tests/conftest.py``'s ``cuda_standin`` fixture (and by the
``device`` fixtures' ``"cuda"`` case where no real GPU is seen) as the module
``cupy`` (and ``cupyx``) through ``coursekit.devices.use_cupy``; a benchmark
or a script may do the same with :func:`installed`.  Outside those blocks
coursekit never sees it.

What is real here and what stands in:

* device memory is a NumPy buffer behind :class:`ndarray`, a type of its own:
  ``numpy.asarray`` of it is refused, host arrays are refused where device data
  is expected, copies happen only through ``get``/``set``/``asarray``/``asnumpy``;
* ``cupy.<function>`` and array methods are NumPy's on those buffers (CuPy's
  own kernels are not coursekit's code; their results are NumPy's);
* ``ElementwiseKernel``/``RawModule``/``RawKernel`` compile the CUDA C coursekit
  generates or a student writes with coursekit's CUDA emulator (g++, and nvcc's
  verdict when nvcc is installed) and run it there (see :mod:`.kernels` for what
  that cannot catch compared with NVRTC);
* streams, events, graph capture (``Stream.begin_capture``/``end_capture``,
  ``Graph.launch``) follow CUDA's rules: captured work does not run until the
  graph is launched, and a synchronisation or a host copy during capture is
  the error CUDA gives (see :mod:`._runtime`).

What it cannot catch (a real GPU still has the last word): anything about time (it is a CPU, synchronous);
NVRTC-only compile failures when nvcc is not installed (g++ alone accepts host C++), and macros only the C
library defines (see :mod:`.kernels`); CuPy functions NumPy has but CuPy lacks (every NumPy function is
offered); launches CuPy splits into several kernels (counted as one); a graph replaying into memory that was
freed after capture (the stand-in's buffers are never reused); races between streams (one queue runs all).

What is counted (``counting()``; see :class:`._counts.Counts`): kernel launches
(one per computing CuPy call, elementwise kernel or raw kernel; views count
none), graph launches, synchronisations (explicit ones, device->host copies,
``float()``/``int()``/``bool()`` of device values), host->device and
device->host copies and their bytes, device allocations, kernel compiles.
Never time: the stand-in is a CPU, and nothing it does is a GPU figure.
"""
from __future__ import annotations

import contextlib
import sys
import types

import numpy as _np

from . import cuda  # noqa: F401
from ._array import ndarray  # noqa: F401
from ._counts import TOTAL, Counts, counting  # noqa: F401
from .functions import (array, asarray, ascontiguousarray, asnumpy, copyto, dot, empty, empty_like, full,  # noqa: F401
                        full_like, lookup, ones, ones_like, stack, ufunc, zeros, zeros_like)
from .kernels import ElementwiseKernel, RawKernel, RawModule, ReductionKernel  # noqa: F401

__version__ = "0.0-standin"
STANDIN = True          # how a test can tell the stand-in from the real CuPy

newaxis = None
float16, float32, float64 = _np.float16, _np.float32, _np.float64
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
bool_, dtype, pi, inf, nan = _np.bool_, _np.dtype, _np.pi, _np.inf, _np.nan


def get_default_memory_pool():
    return cuda.DEFAULT_POOL


def get_array_module(*args):
    return sys.modules[__name__] if any(isinstance(a, ndarray) for a in args) else _np


def __getattr__(name):
    return lookup(name)


def _scatter_add(a, slices, value):
    """``cupyx.scatter_add``: ``a[slices] += value`` with repeated indices accumulating (one kernel)."""
    from . import _runtime as rt
    from ._array import unwrap
    buffer, index, values = a._a, unwrap(slices, host_ok=True), unwrap(value)
    rt.before_write((buffer,))
    _np.add.at(buffer, index, values)
    rt.launch("scatter_add", lambda: _np.add.at(buffer, index, values))


cupyx = types.ModuleType("cupyx", "The CuPy stand-in's cupyx: scatter_add.")
cupyx.scatter_add = _scatter_add


@contextlib.contextmanager
def installed():
    """Within the block, ``import cupy`` gives this stand-in and coursekit's CUDA device runs on it."""
    from coursekit import devices
    saved = {name: sys.modules.get(name) for name in ("cupy", "cupyx")}
    sys.modules["cupy"], sys.modules["cupyx"] = sys.modules[__name__], cupyx
    devices.use_cupy(sys.modules[__name__])
    try:
        yield sys.modules[__name__]
    finally:
        devices.use_cupy(None)
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def real_gpu():
    """True when the real CuPy sees a GPU (then the ``cuda`` test cases run there, not here)."""
    from coursekit import devices
    return devices.gpu_available()


def on(device_name):
    """The context a ``device`` fixture enters for ``device_name``: the stand-in for ``cuda`` without a real GPU."""
    if device_name.split(":")[0] == "cuda" and not real_gpu():
        return installed()
    return contextlib.nullcontext()


def cuda_case():
    """The ``cuda`` parameter of a device fixture: marked ``gpu`` on a real GPU, on the stand-in elsewhere."""
    import pytest
    return pytest.param("cuda", marks=pytest.mark.gpu) if real_gpu() else pytest.param("cuda", id="cuda-standin")
