// Fiber stacks with guard pages, fault handling, Ctrl-C and the watchdog for
// ck_runtime.cpp (included inside its anonymous namespace, after Fiber and the
// g_* globals; not a public header).
//
// Why: a kernel runs inside the notebook's own Python process.  A thread
// whose locals outgrow its stack, a wild pointer or an endless loop must
// become a Python exception, never a dead kernel or silently changed arrays.
//
// * Stacks.  One mmap'ed region (MAP_NORESERVE: untouched pages cost nothing)
//   holds every fiber's stack; below each stack lies a PROT_NONE guard.  A
//   fiber that overflows faults on its own guard instead of writing into its
//   neighbour or the user's NumPy arrays (kernels are built with
//   -fstack-clash-protection, so a huge frame touches the guard first).  The
//   default, 512 KiB per CUDA thread, is what a GPU allows as local memory.
// * Faults.  During a launch SIGSEGV/SIGBUS/SIGFPE run a handler on an
//   alternate signal stack that records the address, the instruction and the
//   access kind, then siglongjmp()s back to ck_launch; the Python side turns
//   the record into a message (guard hit = stack overflow, address next to an
//   argument = out of bounds on that argument, line from the debug info).
// * Stopping.  SIGINT (Ctrl-C, Jupyter's interrupt) and a watchdog timer set
//   g_stop.  The handler jumps out at once when it interrupted a fiber in
//   kernel code (our library's text, not in printf/assert, which allocate);
//   otherwise the scheduler and printf honour g_stop at their next step and a
//   10 ms retry timer catches a loop that spends its time in libm.  Nothing is
//   jumped over that holds a lock, so the process stays usable.
#pragma once
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

enum Stop { STOP_NONE = 0, STOP_INTERRUPT = 1, STOP_TIMEOUT = 2 };

size_t g_stack_usable = 512 * 1024;   // per fiber, settable with ck_set_stack_kib
const size_t kGuard = 64 * 1024;      // PROT_NONE below every stack
size_t g_slot = 0;                    // guard + colour + usable, page-rounded
size_t g_region_bytes = 0;

sigjmp_buf g_fault_jmp;
volatile sig_atomic_t g_in_launch = 0, g_in_fiber = 0, g_unsafe = 0, g_stop = STOP_NONE;
volatile int g_fault_sig = 0, g_fault_code = 0, g_fault_write = -1;
void* volatile g_fault_addr = nullptr;
void* volatile g_fault_pc = nullptr;
pthread_t g_launch_thread;
uintptr_t g_text_lo = 0, g_text_hi = 0;
int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGINT, 0, 0};   // [4]: the watchdog's, set at first use
struct sigaction g_old[5];
bool g_installed[5], g_sigint_taken = false, g_armed = false;
alignas(16) char g_altstack[64 * 1024];
timer_t g_timer;
pid_t g_timer_tid = 0;
pthread_t g_timer_thread;

inline int watchdog_signal() { return kSignals[4] ? kSignals[4] : (kSignals[4] = SIGRTMIN + 4); }

// Reserve stacks for n fibers (at least 64; the region is replaced when a
// launch needs more, or when the stack size changed).  False + g_error on failure.
bool ensure_fibers(size_t n) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t slot = (kGuard + kColour + g_stack_usable + page - 1) / page * page;
    if (n <= g_region_fibers && slot == g_slot) return true;
    size_t count = n < 64 ? 64 : n;
    if (g_region) munmap(g_region, g_region_bytes);
    g_region = nullptr; g_region_fibers = 0;
    size_t bytes = count * slot;
    char* region = (char*)mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    bool ok = region != MAP_FAILED;
    for (size_t t = 0; ok && t < count; ++t)
        ok = mprotect(region + t * slot + kGuard, slot - kGuard, PROT_READ | PROT_WRITE) == 0;
    if (!ok) {
        if (region != MAP_FAILED) munmap(region, bytes);
        g_error = fmt("could not reserve %zu MiB of address space for the stacks of %zu CUDA threads (%zu KiB "
                      "each): a virtual-memory limit (ulimit -v)? Launch fewer threads per block, or lower "
                      "COURSEKIT_CUDA_STACK_KB.", bytes >> 20, count, g_stack_usable / 1024);
        return false;
    }
    g_region = region; g_region_bytes = bytes; g_region_fibers = count; g_slot = slot;
    g_fibers.assign(count, Fiber{});
    for (size_t t = 0; t < count; ++t) g_fibers[t].stack = region + t * slot + kGuard;
    return true;
}

