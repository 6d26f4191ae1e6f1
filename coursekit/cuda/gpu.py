"""The real-GPU backend: CuPy's RawModule (NVRTC) behind the same kernel interface.

Imported only when a GPU backend is asked for, so ``import coursekit`` never
imports CuPy.  Arguments go through the same checks as on the emulator
(:mod:`coursekit.cuda.args`), so a mistake reads the same on both.
"""
from __future__ import annotations

import re

import numpy as np

from . import args as A
from .compiler import compile_error
from .source import SOURCE_NAME

LABEL = "GPU (CuPy, NVRTC)"

# NVRTC compiles without the C library's headers, where the emulator's g++ (and nvcc) see <math.h>.
# These are the macros from it that kernels use (a max reduction pads with -INFINITY), defined only
# where NVRTC lacks them, so a kernel that runs on the emulator compiles on the GPU as it is.
MATH_MACROS = """#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef HUGE_VALF
#define HUGE_VALF INFINITY
#endif
#ifndef HUGE_VAL
#define HUGE_VAL __longlong_as_double(0x7ff0000000000000LL)
#endif
"""


class CupyModule:
    def __init__(self, source, options, name_expressions, no_extern_c):
        import cupy
        self.source = source
        code = f'#line 1 "{SOURCE_NAME}"\n{source}'
        if not no_extern_c and 'extern "C"' not in source and not re.search(r"\btemplate\b", source):
            # as PyCUDA does: unmangled names, so get_function("name") finds them
            code = f'extern "C" {{\n#line 1 "{SOURCE_NAME}"\n{source}\n}}\n'
        code = MATH_MACROS + code          # the #line above keeps error lines the student's own
        kwargs = {"name_expressions": list(name_expressions)} if name_expressions else {}
        try:
            self.raw = cupy.RawModule(code=code, options=tuple(options), **kwargs)
            self.raw.compile()
        except cupy.cuda.compiler.CompileException as e:
            raise compile_error("NVRTC, compiling for the GPU", str(e), source) from None


class CupyKernel:
    """A kernel on the real GPU; call it PyCUDA style or CuPy style."""

    backend = LABEL

    def __init__(self, module, signature, name):
        self.signature = signature
        self.name = name
        self._fn = module.raw.get_function(name)

    def __repr__(self):
        return f"<coursekit.cuda kernel {self.signature} on the {LABEL}>"

    def __call__(self, *args, block=None, grid=(1, 1), shared=0, shared_mem=None, stream=None,
                 time_kernel=False, check=None, order=None):
        import cupy
        grid, block, args, shared = A.call_style(self.name, args, block, grid, shared, shared_mem)
        A.check_launch(self.name, grid, block, shared)
        sig = self.signature
        if len(args) != len(sig.params):
            A.check_count(sig, args)
        kargs, copy_back = [], []
        for i, (p, a) in enumerate(zip(sig.params, args)):
            if isinstance(a, cupy.ndarray):
                if not p.is_pointer:
                    raise A.KernelArgumentError(f"argument {i + 1} ('{p.name}') of kernel {sig.name} is a device "
                                                f"array, but the parameter is `{p.decl()}`, a value.")
                A.check_array(sig, i, p, a)
                if not a.flags.c_contiguous:
                    raise A.KernelArgumentError(f"argument {i + 1} ('{p.name}') of kernel {sig.name} is a "
                                                f"non-contiguous device array; pass cupy.ascontiguousarray(a).")
                kargs.append(a)
            elif isinstance(a, A._HostArg):
                if not p.is_pointer:
                    raise A.KernelArgumentError(f"argument {i + 1} ('{p.name}') of kernel {sig.name} is "
                                                f"{A.describe(a)}, but the parameter is `{p.decl()}`, a value.")
                A.check_array(sig, i, p, a.array)
                dev = cupy.asarray(np.ascontiguousarray(a.array)) if a.copy_in else cupy.empty(a.array.shape,
                                                                                             a.array.dtype)
                if a.copy_out:
                    copy_back.append((a.array, dev))
                kargs.append(dev)
            elif A.scalar_bytes(sig, i, p, a) is not None:
                kargs.append(a)
            else:
                raise A.pointer_error(sig, i, p, a, "is not GPU memory (this module runs on the real GPU: use "
                                      "cupy arrays, cuda.to_device(a) or cuda.In/Out)")
        start = end = None
        if time_kernel:
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(stream)
        self._fn(grid, block, tuple(kargs), shared_mem=shared, stream=stream)
        if time_kernel:
            end.record(stream)
        for host, dev in copy_back:
            host[...] = dev.get().reshape(host.shape)
        if time_kernel:
            end.synchronize()
            return cupy.cuda.get_elapsed_time(start, end) / 1e3   # a real GPU timing, in seconds
        return None
