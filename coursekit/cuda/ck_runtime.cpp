// coursekit CUDA emulator runtime: runs a kernel launch on one OS thread.
//
// Every CUDA thread of a block is a fiber with its own stack.  The block
// scheduler resumes each runnable fiber in turn (forward or reverse thread
// order); a fiber runs until it reaches __syncthreads(), a warp-level
// operation, or the end of the kernel, and then switches back.  After each
// pass the scheduler decides what may proceed: a warp operation completes
// when all lanes of its mask have arrived, a block barrier when every thread
// of the block waits at the same barrier.  When nothing can proceed the
// launch stops with an error that says why (divergent barrier), instead of
// hanging as a GPU would.
//
// Context switches: a few lines of x86-64 assembly (no signal-mask syscall,
// unlike swapcontext).  Elsewhere, and in the AddressSanitizer build (which
// understands swapcontext), ucontext is used.
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <vector>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#if !defined(__x86_64__) || defined(__SANITIZE_ADDRESS__) || defined(CK_USE_UCONTEXT)
#define CK_UCONTEXT 1
#endif
#include <ucontext.h>

#define CK_EXPORT extern "C" __attribute__((visibility("default")))

struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x, y, z; };
struct __ck_fiber_pub { uint3 idx; };

enum { CK_SHFL = 0, CK_SHFL_UP, CK_SHFL_DOWN, CK_SHFL_XOR, CK_BALLOT, CK_ANY, CK_ALL, CK_SYNCWARP };
enum State { READY, WAIT_BLOCK, WAIT_WARP, DONE, FAILED };

struct Fiber {
    __ck_fiber_pub pub;   // must stay first: the prelude reads threadIdx from it
    int state;
    int line;             // source line of the barrier / warp op it waits at
    int op, arg, width;   // pending warp op
    unsigned mask;
    unsigned long long value, result;
#ifdef CK_UCONTEXT
    ucontext_t ctx;
#else
    void* sp;
#endif
    char* stack;
};

CK_EXPORT __ck_fiber_pub* __ck_cur = nullptr;
CK_EXPORT uint3 __ck_blockIdx = {0, 0, 0};
CK_EXPORT dim3 __ck_blockDim = {1, 1, 1};
CK_EXPORT dim3 __ck_gridDim = {1, 1, 1};
CK_EXPORT char* __ck_dyn_smem = nullptr;

