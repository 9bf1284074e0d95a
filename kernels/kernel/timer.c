// The tick: every CPU's local APIC timer fires HZ times a second.
//
// As in 2.4 SMP, each CPU charges its own tick to its current task
// (update_process_times); CPU 0 also advances jiffies and drives the
// region of interest.
#include "kernel.h"
#include "m5op.h"
#include "proc.h"
#include "sched.h"
#include "waitstat.h"
#include "param.h"
#include "x86.h"

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

static void
tick(int cpu)
{
  if (cpu == 0) {
    jiffies++;
    roi_tick(jiffies);
    run_timeouts(jiffies);     // nanosleep and futex timeouts (ktimer.c)
  }
  update_process_times();
  waitstat_tick(cpu);          // where tasks wait, in the region (waitstat.c)
}

// Modelled time (colorsim run --timing; engine/qemu-plugin/README.md,
// "Guest time from modelled time").  The bus monitor writes this CPU's
// modelled clock (core cycles) into modeled_clock[cpu], and the slowest
// running CPU's into modeled_clock[MODELED_FLOOR], whenever this CPU runs
// timing_check(), whose instructions it treats as free.  The LAPIC timer
// is then a fine poll (lapic.c) and a tick happens when this CPU's modelled
// clock crosses the next 1/HZ boundary: a CPU that misses more executes
// fewer instructions per tick.
#define MODELED_FLOOR 64
#define MODELED_NOW 65         // the machine's time, for the wire (modeled_time)
volatile uint64_t modeled_clock[MODELED_NOW + 1] __attribute__((aligned(64)));
static uint64_t tick_cycles;   // 0: ticks come from the LAPIC directly
static uint64_t quantum;       // how far ahead of the floor a CPU may run
static uint64_t next_tick[NR_CPUS];

int
timing_init(void)
{
  tick_cycles = cmdline_u64("timing_hz", 0) / HZ;
  quantum = cmdline_u64("timing_quantum", 0);
  return tick_cycles != 0;
}

// Free in modelled time (busmon free=): first wait, with pause (which ends
// this vCPU's round-robin turn), while this CPU is more than a quantum
// ahead of the slowest running one; then count the ticks now due.
__attribute__((noinline)) int
timing_check(int cpu)
{
  // A client CPU is not measured and has no modelled clock of its own:
  // it keeps the server's time (the floor) and never waits for it.
  bool client = cpu_is_client(cpu);
  while (!client && modeled_clock[cpu] > modeled_clock[MODELED_FLOOR] + quantum)
    cpu_relax();
  uint64_t now = modeled_clock[client ? MODELED_FLOOR : cpu];
  if (next_tick[cpu] == 0)
    next_tick[cpu] = (now / tick_cycles + 1) * tick_cycles;
  int n = 0;
  while (now >= next_tick[cpu]) {
    next_tick[cpu] += tick_cycles;
    n++;
  }
  return n;
}

// The modelled time the wire (wire.c) stamps and releases packets by, in
// core cycles; free in modelled time as timing_check (busmon free=), whose
// TBs publish the clocks first.  A server CPU's is its own clock.  A client
// CPU has none: it gets the machine's time (busmon's "now": the slowest
// running server CPU's clock; while every server CPU is idle, the time the
// last one stopped at or the wire moved the machine to).  advance != 0 (the
// wire's CPU, with a packet due then): if every other CPU is idle the
// monitor moves the machine's time up to it -- nothing runs until then --
// and the load below sees the new time.
__attribute__((noinline)) uint64_t
modeled_time(int cpu, uint64_t advance)
{
  if (advance)
    *(volatile uint64_t *)(M5OP_BASE + ((uint64_t)M5OP_WIRE_ADVANCE << 8)) = advance;
  return modeled_clock[cpu_is_client(cpu) ? MODELED_NOW : cpu];
}

void
timer_interrupt(int cpu)
{
  if (tick_cycles) {
    for (int n = timing_check(cpu); n > 0; n--)
      tick(cpu);
    return;
  }
  tick(cpu);
}
