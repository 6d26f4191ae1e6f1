// coursekit CUDA emulator prelude.
//
// Included before a student's CUDA source when it is compiled as C++ by the
// host compiler.  It makes the CUDA C dialect mean something on a CPU:
// execution-space keywords vanish, threadIdx & co. read the state of the
// fiber that is running, __shared__ variables live in one section that the
// runtime poisons at every block start, and every barrier or warp-level
// operation hands control back to the block scheduler (ck_runtime.cpp).
//
// Only one OS thread runs kernels at a time, and fibers switch only at
// barriers, so atomics need no hardware atomics and shared memory needs no
// per-OS-thread copy.
#pragma once
#include <math.h>
#include <cmath>
#include <stdio.h>
#include <cstdio>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <assert.h>
#include <csignal>
#include <cstdlib>
#include <utility>
#include <type_traits>

// ---- execution-space and memory-space keywords ---------------------------
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __align__(n) alignas(n)
#define __launch_bounds__(...)
#define __grid_constant__
// Static __shared__ variables go to one linker section; the runtime finds
// it through __start_/__stop_ck_shared and poisons it at each block start.
#define __shared__ static __attribute__((section("ck_shared"), aligned(16)))
#define __CUDACC_EMULATOR__ 1
#ifndef __CUDA_ARCH__
#define __CUDA_ARCH__ 800
#endif

// ---- built-in vector types -------------------------------------------------
struct uint3 { unsigned int x, y, z; };
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
#define CK_VEC2(T, N) struct alignas(2 * sizeof(T)) N##2 { T x, y; }; \
    static inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define CK_VEC3(T, N) struct N##3 { T x, y, z; }; \
    static inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }
#define CK_VEC4(T, N) struct alignas(4 * sizeof(T) > 16 ? 16 : 4 * sizeof(T)) N##4 { T x, y, z, w; }; \
    static inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
CK_VEC2(float, float) CK_VEC3(float, float) CK_VEC4(float, float)
CK_VEC2(double, double) CK_VEC3(double, double) CK_VEC4(double, double)
CK_VEC2(int, int) CK_VEC3(int, int) CK_VEC4(int, int)
CK_VEC2(unsigned int, uint) CK_VEC4(unsigned int, uint)
static inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }

// ---- per-thread and per-block built-ins ------------------------------------
struct __ck_fiber_pub { uint3 idx; };
extern "C" __ck_fiber_pub* __ck_cur;        // fiber that is running now
extern "C" uint3 __ck_blockIdx;
extern "C" dim3 __ck_blockDim, __ck_gridDim;
extern "C" char* __ck_dyn_smem;             // extern __shared__ memory of this launch
#define threadIdx (static_cast<const uint3&>(__ck_cur->idx))
#define blockIdx (static_cast<const uint3&>(__ck_blockIdx))
#define blockDim (static_cast<const dim3&>(__ck_blockDim))
#define gridDim (static_cast<const dim3&>(__ck_gridDim))
static constexpr int warpSize = 32;

// ---- runtime entry points (ck_runtime.cpp) ---------------------------------
enum { CK_SHFL = 0, CK_SHFL_UP, CK_SHFL_DOWN, CK_SHFL_XOR, CK_BALLOT, CK_ANY, CK_ALL, CK_SYNCWARP };
extern "C" void __ck_syncthreads(int line);
extern "C" int __ck_syncthreads_reduce(int line, int op, int pred);  // op: 0 count, 1 and, 2 or
extern "C" unsigned long long __ck_warp_op(int line, int op, unsigned mask, unsigned long long v, int arg, int width);
extern "C" void __ck_fail(const char* what, const char* file, int line) __attribute__((noreturn));
extern "C" int __ck_printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

#define __syncthreads() __ck_syncthreads(__LINE__)
#define __syncthreads_count(p) __ck_syncthreads_reduce(__LINE__, 0, (p) != 0)
#define __syncthreads_and(p) __ck_syncthreads_reduce(__LINE__, 1, (p) != 0)
#define __syncthreads_or(p) __ck_syncthreads_reduce(__LINE__, 2, (p) != 0)
#define __syncwarp(...) ((void)__ck_warp_op(__LINE__, CK_SYNCWARP, __ck_mask_or_all(__VA_ARGS__), 0, 0, 32))
static inline unsigned __ck_mask_or_all(unsigned m = 0xffffffffu) { return m; }
#define __threadfence() ((void)0)
#define __threadfence_block() ((void)0)
#define __trap() __ck_fail("__trap() called", __FILE__, __LINE__)
#undef assert
#define assert(e) ((e) ? (void)0 : __ck_fail("assertion failed: " #e, __FILE__, __LINE__))
#define printf __ck_printf
// A kernel runs inside the notebook's own process: abort(), exit() or raise() there would end the
// notebook's kernel. Each becomes an error of the launch that names the kernel, the line and the thread.
namespace std { using ::__ck_fail; }
#define abort() __ck_fail("abort() called: a kernel cannot stop the program (on a GPU, use __trap() or "    \
                          "assert)", __FILE__, __LINE__)