namespace {

// Per-fiber stacks live in one region with a guard below each (ck_faults.h).
// The top kColour bytes of each are used to stagger stack tops across cache sets.
const size_t kColour = 16 * 1024;
std::vector<Fiber> g_fibers;
char* g_region = nullptr;
size_t g_region_fibers = 0;
Fiber* g_self = nullptr;            // == (Fiber*)__ck_cur
void (*g_entry)(const char*) = nullptr;
const char* g_args = nullptr;
std::string g_error, g_printf;
const char* g_kernel = "kernel";
bool g_printf_truncated = false;
const size_t kPrintfLimit = 1 << 20;  // CUDA's default printf FIFO is 1 MiB too

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

std::string where(const Fiber& f) {
    return fmt("block (%u,%u,%u) thread (%u,%u,%u)", __ck_blockIdx.x, __ck_blockIdx.y, __ck_blockIdx.z,
               f.pub.idx.x, f.pub.idx.y, f.pub.idx.z);
}

#include "ck_faults.h"   // stacks with guard pages, fault handling, Ctrl-C, watchdog
#include "ck_switch.h"   // fiber_main, resume, to_sched, prepare

const char* op_name(int op) {
    static const char* names[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
                                  "__ballot_sync", "__any_sync", "__all_sync", "__syncwarp"};
    return (op >= 0 && op <= CK_SYNCWARP) ? names[op] : "warp operation";
}

// Complete the warp operation of the lanes [lo, hi) if every lane its mask
// names has arrived.  Returns 1 if it completed, 0 if it must wait, -1 on error.
int resolve_warp(size_t lo, size_t hi) {
    Fiber* first = nullptr;
    for (size_t t = lo; t < hi; ++t)
        if (g_fibers[t].state == WAIT_WARP) { first = &g_fibers[t]; break; }
    if (!first) return 0;
    unsigned mask = first->mask, present = 0;
    for (size_t t = lo; t < hi; ++t) present |= 1u << (t - lo);
    unsigned need = mask & present;
    for (size_t t = lo; t < hi; ++t) {
        Fiber& f = g_fibers[t];
        if (!(need >> (t - lo) & 1u)) continue;
        if (f.state == DONE) {
            g_error = fmt("%s on line %d: its mask 0x%08x includes lane %zu (%s), which has already "
                          "exited the kernel. Use a mask of the lanes that really take part.",
                          op_name(first->op), first->line, mask, t - lo, where(f).c_str());
            return -1;
        }
        if (f.state != WAIT_WARP) return 0;
        if (f.op != first->op || f.line != first->line) {
            g_error = fmt("warp divergence: lane %zu waits at %s on line %d while lane %zu waits at %s on line "
                          "%d (%s). All lanes of the mask must reach the same warp operation.",
                          (size_t)(first - &g_fibers[lo]), op_name(first->op), first->line, t - lo,
                          op_name(f.op), f.line, where(f).c_str());
            return -1;
        }
    }
    unsigned vote = 0;
    for (size_t t = lo; t < hi; ++t)
        if ((need >> (t - lo) & 1u) && g_fibers[t].value) vote |= 1u << (t - lo);
    for (size_t t = lo; t < hi; ++t) {
        if (!(need >> (t - lo) & 1u)) continue;
        Fiber& f = g_fibers[t];
        int lane = (int)(t - lo), w = f.width > 0 && f.width <= 32 ? f.width : 32;
        int base = lane & ~(w - 1), src = lane;
        switch (f.op) {
            case CK_SHFL: src = base + (f.arg & (w - 1)); break;
            case CK_SHFL_UP: src = (lane - base) >= f.arg ? lane - f.arg : lane; break;
            case CK_SHFL_DOWN: src = (lane - base) + f.arg < w ? lane + f.arg : lane; break;
            case CK_SHFL_XOR: src = lane ^ f.arg; if (src >= base + w) src = lane; break;
        }
        if (f.op <= CK_SHFL_XOR) {
            bool ok = src >= 0 && src < 32 && (need >> src & 1u);
            f.result = ok ? g_fibers[lo + src].value : f.value;
        } else if (f.op == CK_BALLOT) f.result = vote;
        else if (f.op == CK_ANY) f.result = vote != 0;
        else if (f.op == CK_ALL) f.result = vote == need;
        f.state = READY;
    }
    return 1;
}

// One block, all its fibers, to completion.  Returns 0 or -1 (g_error set).
int run_block(size_t n, int reverse) {
    const dim3 bd = __ck_blockDim;
    for (size_t t = 0; t < n; ++t) {
        Fiber& f = g_fibers[t];
        f.pub.idx = uint3{(unsigned)(t % bd.x), (unsigned)((t / bd.x) % bd.y), (unsigned)(t / ((size_t)bd.x * bd.y))};
        f.state = READY;
        prepare(&f);
    }
    for (;;) {
        // Fast path bookkeeping: when every thread ends the pass at the same
        // __syncthreads(), release them without rescanning the block.
        size_t at_same_barrier = 0;
        int barrier_line = -1;
        for (size_t k = 0; k < n; ++k) {
            Fiber* f = &g_fibers[reverse ? n - 1 - k : k];
            if (f->state != READY) continue;
            g_self = f;
            __ck_cur = &f->pub;
            g_in_fiber = 1;
            resume(f);
            g_in_fiber = 0;
            if (f->state == WAIT_BLOCK) {
                if (barrier_line < 0) barrier_line = f->line;
                at_same_barrier += f->line == barrier_line;
            } else if (f->state == FAILED) return -1;
        }
        if (g_stop) return -1;       // Ctrl-C or the watchdog (ck_faults.h)
        if (at_same_barrier == n) {
            for (size_t t = 0; t < n; ++t) g_fibers[t].state = READY;
            continue;
        }
        bool progress = false;
        for (size_t lo = 0; lo < n; lo += 32) {
            int r = resolve_warp(lo, lo + 32 < n ? lo + 32 : n);
            if (r < 0) return -1;
            progress |= r > 0;
        }
        if (progress) continue;
        size_t done = 0, block = 0, warp = 0;
        const Fiber* at_block = nullptr; const Fiber* at_warp = nullptr; const Fiber* exited = nullptr;
        for (size_t t = 0; t < n; ++t) {
            const Fiber& f = g_fibers[t];
            if (f.state == DONE) { ++done; if (!exited) exited = &f; }
            else if (f.state == WAIT_BLOCK) {
                if (at_block && at_block->line != f.line) {
                    g_error = fmt("divergent __syncthreads(): %s waits at the barrier on line %d while %s waits at "
                                  "the barrier on line %d. Every thread of a block must reach the same "
                                  "__syncthreads(); a GPU would hang or misbehave here.",
                                  where(*at_block).c_str(), at_block->line, where(f).c_str(), f.line);
                    return -1;
                }
                ++block; if (!at_block) at_block = &f;
            } else if (f.state == WAIT_WARP) { ++warp; if (!at_warp) at_warp = &f; }
        }
        if (done == n) return 0;
        if (warp) {
            g_error = fmt("%s on line %d can never complete: %s waits there, but other lanes of its warp %s. "
                          "All lanes named in the mask must reach the same warp operation.",
                          op_name(at_warp->op), at_warp->line, where(*at_warp).c_str(),
                          at_block ? fmt("wait at __syncthreads() on line %d", at_block->line).c_str()
                                   : "have exited");
            return -1;
        }
        if (done) {
            g_error = fmt("divergent __syncthreads(): %zu of %zu threads wait at the barrier on line %d (e.g. %s) "
                          "but %zu threads already returned (e.g. %s). A barrier inside `if` or after an early "
                          "`return` must be reached by every thread of the block; a GPU would hang or "
                          "misbehave here.", block, n, at_block->line, where(*at_block).c_str(), done,
                          where(*exited).c_str());
            return -1;
        }
        for (size_t t = 0; t < n; ++t) g_fibers[t].state = READY;  // everyone at one barrier: release
    }
}

}  // namespace

