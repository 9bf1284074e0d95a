// The multi-queue scheduler: IBM's MQ scheduler for Linux 2.4 (Kravetz's
// 2.4.7 patch, the nearest to the paper's 2.4.4), written from the design in
// shared/reference/mq-scheduler-facts.md ("facts" below).  Built instead of
// sched.c when CONFIG_SCHED_MQ is set (kernels/SConscript).
//
// One run queue per CPU, each under its own runqueue_lock (facts §2).  A
// task is on the queue of its `processor`.  schedule() walks only its own
// queue with goodness, then looks at every other queue's published best
// waiting task (max_na_*), without locks, and steals that task when it beats
// the local choice by the affinity bonus (§4).  Wake-ups place a task on an
// idle or preemptable CPU by moving it to that CPU's queue (§6).  There is no
// periodic balancer in 2.4.7 (§8); we add one more path, load_balance(),
// which evens out queue lengths (see there why).
//
// Modelled as in 2.4.7: the three goodness functions (§3), the local walk
// with best and second best, the +15 before the remote pass, trylock and
// re-validation when stealing, the max_na bookkeeping (§5), the candidate
// list of reschedule_idle (§6.3), nr_running as a sum (§2), recalculation
// over all tasks (§4.8).  Added: load_balance().  Not modelled: the realtime queue (this kernel has
// no realtime tasks), and the per-tick refresh of curr_na_goodness (the tick
// is timer.c's; here the value is set when schedule() picks a task, so it
// can only be higher than the truth and wake-ups preempt a little less).
//
// Lock order: tasklist_lock, then a run-queue lock.  A second run-queue lock
// is only ever taken with spin_trylock, so two CPUs cannot deadlock.
#include "fpu.h"
#include "kernel.h"
#include "mm.h"
#include "sched.h"
#include "waitstat.h"
#include "smp.h"
#include "user.h"


struct runqueue_data runqueue_data[NR_CPUS];
spinlock_t tasklist_lock __attribute__((aligned(SMP_CACHE_BYTES))) = SPIN_LOCK_UNLOCKED;
struct schedule_data aligned_data[NR_CPUS];
struct task_struct *idle_tasks[NR_CPUS];
int nr_threads;
// Instruments: shared counters updated from several queues' critical
// sections, so they are atomic (2.4.7 has no such counters).
uint64_t nr_schedules, nr_recalcs, nr_switches;
uint64_t nr_steals, nr_premature_idle, nr_wakeup_moves, nr_balanced;

#define NO_CANDIDATE 0x7fffffffffffffffL
#define rq_of(cpu) (&runqueue_data[(cpu)])
#define stat_inc(x) __atomic_fetch_add(&(x), 1, __ATOMIC_RELAXED)

void
sched_init(void)
{
  for (int cpu = 0; cpu < NR_CPUS; cpu++) {
    struct runqueue_data *rq = rq_of(cpu);
    list32_init(&rq->runqueue);
    rq->max_na_goodness = MIN_NA_GOODNESS;
    rq->runqueue_lock = (spinlock_t)SPIN_LOCK_UNLOCKED;
    aligned_data[cpu].curr_na_goodness = MIN_NA_GOODNESS;
  }
  printk("sched: multi-queue, %d run queues with a lock each\n", NR_CPUS);
}

// facts §2: the global count becomes a sum over the queues (racy, as in
// 2.4.7: it is a hint for sched_yield and the console).
int
nr_running_mq(void)
{
  int n = 0;
  for (int cpu = 0; cpu < nr_server_cpus; cpu++)
    n += READ_ONCE(rq_of(cpu)->nt_running);
  return n;
}

// facts §3.  na_goodness: what a task is worth to any CPU (no CPU or mm
// bonus); this is what queues publish and wake-ups compare.
static inline int
na_goodness(struct task_struct *p)
{
  if (p->policy & SCHED_YIELD)
    return -1;
  if (p->policy != SCHED_OTHER)
    return 1000;
  if (!p->counter)
    return 0;
  return p->counter + 20 - p->nice;
}

