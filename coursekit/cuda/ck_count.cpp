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
// Only one OS thread runs kernels at a time (see ck_prelude.h), so plain
// counters suffice.
#include <stddef.h>
#include <stdint.h>

#define CK_EXPORT extern "C" __attribute__((visibility("default")))
#define CK_HOOK extern "C" __attribute__((visibility("hidden")))

namespace {
constexpr int kMaxWatched = 64;
int g_watched = 0;
uintptr_t g_lo[kMaxWatched], g_hi[kMaxWatched];
unsigned long long g_bytes[kMaxWatched];

inline void count(const void* addr, size_t size) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    for (int i = 0; i < g_watched; ++i)
        if (a >= g_lo[i] && a < g_hi[i]) { g_bytes[i] += size; return; }
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

// ---- the hooks g++'s -fsanitize=thread instrumentation calls ---------------------
CK_HOOK void __tsan_init() {}
CK_HOOK void __tsan_func_entry(void*) {}
CK_HOOK void __tsan_func_exit() {}
#define CK_SIZED(N) \
    CK_HOOK void __tsan_read##N(void* p) { count(p, N); } \
    CK_HOOK void __tsan_unaligned_read##N(void* p) { count(p, N); } \
    CK_HOOK void __tsan_volatile_read##N(void* p) { count(p, N); } \
    CK_HOOK void __tsan_write##N(void*) {} \
    CK_HOOK void __tsan_unaligned_write##N(void*) {} \
    CK_HOOK void __tsan_volatile_write##N(void*) {}
CK_SIZED(1) CK_SIZED(2) CK_SIZED(4) CK_SIZED(8) CK_SIZED(16)
CK_HOOK void __tsan_read_range(void* p, size_t size) { count(p, size); }
CK_HOOK void __tsan_write_range(void*, size_t) {}
CK_HOOK void __tsan_vptr_read(void**) {}
CK_HOOK void __tsan_vptr_update(void**, void*) {}