// Give the stacks back.  Each module (a compiled kernel source) has its own region, and every fiber's
// guard page splits it into two mappings: kept for the life of the process, a few hundred modules
// reach the kernel's limit on mappings (vm.max_map_count, 65530) and the next launch anywhere fails.
// Reserving afresh costs more than a small launch (fresh pages), so only idle modules give theirs back.
void release_fibers() {
    if (g_region) munmap(g_region, g_region_bytes);
    g_region = nullptr; g_region_bytes = 0; g_region_fibers = 0;
    g_fibers.clear();
}

size_t stack_bytes() { return g_slot - kGuard; }

// Index of the fiber whose guard page holds `addr`, or -1.
long guard_owner(const void* addr) {
    uintptr_t a = (uintptr_t)addr, lo = (uintptr_t)g_region;
    if (!g_region || a < lo || a >= lo + g_region_bytes) return -1;
    return (a - lo) % g_slot < kGuard ? (long)((a - lo) / g_slot) : -1;
}

int text_range(struct dl_phdr_info* info, size_t, void* base) {
    if ((void*)info->dlpi_addr != base) return 0;
    for (int k = 0; k < info->dlpi_phnum; ++k) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[k];
        if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
            g_text_lo = info->dlpi_addr + ph.p_vaddr;
            g_text_hi = g_text_lo + ph.p_memsz;
        }
    }
    return 1;
}

void* pc_of(void* uctx) {
    const ucontext_t* uc = (const ucontext_t*)uctx;
#if defined(__x86_64__)
    return (void*)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (void*)uc->uc_mcontext.pc;
#else
    (void)uc; return nullptr;
#endif
}

void arm_timer(double seconds) {
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    its.it_value.tv_sec = (time_t)seconds;
    its.it_value.tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9);
    timer_settime(g_timer, 0, &its, nullptr);
    g_armed = seconds > 0;
}

void on_signal(int sig, siginfo_t* info, void* uctx) {
    const bool stop_signal = sig == SIGINT || sig == watchdog_signal();
    if (sig == watchdog_signal() && (!info || info->si_value.sival_ptr != (void*)&g_timer))
        return;                                   // another library's (stale) timer
    if (!g_in_launch || !pthread_equal(pthread_self(), g_launch_thread)) {
        if (g_in_launch && stop_signal) { pthread_kill(g_launch_thread, sig); return; }
        if (sig == SIGINT) {                      // just after the launch: it is Python's
            const struct sigaction& old = g_old[3];
            if (old.sa_flags & SA_SIGINFO) old.sa_sigaction(sig, info, uctx);
            else if (old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL) old.sa_handler(sig);
            return;
        }
        if (stop_signal) return;                  // a late timer after its launch
        for (int k = 0; k < 3; ++k)               // a fault that is not ours: back to the previous
            if (kSignals[k] == sig) {             // handler, which gets it when the access re-executes
                sigaction(sig, &g_old[k], nullptr);
                g_installed[k] = false;
            }
        return;
    }
    if (stop_signal) {
        if (g_stop != STOP_INTERRUPT) g_stop = sig == SIGINT ? STOP_INTERRUPT : STOP_TIMEOUT;
        uintptr_t pc = (uintptr_t)pc_of(uctx);
        if (g_in_fiber && !g_unsafe && pc >= g_text_lo && pc < g_text_hi) siglongjmp(g_fault_jmp, 1);
        arm_timer(0.01);                          // not a safe place: try again in 10 ms
        return;
    }
    g_fault_sig = sig;
    g_fault_code = info ? info->si_code : 0;
    g_fault_addr = info ? info->si_addr : nullptr;
    g_fault_pc = pc_of(uctx);
#if defined(__x86_64__)
    g_fault_write = sig == SIGSEGV ? (int)((((const ucontext_t*)uctx)->uc_mcontext.gregs[REG_ERR] >> 1) & 1) : -1;
#endif
    siglongjmp(g_fault_jmp, 1);
}