// local_goodness (2.4.7): na plus 1 for the same address space or none.
// No processor test: every task on this queue is this CPU's.
static inline int
local_goodness(struct task_struct *p, uint32_t this_mm)
{
  if (p->policy & SCHED_YIELD)
    return -1;
  if (p->policy != SCHED_OTHER)
    return 1000;
  int weight = p->counter;
  if (!weight)
    return 0;
  if (p->mm == this_mm || !p->mm)
    weight += 1;
  return weight + 20 - p->nice;
}

// The vanilla value (sched.c): for the still-running prev and preemption.
static inline int
goodness(struct task_struct *p, int this_cpu, uint32_t this_mm)
{
  if (p->policy & SCHED_YIELD)
    return -1;
  if (p->policy != SCHED_OTHER)
    return 1000;
  int weight = p->counter;
  if (!weight)
    return 0;
  if (p->processor == this_cpu)
    weight += PROC_CHANGE_PENALTY;
  if (p->mm == this_mm || !p->mm)
    weight += 1;
  return weight + 20 - p->nice;
}

static inline int
preemption_goodness(struct task_struct *curr, struct task_struct *p, int cpu)
{
  return goodness(p, cpu, curr->active_mm) - goodness(curr, cpu, curr->active_mm);
}

static inline int
allowed(struct task_struct *p, int cpu)
{
  return p->cpus_allowed & (1u << cpu);
}

// Publish p as the queue's best waiting task.  Only tasks with time left
// (na > 0) are published: another CPU would steal one only to run it.
static inline void
set_max_na(struct runqueue_data *rq, struct task_struct *p, int na)
{
  if (p && na > 0) {
    rq->max_na_goodness = na;
    rq->max_na_ptr = P32(p);
    rq->max_na_cpus_allowed = p->cpus_allowed;
  } else {
    rq->max_na_goodness = MIN_NA_GOODNESS;
    rq->max_na_ptr = 0;
  }
}

// facts §5.  All three with the queue's lock held.
static void
add_to_runqueue(struct task_struct *p)
{
  struct runqueue_data *rq = rq_of(p->processor);
  list32_add(&p->run_list, &rq->runqueue);    // at the head, as in 2.4
  if (!p->has_cpu) {
    int na = na_goodness(p);
    if (na > rq->max_na_goodness)
      set_max_na(rq, p, na);
  }
  rq->nt_running++;
}

static void
del_from_runqueue(struct task_struct *p)
{
  struct runqueue_data *rq = rq_of(p->processor);
  rq->nt_running--;
  p->sleep_time = jiffies;
  list32_del(&p->run_list);
  p->run_list.next = 0;                       // "not on the run queue"
  if (rq->max_na_ptr == P32(p))
    set_max_na(rq, NULL, 0);
}

// Removing the published task when it moves to another queue: publish the
// first waiting task with time left instead ("good enough", not the true
// maximum, as 2.4.7 does).
static void
del_from_runqueue_update(struct task_struct *p)
{
  struct runqueue_data *rq = rq_of(p->processor);
  int was_max = rq->max_na_ptr == P32(p);
  del_from_runqueue(p);
  if (!was_max)
    return;
  for (uint32_t pos = rq->runqueue.next; pos != P32(&rq->runqueue);) {
    struct task_struct *q = container_of((struct list32 *)PTR(pos),
                                         struct task_struct, run_list);
    int na;
    if (!READ_ONCE(q->has_cpu) && (na = na_goodness(q)) > 0) {
      set_max_na(rq, q, na);
      return;
    }
    pos = q->run_list.next;
  }
}

