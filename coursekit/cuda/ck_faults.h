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
const int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGINT, 0};
struct sigaction g_old[4];
bool g_installed[5];
stack_t g_old_altstack;
alignas(16) char g_altstack[64 * 1024];
timer_t g_timer;
pid_t g_timer_tid = 0;

inline int watchdog_signal() { return SIGRTMIN + 4; }

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
}

void on_signal(int sig, siginfo_t* info, void* uctx) {
    const bool stop_signal = sig == SIGINT || sig == watchdog_signal();
    if (!g_in_launch || !pthread_equal(pthread_self(), g_launch_thread)) {
        if (g_in_launch && stop_signal) { pthread_kill(g_launch_thread, sig); return; }
        for (int k = 0; kSignals[k]; ++k)         // not ours: restore the previous handler and let it act
            if (kSignals[k] == sig && g_installed[k]) {
                sigaction(sig, &g_old[k], nullptr);
                if (sig == SIGINT) raise(sig);
            }
        return;                                   // a fault re-executes and reaches the previous handler
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
    pid_t tid = (pid_t)syscall(SYS_gettid);
    if (g_timer_tid != tid) {
        if (g_timer_tid) timer_delete(g_timer);
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = watchdog_signal();
        sev._sigev_un._tid = tid;
        g_timer_tid = timer_create(CLOCK_MONOTONIC, &sev, &g_timer) == 0 ? tid : 0;
    }
    stack_t ss;
    ss.ss_sp = g_altstack;
    ss.ss_size = sizeof g_altstack;
    ss.ss_flags = 0;
    sigaltstack(&ss, &g_old_altstack);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (int k = 0; kSignals[k]; ++k) {
        g_installed[k] = false;
        if (kSignals[k] == SIGINT) {
            if (!catch_sigint) continue;
            struct sigaction cur;
            sigaction(SIGINT, nullptr, &cur);
            if (cur.sa_handler == SIG_IGN) continue;   // whoever ignores Ctrl-C keeps ignoring it
        }
        g_installed[k] = sigaction(kSignals[k], &sa, &g_old[k]) == 0;
    }
    g_installed[4] = g_timer_tid && sigaction(watchdog_signal(), &sa, nullptr) == 0;
    if (g_installed[4] && timeout_s > 0) arm_timer(timeout_s);
    // unblock what we handle (a caller may have blocked SIGINT in this thread)
    sigset_t ours;
    sigemptyset(&ours);
    sigaddset(&ours, SIGINT);
    sigaddset(&ours, watchdog_signal());
    pthread_sigmask(SIG_UNBLOCK, &ours, nullptr);
#else
    (void)catch_sigint; (void)timeout_s;
#endif
}

void remove_handlers() {
#ifndef __SANITIZE_ADDRESS__
    for (int k = 0; kSignals[k]; ++k)
        if (g_installed[k]) sigaction(kSignals[k], &g_old[k], nullptr);
    if (g_installed[4]) {
        arm_timer(0);                              // disarm; a signal still pending is ignored
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigaction(watchdog_signal(), &ign, nullptr);
    }
    sigaltstack(&g_old_altstack, nullptr);
#endif
}
