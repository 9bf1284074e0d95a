// Bringing the other CPUs online: INIT-SIPI-SIPI, one CPU at a time.
//
// Each AP gets an idle task (an ordinary colored order-1 task block) and
// starts on that task's stack, so `current` works from its first C line.
#include "kernel.h"
#include "sched.h"
#include "smp.h"
#include "user.h"

#define TRAMP_BASE 0x8000
#define ICR_INIT   0x00004500   // INIT, level assert
#define ICR_SIPI   0x00004600   // start-up, vector in the low byte

extern char trampoline_start[], trampoline_end[];
extern char tramp_cr3[], tramp_stack[];
extern char boot_pml4[];

static volatile int ap_booting;   // index of the CPU being started

static void
delay(int loops)
{
  for (volatile int i = 0; i < loops; i++)
    cpu_relax();
}

static void *
tramp_var(char *sym)
{
  return PTR(TRAMP_BASE + (sym - trampoline_start));
}

static void
boot_one(int cpu)
{
  struct task_struct *idle = make_idle_task(cpu);
  *(uint64_t *)tramp_var(tramp_stack) = idle->block + THREAD_SIZE;
  ap_booting = cpu;
  barrier();
  lapic_send_ipi(cpus[cpu].apic_id, ICR_INIT);
  delay(10000);
  for (int i = 0; i < 2 && !cpus[cpu].online; i++) {
    lapic_send_ipi(cpus[cpu].apic_id, ICR_SIPI | (TRAMP_BASE >> 12));
    delay(2000);
  }
  for (long t = 0; !READ_ONCE(cpus[cpu].online); t++) {
    if (t > 200000000L)
      panic("cpu%d (APIC %u) did not come online", cpu, cpus[cpu].apic_id);
    cpu_relax();
  }
}

void
smp_boot_aps(void)
{
  memcpy(PTR(TRAMP_BASE), trampoline_start, trampoline_end - trampoline_start);
  *(uint64_t *)tramp_var(tramp_cr3) = (uint64_t)boot_pml4;
  for (int cpu = 1; cpu < ncpus; cpu++)
    boot_one(cpu);
}

// First C code on a secondary CPU, on its idle task's stack.
void
ap_main(void)
{
  int cpu = ap_booting;
  struct task_struct *me = current;
  BUG_ON(me != idle_tasks[cpu]);
  idt_load();
  cpu_init_user(cpu);
  lapic_init(cmdline_u64("lapic_hz", 1000000000));
  printk("cpu%d: online, APIC %u, idle task at %p\n", cpu, lapic_id(), me);
  WRITE_ONCE(cpus[cpu].online, 1);
  sti();
  cpu_idle();
}
