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

import numpy as np

from .ops import c_type

PRELUDE = """
// Helpers the generated expressions use.  CUDA's math library provides exp, log, tanh, ...;
// these give the operators NumPy's meaning where C's differs:
// * // and % follow Python: the quotient is floored, the remainder takes the divisor's sign
//   (C's / and fmod truncate toward zero: -7 / 2 is -3 in C, -4 in NumPy);
// * integer division or remainder by zero gives 0, as NumPy does (C: undefined behaviour, a trap on x86);
//   float division by zero gives inf or nan, float remainder by zero nan, as in NumPy;
// * integer / integer is a double division (NumPy's true_divide), never C's integer division;
// * integer ** integer is an exact integer power, as in NumPy (CUDA's pow(int, int) is ambiguous);
// * max, min and sign propagate NaN as NumPy's maximum, minimum and sign do; ~ on a bool is "not".
// Mixed argument types compute in C's common type (float32 with int32: float; NumPy: float64).
template <typename T> struct ck_real { typedef double type; };
template <> struct ck_real<float> { typedef float type; };
template <> struct ck_real<double> { typedef double type; };
template <typename A, typename B> __device__ __forceinline__ auto ck_max(A a, B b) -> decltype(a + b)
{ return (a > b || a != a) ? a : b; }
template <typename A, typename B> __device__ __forceinline__ auto ck_min(A a, B b) -> decltype(a + b)
{ return (a < b || a != a) ? a : b; }
template <typename A, typename B> __device__ __forceinline__ typename ck_real<decltype(A() + B())>::type
ck_truediv(A a, B b) { typedef typename ck_real<decltype(a + b)>::type R; return (R)a / (R)b; }
template <typename T> __device__ __forceinline__ T ck_negate(T a)  // wraps like NumPy, never overflows in C
{ return (T)(0ull - (unsigned long long)a); }
template <typename T> __device__ __forceinline__ T ck_floordiv_(T a, T b) {
    if (b == 0) return 0;
    if ((T)-1 < 0 && b == (T)-1) return ck_negate(a);
    T q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? (T)(q - 1) : q;
}
template <typename T> __device__ __forceinline__ T ck_mod_(T a, T b) {
    if (b == 0 || ((T)-1 < 0 && b == (T)-1)) return 0;
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? (T)(r + b) : r;
}
template <typename T> __device__ __forceinline__ T ck_fdivmod(T a, T b, T *mod) {  // NumPy's npy_divmod
    T m = fmod(a, b);
    if (b == 0) { *mod = m; return a / b; }
    T div = (a - m) / b;
    if (m != 0) { if ((b < 0) != (m < 0)) { m += b; div -= (T)1; } }
    else { m = copysign((T)0, b); }
    T q;
    if (div != 0) { q = floor(div); if (div - q > (T)0.5) q += (T)1; }
    else { q = copysign((T)0, a / b); }
    *mod = m;
    return q;
}
__device__ __forceinline__ float ck_floordiv_(float a, float b) { float m; return ck_fdivmod(a, b, &m); }
__device__ __forceinline__ double ck_floordiv_(double a, double b) { double m; return ck_fdivmod(a, b, &m); }
__device__ __forceinline__ float ck_mod_(float a, float b) { float m; ck_fdivmod(a, b, &m); return m; }
__device__ __forceinline__ double ck_mod_(double a, double b) { double m; ck_fdivmod(a, b, &m); return m; }
template <typename A, typename B> __device__ __forceinline__ auto ck_floordiv(A a, B b) -> decltype(a + b)
{ typedef decltype(a + b) T; return ck_floordiv_((T)a, (T)b); }
template <typename A, typename B> __device__ __forceinline__ auto ck_mod(A a, B b) -> decltype(a + b)
{ typedef decltype(a + b) T; return ck_mod_((T)a, (T)b); }
template <typename T> __device__ __forceinline__ T ck_pow_(T a, T b) {  // integers: NumPy's exact power, wrapping
    if (b < 0) return 0;                  // (NumPy refuses a negative integer power)
    unsigned long long r = 1, x = (unsigned long long)a, e = (unsigned long long)b;
    for (; e; e >>= 1, x *= x) if (e & 1) r *= x;
    return (T)r;
}
__device__ __forceinline__ float ck_pow_(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double ck_pow_(double a, double b) { return pow(a, b); }
template <typename A, typename B> __device__ __forceinline__ auto ck_pow(A a, B b) -> decltype(a + b)
{ typedef decltype(a + b) T; return ck_pow_((T)a, (T)b); }
template <typename T> __device__ __forceinline__ T ck_abs(T a) { return a < 0 ? ck_negate(a) : a; }
__device__ __forceinline__ float ck_abs(float a) { return fabs(a); }
__device__ __forceinline__ double ck_abs(double a) { return fabs(a); }
template <typename T> __device__ __forceinline__ T ck_sign(T a) { return (T)((a > 0) - (a < 0)); }
__device__ __forceinline__ float ck_sign(float a) { return a != a ? a : (float)((a > 0) - (a < 0)); }
__device__ __forceinline__ double ck_sign(double a) { return a != a ? a : (double)((a > 0) - (a < 0)); }
template <typename T> __device__ __forceinline__ T ck_invert(T a) { return ~a; }
__device__ __forceinline__ bool ck_invert(bool a) { return !a; }
"""


