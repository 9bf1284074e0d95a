// The region of interest, driven by CPU 0's tick.
//
// warmup ticks after the workload exists, stats are reset (m5 resetstats);
// roi ticks later they are dumped (m5 dumpstats) and the machine stops
// (m5 exit for gem5, isa-debug-exit for QEMU).  Both engines understand
// the same address-form m5 operations (m5op.h).
#include "kernel.h"
#include "m5op.h"
#include "net.h"
#include "sched.h"
#include "waitstat.h"

enum { IDLE, WARMUP, MEASURING, DONE, USER_MEASURING };

// The m5 system call's one operation that is not an m5 op: a mark inside
// the region (workloads/include/m5roi.h, m5_mark), beyond gem5's 8-bit
// function numbers.
#define ROI_MARK 0x100
static int phase = IDLE;
static uint64_t start, warmup, length;
static uint64_t sched0, switch0, recalc0;
static uint64_t cycles0;       // the region's start in modelled cycles (0: counted)

uint64_t modeled_time(int cpu, uint64_t advance);   // timer.c

// Modelled cycles since the region began on this CPU's clock (0 in a
// counted run, which publishes no clocks): the marks' and the end's time
// at a finer grain than jiffies.
static uint64_t
region_cycles(void)
{
  uint64_t now = modeled_time(smp_processor_id(), 0);
  return now > cycles0 ? now - cycles0 : 0;
}

void
workload_started(void)
{
  warmup = cmdline_u64("warmup", 10);
  length = cmdline_u64("roi", 10);
  // Everything is booted and forked: gem5 checkpoints here, so a sweep
  // restores into its detailed CPU instead of booting again.  QEMU and our
  // plugin ignore it.
  m5_op(M5OP_CHECKPOINT);
  start = jiffies;
  phase = WARMUP;
  printk("roi: warmup %lu ticks, then measure %lu ticks\n", warmup, length);
}

// The new phase is set first: a tick on another CPU that sees MEASURING
// would otherwise end a user program's region (whose tick fields are 0)
// while this CPU is still printing its begin line.
static void
roi_begin(uint64_t now, int measuring)
{
  WRITE_ONCE(phase, measuring);
  sched0 = nr_schedules;
  switch0 = nr_switches;
  recalc0 = nr_recalcs;
  cycles0 = modeled_time(smp_processor_id(), 0);
  rqstat_reset();                      // with sched0: the same region
  waitstat_reset();
  lockstat_reset();
  printk("roi: begin at jiffies %lu, nr_running %d\n", now, nr_running);
  m5_op(M5OP_RESET_STATS);
}

static void
roi_end(uint64_t now)
{
  phase = DONE;
  m5_op(M5OP_DUMP_STATS);
  rqstat_freeze();                     // before the slow console line
  waitstat_freeze();
  lockstat_freeze();
  printk("roi: end at jiffies %lu: schedules %lu switches %lu recalcs %lu "
         "nr_running %d cycles %lu\n", now, nr_schedules - sched0,
         nr_switches - switch0, nr_recalcs - recalc0, nr_running, region_cycles());
  rqstat_report();                     // run-queue lengths seen (rqstat.c)
  waitstat_report();                   // where the others waited (waitstat.c)
  lockstat_report();                   // runqueue_lock as the kernel saw it
  net_report();                        // where the card's interrupts went
}

void
roi_tick(uint64_t now)
{
  if (phase == WARMUP && now >= start + warmup) {
    roi_begin(now, MEASURING);
  } else if (phase == MEASURING && now >= start + warmup + length) {
    roi_end(now);
    m5_op(M5OP_EXIT);
    machine_exit(0);
  }
}

// A mark inside a user program's region (ROI_MARK): the scheduler's
// counts since the region began, with the run queue's samples so far, so
// that the collect step can tell whether the region was steady.  Printed
// only: the engines see no op.
static void
roi_mark(uint64_t now)
{
  printk("roi: mark at jiffies %lu: schedules %lu switches %lu recalcs %lu "
         "nr_running %d cycles %lu\n", now, nr_schedules - sched0,
         nr_switches - switch0, nr_recalcs - recalc0, nr_running, region_cycles());
  rqstat_mark();
}

// The colorsim m5 system call: a user program (init=) marks its own region
// of interest with the same operations, and the same console lines, as
// the built-in workload's tick-driven one.  The kernel issues the op, so
// gem5 and our bus monitor see exactly the address-form load they know.
long
roi_user_op(long op)
{
  static spinlock_t roi_lock = SPIN_LOCK_UNLOCKED;
  long r = 0;
  if (op == M5OP_WORK_BEGIN || op == M5OP_WORK_END) {
    m5_op(op);                         // the monitor's working-set windows
    return 0;
  }
  uint64_t f = spin_lock_irqsave(&roi_lock);
  if (phase == WARMUP)
    r = -16;                           // -EBUSY: the built-in ROI owns it
  else if (op == M5OP_RESET_STATS) {
    roi_begin(jiffies, USER_MEASURING); // the tick leaves this one alone
  } else if (op == M5OP_DUMP_STATS && phase == USER_MEASURING)
    roi_end(jiffies);
  else if (op == ROI_MARK && phase == USER_MEASURING)
    roi_mark(jiffies);
  else if (op == M5OP_EXIT) {
    // The program stops the machine itself: say so, so the runner knows
    // the stop was asked for and not a region ending under a running job.
    printk("roi: exit requested by pid %d\n", current->pid);
    m5_op(M5OP_EXIT);
    machine_exit(0);
  } else
    r = -22;                           // -EINVAL
  spin_unlock_irqrestore(&roi_lock, f);
  return r;
}

// QEMU's isa-debug-exit (port 0xf4) ends the emulator with status
// (code << 1) | 1; on gem5 the port is unclaimed and m5 exit already ran.
void
machine_exit(int code)
{
  outl(0xf4, code);
  for (;;) {
    cli();
    hlt();
  }
}