// The local queue walk (facts §4.4): the list_for_each loop of MQ's
// schedule().  Its own function and section, like sched.c's, so that
// layout.json gives its PC range to the bus monitor (the loop miss ratio).
// Per task it reads has_cpu, policy, counter, mm, nice and run_list.next
// (facts §10): the same 32-byte line at block offset 0x20 as vanilla, so
// coloring applies to MQ unchanged.  Returns the best and second-best
// waiting tasks (NULL if none) and the best's local goodness.
struct walk_result {
  struct task_struct *best, *second;
  int best_w, second_w;
};

__attribute__((noinline, section(".text.rqloop"))) void
runqueue_walk(struct runqueue_data *rq, uint32_t this_mm, struct walk_result *r)
{
  struct task_struct *best = NULL, *second = NULL;
  int best_w = MIN_NA_GOODNESS, second_w = MIN_NA_GOODNESS;
  uint32_t pos = READ_ONCE(rq->runqueue.next);
  while (pos != P32(&rq->runqueue)) {
    struct task_struct *p = container_of((struct list32 *)PTR(pos),
                                         struct task_struct, run_list);
    if (!READ_ONCE(p->has_cpu)) {
      int weight = local_goodness(p, this_mm);
      if (weight > best_w) {
        second = best;
        second_w = best_w;
        best = p;
        best_w = weight;
      } else if (weight > second_w) {
        second = p;
        second_w = weight;
      }
    }
    pos = READ_ONCE(p->run_list.next);
  }
  r->best = best;
  r->second = second;
  r->best_w = best_w;
  r->second_w = second_w;
}

// Every runnable task has used its slice: the same as sched.c's.
static void
recalculate(void)
{
  spin_lock_irq(&tasklist_lock);
  nr_recalcs++;
  for (struct task_struct *p = PTR(init_task->next_task); p != init_task;
       p = PTR(p->next_task))
    p->counter = (p->counter >> 1) + NICE_TO_TICKS(p->nice);
  spin_unlock_irq(&tasklist_lock);
}

// The remote pass (facts §4.6-7): read every other queue's published best
// without its lock; try the ones that beat c, highest first, with trylock;
// re-validate under the lock and steal the first that still qualifies.
// Called with this CPU's queue locked.  Returns the stolen task or NULL.
// Not inlined: layout.json gives its PC range (it reads the other CPUs'
// queue lines).
static __attribute__((noinline)) struct task_struct *
steal_remote(int this_cpu, int c, int would_idle)
{
  for (int round = 0; round < NR_CPUS; round++) {
    int value[NR_CPUS], failed = 0;
    for (int r = 0; r < nr_server_cpus; r++) {
      struct runqueue_data *rq = rq_of(r);
      value[r] = MIN_NA_GOODNESS;
      if (r == this_cpu || !cpus[r].online)
        continue;
      int na = READ_ONCE(rq->max_na_goodness);
      if (na > c && (READ_ONCE(rq->max_na_cpus_allowed) & (1u << this_cpu)))
        value[r] = na;
    }
    for (;;) {
      int r = -1;
      for (int i = 0; i < nr_server_cpus; i++)        // highest first
        if (value[i] > MIN_NA_GOODNESS && (r < 0 || value[i] > value[r]))
          r = i;
      if (r < 0)
        break;
      value[r] = MIN_NA_GOODNESS;
      struct runqueue_data *rq = rq_of(r);
      if (!spin_trylock(&rq->runqueue_lock)) {
        stat_inc(nr_premature_idle);
        failed = 1;
        continue;
      }
      struct task_struct *p = PTR(rq->max_na_ptr);
      if (p && !p->has_cpu && p->processor == r && allowed(p, this_cpu) &&
          na_goodness(p) > c) {
        del_from_runqueue_update(p);
        p->processor = this_cpu;
        add_to_runqueue(p);
        spin_unlock(&rq->runqueue_lock);
        stat_inc(nr_steals);
        return p;
      }
      spin_unlock(&rq->runqueue_lock);
    }
    // 2.4.7 redoes the pass while some queue was busy and this CPU would
    // go idle; bounded here so a CPU cannot spin on a busy lock for ever.
    if (!failed || !would_idle)
      break;
  }
  return NULL;
}

