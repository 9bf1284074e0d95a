// runqueue_lock as the kernel itself sees it: how many times it was taken,
// how many of those found it held at the first try, and how long it was
// held, in TSC ticks.  The bus monitor's lockmeter (QEMU) orders holds in
// modelled time; these are the guest's own numbers, the same code on every
// engine, so gem5, whose CPUs interleave in modelled time, reports them too.
// On gem5 the TSC counts the CPU's clock; under QEMU it is the emulator's
// virtual clock, not modelled time, so there only the counts compare.
//
// Reset at the region's start, printed at its end (colorsim/run/console.py):
//
//   rqlock: acquisitions 1234 contended 56 hold_tsc 789012 region_tsc 3456789
//
// region_tsc is the TSC's advance over the region on the reporting CPU, so
// the host can turn ticks into time with the region's length.  As in
// rqstat.c each CPU counts in its own slot, cleared the first time it counts
// in a new epoch.
#include "kernel.h"
#include "sched.h"
#include "x86.h"

struct lockstat {
  uint64_t epoch;
  uint64_t acquisitions, contended, hold, since;
} __attribute__((aligned(64)));

static struct lockstat stat[NR_CPUS];
static uint64_t epoch = 1, region_start, region_end;
static bool frozen;

static struct lockstat *
slot(void)
{
  struct lockstat *s = &stat[smp_processor_id()];
  uint64_t e = READ_ONCE(epoch);
  if (s->epoch != e) {
    memset(s, 0, sizeof *s);
    s->epoch = e;
  }
  return s;
}

// Called with the lock just taken, interrupts off.
void
lockstat_acquired(int contended)
{
  if (READ_ONCE(frozen))
    return;
  struct lockstat *s = slot();
  s->acquisitions++;
  s->contended += contended != 0;
  s->since = rdtsc();
}

// Called just before the release, interrupts off.
void
lockstat_released(void)
{
  if (READ_ONCE(frozen))
    return;
  struct lockstat *s = slot();
  if (s->since)
    s->hold += rdtsc() - s->since;
  s->since = 0;
}

void
lockstat_reset(void)
{
  WRITE_ONCE(epoch, epoch + 1);
  region_start = rdtsc();
  WRITE_ONCE(frozen, false);
}

void
lockstat_freeze(void)
{
  WRITE_ONCE(frozen, true);
  region_end = rdtsc();
}

void
lockstat_report(void)
{
  uint64_t a = 0, c = 0, h = 0;
  for (int i = 0; i < NR_CPUS; i++) {
    if (READ_ONCE(stat[i].epoch) != epoch)
      continue;
    a += stat[i].acquisitions;
    c += stat[i].contended;
    h += stat[i].hold;
  }
  printk("rqlock: acquisitions %lu contended %lu hold_tsc %lu region_tsc %lu\n",
         a, c, h, region_end - region_start);
}
