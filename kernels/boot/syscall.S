// syscall.S: the `syscall` entry, the first return of a forked task, and
// the way init's kernel thread enters user mode.
//
// syscall leaves rip in rcx and rflags in r11, and keeps the user stack.
// With interrupts masked (FMASK) we swapgs to reach this CPU's cpu_local,
// park the user rsp there, take RSP0 (the top of current's block), and
// build the same struct trapframe an interrupt from user mode builds.  The
// way out is always trapret's iretq: it also serves execve (new rip/rsp)
// and fork children, at the cost of sysret's speed.

#define USER_DS   0x1b
#define USER_CS   0x23
#define T_SYSCALL 0x100
#define CPU_RSP0  4
#define CPU_USER_RSP 104

        .text
        .globl syscall_entry
syscall_entry:
        swapgs
        movq %rsp, %gs:CPU_USER_RSP
        movq %gs:CPU_RSP0, %rsp
        pushq $USER_DS                  // ss
        pushq %gs:CPU_USER_RSP          // rsp
        swapgs
        pushq %r11                      // rflags
        pushq $USER_CS                  // cs
        pushq %rcx                      // rip
        pushq $0                        // err
        pushq $T_SYSCALL                // vec
        pushq %rax
        pushq %rbx
        pushq %rcx
        pushq %rdx
        pushq %rsi
        pushq %rdi
        pushq %rbp
        pushq %r8
        pushq %r9
        pushq %r10
        pushq %r11
        pushq %r12
        pushq %r13
        pushq %r14
        pushq %r15
        movq %rsp, %rdi                 // struct trapframe *
        cld
        sti
        call syscall_dispatch           // returns with interrupts off
        jmp trapret

// A forked task's first switch "returns" here (task.c lays out its stack),
// with rax = prev and rsp = its trapframe at the top of the block.
        .globl ret_from_fork
ret_from_fork:
        movq %rax, %rdi
        call schedule_tail
        movq %rsp, %rdi
        call exit_to_user_mode          // returns with interrupts off
        jmp trapret

// enter_user(tf): tf is task_pt_regs(current); abandon the kernel stack
// below it and iretq to user mode.
        .globl enter_user
enter_user:
        movq %rdi, %rsp
        call exit_to_user_mode
        jmp trapret
