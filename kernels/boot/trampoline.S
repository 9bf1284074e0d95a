// trampoline.S: where a secondary CPU starts after INIT-SIPI-SIPI.
//
// smpboot.c copies [trampoline_start, trampoline_end) to TRAMP_BASE (below
// 1 MiB, vector TRAMP_BASE >> 12) and fills tramp_cr3 and tramp_stack.  The
// CPU starts here in real mode at CS:IP = (TRAMP_BASE >> 4):0 and climbs to
// long mode: real -> protected (our GDT below) -> PAE + LME + paging -> a
// 64-bit code segment, then jumps to ap_entry64 on its idle task's stack.
// Code here runs from the copy, so every address is TRAMP_BASE-relative.

#define TRAMP_BASE 0x8000
#define REL(x) (TRAMP_BASE + (x) - trampoline_start)

        .section .rodata
        .code16
        .globl trampoline_start, trampoline_end
        .globl tramp_cr3, tramp_stack
trampoline_start:
        cli
        xorw %ax, %ax
        movw %ax, %ds
        lgdtl REL(tramp_gdt_desc)
        movl %cr0, %eax
        orl $1, %eax                    // protection on
        movl %eax, %cr0
        ljmpl $0x08, $REL(tramp32)

        .code32
tramp32:
        movw $0x10, %ax
        movw %ax, %ds
        movw %ax, %es
        movw %ax, %ss
        movl %cr4, %eax
        orl $0x620, %eax                // PAE | OSFXSR | OSXMMEXCPT
        movl %eax, %cr4
        movl REL(tramp_cr3), %eax
        movl %eax, %cr3
        movl $0xC0000080, %ecx          // EFER.LME
        rdmsr
        orl $0x100, %eax
        wrmsr
        movl %cr0, %eax
        orl $0x80000000, %eax           // paging on
        movl %eax, %cr0
        ljmp $0x18, $REL(tramp64)

        .code64
tramp64:
        movq REL(tramp_stack), %rsp
        movabsq $ap_entry64, %rax
        jmp *%rax

        .align 8
tramp_gdt:
        .quad 0
        .quad 0x00CF9A000000FFFF        // 0x08 32-bit code
        .quad 0x00CF92000000FFFF        // 0x10 data
        .quad 0x00AF9A000000FFFF        // 0x18 64-bit code
tramp_gdt_desc:
        .word 31
        .long REL(tramp_gdt)
        .align 8
tramp_cr3:
        .quad 0
tramp_stack:
        .quad 0
trampoline_end:
