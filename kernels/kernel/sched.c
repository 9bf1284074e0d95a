// The Linux 2.4 scheduler: one global run queue under one lock, and an O(n)
// walk of it in every schedule().
//
// Lock order: tasklist_lock, then runqueue_lock (recalculation drops the
// run-queue lock before taking the task-list lock, as 2.4 does).
#include "fpu.h"
#include "kernel.h"
#include "mm.h"
#include "sched.h"
#include "waitstat.h"
#include "smp.h"
#include "user.h"


spinlock_t runqueue_lock __attribute__((aligned(SMP_CACHE_BYTES))) = SPIN_LOCK_UNLOCKED;

// runqueue_lock, taken and released with interrupts off and counted by the
// kernel itself (lockstat.c): the same numbers on every engine.
static inline void
rq_lock(void)
{
  lockstat_acquired(spin_lock_waited(&runqueue_lock));
}

static inline void
rq_unlock(void)
{
  lockstat_released();
  spin_unlock(&runqueue_lock);
}
spinlock_t tasklist_lock __attribute__((aligned(SMP_CACHE_BYTES))) = SPIN_LOCK_UNLOCKED;
struct list32 runqueue_head __attribute__((aligned(SMP_CACHE_BYTES)));
struct schedule_data aligned_data[NR_CPUS];
struct task_struct *idle_tasks[NR_CPUS];
int nr_running, nr_threads;
uint64_t nr_schedules, nr_recalcs, nr_switches;

void
sched_init(void)
{
  list32_init(&runqueue_head);
}

// Guarded by runqueue_lock: the list, nr_running, has_cpu and processor.
static void
add_to_runqueue(struct task_struct *p)
{
  list32_add(&p->run_list, &runqueue_head);   // at the head, as in 2.4.4
  nr_running++;
}

static void
del_from_runqueue(struct task_struct *p)
{
  nr_running--;
  p->sleep_time = jiffies;
  list32_del(&p->run_list);
  p->run_list.next = 0;                       // "not on the run queue"
}

// May p run on cpu?  has_cpu is read first: it is the first word of the
// scheduler line that the walk touches for every task.
static inline int
can_schedule(struct task_struct *p, int cpu)
{
  return !READ_ONCE(p->has_cpu) && (p->cpus_allowed & (1u << cpu));
}

// How much p wants this CPU: 0 = out of time slice, -1 = yielded,
// 1000+ = real time.  Same CPU (+15) and same address space (+1) are
// cheap to switch to, so they earn a bonus.
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

// The run-queue walk: 2.4's list_for_each loop in schedule().  It lives in
// its own function and section so that its PC range (layout.json) lets the
// bus monitor count cache misses inside the loop (the paper's Table 2).
// Per task it reads has_cpu, cpus_allowed, policy, counter, processor, mm,
// nice and run_list.next: one cache line at block offset 0x20.
__attribute__((noinline, section(".text.rqloop"))) int
runqueue_walk(int this_cpu, uint32_t this_mm, int c, struct task_struct **nextp)
{
  struct task_struct *next = *nextp;
  uint32_t pos = READ_ONCE(runqueue_head.next);
  while (pos != P32(&runqueue_head)) {
    struct task_struct *p = container_of((struct list32 *)PTR(pos),
                                         struct task_struct, run_list);
    if (can_schedule(p, this_cpu)) {
      int weight = goodness(p, this_cpu, this_mm);
      if (weight > c) {
        c = weight;
        next = p;
      }
    }
    pos = READ_ONCE(p->run_list.next);
  }
  *nextp = next;
  return c;
}

// Every runnable task has used its slice: give every task in the system
// (sleepers too) a new one.  Sleepers bank half of what they had left.
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

