// The run-queue length the scheduler saw: at every schedule(), the number
// of runnable tasks its walk goes over (nr_running, which in 2.4 counts the
// running tasks too, since they stay on the run queue).  Reset at the
// region's start, printed at its end as one console line that the collect
// step turns into counters (colorsim/console.py):
//
//   rq: samples 1234 sum 56789 max 97 hist 0:0 1:3 2:10 3-4:.. 5-8:.. ...
//
// so a reader sees whether a workload really builds long queues.  Updated
// under runqueue_lock, like nr_running itself: no atomics needed.
#include "kernel.h"
#include "sched.h"

// Buckets: 0, 1, 2, then 3-4, 5-8, 9-16, ... 2049-4096, 4097+.
#define RQ_BUCKETS 15

static uint64_t hist[RQ_BUCKETS], samples, sum, max;
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

void
rqstat_sample(int n)
{
  if (frozen)
    return;
  hist[bucket(n)]++;
  samples++;
  sum += n;
  if ((uint64_t)n > max)
    max = n;
}

void
rqstat_reset(void)
{
  uint64_t f = spin_lock_irqsave(&runqueue_lock);
  for (int i = 0; i < RQ_BUCKETS; i++)
    hist[i] = 0;
  samples = sum = max = 0;
  frozen = false;
  spin_unlock_irqrestore(&runqueue_lock, f);
}

void
rqstat_freeze(void)
{
  uint64_t f = spin_lock_irqsave(&runqueue_lock);
  frozen = true;
  spin_unlock_irqrestore(&runqueue_lock, f);
}

void
rqstat_report(void)
{
  uint64_t h[RQ_BUCKETS], s, t, m;
  uint64_t f = spin_lock_irqsave(&runqueue_lock);
  for (int i = 0; i < RQ_BUCKETS; i++)
    h[i] = hist[i];
  s = samples, t = sum, m = max;
  spin_unlock_irqrestore(&runqueue_lock, f);
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
