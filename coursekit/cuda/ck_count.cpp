// coursekit CUDA emulator: counting the bytes a kernel reads from its array arguments.
//
// A module built with SourceModule(..., count_reads=True) compiles the student's
// translation unit with g++'s -fsanitize=thread instrumentation but links it
// with this file instead of ThreadSanitizer's runtime.  The instrumentation
// calls __tsan_readN(address) before every load the optimised code still does
// (after the compiler has kept values in registers), whatever the source looks
// like: A[i], *(A + i), a pointer copied from A, a helper function, a float4
// load.  Here a load is counted when it lands inside one of the launch's array
// arguments (the Python side names their address ranges before each launch);
// loads from shared memory, locals and anything else are ignored.  Writes,
// function entries and exits are not needed and cost nothing.
//
// The same hooks also feed the warp-level counts of ck_warp.h (coalescing,
// bank conflicts, atomics) when a launch asks for them (ck_warp_begin).
//
// Only one OS thread runs kernels at a time (see ck_prelude.h), so plain
// counters suffice.
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "ck_warp.h"

#define CK_EXPORT extern "C" __attribute__((visibility("default")))
#define CK_HOOK extern "C" __attribute__((visibility("hidden")))

namespace {
constexpr int kMaxWatched = 64;
int g_watched = 0;
uintptr_t g_lo[kMaxWatched], g_hi[kMaxWatched];
unsigned long long g_bytes[kMaxWatched];

inline int watched(uintptr_t a) {
    for (int i = 0; i < g_watched; ++i)
        if (a >= g_lo[i] && a < g_hi[i]) return i;
    return -1;
}

inline void count(const void* addr, size_t size) {
    const int i = watched(reinterpret_cast<uintptr_t>(addr));
    if (i >= 0) g_bytes[i] += size;
}

// A load or store at `pc`, for the warp counts: global if it lands in an argument, shared if in
// shared memory, ignored otherwise (locals, the stack).  Addresses become offsets from the start of
// their argument or shared region: sectors, lines and banks are then those of a GPU, whose
// allocations start on 256-byte boundaries (the emulator's end at a guard page instead).
inline void warp_access(int kind, const void* addr, size_t size, const void* pc) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    uintptr_t base;
    const int i = watched(a);
    if (i >= 0) warp::record(kind, i, a - g_lo[i], (uint32_t)size, pc);   // as if cudaMalloc'ed: 256-aligned
    else if (warp::in_shared(a, &base)) warp::record(kind, -1, a - base, (uint32_t)size, pc);
}

inline void load(const void* addr, size_t size, const void* pc) {
    count(addr, size);
    if (warp::g_on) warp_access(warp::LOAD, addr, size, pc);
}

inline void store(const void* addr, size_t size, const void* pc) {
    if (warp::g_on) warp_access(warp::STORE, addr, size, pc);
}
}  // namespace

// Watch n address ranges [lo_hi[2i], lo_hi[2i+1]) from now on, with their counts at zero.
CK_EXPORT int ck_count_watch(int n, const uintptr_t* lo_hi) {
    if (n < 0 || n > kMaxWatched) return -1;
    for (int i = 0; i < n; ++i) { g_lo[i] = lo_hi[2 * i]; g_hi[i] = lo_hi[2 * i + 1]; g_bytes[i] = 0; }
    g_watched = n;
    return 0;
}

// Bytes read from each watched range since ck_count_watch.
CK_EXPORT void ck_count_bytes(unsigned long long* out) {
    for (int i = 0; i < g_watched; ++i) out[i] = g_bytes[i];
}

// Start counting warp requests (after ck_count_watch named the arguments);
// dyn_shared: bytes of dynamic shared memory this launch has.
CK_EXPORT void ck_warp_begin(size_t dyn_shared) {
    warp::flush();
    memset(warp::g_global, 0, sizeof warp::g_global);
    memset(warp::g_shared, 0, sizeof warp::g_shared);
    warp::g_block = -1;
    warp::g_dyn_bytes = dyn_shared;
    warp::g_on = true;
}

// Stop counting; out gets kGlobalFields counters per watched argument, then kSharedFields.
CK_EXPORT int ck_warp_end(unsigned long long* out) {
    warp::flush();
    warp::g_on = false;
    for (int i = 0; i < g_watched; ++i)
        for (int f = 0; f < warp::kGlobalFields; ++f) *out++ = warp::g_global[i][f];
    for (int f = 0; f < warp::kSharedFields; ++f) *out++ = warp::g_shared[f];
    return warp::kGlobalFields * 100 + warp::kSharedFields;
}

// An atomic read-modify-write (ck_prelude.h calls this in counting builds instead of letting the
// instrumentation see a load and a store).
CK_EXPORT void __ck_count_atomic(void* addr, size_t size, void* pc) {
    count(addr, size);
    if (warp::g_on) warp_access(warp::ATOMIC, addr, size, pc);
}

// ---- the hooks g++'s -fsanitize=thread instrumentation calls ---------------------
CK_HOOK void __tsan_init() {}
CK_HOOK void __tsan_func_entry(void*) {}
CK_HOOK void __tsan_func_exit() {}
#define CK_SIZED(N) \
    CK_HOOK void __tsan_read##N(void* p) { load(p, N, __builtin_return_address(0)); } \
    CK_HOOK void __tsan_unaligned_read##N(void* p) { load(p, N, __builtin_return_address(0)); } \
    CK_HOOK void __tsan_volatile_read##N(void* p) { load(p, N, __builtin_return_address(0)); } \
    CK_HOOK void __tsan_write##N(void* p) { store(p, N, __builtin_return_address(0)); } \
    CK_HOOK void __tsan_unaligned_write##N(void* p) { store(p, N, __builtin_return_address(0)); } \
    CK_HOOK void __tsan_volatile_write##N(void* p) { store(p, N, __builtin_return_address(0)); }
CK_SIZED(1) CK_SIZED(2) CK_SIZED(4) CK_SIZED(8) CK_SIZED(16)
CK_HOOK void __tsan_read_range(void* p, size_t size) { load(p, size, __builtin_return_address(0)); }
CK_HOOK void __tsan_write_range(void* p, size_t size) { store(p, size, __builtin_return_address(0)); }
CK_HOOK void __tsan_vptr_read(void**) {}
CK_HOOK void __tsan_vptr_update(void**, void*) {}
