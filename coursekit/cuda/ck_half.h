// coursekit CUDA emulator: __half (IEEE float16) and __nv_bfloat16, rounded as a GPU rounds them.
//
// Why: half precision is a lesson in rounding (lesson 11), so the emulator must round exactly as
// the hardware does, not compute in float and call the result half.  Each value is stored in its 16
// bits; each operation is computed in float and rounded to the 16-bit format, to nearest, ties to
// even.  For +, -, *, / that gives the correctly rounded result a GPU gives: float's 24-bit
// significand is at least 2 * 11 + 2 bits, so rounding first to float and then to half never
// differs from rounding once (for bfloat16, with 8 bits, all the more).  __hfma rounds the exact
// a * b + c to float first (fmaf), then to half: in rare cases that can differ in the last bit from
// a GPU's single rounding.  Included by the emulator's cuda_fp16.h / cuda_bf16.h, as on a GPU only
// when the kernel includes them.
#pragma once
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float __ck_bits_float(uint32_t x) { float f; memcpy(&f, &x, 4); return f; }
static inline uint32_t __ck_float_bits(float f) { uint32_t x; memcpy(&x, &f, 4); return x; }

// float -> float16 bits, to nearest, ties to even (overflow to infinity, gradual underflow).
static inline uint16_t __ck_float_to_half_bits(float f) {
    const uint32_t x = __ck_float_bits(f), sign = (x >> 16) & 0x8000u, mag = x & 0x7fffffffu;
    if (mag >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u));
    if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);       // >= 65520 rounds past 65504
    if (mag < 0x38800000u)                                           // below 2^-14: a subnormal half,
        return (uint16_t)(sign | (uint32_t)nearbyintf(__ck_bits_float(mag) * 16777216.0f));  // units of 2^-24
    const uint32_t rebiased = mag - ((127u - 15u) << 23);
    return (uint16_t)(sign | ((rebiased + 0xfffu + ((rebiased >> 13) & 1u)) >> 13));
}

static inline float __ck_half_bits_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) { const float v = (float)m * 5.9604644775390625e-8f; return sign ? -v : v; }   // m * 2^-24
    if (e == 31) return __ck_bits_float(sign | 0x7f800000u | (m << 13));
    return __ck_bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

