"""``SourceModule``: compile CUDA C once, hand out kernels (PyCUDA's shape).

The backend is picked once per module: CuPy's ``RawModule`` (NVRTC) on a real
GPU, otherwise the CPU emulator.  Either way the source is parsed here first
for its kernels' signatures, so argument mistakes get the same message on both.
"""
from __future__ import annotations

import re
import threading

from .. import devices
from . import compiler, emulator, gpu
from .errors import BackendUnavailableError, CudaError
from .source import KernelSignature, _split_top_level, find_kernels, parse_param

_loaded = {}            # .so path -> EmulatorLibrary (one dlopen per process)
_load_lock = threading.Lock()


def kernel_device(backend: str = "auto"):
    """The Device that runs kernels for ``backend``: a real GPU (NVRTC) or the simulated one (the emulator).

    ``"auto"`` follows ``config.device``: the GPU when the device is ``gpu``/``cuda``
    and CuPy sees one, else the emulator (also for ``device='cpu'``).
    """
    backend = (backend or "auto").lower()
    if backend in ("emulator", "cpu", "sim"):
        return devices.get("sim")
    if backend in ("cupy", "gpu", "cuda", "nvrtc"):
        if not devices.gpu_available():
            raise BackendUnavailableError(
                f"backend={backend!r} needs a real NVIDIA GPU that CuPy can see, and there is none here. "
                f"Use backend='auto' (falls back to the CPU emulator) or backend='emulator'.")
        device = devices.kernel_device()
        return device if device.raw_kernels == "nvrtc" else devices.get("cuda:0")
    if backend != "auto":
        raise ValueError(f"backend={backend!r}: use 'auto', 'emulator' or 'cupy'")
    return devices.kernel_device()


def gpu_available() -> bool:
    """True when CuPy imports and sees a GPU."""
    return devices.gpu_available()


class SourceModule:
    """Compile CUDA C source; ``get_function(name)`` returns a launchable kernel.

    ``options``: nvcc/NVRTC options (``-D``/``-U``/``-I`` also reach the host
    compiler of the emulator).  ``backend``: ``"auto"``, ``"emulator"`` or
    ``"cupy"``.  ``check`` (emulator only): default check level of launches,
    see :mod:`coursekit.cuda.emulator`.  ``name_expressions``: template
    instantiations to compile, e.g. ``["scale<float>"]``.  ``no_extern_c``: as
    in PyCUDA, the GPU backend wraps the source in ``extern "C"`` so kernel names
    are not mangled, unless this is True or the source already says
    ``extern "C"`` or uses templates.  ``count_reads`` (emulator only): after each
    launch, ``kernel.bytes_read`` says how many bytes the kernel loaded from each
    array argument (an instrumented build; launches run unchecked or with ``"races"``).
    ``counts`` (emulator only): the same build, and after each launch ``kernel.counts`` says what
    its warps asked of memory: sectors of global memory, shared-memory wavefronts and bank
    conflicts, atomics on one address (see :mod:`coursekit.cuda.warp_counts`).
    """

    def __init__(self, source, options=(), backend="auto", *, check=None, name_expressions=(),
                 no_extern_c=False, nvcc_check=True, count_reads=False, counts=False):
        if not isinstance(source, str):
            raise TypeError("SourceModule(source): source must be a string of CUDA C")
        self.source = source
        self.options = tuple(options or ())
        self.kernels = {k.name: k for k in find_kernels(source)}
        self.name_expressions = tuple(name_expressions)
        self.device = kernel_device(backend)
        self.backend_kind = "cupy" if self.device.raw_kernels == "nvrtc" else "emulator"
        self.warp_counts = bool(counts)
        self.count_reads = bool(count_reads) or self.warp_counts
        if self.count_reads and self.backend_kind != "emulator":
            flag = "counts=True counts warp requests" if counts else "count_reads=True counts loads"
            raise BackendUnavailableError(f"{flag} on the CPU emulator only: pass backend='emulator' as well")
        if self.backend_kind == "emulator":
            self.backend = emulator.LABEL
            self.check = emulator.default_check() if check is None else emulator.check_level(check)
            self._entries = self._entry_list()
            path, self.nvcc_verdict = compiler.build(source, self.options, [e for _, e in self._entries],
                                                     check_nvcc=nvcc_check, count_reads=self.count_reads)
            self.library = _load(path)
        else:
            self.backend = gpu.LABEL
            self.check = False
            self._gpu = gpu.CupyModule(source, self.options, self.name_expressions, no_extern_c)

    def _entry_list(self):
        """(kernel name, C++ expression) for every kernel the emulator exports."""
        entries = [(k.name, k.name) for k in self.kernels.values() if not k.is_template]
        for expr in self.name_expressions:
            entries.append((expr, expr))
        return entries

    def static_shared_bytes(self, name) -> int:
        """Static __shared__ bytes of a kernel: nvcc's count if known, else the whole module's."""
        base = name.split("<")[0]
        if self.nvcc_verdict and base in self.nvcc_verdict.get("smem", {}):
            return self.nvcc_verdict["smem"][base]
        return self.library.static_shared

    def get_function(self, name):
        base = name.split("<")[0].strip()
        if base not in self.kernels:
            known = ", ".join(self.kernels) or "none"
            raise CudaError(f"no __global__ kernel named {name!r} in this module (kernels: {known})")
        sig = self.kernels[base]
        if sig.is_template and name == base:
            raise CudaError(f"kernel {base!r} is a template: compile an instantiation with "
                            f"SourceModule(..., name_expressions=['{base}<float>']) and get_function('{base}<float>')")
        if sig.is_template:
            sig = _instantiate(sig, name)
        if self.backend_kind == "cupy":
            kernel = gpu.CupyKernel(self._gpu, sig, name)
        else:
            names = [n for n, _ in self._entries]
            if name not in names:
                raise CudaError(f"{name!r} was not among the name_expressions this module was compiled with: "
                                f"{list(self.name_expressions)}")
            kernel = emulator.EmulatorKernel(self, sig, names.index(name))
        kernel.device = self.device  # the Device that runs it: timings ask it whether it is simulated
        return kernel

    def __repr__(self):
        return f"<coursekit.cuda.SourceModule kernels={list(self.kernels)} backend={self.backend}>"


def _instantiate(sig, expr):
    """Signature of ``k<float, int>``: template parameters replaced by the given types."""
    args = _split_top_level(expr[expr.index("<") + 1:expr.rindex(">")])
    mapping = dict(zip(sig.template_params, args))
    params = [parse_param(re.sub(r"\b\w+\b", lambda m: mapping.get(m.group(0), m.group(0)), f"{p.ctype} {p.name}"), i)
              for i, p in enumerate(sig.params)]
    return KernelSignature(expr, params, sig.line, False)


def _load(path):
    key = str(path)
    with _load_lock:
        lib = _loaded.get(key)
        if lib is None:
            lib = _loaded[key] = emulator.EmulatorLibrary(path)
        return lib