def scalar_expression(scalar_op, names, dtypes):
    """The C expression of a scalar op (or a fused Composite) over the given argument names."""
    if hasattr(scalar_op, "c_code"):
        expr = scalar_op.c_code(names, dtypes)
    elif scalar_op.c_expr is None:
        raise NotImplementedError(f"the scalar op {scalar_op} has no CUDA expression")
    else:
        expr = scalar_op.c_call(names, dtypes)
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
    # CuPy reads a parameter's type as a NumPy dtype name: "float" would mean float64, "int" int64,
    # and "long long" is refused. The operation itself is C, where i0 then has the matching C type.
    in_params = ", ".join(f"{np.dtype(d).name} {n}" for n, d in zip(names, input_dtypes))
    out_params = f"{np.dtype(output_dtype).name} out0"
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


def _device_function(name, scalar_op, dtypes, out_type):
    """``__device__ out_type name(i0, i1, ...)``: a scalar op's statements as one inlinable C function."""
    names = [f"i{k}" for k in range(len(dtypes))]
    params = ", ".join(f"const {c_type(d)} {n}" for n, d in zip(names, dtypes))
    lines, final = scalar_statements(scalar_op, names, dtypes)
    body = "".join(f"    {line}\n" for line in lines)
    return f"__device__ __forceinline__ {out_type} {name}({params}) {{\n{body}    return ({out_type})({final});\n}}\n"


def reduction_kernel_parts(map_op, map_dtypes, post_op, post_dtypes, on_host, out_dtype):
    """(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name, preamble, reduce_type) for
    ``cupy.ReductionKernel``: ``post(sum(map(i0, ...)), p0, ...)`` in one launch (:class:`~coursekit.tensor.mapreduce.FusedSum`).

    The map and the tail are written as ``__device__`` functions in the preamble (a fused chain needs statements;
    CuPy's map and post-map are expressions).  A tail input on the device is a ``raw`` one-element array (read as
    ``p0[0]``: CuPy broadcasts only the mapped inputs); one on the host is a scalar argument."""
    out = c_type(out_dtype)
    names = [f"i{k}" for k in range(len(map_dtypes))]
    params = [f"{np.dtype(d).name} {n}" for n, d in zip(names, map_dtypes)]
    params += [f"{'' if host else 'raw '}{np.dtype(d).name} p{k}" for k, (d, host) in enumerate(zip(post_dtypes, on_host))]
    preamble = PRELUDE
    if map_op is None:
        map_expr = f"({out})(i0)"
    else:
        preamble += _device_function("ck_map", map_op, map_dtypes, out)
        map_expr = f"ck_map({', '.join(names)})"
    if post_op is None:
        post = "out0 = a"
    else:
        preamble += _device_function("ck_post", post_op, [out_dtype] + list(post_dtypes), out)
        extras = [f"p{k}" if host else f"p{k}[0]" for k, host in enumerate(on_host)]
        post = f"out0 = ck_post({', '.join(['a'] + extras)})"
    name = "coursekit_sum_" + (kernel_name(map_op)[len("coursekit_"):] if map_op is not None else "i0")
    return (", ".join(params), f"{np.dtype(out_dtype).name} out0", map_expr, "a + b", post, "0", name[:60],
            preamble, np.dtype(out_dtype).name)