// Load balancing by queue length: an addition to 2.4.7 (which has no
// balancer, facts §8), in the manner of PMQS's balancer module (facts §8,
// M5) and O(1)'s pull (facts §13).  Why: 2.4.7 moves a task only when
// goodness says so (a steal needs the remote best to beat the local best
// by +15), so the tasks a CPU forks stay on its queue for many epochs --
// all 1024 of the workload's processes on CPU 0 -- and the walk would be
// N long on one CPU and short on the others.  When the longest other queue
// holds more than 5/4 of this one's tasks plus 2, pull half the difference
// (tasks not running, allowed here) from its head, under trylock.  The
// walk reads the same per-task line as the scheduler's walk.  Called with
// this CPU's queue locked.  Not inlined (layout.json range).
static __attribute__((noinline)) void
load_balance(int this_cpu)
{
  struct runqueue_data *me = rq_of(this_cpu), *busiest = NULL;
  int most = 0;
  for (int r = 0; r < nr_server_cpus; r++) {
    int n = READ_ONCE(rq_of(r)->nt_running);
    if (r != this_cpu && cpus[r].online && n > most) {
      most = n;
      busiest = rq_of(r);
    }
  }
  if (!busiest || most <= me->nt_running + me->nt_running / 4 + 2 ||
      !spin_trylock(&busiest->runqueue_lock))
    return;
  int pull = (busiest->nt_running - me->nt_running) / 2;
  uint32_t pos = busiest->runqueue.next;
  while (pull > 0 && pos != P32(&busiest->runqueue)) {
    struct task_struct *p = container_of((struct list32 *)PTR(pos),
                                         struct task_struct, run_list);
    pos = p->run_list.next;
    if (READ_ONCE(p->has_cpu) || !allowed(p, this_cpu))
      continue;
    del_from_runqueue(p);
    p->processor = this_cpu;
    add_to_runqueue(p);
    pull--;
    stat_inc(nr_balanced);
  }
  spin_unlock(&busiest->runqueue_lock);
}

// facts §6.3: place a newly runnable p (on its own queue, locked by the
// caller).  Fast path: p's CPU is idle.  Otherwise the allowed CPUs where p
// would win -- idle ones longest-idle first, then busy ones by their
// running task's na (+15 unless it is p's CPU) -- lowest value first; a
// CPU other than p's takes p onto its queue if, under its lock, it is still
// idle or preemptable by more than 1.  Not inlined (layout.json range).
static __attribute__((noinline)) void
reschedule_idle(struct task_struct *p)
{
  int this_cpu = smp_processor_id(), pc = p->processor;
  if (p->has_cpu)          // still switching out on pc: schedule_tail calls again
    return;
  if (allowed(p, pc) && cpu_curr(pc) == idle_tasks[pc]) {
    idle_tasks[pc]->need_resched = 1;
    if (pc != this_cpu)
      smp_send_reschedule(pc);
    return;
  }
  int64_t value[NR_CPUS];
  int na = na_goodness(p), n = 0;
  uint64_t now = rdtsc();
  for (int cpu = 0; cpu < nr_server_cpus; cpu++) {
    value[cpu] = NO_CANDIDATE;
    if (!cpus[cpu].online || !allowed(p, cpu))
      continue;
    int64_t v;
    if (cpu_curr(cpu) == idle_tasks[cpu])
      v = -(int64_t)(now - aligned_data[cpu].last_schedule);
    else
      v = READ_ONCE(aligned_data[cpu].curr_na_goodness) +
          (cpu != pc ? PROC_CHANGE_PENALTY : 0);
    if (v < na - 1) {
      value[cpu] = v;
      n++;
    }
  }
  while (n--) {
    int cpu = 0;
    for (int i = 1; i < nr_server_cpus; i++)          // lowest first
      if (value[i] < value[cpu])
        cpu = i;
    value[cpu] = NO_CANDIDATE;
    if (cpu == pc) {                         // p's queue: already locked
      struct task_struct *curr = cpu_curr(cpu);
      if (curr == idle_tasks[cpu] || preemption_goodness(curr, p, cpu) > 1) {
        curr->need_resched = 1;
        if (cpu != this_cpu)
          smp_send_reschedule(cpu);
        return;
      }
      continue;
    }
    struct runqueue_data *rq = rq_of(cpu);
    if (!spin_trylock(&rq->runqueue_lock))
      continue;
    struct task_struct *curr = cpu_curr(cpu);
    if (curr == idle_tasks[cpu] || preemption_goodness(curr, p, cpu) > 1) {
      del_from_runqueue_update(p);
      p->processor = cpu;
      add_to_runqueue(p);
      curr->need_resched = 1;
      spin_unlock(&rq->runqueue_lock);
      stat_inc(nr_wakeup_moves);
      if (cpu != this_cpu)                 // 2.4.5: always kick another CPU
        smp_send_reschedule(cpu);
      return;
    }
    spin_unlock(&rq->runqueue_lock);
  }
}