#define exit(status) __ck_fail("exit() called: a kernel cannot end the program; return from the kernel", \
                               __FILE__, __LINE__)
#define _Exit(status) exit(status)
#define quick_exit(status) exit(status)
#define raise(sig) __ck_fail("raise() called: a kernel cannot send signals", __FILE__, __LINE__)
#define kill(pid, sig) __ck_fail("kill() called: a kernel cannot send signals", __FILE__, __LINE__)

// Warp shuffles carry up to 8 bytes; the value travels as raw bits.
template <class T> static inline T __ck_shfl(int line, int op, unsigned mask, T v, int arg, int width) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "shuffle of a type wider than 8 bytes");
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof(T));
    bits = __ck_warp_op(line, op, mask, bits, arg, width);
    T out;
    memcpy(&out, &bits, sizeof(T));
    return out;
}
#define __shfl_sync(m, v, lane, ...) __ck_shfl(__LINE__, CK_SHFL, (m), (v), (lane), __ck_width(__VA_ARGS__))
#define __shfl_up_sync(m, v, d, ...) __ck_shfl(__LINE__, CK_SHFL_UP, (m), (v), (d), __ck_width(__VA_ARGS__))
#define __shfl_down_sync(m, v, d, ...) __ck_shfl(__LINE__, CK_SHFL_DOWN, (m), (v), (d), __ck_width(__VA_ARGS__))
#define __shfl_xor_sync(m, v, l, ...) __ck_shfl(__LINE__, CK_SHFL_XOR, (m), (v), (l), __ck_width(__VA_ARGS__))
static inline int __ck_width(int w = 32) { return w; }
#define __ballot_sync(m, p) ((unsigned)__ck_warp_op(__LINE__, CK_BALLOT, (m), (p) != 0, 0, 32))
#define __any_sync(m, p) ((int)__ck_warp_op(__LINE__, CK_ANY, (m), (p) != 0, 0, 32))
#define __all_sync(m, p) ((int)__ck_warp_op(__LINE__, CK_ALL, (m), (p) != 0, 0, 32))
static inline unsigned __activemask() { return 0xffffffffu; }
#define __lanemask_lt() ((1u << (threadIdx.x & 31)) - 1u)

// ---- atomics: fibers never preempt each other, so plain read-modify-write --
// A counting build (SourceModule(..., counts=True)) reports each atomic as one
// read-modify-write at its call site (ck_count.cpp), not as a load and a store.
#ifdef CK_COUNTING_BUILD
extern "C" void __ck_count_atomic(void* addr, size_t size, void* pc);
#define CK_ATOMIC_FN static __attribute__((noinline, no_sanitize_thread))
#define CK_ATOMIC_NOTE(a) __ck_count_atomic((void*)(a), sizeof *(a), __builtin_return_address(0))
#else
#define CK_ATOMIC_FN static inline
#define CK_ATOMIC_NOTE(a) ((void)0)
#endif
#define CK_ATOMIC(NAME, T, EXPR) CK_ATOMIC_FN T NAME(T* a, T v) { CK_ATOMIC_NOTE(a); T old = *a; *a = (EXPR); return old; }
#define CK_ATOMIC_INT(T) \
    CK_ATOMIC(atomicAdd, T, old + v) CK_ATOMIC(atomicSub, T, old - v) CK_ATOMIC(atomicExch, T, v) \
    CK_ATOMIC(atomicMin, T, v < old ? v : old) CK_ATOMIC(atomicMax, T, v > old ? v : old) \
    CK_ATOMIC(atomicAnd, T, old & v) CK_ATOMIC(atomicOr, T, old | v) CK_ATOMIC(atomicXor, T, old ^ v) \
    CK_ATOMIC_FN T atomicCAS(T* a, T cmp, T v) { CK_ATOMIC_NOTE(a); T old = *a; if (old == cmp) *a = v; return old; }
