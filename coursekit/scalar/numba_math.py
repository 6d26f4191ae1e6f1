"""float32 ``exp``, ``log`` and ``log1p`` for numba loop kernels, written so LLVM can vectorise them.

numba turns ``math.exp(x)`` into a call to the C library, once per element:
a loop that calls a function cannot be vectorised, and NumPy's SIMD ``exp``
is then faster than the "compiled" loop.  These versions are plain
arithmetic (range reduction, a polynomial, the exponent put in place with a
bit cast), so a loop over them compiles to AVX/AVX-512 code -- what XLA and
NumPy's own SIMD paths do.  The polynomials are Cephes' ``expf``/``logf``
(S. L. Moshier), evaluated with fused multiply-adds.

Accuracy (``tests/scalar/test_numba_kernels.py`` sweeps every 97th float32): within
3 units in the last place of NumPy's results; the same infinities, zeros
and NaNs, subnormal results included.  Imported only by generated kernels
(see ``numba_kernels.py``): importing numba takes a quarter of a second.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_F32 = np.float32
EXP_HI = _F32(88.72283935546875)     # exp(EXP_HI) is the largest finite float32
EXP_LO = _F32(-103.97283172607422)   # below this exp underflows to +0.0
_LN2_HI, _LN2_LO = _F32(0.693359375), _F32(-2.12194440e-4)   # ln 2 split so n * _LN2_HI is exact
_SQRT_HALF = _F32(0.707106781186547524)
_SMALLEST_NORMAL = _F32(1.17549435e-38)


@intrinsic
def float32_from_bits(typingctx, bits):
    """The float32 whose IEEE-754 bits are the int32 ``bits`` (a register move, no memory)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


@intrinsic
def bits_of_float32(typingctx, value):
    """The IEEE-754 bits of the float32 ``value`` as an int32."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(types.float32), codegen


@njit(fastmath={"contract"}, error_model="numpy", cache=True)
def exp32(v):
    """e**v in float32: v = n ln2 + r with |r| <= ln2/2, e**r by a degree-7 polynomial, times 2**n.

    2**n is applied as two factors so that n = 128 (results near the largest float) and
    n down to -150 (subnormal results) need no special case."""
    c = v if v < EXP_HI else EXP_HI
    c = c if c > EXP_LO else EXP_LO            # (a NaN becomes EXP_LO here; it is put back below)
    n = np.floor(c * _F32(1.44269504088896341) + _F32(0.5))
    r = c - n * _LN2_HI - n * _LN2_LO
    p = _F32(1.9875691500e-4) * r + _F32(1.3981999507e-3)
    p = p * r + _F32(8.3334519073e-3)
    p = p * r + _F32(4.1665795894e-2)
    p = p * r + _F32(1.6666665459e-1)
    p = p * r + _F32(5.0000001201e-1)
    p = p * (r * r) + r + _F32(1.0)
    k = np.int32(n)
    half = k >> 1
    res = p * float32_from_bits((half + np.int32(127)) << 23) * float32_from_bits((k - half + np.int32(127)) << 23)
    res = _F32(np.inf) if v > EXP_HI else res
    res = _F32(0.0) if v < EXP_LO else res
    return v if v != v else res


@njit(fastmath={"contract"}, error_model="numpy", cache=True)
def log32(v):
    """Natural log in float32: v = m 2**e with m in [sqrt(1/2), sqrt(2)), log(m) by a polynomial."""
    sub = v < _SMALLEST_NORMAL                 # subnormal inputs: scale into the normal range first
    x = v * _F32(8388608.0) if sub else v      # 2**23
    bits = bits_of_float32(x)
    e = ((bits >> 23) & np.int32(0xFF)) - np.int32(126)
    m = float32_from_bits((bits & np.int32(-2139095041)) | np.int32(0x3F000000))   # mantissa in [0.5, 1)
    e = e - np.int32(23) if sub else e
    low = m < _SQRT_HALF
    e = e - np.int32(1) if low else e
    f = (m + m - _F32(1.0)) if low else (m - _F32(1.0))
    z = f * f
    y = _F32(7.0376836292e-2) * f - _F32(1.1514610310e-1)
    y = y * f + _F32(1.1676998740e-1)
    y = y * f - _F32(1.2420140846e-1)
    y = y * f + _F32(1.4249322787e-1)
    y = y * f - _F32(1.6668057665e-1)
    y = y * f + _F32(2.0000714765e-1)
    y = y * f - _F32(2.4999993993e-1)
    y = y * f + _F32(3.3333331174e-1)
    y = y * f * z
    ef = _F32(e)
    y = y + ef * _LN2_LO - _F32(0.5) * z
    res = f + y + ef * _LN2_HI
    res = _F32(-np.inf) if v == _F32(0.0) else res
    res = _F32(np.inf) if v == _F32(np.inf) else res
    return _F32(np.nan) if (v < _F32(0.0)) or (v != v) else res


@njit(fastmath={"contract"}, error_model="numpy", cache=True)
def log1p32(t):
    """log(1 + t) in float32, accurate for tiny t: log(u) corrected by the rounding of u = 1 + t."""
    u = t + _F32(1.0)
    d = u - _F32(1.0)
    log_u = log32(u)
    res = log_u - (d - t) / u                    # first-order correction for what 1 + t lost
    res = res if d != _F32(0.0) else t           # 1 + t rounded to 1: log1p(t) is t itself
    res = log_u if (u == _F32(0.0)) or (u == _F32(np.inf)) else res
    return t if t != t else res