extern "C" char __start_ck_shared[] __attribute__((weak));
extern "C" char __stop_ck_shared[] __attribute__((weak));

CK_EXPORT void __ck_syncthreads(int line) {
    g_self->state = WAIT_BLOCK;
    g_self->line = line;
    to_sched();
}

CK_EXPORT int __ck_syncthreads_reduce(int line, int op, int pred) {
    g_self->value = pred;
    __ck_syncthreads(line);
    // After the release every fiber has deposited its predicate.
    size_t n = (size_t)__ck_blockDim.x * __ck_blockDim.y * __ck_blockDim.z, count = 0;
    for (size_t t = 0; t < n; ++t) count += g_fibers[t].value != 0;
    int r = op == 0 ? (int)count : op == 1 ? count == n : count != 0;
    __ck_syncthreads(line);   // nobody may overwrite `value` before all have read it
    return r;
}

CK_EXPORT unsigned long long __ck_warp_op(int line, int op, unsigned mask, unsigned long long v, int arg, int width) {
    Fiber* f = g_self;
    f->state = WAIT_WARP;
    f->line = line; f->op = op; f->mask = mask; f->value = v; f->arg = arg; f->width = width;
    to_sched();
    return f->result;
}

CK_EXPORT void __ck_fail(const char* what, const char* file, int line) {
    g_unsafe = 1;
    g_error = fmt("%s (%s line %d, %s)", what, file, line, where(*g_self).c_str());
    g_self->state = FAILED;
    to_sched();
    abort();  // never resumed
}

// glibc's assert() (if the kernel includes <assert.h> again) calls this; the
// kernel library is linked with -Bsymbolic so it wins over libc's version.
CK_EXPORT void __assert_fail(const char* expr, const char* file, unsigned line, const char*) {
    g_unsafe = 1;
    std::string what = std::string("assertion failed: ") + expr;
    __ck_fail(what.c_str(), file, (int)line);
}

CK_EXPORT int __ck_printf(const char* f, ...) {
    g_unsafe = 1;     // allocates: Ctrl-C must not jump out of here (ck_faults.h)
    char small[512];
    va_list ap, ap2;
    va_start(ap, f);
    va_copy(ap2, ap);
    int len = vsnprintf(small, sizeof small, f, ap);
    va_end(ap);
    if (len < 0) { va_end(ap2); g_unsafe = 0; return len; }
    std::string s;
    if ((size_t)len < sizeof small) s.assign(small, len);
    else { s.resize(len + 1); vsnprintf(&s[0], len + 1, f, ap2); s.resize(len); }
    va_end(ap2);
    if (g_printf.size() + s.size() > kPrintfLimit) g_printf_truncated = true;
    else g_printf += s;
    g_unsafe = 0;
    if (g_stop) { g_self->state = FAILED; to_sched(); }   // the scheduler reports the stop
    return len;
}

CK_EXPORT const char* ck_last_error() { return g_error.c_str(); }
CK_EXPORT const char* ck_printf_output() { return g_printf.c_str(); }
CK_EXPORT int ck_printf_truncated() { return g_printf_truncated; }
CK_EXPORT size_t ck_static_shared_bytes() { return (size_t)(__stop_ck_shared - __start_ck_shared); }
CK_EXPORT const char* ck_switch_kind() {
#ifdef CK_UCONTEXT
    return "ucontext";
#else
    return "x86-64 assembly";
#endif
}

CK_EXPORT void ck_set_stack_kib(size_t kib) { g_stack_usable = (kib < 16 ? 16 : kib) * 1024; }
CK_EXPORT size_t ck_stack_kib() { return g_stack_usable / 1024; }