// Lock the queue p is on.  p->processor may change until we hold that
// queue's lock (a steal or a wake-up move holds both), so check again.
static struct runqueue_data *
lock_task_rq(struct task_struct *p, uint64_t *flags)
{
  for (;;) {
    int cpu = READ_ONCE(p->processor);
    struct runqueue_data *rq = rq_of(cpu);
    *flags = spin_lock_irqsave(&rq->runqueue_lock);
    if (READ_ONCE(p->processor) == cpu)
      return rq;
    spin_unlock_irqrestore(&rq->runqueue_lock, *flags);
  }
}

// facts §6.1-2: a synchronous wake-up only queues p on its own CPU.
int
try_to_wake_up(struct task_struct *p, int sync)
{
  if (p->flags & PF_CLIENT)           // the client partition (partition.c)
    return client_wake_up(p);
  int success = 0;
  uint64_t f;
  struct runqueue_data *rq = lock_task_rq(p, &f);
  p->state = TASK_RUNNING;
  if (!task_on_runqueue(p)) {
    add_to_runqueue(p);
    waitstat_wake(p, smp_processor_id());
    if (!sync)
      reschedule_idle(p);
    success = 1;
  }
  spin_unlock_irqrestore(&rq->runqueue_lock, f);
  return success;
}

int
wake_up_process(struct task_struct *p)
{
  return try_to_wake_up(p, 0);
}

// The same as sched.c's: a thread that exited frees its own block.
static void
reap_dead_thread(struct task_struct *prev)
{
  spin_lock_irq(&tasklist_lock);
  struct task_struct *b = PTR(prev->prev_task), *n = PTR(prev->next_task);
  b->next_task = P32(n);
  n->prev_task = P32(b);
  nr_threads--;
  spin_unlock_irq(&tasklist_lock);
  release_task(prev);
}

// facts §6: __schedule_tail locks prev's queue (not a global lock) and
// offers a preempted prev to an idle or preemptable CPU.
void
schedule_tail(struct task_struct *prev)
{
  prev->policy &= ~SCHED_YIELD;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  WRITE_ONCE(prev->has_cpu, 0);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (prev->flags & PF_CLIENT) {
    client_schedule_tail(prev);
    return;
  }
  if (prev->state == TASK_DEAD) {
    reap_dead_thread(prev);
    return;
  }
  if (prev->pid == 0 || prev->state != TASK_RUNNING)
    return;
  uint64_t f;
  struct runqueue_data *rq = lock_task_rq(prev, &f);
  if (task_on_runqueue(prev))
    reschedule_idle(prev);
  spin_unlock_irqrestore(&rq->runqueue_lock, f);
}

