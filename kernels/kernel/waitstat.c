// Where tasks wait: a report beside the run-queue one (rqstat.c), for the
// question "the run queue is short, so where are the other tasks?".
//
// Every task is running (on a CPU), runnable (on the run queue, waiting
// for a CPU) or asleep in one channel (waitstat.h).  The asleep counts are
// kept as levels: schedule() adds the task to its channel when it takes it
// off the run queue, try_to_wake_up() takes it away again when it puts it
// back.  Each CPU changes only its own row (a wake-up on another CPU
// than the sleep leaves one row +1 and the other -1; the sum is right), so
// the counting adds no shared cache line to the wake-up path; the task's
// own channel lives in line 0x00 of its task structure, which both paths
// write anyway (state).
//
// Each CPU samples at its tick, in the region of interest only: the
// running tasks (CPUs not idle), the runnable ones not running, and every
// channel's level summed over the rows.  Printed at the region's end as
//
//   wait: samples 160 running 412 runnable 380 accept 40000 connect 0 ...
//
// (sums over the samples; the collect step divides: colorsim/console.py).
#include "kernel.h"
#include "sched.h"
#include "waitstat.h"

static const char *const names[NR_WCHAN] = {
  "other", "accept", "connect", "recv_accepted", "recv_connected",
  "send_accepted", "send_connected", "pipe_read", "pipe_write", "poll",
  "futex", "sem", "wait4", "sleep", "exited", "lock",
};

struct level {
  int32_t n[NR_WCHAN];
} __attribute__((aligned(64)));

struct sums {
  uint64_t epoch;
  uint64_t samples, tasks, running, runnable, n[NR_WCHAN];
} __attribute__((aligned(64)));

static struct level level[NR_CPUS];
static struct sums sums[NR_CPUS];
static uint64_t epoch = 1;
static bool frozen;
extern int ncpus;

// schedule(), runqueue lock held, prev leaving the run queue.
void
waitstat_sleep(struct task_struct *p, int cpu)
{
  int c = p->wchan < NR_WCHAN ? p->wchan : WCHAN_NONE;
  if (p->state == TASK_ZOMBIE || p->state == TASK_DEAD)
    c = WCHAN_EXITED;                   // until release_task frees it
  p->wchan_counted = c + 1;
  level[cpu].n[c]++;
}

// try_to_wake_up(), runqueue lock held, p going back on the run queue.
void
waitstat_wake(struct task_struct *p, int cpu)
{
  if (!p->wchan_counted)
    return;                             // a new task, never counted asleep
  level[cpu].n[p->wchan_counted - 1]--;
  p->wchan_counted = 0;
}

// release_task(): an exited task's block is freed.
void
waitstat_release(struct task_struct *p, int cpu)
{
  waitstat_wake(p, cpu);
}

void
waitstat_tick(int cpu)
{
  uint64_t e = READ_ONCE(epoch);
  if (READ_ONCE(frozen) || cpu_is_client(cpu))   // the server's tasks only
    return;
  struct sums *s = &sums[cpu];
  if (s->epoch != e) {
    memset(s, 0, sizeof *s);
    s->epoch = e;
  }
  int running = 0;
  for (int c = 0; c < nr_server_cpus; c++)
    if (READ_ONCE(cpu_curr(c)) != idle_tasks[c])
      running++;
  int queued = nr_running;
  s->samples++;
  s->tasks += READ_ONCE(nr_threads);
  s->running += running;
  s->runnable += queued > running ? queued - running : 0;
  for (int w = 0; w < NR_WCHAN; w++) {
    int64_t n = 0;
    for (int c = 0; c < ncpus; c++)     // a wake-up may be on any CPU's row
      n += READ_ONCE(level[c].n[w]);
    s->n[w] += n > 0 ? n : 0;
  }
}

void
waitstat_reset(void)
{
  WRITE_ONCE(epoch, epoch + 1);
  WRITE_ONCE(frozen, false);
}

void
waitstat_freeze(void)
{
  WRITE_ONCE(frozen, true);
}

void
waitstat_report(void)
{
  uint64_t t[4 + NR_WCHAN] = {0};
  for (int c = 0; c < NR_CPUS; c++) {
    struct sums *s = &sums[c];
    if (READ_ONCE(s->epoch) != epoch)
      continue;
    t[0] += s->samples;
    t[1] += s->tasks;
    t[2] += s->running;
    t[3] += s->runnable;
    for (int w = 0; w < NR_WCHAN; w++)
      t[4 + w] += s->n[w];
  }
  printk("wait: samples %lu tasks %lu running %lu runnable %lu", t[0], t[1], t[2], t[3]);
  for (int w = 0; w < NR_WCHAN; w++)
    printk(" %s %lu", names[w], t[4 + w]);
  printk("\n");
}