// What the last fault (rc == -4) was: 0 signal, 1 si_code, 2 address,
// 3 instruction offset in this library (-1 if elsewhere), 4 1 for a write /
// 0 read / -1 unknown, 5 fiber whose stack guard was hit (-1 if none),
// 6 usable stack bytes per fiber.
CK_EXPORT long long ck_fault_info(int what) {
    uintptr_t pc = (uintptr_t)g_fault_pc;
    Dl_info dl;
    switch (what) {
        case 0: return g_fault_sig;
        case 1: return g_fault_code;
        case 2: return (long long)(uintptr_t)g_fault_addr;
        case 3: return pc >= g_text_lo && pc < g_text_hi && dladdr((void*)pc, &dl)
                       ? (long long)(pc - (uintptr_t)dl.dli_fbase) : -1;
        case 4: return g_fault_write;
        case 5: return guard_owner(g_fault_addr);
        case 6: return (long long)g_stack_usable;
    }
    return 0;
}

// Run a whole launch.  `args` holds one 8-byte slot per kernel parameter.
// Returns 0 on success, 1 on success with printf output waiting in
// ck_printf_output(); on failure -1 (ck_last_error() says why), -2 stopped by
// SIGINT, -3 stopped by the watchdog after timeout_s seconds (0: none), -4 a
// fault (ck_fault_info); for -2..-4 ck_last_error() names the CUDA thread.
CK_EXPORT int ck_launch(void (*entry)(const char*), const char* args, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, size_t dyn_shared, int reverse,
                        const char* kernel_name, int catch_sigint, double timeout_s) {
    const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    g_error.clear();
    g_printf.clear();
    g_printf_truncated = false;
    g_entry = entry;
    g_args = args;
    g_kernel = kernel_name;
    g_self = nullptr;
    size_t n = (size_t)block[0] * block[1] * block[2];
    if (!ensure_fibers(n)) {
        g_error = fmt("kernel '%s': ", kernel_name) + g_error;
        return -1;
    }
    __ck_gridDim = dim3{grid[0], grid[1], grid[2]};
    __ck_blockDim = dim3{block[0], block[1], block[2]};
#ifdef __SANITIZE_ADDRESS__
    char* dyn = (char*)malloc(dyn_shared ? dyn_shared : 1);   // exact size: overruns are reported
    fprintf(stderr, "CK_SHARED %p %zu\n", (void*)dyn, dyn_shared);  // checked.py names it in reports
#else
    char* dyn = (char*)aligned_alloc(16, (dyn_shared + 15) / 16 * 16 + 16);
#endif
    __ck_dyn_smem = dyn;
    size_t static_bytes = ck_static_shared_bytes();
    volatile int rc = 0;
    size_t nblocks = (size_t)grid[0] * grid[1] * grid[2];
    install_handlers(catch_sigint != 0, timeout_s);
    if (sigsetjmp(g_fault_jmp, 1) != 0) {        // a fault, or a stop at a safe place
        g_in_launch = 0;
        g_in_fiber = 0;
        rc = -1;
    } else {
        g_in_launch = 1;
    }
    for (size_t k = 0; k < nblocks && rc == 0 && !g_stop; ++k) {
        size_t b = reverse ? nblocks - 1 - k : k;
        __ck_blockIdx = uint3{(unsigned)(b % grid[0]), (unsigned)((b / grid[0]) % grid[1]),
                              (unsigned)(b / ((size_t)grid[0] * grid[1]))};
        // Poison shared memory: a read before any write gives NaN / -1, not a
        // value left behind by the previous block.
        if (static_bytes) memset(__start_ck_shared, 0xff, static_bytes);
        if (dyn_shared) memset(dyn, 0xff, dyn_shared);
        rc = run_block(n, reverse);
    }
    g_in_launch = 0;
    remove_handlers();
    int result = rc != 0 ? -1 : (g_printf.empty() && !g_printf_truncated ? 0 : 1);
    if (g_fault_sig || g_stop) {
        result = g_fault_sig ? -4 : g_stop == STOP_INTERRUPT ? -2 : -3;
        g_error = g_self ? where(*g_self) : "the kernel";
    } else if (rc != 0) {
        g_error = fmt("kernel '%s': ", kernel_name) + g_error;
    }
    __ck_dyn_smem = nullptr;
    __ck_cur = nullptr;
    free(dyn);
    return result;
}

// The emulator (emulator.py) keeps the stacks of the modules launched most recently and gives back
// the others' (see release_fibers in ck_faults.h).
CK_EXPORT void ck_release_fibers() { release_fibers(); }
