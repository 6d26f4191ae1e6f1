// Fault handling for ck_runtime.cpp (included there; not a public header).
#pragma once
#include <setjmp.h>
#include <signal.h>
#include <string.h>

// A kernel that dereferences a wild pointer would kill the whole Python
// process (a notebook's kernel).  During a launch, SIGSEGV/SIGBUS/SIGFPE jump
// back to ck_launch, which reports the CUDA thread; the previous handlers
// (Python's faulthandler, say) are restored afterwards.  Writes that land in
// valid memory cannot be caught this way: that is what check="memory" is for.
namespace {
sigjmp_buf g_fault_jmp;
volatile sig_atomic_t g_in_launch = 0;
void* volatile g_fault_addr = nullptr;
const int kFaultSignals[] = {SIGSEGV, SIGBUS, SIGFPE};
struct sigaction g_old_actions[3];
stack_t g_old_altstack;
alignas(16) char g_altstack[64 * 1024];

void on_fault(int sig, siginfo_t* info, void*) {
    if (!g_in_launch) {   // not ours: hand it to whoever was there before
        for (int k = 0; k < 3; ++k)
            if (kFaultSignals[k] == sig) sigaction(sig, &g_old_actions[k], nullptr);
        raise(sig);
        return;
    }
    g_fault_addr = info ? info->si_addr : nullptr;
    siglongjmp(g_fault_jmp, sig);
}

void install_fault_handlers() {
#ifndef __SANITIZE_ADDRESS__
    stack_t ss;
    ss.ss_sp = g_altstack;
    ss.ss_size = sizeof g_altstack;
    ss.ss_flags = 0;
    sigaltstack(&ss, &g_old_altstack);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (int k = 0; k < 3; ++k) sigaction(kFaultSignals[k], &sa, &g_old_actions[k]);
#endif
}

void remove_fault_handlers() {
#ifndef __SANITIZE_ADDRESS__
    for (int k = 0; k < 3; ++k) sigaction(kFaultSignals[k], &g_old_actions[k], nullptr);
    sigaltstack(&g_old_altstack, nullptr);
#endif
}
}  // namespace

