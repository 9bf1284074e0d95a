// The run-queue length the scheduler saw: at every schedule(), the number
// of runnable tasks its walk goes over (nr_running, which in 2.4 counts the
// running tasks too, since they stay on the run queue).  Reset at the
// region's start, printed at its end as one console line that the collect
// step turns into counters (colorsim/console.py):
//
//   rq: samples 1234 sum 56789 max 97 hist 0:0 1:3 2:10 3-4:.. 5-8:.. ...
//
// so a reader sees whether a workload really builds long queues.  Each CPU
// counts in its own slot, written only by that CPU (the multi-queue kernel
// has no global lock to count under).  A reset does not touch the slots,
// which other CPUs may be writing: it starts a new epoch, and a CPU clears
// its own slot the first time it samples in the new epoch.  The report sums
// the slots of the current epoch.
#include "kernel.h"
#include "sched.h"

// Buckets: 0, 1, 2, then 3-4, 5-8, 9-16, ... 2049-4096, 4097+.
#define RQ_BUCKETS 15

struct rqstat {
  uint64_t epoch;             // the region these counts belong to
  uint64_t hist[RQ_BUCKETS], sum, max;
} __attribute__((aligned(64)));   // one cache line pair per CPU, no sharing

static struct rqstat stat[NR_CPUS];
static uint64_t epoch = 1;    // slots start at 0: stale until first sample
static bool frozen;           // the region ended: keep its numbers

static int
bucket(uint64_t n)
{
  if (n <= 2)
    return n;
  int b = 3;
  for (uint64_t hi = 4; n > hi && b < RQ_BUCKETS - 1; hi <<= 1)
    b++;
  return b;
}

// Called with interrupts off in schedule(), on the CPU whose slot it is.
void
rqstat_sample(int n)
{
  struct rqstat *r = &stat[smp_processor_id()];
  uint64_t e = READ_ONCE(epoch);
  if (READ_ONCE(frozen))
    return;
  if (r->epoch != e) {        // first sample of this region on this CPU
    memset(r, 0, sizeof *r);
    r->epoch = e;
  }
  r->hist[bucket(n)]++;
  r->sum += n;
  if ((uint64_t)n > r->max)
    r->max = n;
}

// Called by the region code on one CPU; a sample racing with it counts in
// the old epoch and is dropped, which is where the region's edge is.
void
rqstat_reset(void)
{
  WRITE_ONCE(epoch, epoch + 1);
  WRITE_ONCE(frozen, false);
}

void
rqstat_freeze(void)
{
  WRITE_ONCE(frozen, true);
}

// The current region's slots summed: the histogram, the sum, the largest.
static uint64_t
rqstat_sum(uint64_t h[RQ_BUCKETS], uint64_t *t, uint64_t *m)
{
  uint64_t s = 0;
  for (int c = 0; c < NR_CPUS; c++) {
    struct rqstat *r = &stat[c];
    if (READ_ONCE(r->epoch) != epoch)
      continue;               // no schedule() on this CPU in the region
    for (int i = 0; i < RQ_BUCKETS; i++)
      h[i] += r->hist[i];
    *t += r->sum;
    if (r->max > *m)
      *m = r->max;
  }
  for (int i = 0; i < RQ_BUCKETS; i++)
    s += h[i];
  return s;
}

// The region so far, without freezing it: a user program's marks inside
// its region (roi.c), so a reader sees whether the queue held steady.
void
rqstat_mark(void)
{
  uint64_t h[RQ_BUCKETS] = {0}, t = 0, m = 0;
  uint64_t s = rqstat_sum(h, &t, &m);
  printk("rq: mark samples %lu sum %lu max %lu\n", s, t, m);
}

void
rqstat_report(void)
{
  // Samples are the histogram's total, so the two always agree even if a
  // sample that began before the freeze is still landing.
  uint64_t h[RQ_BUCKETS] = {0}, t = 0, m = 0;
  uint64_t s = rqstat_sum(h, &t, &m);
  printk("rq: samples %lu sum %lu max %lu hist", s, t, m);
  for (int i = 0; i < RQ_BUCKETS; i++) {
    if (i < 3)
      printk(" %d:%lu", i, h[i]);
    else if (i < RQ_BUCKETS - 1)
      printk(" %d-%d:%lu", (1 << (i - 2)) + 1, 1 << (i - 1), h[i]);
    else
      printk(" %d+:%lu", (1 << (i - 2)) + 1, h[i]);
  }
  printk("\n");
}