// Called by ck_launch before the jump target is set.  catch_sigint: the
// launch runs on Python's main thread, where Ctrl-C is meant for it.
// Ours for SIGSEGV/SIGBUS/FPE and the watchdog signal stay installed between
// launches (when not in a launch they hand a fault to the previous handler),
// so a launch only checks that nobody replaced them: one query each instead
// of an install and a restore.  SIGINT is Python's between launches, so it is
// taken for the launch and given back.  The altstack is left in place too.
void ensure_handler(int k, const struct sigaction& sa) {
    struct sigaction cur;
    if (sigaction(kSignals[k], nullptr, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal)
        return;
    g_installed[k] = sigaction(kSignals[k], &sa, &g_old[k]) == 0;
}

void install_handlers(bool catch_sigint, double timeout_s) {
    g_launch_thread = pthread_self();
    g_stop = STOP_NONE;
    g_unsafe = 0;
    g_fault_sig = 0; g_fault_addr = nullptr; g_fault_pc = nullptr; g_fault_write = -1;
#ifndef __SANITIZE_ADDRESS__
    if (!g_text_lo) {
        Dl_info dl;
        if (dladdr((void*)&on_signal, &dl)) dl_iterate_phdr(text_range, dl.dli_fbase);
    }
    if (!g_timer_tid || !pthread_equal(g_timer_thread, g_launch_thread)) {
        if (g_timer_tid) timer_delete(g_timer);
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = watchdog_signal();
        sev.sigev_value.sival_ptr = &g_timer;          // tells our timer from another library's
        pid_t tid = (pid_t)syscall(SYS_gettid);
        sev._sigev_un._tid = tid;
        g_timer_tid = timer_create(CLOCK_MONOTONIC, &sev, &g_timer) == 0 ? tid : 0;
        g_timer_thread = g_launch_thread;
    }
    stack_t cur_ss;
    if (sigaltstack(nullptr, &cur_ss) == 0 && ((cur_ss.ss_flags & SS_DISABLE) || cur_ss.ss_size < 16384)) {
        stack_t ss;
        ss.ss_sp = g_altstack;
        ss.ss_size = sizeof g_altstack;
        ss.ss_flags = 0;
        sigaltstack(&ss, nullptr);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (int k = 0; k < 3; ++k) ensure_handler(k, sa);
    g_sigint_taken = false;
    if (catch_sigint && sigaction(SIGINT, &sa, &g_old[3]) == 0) {
        g_sigint_taken = true;
        if (!(g_old[3].sa_flags & SA_SIGINFO) && g_old[3].sa_handler == SIG_IGN) {   // ignored stays ignored
            sigaction(SIGINT, &g_old[3], nullptr);
            g_sigint_taken = false;
        }
    }
    if (g_timer_tid) {
        ensure_handler(4, sa);
        if (timeout_s > 0) arm_timer(timeout_s);
    }
#else
    (void)catch_sigint; (void)timeout_s;
#endif
}

void remove_handlers() {
#ifndef __SANITIZE_ADDRESS__
    if (g_sigint_taken) sigaction(SIGINT, &g_old[3], nullptr);
    g_sigint_taken = false;
    if (g_armed) arm_timer(0);
#endif
}