// Find a CPU for a newly runnable task: p's last CPU if it is idle, else
// the longest-idle CPU, else the CPU whose current task p beats by the
// widest goodness margin (over 1, as in 2.4.0).  Called with
// runqueue_lock held.
static void
reschedule_idle(struct task_struct *p)
{
  int this_cpu = smp_processor_id(), best_cpu = p->processor;
  struct task_struct *tsk = NULL;
  if (can_schedule(p, best_cpu) && cpu_curr(best_cpu) == idle_tasks[best_cpu]) {
    tsk = idle_tasks[best_cpu];
  } else {
    uint64_t oldest_idle = ~0UL;
    int max_prio = 1;
    for (int cpu = 0; cpu < nr_server_cpus; cpu++) {
      if (!cpus[cpu].online || !can_schedule(p, cpu))
        continue;
      struct task_struct *curr = cpu_curr(cpu);
      if (curr == idle_tasks[cpu]) {
        if (aligned_data[cpu].last_schedule < oldest_idle) {
          oldest_idle = aligned_data[cpu].last_schedule;
          tsk = curr;
        }
      } else if (oldest_idle == ~0UL) {
        int prio = preemption_goodness(curr, p, cpu);
        if (prio > max_prio) {
          max_prio = prio;
          tsk = curr;
        }
      }
    }
    if (!tsk)
      return;
    best_cpu = tsk->processor;
  }
  tsk->need_resched = 1;
  if (best_cpu != this_cpu)           // 2.4.5: always kick another CPU
    smp_send_reschedule(best_cpu);
}

int
try_to_wake_up(struct task_struct *p, int sync)
{
  if (p->flags & PF_CLIENT)           // the client partition (partition.c)
    return client_wake_up(p);
  int success = 0;
  uint64_t f = local_irq_save();
  rq_lock();
  p->state = TASK_RUNNING;
  if (!task_on_runqueue(p)) {
    add_to_runqueue(p);
    waitstat_wake(p, smp_processor_id());
    if (!sync)
      reschedule_idle(p);
    success = 1;
  }
  rq_unlock();
  local_irq_restore(f);
  return success;
}

int
wake_up_process(struct task_struct *p)
{
  return try_to_wake_up(p, 0);
}

// A thread that exited (not a group leader: nobody waits for it) frees
// its own block, from the next task's stack.
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

// Runs on the new task's stack right after the switch: prev may now run
// elsewhere.  A preempted prev gets a chance at an idle CPU.
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
  uint64_t f = local_irq_save();
  rq_lock();
  reschedule_idle(prev);
  rq_unlock();
  local_irq_restore(f);
}

// 2.4's switch_mm and lazy TLB: a task without an mm (idle, kernel
// threads) borrows prev's and holds a reference until it switches away
// (mm_count, so a dying process's page tables outlive their last user).
// A task with user mode also needs its kernel stack in the TSS and its
// TLS base in FS.
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

void
schedule(void)
{
  struct task_struct *prev, *next;
  int this_cpu, c;

need_resched_back:
  prev = current;
  this_cpu = prev->processor;
  if (cpu_is_client(this_cpu)) {              // not the server's CPU
    client_schedule();
    return;
  }
  cli();
  rq_lock();
  if (prev->state == TASK_INTERRUPTIBLE && prev->sigpending)
    prev->state = TASK_RUNNING;               // killed: no sleeping (2.4)
  if (prev->state != TASK_RUNNING && task_on_runqueue(prev)) {
    del_from_runqueue(prev);
    waitstat_sleep(prev, this_cpu);           // where it waits (waitstat.c)
  }
  prev->need_resched = 0;
  rqstat_sample(nr_running);                  // the walk's length (rqstat.c)
  for (;;) {
    next = idle_tasks[this_cpu];
    c = -1000;
    if (prev->state == TASK_RUNNING) {       // still_running: prev first
      c = goodness(prev, this_cpu, prev->active_mm);
      next = prev;
    }
    c = runqueue_walk(this_cpu, prev->active_mm, c, &next);
    if (c != 0)
      break;
    rq_unlock();                              // every slice used up
    sti();
    recalculate();
    cli();
    rq_lock();
  }
  cpu_curr(this_cpu) = next;
  next->has_cpu = 1;
  next->processor = this_cpu;
  nr_schedules++;
  rq_unlock();
  sti();

  if (next != prev) {
    aligned_data[this_cpu].last_schedule = rdtsc();
    nr_switches++;
    next->nvcsw++;
    prepare_switch(prev, next, this_cpu);
    prev = switch_context(&prev->thread.rsp, next->thread.rsp, prev);
    schedule_tail(prev);
  }
  if (READ_ONCE(current->need_resched))       // 2.4: woken meanwhile, again
    goto need_resched_back;
}