CK_ATOMIC_INT(int)
CK_ATOMIC_INT(unsigned int)
CK_ATOMIC_INT(unsigned long long)
CK_ATOMIC_INT(long long)
CK_ATOMIC(atomicAdd, float, old + v) CK_ATOMIC(atomicExch, float, v)
CK_ATOMIC(atomicAdd, double, old + v)
CK_ATOMIC_FN unsigned atomicInc(unsigned* a, unsigned v) { CK_ATOMIC_NOTE(a); unsigned o = *a; *a = (o >= v) ? 0 : o + 1; return o; }
CK_ATOMIC_FN unsigned atomicDec(unsigned* a, unsigned v) { CK_ATOMIC_NOTE(a); unsigned o = *a; *a = (o == 0 || o > v) ? v : o - 1; return o; }
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd

// ---- math: CUDA names that the C library lacks -----------------------------
#define CK_MINMAX(T) static inline T min(T a, T b) { return a < b ? a : b; } \
                     static inline T max(T a, T b) { return a > b ? a : b; }
CK_MINMAX(int) CK_MINMAX(unsigned int) CK_MINMAX(long long) CK_MINMAX(unsigned long long)
CK_MINMAX(long) CK_MINMAX(unsigned long) CK_MINMAX(float) CK_MINMAX(double)
static inline float min(float a, int b) { return fminf(a, (float)b); }
static inline float min(int a, float b) { return fminf((float)a, b); }
static inline float max(float a, int b) { return fmaxf(a, (float)b); }
static inline float max(int a, float b) { return fmaxf((float)a, b); }
static inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
static inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
static inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
static inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
// glibc already declares these (as GNU extensions or internal aliases).
#define __expf expf
#define __exp10f exp10f
#define __logf logf
#define __log2f log2f
#define __log10f log10f
#define __sinf sinf
#define __cosf cosf
#define __tanf tanf
#define __powf powf
#define __sincosf sincosf
static inline float __fdividef(float x, float y) { return x / y; }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return sqrtf(x); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
static inline float saturatef(float x) { return __saturatef(x); }
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __float2int_rd(float x) { return (int)floorf(x); }
static inline int __float2int_ru(float x) { return (int)ceilf(x); }
static inline float __int2float_rn(int x) { return (float)x; }
static inline int __float_as_int(float x) { int i; memcpy(&i, &x, 4); return i; }
static inline unsigned __float_as_uint(float x) { unsigned i; memcpy(&i, &x, 4); return i; }
static inline float __int_as_float(int i) { float x; memcpy(&x, &i, 4); return x; }
static inline float __uint_as_float(unsigned i) { float x; memcpy(&x, &i, 4); return x; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
    return (x >> 16) | (x << 16);
}
static inline int __mul24(int a, int b) { return a * b; }
static inline unsigned __umul24(unsigned a, unsigned b) { return a * b; }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
template <class T> static inline T __ldg(const T* p) { return *p; }

// ---- dynamic shared memory --------------------------------------------------
// `extern __shared__ T name[];` is rewritten (on the same line) by the Python
// side into `__ck_dyn_shared<T> name;`, which converts to a T* that points at
// this launch's dynamic shared memory.
template <class T> struct __ck_dyn_shared {
    operator T*() const { return reinterpret_cast<T*>(__ck_dyn_smem); }
};

// ---- kernel entry trampolines ------------------------------------------------
// For every __global__ function the Python side appends
//   extern "C" void __ck_entry_NAME(const char* a) { __ck_call(&NAME, a); }
// Each parameter arrives in its own 8-byte slot of `a`.
template <class... P, size_t... I>
static inline void __ck_call_impl(void (*f)(P...), const char* a, std::index_sequence<I...>) {
    f(*reinterpret_cast<const typename std::remove_cv<typename std::remove_reference<P>::type>::type*>(a + 8 * I)...);
}
template <class... P> static inline void __ck_call(void (*f)(P...), const char* a) {
    static_assert(((sizeof(P) <= 8) && ...), "kernel parameters wider than 8 bytes are not supported by the emulator");
    __ck_call_impl(f, a, std::index_sequence_for<P...>{});
}
template <class... P> static inline int __ck_nparams(void (*)(P...)) { return (int)sizeof...(P); }
