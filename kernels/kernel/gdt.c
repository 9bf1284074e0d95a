// Segments for ring 3, one TSS per CPU, and the `syscall` MSRs.
//
// The TSS's only job here is RSP0: the stack the CPU switches to when an
// interrupt or exception arrives in user mode.  schedule() points it at
// the top of the next user task's 8 KiB block (2.4's __switch_to loads
// tss.esp0 the same way).  syscall does not switch stacks by itself, so
// syscall_entry finds RSP0 through swapgs: KERNEL_GS_BASE is this CPU's
// cpu_local, whose first member is the TSS.
#include "fpu.h"
#include "kernel.h"
#include "sched.h"
#include "smp.h"
#include "user.h"

struct tss {
  uint32_t reserved0;
  uint64_t rsp0, rsp1, rsp2;   // rsp0 at offset 4: syscall_entry reads it
  uint64_t reserved1;
  uint64_t ist[7];
  uint64_t reserved2;
  uint16_t reserved3, iomap_base;
} __attribute__((packed));
_Static_assert(sizeof(struct tss) == 104, "tss");

// Per CPU: the TSS, then a scratch word for the user rsp at syscall entry
// (offset 104, see syscall.S).
struct cpu_local {
  struct tss tss;
  uint64_t user_rsp;
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct cpu_local, user_rsp) == 104, "cpu_local");

static struct cpu_local cpu_local[NR_CPUS];

// null, kernel code, kernel data, user data, user code (the order sysret
// needs: SS = STAR[63:48] + 8, CS = STAR[63:48] + 16), then one 16-byte TSS
// descriptor per CPU.
static uint64_t gdt[5 + 2 * NR_CPUS] = {
  0,
  0x00AF9A000000FFFFUL,   // 0x08 64-bit kernel code
  0x00CF92000000FFFFUL,   // 0x10 kernel data
  0x00CFF2000000FFFFUL,   // 0x18 user data, DPL 3
  0x00AFFA000000FFFFUL,   // 0x20 64-bit user code, DPL 3
};

static void
set_tss_descriptor(int cpu)
{
  uint64_t base = (uint64_t)&cpu_local[cpu].tss, limit = sizeof(struct tss) - 1;
  gdt[5 + 2 * cpu] = (limit & 0xffff) | ((base & 0xffffff) << 16) |
                     (0x89UL << 40) |          // present, 64-bit TSS, available
                     (((base >> 24) & 0xff) << 56);
  gdt[6 + 2 * cpu] = base >> 32;
}

// Each CPU, once: load the GDT (same kernel selectors as the boot GDT,
// so CS and DS stay valid), its TSS, the syscall MSRs and the FPU bits.
void
cpu_init_user(int cpu)
{
  struct { uint16_t limit; uint64_t base; } __attribute__((packed)) d = {
    sizeof gdt - 1, (uint64_t)gdt};
  cpu_local[cpu].tss.iomap_base = sizeof(struct tss);   // no I/O bitmap
  set_tss_descriptor(cpu);
  __asm__ volatile("lgdt %0" ::"m"(d));
  __asm__ volatile("ltr %w0" ::"r"((uint16_t)(5 * 8 + 16 * cpu)));
  wrmsr(MSR_EFER, rdmsr(MSR_EFER) | 1);                  // SCE
  wrmsr(MSR_STAR, ((uint64_t)0x10 << 48) | ((uint64_t)KERNEL_CS << 32));
  wrmsr(MSR_LSTAR, (uint64_t)syscall_entry);
  wrmsr(MSR_FMASK, 0x40700);           // IF, DF, TF, AC cleared on entry
  wrmsr(MSR_GS_BASE, 0);
  wrmsr(MSR_KERNEL_GS_BASE, (uint64_t)&cpu_local[cpu]);
  fpu_cpu_init();                      // TS set: user FPU state is lazy
}

void
set_kernel_stack(int cpu, uint64_t top)
{
  cpu_local[cpu].tss.rsp0 = top;
}

// The user registers of a task in user mode: at the top of its block.
struct trapframe *
task_pt_regs(struct task_struct *p)
{
  return (struct trapframe *)(block_of_task(p) + THREAD_SIZE) - 1;
}
