// Fiber context switching for ck_runtime.cpp (included inside its anonymous
// namespace, after Fiber and the g_* globals; not a public header).
//
// swapcontext() makes a sigprocmask system call on every switch; the
// hand-written x86-64 switch below only saves the callee-saved registers and
// the stack pointer, which made the 2000-block x 256-thread reduction
// benchmark about 14x faster (4.5 s -> 0.32 s on the course's 2-core VM).
#pragma once

#ifdef CK_UCONTEXT
ucontext_t g_sched;
void fiber_main() {
    g_entry(g_args);
    g_self->state = DONE;
    swapcontext(&g_self->ctx, &g_sched);
}
inline void to_sched() { swapcontext(&g_self->ctx, &g_sched); }
inline void resume(Fiber* f) { swapcontext(&g_sched, &f->ctx); }
void prepare(Fiber* f) {
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = f->stack;
    f->ctx.uc_stack.ss_size = stack_bytes();
    f->ctx.uc_link = nullptr;
    makecontext(&f->ctx, fiber_main, 0);
}
#else
void* g_sched_sp = nullptr;
extern "C" void ck_switch(void** save_sp, void* new_sp);
extern "C" void ck_fiber_start();
// ck_switch pushes the callee-saved registers, stores rsp, loads the other
// stack and pops them back.  A new fiber's stack is laid out so that the
// final `ret` lands in ck_fiber_start, which calls fiber_main.
asm(R"(
.text
.p2align 4
.type ck_switch,@function
ck_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size ck_switch,.-ck_switch
.p2align 4
.type ck_fiber_start,@function
ck_fiber_start:
    call *%r12
    ud2
.size ck_fiber_start,.-ck_fiber_start
)");
extern "C" void fiber_main() {
    g_entry(g_args);
    g_self->state = DONE;
    ck_switch(&g_self->sp, g_sched_sp);
}
inline void to_sched() { ck_switch(&g_self->sp, g_sched_sp); }
inline void resume(Fiber* f) { ck_switch(&g_sched_sp, f->sp); }
void prepare(Fiber* f) {
    // Top of stack, 16-byte aligned; after `ret` rsp is 16-aligned for the call.
    // Stacks are a slot apart, so their tops would all fall in the same cache
    // sets; a per-fiber offset ("colouring") spreads them out (2x faster).
    size_t colour = ((size_t)(f - g_fibers.data()) * 1088) % kColour;
    uintptr_t top = ((uintptr_t)(f->stack + stack_bytes() - colour)) & ~(uintptr_t)15;
    void** sp = (void**)top;             // after ck_switch's `ret` rsp == top, 16-aligned
    *--sp = (void*)ck_fiber_start;       // return address of ck_switch
    *--sp = nullptr;                     // rbp
    *--sp = nullptr;                     // rbx
    *--sp = (void*)fiber_main;           // r12
    *--sp = nullptr;                     // r13
    *--sp = nullptr;                     // r14
    *--sp = nullptr;                     // r15
    f->sp = sp;
}
#endif

