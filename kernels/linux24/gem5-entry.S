// gem5-entry.S: how the user's Linux 2.4 (x86_64 or i386) starts on gem5.
//
// gem5's X86 loader enters a kernel ELF in 64-bit long mode at its entry
// point, with its own identity page tables (CR3 = 0x70000), its own GDT,
// interrupts off, no stack and RSI = its Linux zero page (0x90200: the e820
// map and the command-line pointer filled in).  2.4's x86_64 head.S instead
// expects to be entered in 32-bit protected mode at startup_32 (0x100000) by
// its real-mode setup code, which gem5 never runs.  This stub does, in long
// mode, what startup_32 does on the boot CPU and then joins head.S where its
// 64-bit part begins (reach_long64):
//
//   1. the zero-page fields a boot loader writes and gem5 leaves empty:
//      type_of_loader (0x210) and the initrd's place and size (0x218,
//      0x21c), which setup_arch() needs to take the initrd;
//   2. the IO-APIC's pin 0 as ExtINT to CPU 0: the 8259's only way to a CPU
//      on gem5's board, which 2.4's boot-time ticks take (below);
//   3. CR4 = PAE|PGE, CR3 = head.S's init_level4_pgt (physical 0x101000: it
//      maps the first 40 MiB both at 0 and at 0xffffffff80000000), EFER
//      with LME, SCE and NX where the CPU has it, CR0 as startup_32 sets it;
//   4. head.S's 32-bit GDT (its descriptor pGDT32 at 0x100F00, its 64-bit
//      code segment __KERNEL_CS = 0x10), and a far return to reach_long64,
//      whose address head.S keeps at 0x100F10 for the SMP trampoline.
//
// 0x100F00 and 0x100F10 are fixed by head.S's own .org lines; the APs still
// start through the real-mode trampoline and startup_32, as on hardware.
// i386 (assembled with -DLINUX24_I386): 2.4's i386 head.S expects what
// its setup.S leaves, 32-bit protected mode without paging, flat segments
// __KERNEL_CS = 0x10 and __KERNEL_DS = 0x18, ESI = the zero page and BX = 0
// on the boot CPU, at startup_32 (physical 0x100000).  Steps 1 and 2 are
// the same; in place of 3 and 4 the stub loads such a GDT of its own, drops
// into 32-bit compatibility mode, leaves long mode (paging off, then
// EFER.LME off, CR4 cleared: head.S turns paging on itself, without PAE),
// and jumps to startup_32.
//
// The host (colorsim/run/linux24gem5.py) links this at ENTRY_BASE, writes
// the initrd's place and size into the two slots below and puts it beside
// the kernel's and the initrd's segments in one ELF64 that gem5 loads.

        .set ZP_LOADER_TYPE, 0x210
        .set ZP_INITRD_START, 0x218
        .set ZP_INITRD_SIZE, 0x21c
        .set HEAD_PGT, 0x101000         // init_level4_pgt
        .set HEAD_GDT32, 0x100F00       // pGDT32: limit, 32-bit base
        .set HEAD_LONG64, 0x100F10      // ljumpvector: reach_long64
        .set KERNEL_CS, 0x10
        .set MSR_EFER, 0xC0000080
        .set IOAPIC_BASE, 0xFEC00000
        .set I386_STARTUP_32, 0x100000  // i386 head.S: physical start of .text
        .set I386_KERNEL_CS, 0x10
        .set I386_KERNEL_DS, 0x18

        .text
        .code64
        .globl _start
_start:
        jmp entry
        .balign 8
// Filled in by the host: magic, initrd physical address, initrd bytes.
slots:
        .ascii "C24GEM5\0"
initrd_start:
        .quad 0
initrd_size:
        .quad 0

