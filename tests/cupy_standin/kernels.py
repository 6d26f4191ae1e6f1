"""``cupy.ElementwiseKernel``, ``cupy.RawModule`` and ``cupy.RawKernel`` on coursekit's CUDA emulator.

The CUDA C a caller hands CuPy is compiled as it is -- the ``operation`` and
``preamble`` of an ElementwiseKernel inside a ``__global__`` function of the
same shape as CuPy's, a RawModule's code unchanged -- by
``coursekit.cuda.SourceModule(backend="emulator")``: g++ for the emulator, and
nvcc's device compile as the verdict a GPU toolchain gives when nvcc is on the
PATH.  Compiled modules are cached by source (in this process, and on disk by
coursekit's compiler), so each distinct kernel is built once.

What this cannot catch, compared with CuPy + NVRTC on a GPU:

* NVRTC compiles without the C library's headers; nvcc (and g++) see them, so a
  kernel that uses a macro only ``<math.h>`` defines compiles here and fails
  under NVRTC.  Without nvcc on the PATH only g++ judges the code, and it
  accepts host-only C++ that no GPU compiler would;
* CuPy's own headers (``cupy/complex.cuh``, its ``float16``, the ``_ind``
  indexer, ``raw`` parameters, type placeholders ``T``) are not there: the
  stand-in supports the fixed-type, non-raw parameters coursekit generates and
  refuses the rest with a NotImplementedError;
* broadcasting and casting happen on the host before the launch (CuPy does them
  in the kernel's indexing), so a kernel that indexes memory itself differs;
* timing, occupancy, register pressure and anything about the real hardware.
"""
from __future__ import annotations

import numpy as np

from coursekit.cuda import CompileError, SourceModule
from coursekit.devices.simarray import SimArray
from coursekit.scalar.ops import c_type

from . import _runtime as rt
from ._array import ndarray, new_array
from ._counts import TOTAL

_MODULES = {}          # (source, options, name_expressions) -> SourceModule


class CompileException(Exception):
    """``cupy.cuda.compiler.CompileException``: the compiler's log."""


def _module(code, options=(), name_expressions=()):
    key = (code, tuple(options), tuple(name_expressions))
    module = _MODULES.get(key)
    if module is None:
        try:
            module = SourceModule(code, options=options, backend="emulator", name_expressions=name_expressions,
                                  no_extern_c=True)
        except CompileError as e:
            raise CompileException(str(e)) from None
        TOTAL.compiles += 1
        _MODULES[key] = module
    return module


def _launch(name, run, writes):
    """Run ``run`` (one launch) now, and report it; during capture ``run`` is what the graph replays."""
    rt.before_write(writes)
    run()
    rt.launch(name, run)


def _emulated(args):
    """Stand-in arrays as the emulator takes device memory: their buffers, as simulated-device arrays."""
    return tuple(SimArray(a._a) if isinstance(a, ndarray) else a for a in args)


class RawModule:
    """CUDA C compiled as written (``code=``); ``get_function(name)`` gives a launchable kernel."""

    def __init__(self, code=None, path=None, options=(), backend="nvrtc", translate_cucomplex=False,
                 enable_cooperative_groups=False, name_expressions=None, jitify=False):
        if code is None:
            raise NotImplementedError("the CuPy stand-in compiles code=..., not path=")
        self.code, self.options = code, tuple(options)
        self.name_expressions = tuple(name_expressions or ())
        self._module = None

    def compile(self, log_stream=None):
        if self._module is None:
            self._module = _module(self.code, self.options, self.name_expressions)

    def get_function(self, name):
        self.compile()
        return RawKernel(None, name, _kernel=self._module.get_function(name))


class RawKernel:
    """``cupy.RawKernel(code, name)``, or a RawModule's function: ``kernel(grid, block, args, shared_mem=)``."""

    def __init__(self, code, name, options=(), backend="nvrtc", translate_cucomplex=False,
                 enable_cooperative_groups=False, jitify=False, *, _kernel=None):
        self.name = name
        self._kernel = _kernel
        self._code, self._options = code, tuple(options)

    def __call__(self, grid, block, args, *, shared_mem=0, stream=None, enable_cooperative_groups=False):
        if self._kernel is None:
            self._kernel = _module(self._code, self._options).get_function(self.name)
        grid = tuple(grid) if isinstance(grid, tuple) else (int(grid),)
        block = tuple(block) if isinstance(block, tuple) else (int(block),)
        kernel, emulated = self._kernel, _emulated(args)
        _launch(f"raw:{self.name}", lambda: kernel(grid, block, emulated, shared_mem=shared_mem),
                [a._a for a in args if isinstance(a, ndarray)])


def _params(text, what):
    """``"float32 i0, int64 i1"`` -> [(dtype, name)]: the fixed types coursekit writes."""
    params = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        words = part.split()
        if len(words) != 2 or words[0] == "raw":
            raise NotImplementedError(f"ElementwiseKernel {what} parameter {part!r}: the CuPy stand-in supports "
                                      "'<dtype> <name>' parameters only")
        try:
            dtype = np.dtype(words[0])
        except TypeError:
            raise NotImplementedError(f"ElementwiseKernel {what} parameter {part!r}: type placeholders are not "
                                      "supported by the CuPy stand-in") from None
        params.append((dtype, words[1]))
    return params


_BLOCK = 128


class ElementwiseKernel:
    """One kernel over broadcast operands: ``kernel(*inputs)`` or ``kernel(*inputs, *outputs)``."""

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True, preamble="",
                 no_return=False, return_tuple=False, loop_prep="", after_loop="", options=()):
        self.name = name
        self.in_params, self.out_params = _params(in_params, "input"), _params(out_params, "output")
        self.nin, self.nout = len(self.in_params), len(self.out_params)
        self.operation, self.preamble, self.options = operation, preamble, tuple(options)
        self._kernel = None

    def source(self):
        """The CUDA C compiled for this kernel: the caller's preamble and operation in one ``__global__``."""
        params = [f"const {c_type(d)}* __restrict__ _in_{n}" for d, n in self.in_params]
        params += [f"{c_type(d)}* __restrict__ _out_{n}" for d, n in self.out_params]
        loads = "".join(f"    const {c_type(d)} {n} = _in_{n}[_i];\n" for d, n in self.in_params)
        loads += "".join(f"    {c_type(d)} &{n} = _out_{n}[_i];\n" for d, n in self.out_params)
        return (f"{self.preamble}\nextern \"C\" __global__ void {self.name}({', '.join(params)}, long long _n)\n"
                f"{{\n    long long _i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                f"    if (_i >= _n) return;\n{loads}    {{\n{self.operation}\n    }}\n}}\n")

    def __call__(self, *args, size=None, block_size=None, stream=None):
        if len(args) not in (self.nin, self.nin + self.nout):
            raise TypeError(f"Wrong number of arguments for {self.name!r}. It must be either {self.nin} or "
                            f"{self.nin + self.nout} (with outputs), but given {len(args)}.")
        inputs, outs = args[:self.nin], list(args[self.nin:])
        for k, a in enumerate(args):
            if type(a) is np.ndarray:
                raise TypeError(f"Unsupported type {type(a)} (argument {k} of {self.name}: a host array)")
        shapes = [a.shape for a in args if isinstance(a, ndarray)]
        shape = np.broadcast_shapes(*shapes) if shapes else ()
        for (dtype, n), a in zip(self.in_params + self.out_params, args):
            if isinstance(a, ndarray) and not np.can_cast(a.dtype, dtype):    # CuPy: "safe" casts only
                raise TypeError(f"Type is mismatched. {self.name} {n} {a.dtype} {dtype}")
        for k, out in enumerate(outs):
            if out.shape != shape:
                raise ValueError(f"Out shape is mismatched: {out.shape} for broadcast shape {shape}")
        if not outs:
            outs = [new_array(np.empty(shape, d)) for d, _ in self.out_params]
        if self._kernel is None:
            self._kernel = _module(self.source(), self.options).get_function(self.name)
        n = int(np.prod(shape, dtype=np.int64))
        if n:
            _launch(self.name, self._runner(inputs, outs, shape, n), [o._a for o in outs])
        return outs[0] if self.nout == 1 else tuple(outs)

    def _runner(self, inputs, outs, shape, n):
        """One launch over ``n`` elements; inputs are staged again on every run (a graph replays it)."""
        kernel, grid = self._kernel, ((n + _BLOCK - 1) // _BLOCK,)
        direct = [o._a.flags.c_contiguous and o.dtype == d for o, (d, _) in zip(outs, self.out_params)]
        out_bufs = [o._a if ok else np.empty(shape, d) for o, ok, (d, _) in zip(outs, direct, self.out_params)]
        in_params = self.in_params

        def run():
            staged = [_operand(a, dtype, shape) for (dtype, _), a in zip(in_params, inputs)]
            kernel(grid, (_BLOCK,), tuple(SimArray(b) for b in staged + out_bufs) + (np.int64(n),))
            for o, buf, ok in zip(outs, out_bufs, direct):
                if not ok:
                    o._a[...] = buf

        return run


def _operand(value, dtype, shape):
    """An input as the kernel reads it: contiguous, of the parameter's type, broadcast (CuPy indexes instead)."""
    if isinstance(value, ndarray):
        buf = value._a
        if buf.dtype == dtype and buf.shape == shape and buf.flags.c_contiguous:
            return buf
        return np.ascontiguousarray(np.broadcast_to(buf, shape), dtype=dtype)
    return np.full(shape, value, dtype=dtype)


def _reduction_params(text, what):
    """Like :func:`_params`, with ``raw`` parameters (read by index, never broadcast): [(dtype, name, raw)]."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    raw = [p.startswith("raw ") for p in parts]
    plain = _params(", ".join(p[4:] if r else p for p, r in zip(parts, raw)), what)
    return [(d, n, r) for (d, n), r in zip(plain, raw)]


class ReductionKernel:
    """``cupy.ReductionKernel`` for full sums: ``kernel(*args, out=None)`` -> ``post_map(sum(map(args)))``, ONE launch.

    The caller's ``map_expr`` and ``post_map_expr`` run as CUDA C on the emulator (a map kernel over the
    broadcast elements, then one thread for the post-map); the sum in between is NumPy's, in ``reduce_type``.
    CuPy does all three in one kernel, and the stand-in counts them as one launch.  Only ``a + b`` from ``0``
    over every axis is supported (what coursekit generates); anything else raises NotImplementedError.
    """

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name="reduce_kernel",
                 reduce_type=None, reduce_dims=True, preamble="", options=()):
        if reduce_expr.replace(" ", "") != "a+b" or identity.strip() != "0":
            raise NotImplementedError("the CuPy stand-in's ReductionKernel sums only ('a + b' from '0')")
        self.name, self.preamble, self.options = name, preamble, tuple(options)
        self.in_params = _reduction_params(in_params, "input")
        (self.out_param,) = _reduction_params(out_params, "output")
        self.reduce_type = np.dtype(reduce_type or self.out_param[0])
        self.map_expr, self.post_map_expr = map_expr, post_map_expr
        self._kernels = None

    def source(self):
        """Two ``__global__`` functions: the map over every element into ``_tmp``, the post-map on one thread."""
        r, (od, on, _) = c_type(self.reduce_type), self.out_param
        params = ", ".join(f"const {c_type(d)}* __restrict__ {'' if raw else '_in_'}{n}" for d, n, raw in self.in_params)
        loads = "".join(f"    const {c_type(d)} {n} = _in_{n}[_i];\n" for d, n, raw in self.in_params if not raw)
        first = "".join(f"    const {c_type(d)} {n} = _in_{n}[0];\n" for d, n, raw in self.in_params if not raw)
        return (f"{self.preamble}\nextern \"C\" __global__ void {self.name}_map({params}, {r}* _tmp, long long _n)\n"
                f"{{\n    long long _i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n    if (_i >= _n) return;\n"
                f"{loads}    _tmp[_i] = ({r})({self.map_expr});\n}}\n"
                f"extern \"C\" __global__ void {self.name}_post({params}, const {r}* _a, {c_type(od)}* _out)\n"
                f"{{\n{first}    const {r} a = _a[0];\n    {c_type(od)} &{on} = _out[0];\n    {self.post_map_expr};\n}}\n")

    def __call__(self, *args, out=None, axis=None, keepdims=False, stream=None):
        if axis is not None or keepdims or len(args) != len(self.in_params):
            raise NotImplementedError("the CuPy stand-in's ReductionKernel takes its inputs and reduces every axis")
        mapped = [a for a, (_, _, raw) in zip(args, self.in_params) if not raw and isinstance(a, ndarray)]
        shape = np.broadcast_shapes(*[a.shape for a in mapped]) if mapped else ()
        out_dtype = self.out_param[0]
        if out is None:
            out = new_array(np.empty((), out_dtype))
        if out.shape != () or out.dtype != out_dtype:
            raise ValueError(f"{self.name}: out must be a 0-d {out_dtype} array, got {out.shape} {out.dtype}")
        if self._kernels is None:
            module = _module(self.source(), self.options)
            self._kernels = module.get_function(self.name + "_map"), module.get_function(self.name + "_post")
        _launch(self.name, self._runner(args, out, shape), [out._a])
        return out

    def _runner(self, args, out, shape):
        (map_kernel, post_kernel), n = self._kernels, int(np.prod(shape, dtype=np.int64))
        grid, rtype, params = (max(1, (n + _BLOCK - 1) // _BLOCK),), self.reduce_type, self.in_params
        tmp, result, target = np.empty(max(n, 1), rtype), np.zeros(1, rtype), out._a.reshape(1)

        def run():
            staged = [np.ascontiguousarray(a._a).reshape(-1) if raw else _operand(a, d, shape)
                      for a, (d, _, raw) in zip(args, params)]
            if n:
                map_kernel(grid, (_BLOCK,), tuple(SimArray(b) for b in staged) + (SimArray(tmp), np.int64(n)))
            result[0] = tmp[:n].sum(dtype=rtype)
            firsts = [b if raw else np.ascontiguousarray(b.reshape(-1)[:1]) for b, (_, _, raw) in zip(staged, params)]
            post_kernel((1,), (1,), tuple(SimArray(b) for b in firsts) + (SimArray(result), SimArray(target)))

        return run