// The same as sched.c's prepare_switch (2.4's switch_mm, lazy TLB, TSS and
// TLS); kept here so that sched.c, and with it the linux24 image, is
// unchanged.
void
prepare_switch(struct task_struct *prev, struct task_struct *next, int cpu)
{
  unlazy_fpu(prev);                  // 2.4's __switch_to (fpu.h)
  struct mm_struct *mm = task_mm(next), *oldmm = PTR(prev->active_mm);
  if (!mm) {
    next->active_mm = prev->active_mm;
    if (mm_has_user(oldmm))
      mmgrab(oldmm);
  } else if (mm != oldmm) {
    switch_mm(mm);
  }
  if (mm_has_user(mm)) {
    set_kernel_stack(cpu, next->block + THREAD_SIZE);
    wrmsr(MSR_FS_BASE, next->fsbase);
    fpu_switch_in(next);             // fpu_eager only (fpu.h)
  }
  if (!prev->mm) {
    prev->active_mm = 0;
    if (mm_has_user(oldmm))
      mmdrop(oldmm);
  }
}

// facts §4.
void
schedule(void)
{
  struct task_struct *prev, *next, *waiting;
  struct runqueue_data *rq;
  struct walk_result w;
  int this_cpu, c;

need_resched_back:
  prev = current;
  this_cpu = prev->processor;
  if (cpu_is_client(this_cpu)) {              // not the server's CPU
    client_schedule();
    return;
  }
  rq = rq_of(this_cpu);
  spin_lock_irq(&rq->runqueue_lock);
  if (prev->state == TASK_INTERRUPTIBLE && prev->sigpending)
    prev->state = TASK_RUNNING;               // killed: no sleeping (2.4)
  if (prev->state != TASK_RUNNING && task_on_runqueue(prev)) {
    del_from_runqueue(prev);
    waitstat_sleep(prev, this_cpu);           // where it waits (waitstat.c)
  }
  prev->need_resched = 0;
  load_balance(this_cpu);
  rqstat_sample(rq->nt_running);              // this queue's walk (rqstat.c)
  for (;;) {
    next = idle_tasks[this_cpu];
    c = -1000;
    if (prev->state == TASK_RUNNING) {       // still_running: full goodness
      c = goodness(prev, this_cpu, prev->active_mm);
      next = prev;
    }
    runqueue_walk(rq, prev->active_mm, &w);
    waiting = w.best;                         // best task left waiting here
    if (w.best && w.best_w > c) {
      c = w.best_w;
      next = w.best;
      waiting = w.second;
    }
    if (c > 0)                                // facts §4.5: local affinity
      c += PROC_CHANGE_PENALTY;
    struct task_struct *stolen = steal_remote(this_cpu, c,
                                              next == idle_tasks[this_cpu]);
    if (stolen) {
      if (next != prev && next != idle_tasks[this_cpu])
        waiting = next;                       // the local best waits on
      next = stolen;
      break;
    }
    if (c != 0)
      break;
    spin_unlock_irq(&rq->runqueue_lock);      // every slice used up
    recalculate();
    spin_lock_irq(&rq->runqueue_lock);
  }
  // facts §4.9: publish this queue's best waiting task and this CPU's
  // running value for the others' remote pass and wake-ups.
  set_max_na(rq, waiting, waiting ? na_goodness(waiting) : 0);
  cpu_curr(this_cpu) = next;
  next->has_cpu = 1;
  next->processor = this_cpu;
  aligned_data[this_cpu].curr_na_goodness =
      next == idle_tasks[this_cpu] ? MIN_NA_GOODNESS : na_goodness(next);
  rq->running_non_idle = next != idle_tasks[this_cpu];
  stat_inc(nr_schedules);
  spin_unlock_irq(&rq->runqueue_lock);

  if (next != prev) {
    aligned_data[this_cpu].last_schedule = rdtsc();
    stat_inc(nr_switches);
    next->nvcsw++;
    prepare_switch(prev, next, this_cpu);
    prev = switch_context(&prev->thread.rsp, next->thread.rsp, prev);
    schedule_tail(prev);
  }
  if (READ_ONCE(current->need_resched))       // 2.4: woken meanwhile, again
    goto need_resched_back;
}