entry:
        cli
        leaq stack_top(%rip), %rsp      // gem5 leaves RSP at 0

        // 1. The loader's fields of the zero page.
        movb $0xff, ZP_LOADER_TYPE(%rsi)        // "other" boot loader
        movl initrd_start(%rip), %eax
        movl %eax, ZP_INITRD_START(%rsi)
        movl initrd_size(%rip), %eax
        movl %eax, ZP_INITRD_SIZE(%rsi)

        // 2. The 8259's interrupts.  2.4 runs its timer through the 8259
        // until it sets up the IO-APIC, after calibrating its delay loop
        // on those ticks.  On gem5's board the 8259's output reaches the
        // CPUs only through the IO-APIC's pin 0 (ExtINT in its MP table),
        // which resets masked; a PC's BIOS leaves that path open.  So:
        // pin 0 to CPU 0 as ExtINT, through gem5's identity map with the
        // IO-APIC's 2 MiB page made uncached (I/O is never cached).
        movq %cr3, %rbx
        movabsq $0x000ffffffffff000, %rdx       // a table entry's address bits
        andq %rdx, %rbx
        movq (%rbx), %rbx                       // PML4[0]: the first 512 GiB
        testb $1, %bl
        jz 3f
        andq %rdx, %rbx
        movq 3*8(%rbx), %rbx                    // PDPT[3]: the fourth GiB
        testb $1, %bl
        jz 3f
        andq %rdx, %rbx
        leaq ((IOAPIC_BASE >> 21) & 511)*8(%rbx), %rbx
        movq (%rbx), %rax
        movl %eax, %r8d
        andl $0x81, %r8d
        cmpl $0x81, %r8d                        // present, a 2 MiB page
        jne 3f
        orq $0x18, %rax                         // PWT | PCD
        movq %rax, (%rbx)
        movl $IOAPIC_BASE, %ecx
        invlpg (%rcx)
        movl $0x11, (%rcx)                      // IOREGSEL: pin 0, high half
        movl $0, 0x10(%rcx)                     // IOWIN: to APIC 0
        movl $0x10, (%rcx)                      // pin 0, low half
        movl $0x700, 0x10(%rcx)                 // ExtINT, edge, unmasked
3:
#ifdef LINUX24_I386
        // 3. (i386) A flat 32-bit GDT with setup.S's selectors, and into
        // its code segment: compatibility mode, still under gem5's
        // identity map, which holds this page.
        leaq gdt32(%rip), %rax
        movq %rax, gdt32_desc + 2(%rip)
        lgdt gdt32_desc(%rip)
        leaq prot32(%rip), %rax
        pushq $I386_KERNEL_CS
        pushq %rax
        lretq
        .code32
prot32:
        movl $I386_KERNEL_DS, %eax
        movl %eax, %ds
        movl %eax, %es
        movl %eax, %ss
        movl %eax, %fs
        movl %eax, %gs
        // 4. (i386) Out of long mode: paging off deactivates it, then
        // LME off; no PAE or global pages for head.S's 2-level tables.
        movl %cr0, %eax
        andl $0x7fffffff, %eax
        movl %eax, %cr0
        movl $MSR_EFER, %ecx
        rdmsr
        andl $~0x100, %eax
        wrmsr
        xorl %eax, %eax
        movl %eax, %cr4
        movl %eax, %cr3
        xorl %ebx, %ebx                 // the boot CPU: startup_32 tests BX
        ljmp $I386_KERNEL_CS, $I386_STARTUP_32   // ESI: the zero page

        .balign 8
gdt32:
        .quad 0, 0
        .quad 0x00cf9a000000ffff        // 0x10: code, base 0, 4 GiB, 32-bit
        .quad 0x00cf92000000ffff        // 0x18: data, base 0, 4 GiB
gdt32_desc:
        .word 4*8 - 1
        .quad 0
        .code64
#else
        // 3. Paging and long mode as startup_32 leaves them.
        movl $0xa0, %eax                // PAE | PGE
        movq %rax, %cr4
        movl $HEAD_PGT, %eax
        movq %rax, %cr3                 // this page runs below 40 MiB: still mapped
        movl $0x80000001, %eax
        cpuid
        movl %edx, %edi                 // bit 20: NX
        movl $MSR_EFER, %ecx
        rdmsr
        orl $0x101, %eax                // LME | SCE
        btl $20, %edi
        jnc 1f
        btsl $11, %eax                  // NX
1:      wrmsr
        movl $0x80050033, %eax          // PG | AM | WP | NE | ET | MP | PE
        movq %rax, %cr0

        // 4. head.S's GDT, then its 64-bit code segment at reach_long64.
        movzwl HEAD_GDT32, %eax
        movw %ax, gdtr(%rip)
        movl HEAD_GDT32 + 2, %eax
        movq %rax, gdtr + 2(%rip)       // the 32-bit base, zero-extended
        lgdt gdtr(%rip)
        movl HEAD_LONG64, %eax
        pushq $KERNEL_CS
        pushq %rax
        lretq                           // RSI still holds the zero page

#endif
        .balign 8
gdtr:
        .word 0
        .quad 0
        .balign 16
        .skip 256
stack_top:
