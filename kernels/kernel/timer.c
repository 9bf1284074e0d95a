// The tick: every CPU's local APIC timer fires HZ times a second.
//
// As in 2.4 SMP, each CPU charges its own tick to its current task
// (update_process_times); CPU 0 also advances jiffies and drives the
// region of interest.
#include "kernel.h"
#include "proc.h"
#include "sched.h"

volatile uint64_t jiffies;

void
update_process_times(void)
{
  struct task_struct *p = current;
  if (p->pid == 0)             // idle tasks have no time slice
    return;
  if (--p->counter <= 0) {
    p->counter = 0;
    p->need_resched = 1;
  }
}

void
timer_interrupt(int cpu)
{
  if (cpu == 0) {
    jiffies++;
    roi_tick(jiffies);
    run_timeouts(jiffies);     // nanosleep and futex timeouts (ktimer.c)
  }
  update_process_times();
}
