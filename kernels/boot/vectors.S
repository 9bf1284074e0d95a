// vectors.S: interrupt and exception entry.
//
// Every vector pushes an error code (a 0 where the CPU pushes none) and its
// number, then alltraps saves the general registers and calls trap(tf) on
// the current kernel stack.  From ring 0 the CPU does not switch stacks;
// from ring 3 it switches to the TSS's RSP0, the top of the current task's
// block.  Either way the frame is on the interrupted task's own stack,
// which is what lets trap() call schedule() on the way out, as 2.4 does on
// its return-to-user path.

        .text
.macro VEC n, err
        .align 16
vec\n:
        .if \err == 0
        pushq $0
        .endif
        pushq $\n
        jmp alltraps
.endm

.irp n, 0,1,2,3,4,5,6,7,9,15,16,18,19,20,22,23,24,25,26,27,28,31
        VEC \n, 0
.endr
.irp n, 8,10,11,12,13,14,17,21,29,30
        VEC \n, 1
.endr
        VEC 64, 0       // T_TIMER
        VEC 65, 0       // T_RESCHED
        VEC 66, 0       // T_NET_RX (net.h)
        VEC 67, 0       // T_WIRE (net.h)
        VEC 255, 0      // T_SPURIOUS

alltraps:
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
        movq %rsp, %rdi         // struct trapframe *
        cld
        call trap
        .globl trapret
trapret:                                // also the way out of a system call
        popq %r15
        popq %r14
        popq %r13
        popq %r12
        popq %r11
        popq %r10
        popq %r9
        popq %r8
        popq %rbp
        popq %rdi
        popq %rsi
        popq %rdx
        popq %rcx
        popq %rbx
        popq %rax
        addq $16, %rsp          // vector number and error code
        iretq

// vector_table[i] = (vector, entry) pairs for idt_init(), ended by 0,0.
        .section .rodata
        .align 8
        .globl vector_table
vector_table:
.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,64,65,66,67,255
        .quad \n, vec\n
.endr
        .quad 0, 0
