// entry.S: how control reaches kmain().
//
// Two loaders jump here:
//  * QEMU's multiboot loader (-kernel on the ELF32 container of this image)
//    enters mb_entry in 32-bit protected mode, paging off, EAX = multiboot
//    magic, EBX = multiboot info.  We build long mode ourselves.
//  * gem5's X86 loader enters entry64 (the ELF64 e_entry) already in 64-bit
//    long mode with its own identity map of 0-4 GiB, RSP = 0, RSI = the
//    Linux zero page (0x90200), RDI = 0.
// Both continue in start64, which installs our page tables and GDT, moves
// to the init task's stack and calls kmain(magic, info).

#define MB_MAGIC  0x1BADB002
#define MB_FLAGS  0x00000003          // page-align modules, give memory map
#define CR0_PG    0x80000000
#define CR0_PE    0x00000001
#define CR0_MP    0x00000002
#define CR0_EM    0x00000004
#define CR4_PAE   0x00000020
#define CR4_OSFXSR 0x00000200
#define CR4_OSXMMEXCPT 0x00000400
#define MSR_EFER  0xC0000080
#define EFER_LME  0x00000100

        .section .multiboot, "a"
        .align 4
mb_header:
        .long MB_MAGIC
        .long MB_FLAGS
        .long -(MB_MAGIC + MB_FLAGS)

        .section .boot32, "ax"
        .code32
        .globl mb_entry
mb_entry:
        cli
        movl %eax, %edi                 // multiboot magic -> 1st argument
        movl %ebx, %esi                 // multiboot info  -> 2nd argument
        movl %cr4, %eax
        orl $(CR4_PAE | CR4_OSFXSR | CR4_OSXMMEXCPT), %eax
        movl %eax, %cr4
        movl $boot_pml4, %eax
        movl %eax, %cr3
        movl $MSR_EFER, %ecx            // long mode enable
        rdmsr
        orl $EFER_LME, %eax
        wrmsr
        movl %cr0, %eax                 // paging on: now in compatibility mode
        orl $(CR0_PG | CR0_PE), %eax
        movl %eax, %cr0
        lgdt gdt_desc
        ljmp $0x08, $mb_entry64         // load the 64-bit code segment

        .code64
mb_entry64:
        movl %edi, %edi                 // upper halves are undefined after
        movl %esi, %esi                 // the mode switch: zero-extend
        jmp start64

        .section .text.entry64, "ax"
        .globl entry64
entry64:                                // gem5: already in long mode
        cli
        jmp start64

start64:
        movq $init_task_union + 8192, %rsp  // gem5 enters with RSP = 0: a
                                        // stack before the first push
        movq $boot_pml4, %rax           // our identity map (PCD on MMIO)
        movq %rax, %cr3
        lgdt gdt_desc
        movw $0x10, %ax                 // flat data segments
        movw %ax, %ds
        movw %ax, %es
        movw %ax, %ss
        movw %ax, %fs
        movw %ax, %gs
        pushq $0x08                     // reload CS through a far return
        leaq 1f(%rip), %rax
        pushq %rax
        lretq
1:      movq %cr4, %rax                 // gem5 leaves OSFXSR clear; QEMU
        orq $(CR4_PAE | CR4_OSFXSR | CR4_OSXMMEXCPT), %rax   // needs it set
        movq %rax, %cr4
        movq %cr0, %rax
        andq $~CR0_EM, %rax
        orq $CR0_MP, %rax
        movq %rax, %cr0
        xorl %ebp, %ebp                 // the init task's stack, from the top
        call kmain                      // kmain(magic, info) never returns
2:      hlt
        jmp 2b

// Secondary CPUs arrive here from the real-mode trampoline (trampoline.S)
// in long mode, on their idle task's stack, with the trampoline's GDT.
        .globl ap_entry64
ap_entry64:
        lgdt gdt_desc
        movw $0x10, %ax
        movw %ax, %ds
        movw %ax, %es
        movw %ax, %ss
        movw %ax, %fs
        movw %ax, %gs
        pushq $0x08
        leaq 1f(%rip), %rax
        pushq %rax
        lretq
1:      xorl %ebp, %ebp
        call ap_main
2:      hlt
        jmp 2b

        .section .data
        .align 16
gdt:
        .quad 0                         // 0x00 null
        .quad 0x00AF9A000000FFFF        // 0x08 64-bit kernel code
        .quad 0x00CF92000000FFFF        // 0x10 kernel data
gdt_end:
        .globl gdt_desc
gdt_desc:
        .word gdt_end - gdt - 1
        .quad gdt                       // lgdt in 32-bit mode reads 4 bytes

// Identity map of 0-4 GiB with 2 MiB pages (gem5 has no 1 GiB pages).
// The top GiB holds the LAPIC, IOAPIC and m5-op window: map it uncached
// (PCD|PWT), since gem5 types cacheability from the PTE alone.
        .align 4096
        .globl boot_pml4
boot_pml4:
        .quad boot_pdpt + 0x3
        .fill 511, 8, 0
boot_pdpt:
        .quad boot_pd + 0x0000 + 0x3
        .quad boot_pd + 0x1000 + 0x3
        .quad boot_pd + 0x2000 + 0x3
        .quad boot_pd + 0x3000 + 0x3
        .fill 508, 8, 0
boot_pd:
        .set i, 0
        .rept 1536                      // 0-3 GiB: RAM, write-back
        .quad (i << 21) | 0x83          // present, writable, 2 MiB page
        .set i, i + 1
        .endr
        .rept 512                       // 3-4 GiB: MMIO, uncached
        .quad (i << 21) | 0x83 | 0x18
        .set i, i + 1
        .endr

// The init task's 8 KiB block (CPU 0's idle task).  Its task_struct lives
// at the colored offset inside it (task_init_boot), like every other task.
        .section .bss
        .align 8192
        .globl init_task_union
init_task_union:
        .skip 8192
