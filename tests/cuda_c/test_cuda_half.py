"""``__half`` and ``__nv_bfloat16`` on the CUDA emulator round as a GPU does (ck_half.h).

Lesson 11 measures what float16 rounding costs, so a conversion or an addition that is one unit in
the last place off would be a wrong lesson: every float16 value, values around every rounding
boundary, overflow and underflow are checked against NumPy's float16 (IEEE round to nearest, ties to
even), and the arithmetic against NumPy's float16 arithmetic.
"""
from __future__ import annotations

import numpy as np
import pytest

from coursekit import cuda

SOURCE = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__global__ void round_trip(float *out, const float *in, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __half2float(__float2half(in[i]));
}

__global__ void arithmetic(float *sum, float *product, float *quotient, float *fma, const float *a, const float *b, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const __half x = __float2half(a[i]), y = __float2half(b[i]);
        sum[i] = __half2float(x + y);
        product[i] = __half2float(__hmul(x, y));
        quotient[i] = __half2float(x / y);
        fma[i] = __half2float(__hfma(x, y, x));
    }
}

__global__ void bf16_round_trip(float *out, const float *in, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __bfloat162float(__float2bfloat16(in[i]));
}
'''


@pytest.fixture(scope="module")
def module():
    return cuda.SourceModule(SOURCE, backend="emulator", nvcc_check=False)


def launch(kernel, outs, ins):
    n = ins[0].size
    kernel(*(cuda.Out(o) for o in outs), *(cuda.In(a) for a in ins), np.int32(n), block=(256, 1, 1),
           grid=(-(-n // 256), 1))


def same(got, want):
    return np.array_equal(got.view(np.uint32), want.view(np.uint32)) or np.array_equal(got, want, equal_nan=True)


def test_every_float16_value_and_every_midpoint_between_two_converts_as_numpy_does(module):
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    finite = np.sort(halves[np.isfinite(halves)].astype(np.float32))
    middles = (finite[:-1].astype(np.float64) + finite[1:]) / 2          # the ties, exactly (float32 holds them)
    rng = np.random.default_rng(16)
    floats = np.concatenate([halves.astype(np.float32), middles.astype(np.float32),
                             np.nextafter(middles.astype(np.float32), np.float32(np.inf)),
                             np.nextafter(middles.astype(np.float32), np.float32(-np.inf)),
                             rng.standard_normal(50_000).astype(np.float32) * np.float32(1e3),
                             np.float32([65504, 65519.99, 65520, 7e4, 1e-8, 2.98e-8, 2.99e-8, -0.0, np.inf])])
    out = np.empty_like(floats)
    launch(module.get_function("round_trip"), [out], [floats])
    with np.errstate(over="ignore"):
        want = floats.astype(np.float16).astype(np.float32)
    assert same(out, want), floats[np.flatnonzero(out != want)[:5]]


def test_half_arithmetic_is_rounded_once_to_float16(module):
    rng = np.random.default_rng(61)
    a = (rng.standard_normal(20_000) * 30).astype(np.float16).astype(np.float32)
    b = (rng.standard_normal(20_000) * 30).astype(np.float16).astype(np.float32)
    outs = [np.empty_like(a) for _ in range(4)]
    launch(module.get_function("arithmetic"), outs, [a, b])
    x, y = a.astype(np.float16), b.astype(np.float16)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for got, want in zip(outs[:3], [x + y, x * y, x / y]):
            assert same(got, want.astype(np.float32))
        exact_fma = (a.astype(np.float64) * b + a).astype(np.float16).astype(np.float32)
    assert np.mean(outs[3] == exact_fma) > 0.999          # fma: rounded via float, rarely one unit off


def test_bfloat16_keeps_the_top_sixteen_bits_rounded_to_nearest_even(module):
    rng = np.random.default_rng(62)
    floats = np.concatenate([rng.standard_normal(10_000).astype(np.float32),
                             np.float32([1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, 3e38, np.inf])])
    out = np.empty_like(floats)
    launch(module.get_function("bf16_round_trip"), [out], [floats])
    bits = floats.view(np.uint32).astype(np.uint64)
    want = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    assert same(out, want)
    assert out[-5] == 1.0 and out[-4] == 1 + 2 ** -6 and out[-3] == 1 + 2 ** -7     # ties to even, above a tie
