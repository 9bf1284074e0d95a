// switch.S: the context switch.
//
// struct task_struct *switch_context(uint64_t *prev_rsp, uint64_t next_rsp,
//                                    struct task_struct *prev)
// Saves the callee-saved registers on prev's kernel stack, stores the stack
// pointer in prev->thread.rsp, loads next's, and returns prev ("last") on
// next's stack.  A new task's stack is prepared by task.c so that the
// first switch "returns" into task_start with r12 = body, r13 = argument.

        .text
        .globl switch_context
switch_context:
        pushq %rbp
        pushq %rbx
        pushq %r12
        pushq %r13
        pushq %r14
        pushq %r15
        movq %rsp, (%rdi)
        movq %rsi, %rsp
        movq %rdx, %rax         // the task we switched away from
        popq %r15
        popq %r14
        popq %r13
        popq %r12
        popq %rbx
        popq %rbp
        ret

        .globl task_start
task_start:
        movq %rax, %rdi
        call schedule_tail      // finish the switch: release prev
        sti                     // schedule() ran with interrupts off
        movq %r13, %rdi
        call *%r12              // the thread body; it never returns
        ud2
