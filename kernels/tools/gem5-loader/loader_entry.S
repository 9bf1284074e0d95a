// Multiboot entry of the gem5 loader stand-in, and the jump into long mode.
        .section .multiboot, "a"
        .align 4
        .long 0x1BADB002, 0x00000003, -(0x1BADB002 + 0x00000003)

        .text
        .code32
        .globl _start
_start:
        cli
        movl $stack_top, %esp
        pushl %ebx                      // multiboot info
        pushl %eax                      // magic
        call loader_main
1:      hlt
        jmp 1b

// enter_long_mode(entry_lo, entry_hi): gem5's CPU state at the kernel's
// first instruction (fs_workload.cc): CR4 = PAE, CR3 = 0x70000, EFER.LME,
// CR0 = PG|PE|ET, the loader GDT at 0x76000, RSI = zero page, RSP = 0.
        .globl enter_long_mode
enter_long_mode:
        movl 4(%esp), %ebx
        movl 8(%esp), %ebp
        movl $0x20, %eax
        movl %eax, %cr4
        movl $0x70000, %eax
        movl %eax, %cr3
        movl $0xC0000080, %ecx
        rdmsr
        orl $0x100, %eax
        wrmsr
        movl $0x80000011, %eax
        movl %eax, %cr0
        lgdt gdt_desc
        ljmp $0x08, $long64
        .code64
long64:
        movw $0x10, %ax
        movw %ax, %ds
        movw %ax, %es
        movw %ax, %ss
        movl %ebx, %ebx
        shlq $32, %rbp
        orq %rbp, %rbx                  // entry point
        xorl %eax, %eax
        xorl %ecx, %ecx
        xorl %edx, %edx
        xorl %edi, %edi
        xorl %ebp, %ebp
        xorl %esp, %esp                 // gem5 never sets RSP
        movl $0x90200, %esi
        jmp *%rbx

        .data
        .align 8
gdt_desc:
        .word 31
        .long 0x76000

        .bss
        .align 16
        .skip 4096
stack_top:
