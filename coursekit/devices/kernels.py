"""CUDA C for elementwise graphs: what a fused chain becomes on a GPU.

A ``Composite`` (a fused chain of scalar ops) knows how to write itself as
one C expression; here that expression is wrapped into

* the pieces of a ``cupy.ElementwiseKernel`` (CuPy handles broadcasting and
  launches one kernel for the whole chain), and
* a standalone ``__global__`` kernel, used to prove with ``nvcc``/NVRTC
  that the generated code compiles even on a machine without a GPU.
"""
from __future__ import annotations

import re

from ..tensor.scalar import c_type

PRELUDE = """
// helpers the generated expressions may use (CUDA's math library provides exp, log, tanh, ...)
template <typename T> __device__ __forceinline__ T ck_max(T a, T b) { return a > b ? a : b; }
template <typename T> __device__ __forceinline__ T ck_min(T a, T b) { return a < b ? a : b; }
"""


def scalar_expression(scalar_op, names, dtypes):
    """The C expression of a scalar op (or a fused Composite) over the given argument names."""
    if hasattr(scalar_op, "c_code"):
        expr = scalar_op.c_code(names, dtypes)
    elif scalar_op.c_expr is None:
        raise NotImplementedError(f"the scalar op {scalar_op} has no CUDA expression")
    else:
        expr = scalar_op.c_expr.format(*names)
    return _helpers(expr)


def scalar_statements(scalar_op, names, dtypes):
    """(lines, final expression) for one element: temporaries for fused chains, else one expression."""
    if hasattr(scalar_op, "c_statements"):
        lines, final = scalar_op.c_statements(names, dtypes)
        return [_helpers(line) for line in lines], final
    return [], scalar_expression(scalar_op, names, dtypes)


def _helpers(code):
    return re.sub(r"\bmin\(", "ck_min(", re.sub(r"\bmax\(", "ck_max(", code))


def kernel_name(scalar_op):
    return "coursekit_" + re.sub(r"[^A-Za-z0-9]+", "_", str(scalar_op))[:48].strip("_")


def elementwise_kernel_parts(scalar_op, input_dtypes, output_dtype):
    """(in_params, out_params, operation, name, preamble) for ``cupy.ElementwiseKernel``."""
    names = [f"i{k}" for k in range(len(input_dtypes))]
    in_params = ", ".join(f"{c_type(d)} {n}" for n, d in zip(names, input_dtypes))
    out_params = f"{c_type(output_dtype)} out0"
    lines, final = scalar_statements(scalar_op, names, input_dtypes)
    operation = "\n".join(lines + [f"out0 = ({c_type(output_dtype)})({final});"])
    return in_params, out_params, operation, kernel_name(scalar_op), PRELUDE


def standalone_kernel_source(scalar_op, input_dtypes, output_dtype):
    """A complete CUDA source with one ``__global__`` kernel computing the expression (for compile checks)."""
    names = [f"i{k}" for k in range(len(input_dtypes))]
    params = ", ".join(f"const {c_type(d)}* __restrict__ {n}_ptr" for n, d in zip(names, input_dtypes))
    loads = "\n".join(f"    const {c_type(d)} {n} = {n}_ptr[idx];" for n, d in zip(names, input_dtypes))
    lines, final = scalar_statements(scalar_op, names, input_dtypes)
    body = "".join(f"    {line}\n" for line in lines)
    out = c_type(output_dtype)
    return (f"{PRELUDE}\nextern \"C\" __global__ void {kernel_name(scalar_op)}({params}, {out}* __restrict__ out0, "
            f"long long n) {{\n    long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
            f"    if (idx >= n) return;\n{loads}\n{body}    out0[idx] = ({out})({final});\n}}\n")