// float -> bfloat16 bits (float's top 16 bits), to nearest, ties to even; NaN stays NaN.
static inline uint16_t __ck_float_to_bf16_bits(float f) {
    const uint32_t x = __ck_float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

struct __half {
    uint16_t __x;
    __half() = default;
    __half(float f) : __x(__ck_float_to_half_bits(f)) {}
    __half(double d) : __x(__ck_float_to_half_bits((float)d)) {}   // (double -> float -> half: see above)
    __half(int i) : __x(__ck_float_to_half_bits((float)i)) {}
    operator float() const { return __ck_half_bits_to_float(__x); }
};
typedef __half half;
struct __half2 { __half x, y; };

struct __nv_bfloat16 {
    uint16_t __x;
    __nv_bfloat16() = default;
    __nv_bfloat16(float f) : __x(__ck_float_to_bf16_bits(f)) {}
    __nv_bfloat16(double d) : __x(__ck_float_to_bf16_bits((float)d)) {}
    __nv_bfloat16(int i) : __x(__ck_float_to_bf16_bits((float)i)) {}
    operator float() const { return __ck_bits_float((uint32_t)__x << 16); }
};
typedef __nv_bfloat16 nv_bfloat16;

// ---- conversions ---------------------------------------------------------------
static inline __half __float2half(float f) { return __half(f); }
static inline __half __float2half_rn(float f) { return __half(f); }
static inline float __half2float(__half h) { return (float)h; }
static inline __half __int2half_rn(int i) { return __half((float)i); }
static inline int __half2int_rn(__half h) { return (int)nearbyintf((float)h); }
static inline int __half2int_rz(__half h) { return (int)(float)h; }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline __half __ushort_as_half(unsigned short u) { __half h; h.__x = u; return h; }
static inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
static inline __half2 __float2half2_rn(float a) { return __half2{__half(a), __half(a)}; }
static inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
static inline float __low2float(__half2 v) { return (float)v.x; }
static inline float __high2float(__half2 v) { return (float)v.y; }
static inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
static inline float __bfloat162float(__nv_bfloat16 b) { return (float)b; }

// ---- arithmetic: in float, rounded to the 16-bit type ------------------------------
#define CK_HALF_OPS(H) \
    static inline H __hadd(H a, H b) { return H((float)a + (float)b); } \
    static inline H __hsub(H a, H b) { return H((float)a - (float)b); } \
    static inline H __hmul(H a, H b) { return H((float)a * (float)b); } \
    static inline H __hdiv(H a, H b) { return H((float)a / (float)b); } \
    static inline H __hfma(H a, H b, H c) { return H(fmaf((float)a, (float)b, (float)c)); } \
    static inline H __hneg(H a) { H r = a; r.__x ^= 0x8000u; return r; } \
    static inline H __habs(H a) { H r = a; r.__x &= 0x7fffu; return r; } \
    static inline H __hmax(H a, H b) { return (float)a < (float)b ? b : a; } \
    static inline H __hmin(H a, H b) { return (float)b < (float)a ? b : a; } \
    static inline bool __heq(H a, H b) { return (float)a == (float)b; } \
    static inline bool __hne(H a, H b) { return (float)a != (float)b; } \
    static inline bool __hlt(H a, H b) { return (float)a < (float)b; } \
    static inline bool __hle(H a, H b) { return (float)a <= (float)b; } \
    static inline bool __hgt(H a, H b) { return (float)a > (float)b; } \
    static inline bool __hge(H a, H b) { return (float)a >= (float)b; } \
    static inline bool __hisnan(H a) { return isnan((float)a); } \
    static inline H hsqrt(H a) { return H(sqrtf((float)a)); } \
    static inline H hexp(H a) { return H(expf((float)a)); } \
    static inline H hlog(H a) { return H(logf((float)a)); } \
    static inline H operator+(H a, H b) { return __hadd(a, b); } \
    static inline H operator-(H a, H b) { return __hsub(a, b); } \
    static inline H operator*(H a, H b) { return __hmul(a, b); } \
    static inline H operator/(H a, H b) { return __hdiv(a, b); } \
    static inline H operator-(H a) { return __hneg(a); } \
    static inline H& operator+=(H& a, H b) { return a = __hadd(a, b); } \
    static inline H& operator-=(H& a, H b) { return a = __hsub(a, b); } \
    static inline H& operator*=(H& a, H b) { return a = __hmul(a, b); } \
    static inline H& operator/=(H& a, H b) { return a = __hdiv(a, b); } \
    static inline bool operator==(H a, H b) { return __heq(a, b); } \
    static inline bool operator!=(H a, H b) { return __hne(a, b); } \
    static inline bool operator<(H a, H b) { return __hlt(a, b); } \
    static inline bool operator<=(H a, H b) { return __hle(a, b); } \
    static inline bool operator>(H a, H b) { return __hgt(a, b); } \
    static inline bool operator>=(H a, H b) { return __hge(a, b); }
CK_HALF_OPS(__half)
CK_HALF_OPS(__nv_bfloat16)
#undef CK_HALF_OPS

static inline __half2 __hadd2(__half2 a, __half2 b) { return __half2{__hadd(a.x, b.x), __hadd(a.y, b.y)}; }
static inline __half2 __hsub2(__half2 a, __half2 b) { return __half2{__hsub(a.x, b.x), __hsub(a.y, b.y)}; }
static inline __half2 __hmul2(__half2 a, __half2 b) { return __half2{__hmul(a.x, b.x), __hmul(a.y, b.y)}; }
static inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
    return __half2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)};
}
