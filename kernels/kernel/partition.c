// The client partition: CPUs and tasks outside the measured machine.
//
// The paper's web clients ran on 28 other PCs.  Here they run on extra
// CPUs of the same guest (`clientcpus=C` on the command line: the last C
// CPUs), which the bus monitor is told not to measure (busmon measured=).
// A process enters the partition only by being forked by a process that
// asked for it (the colorsim_client system call): its descendants are
// client tasks too.  Client tasks
//   - run only on client CPUs, and server tasks never run there;
//   - sit on their own run queue under their own lock (never on
//     runqueue_lock or the server's queue, so rqstat and the run-queue walk
//     never see them) and on their own task list (so recalculate() never
//     walks them);
//   - are scheduled round robin: the idle client CPU that a wake-up finds
//     takes the task, and a task whose slice runs out goes to the tail.
// The two sides meet only where the paper's machines met: on the network
// (loopback.c: packets to a client socket raise the client side's
// interrupt, on a client CPU) -- and, before the region of interest, in
// the pipes the workload uses to start and stop.
#include "errno.h"
#include "kernel.h"
#include "net.h"
#include "proc.h"
#include "sched.h"
#include "smp.h"

int nr_server_cpus = NR_CPUS;   // set at boot; the rest are client CPUs
int nr_client_threads;          // client tasks alive (nr_threads: server's)
uint64_t nr_client_switches;

static spinlock_t client_lock __attribute__((aligned(SMP_CACHE_BYTES))) = SPIN_LOCK_UNLOCKED;
static struct list32 client_rq __attribute__((aligned(SMP_CACHE_BYTES)));
// The head of the client task list (only next_task/prev_task are used).
static struct task_struct client_head __attribute__((aligned(SMP_CACHE_BYTES)));

void
partition_init(void)
{
  int c = cmdline_u64("clientcpus", 0);
  if (c < 0 || c >= ncpus)
    panic("clientcpus=%d: the machine has %d CPUs, the server needs one", c, ncpus);
  nr_server_cpus = ncpus - c;
  list32_init(&client_rq);
  client_head.next_task = client_head.prev_task = P32(&client_head);
  wire_init();                          // the last client CPU may be the wire's
  if (c)
    printk("partition: server cpus 0-%d, client cpus %d-%d\n", nr_server_cpus - 1,
           nr_server_cpus, ncpus - 1);
}

struct task_struct *
client_list_head(void)
{
  return &client_head;
}

// Every task of both lists: the server's from init_task, then the clients'.
struct task_struct *
first_task_all(void)
{
  struct task_struct *p = PTR(init_task->next_task);
  return p != init_task ? p : next_task_all(init_task);
}

struct task_struct *
next_task_all(struct task_struct *p)
{
  struct task_struct *n = PTR(p->next_task);
  if (n == init_task)
    n = PTR(client_head.next_task);
  return n == &client_head ? NULL : n;
}

// colorsim_client: the caller's next children are client tasks.  -ENODEV
// when the machine has no client CPUs (the workload then keeps its
// clients on the server's CPUs, as before).
long
sys_colorsim_client(void)
{
  if (nr_server_cpus >= ncpus)
    return -ENODEV;
  current->flags |= PF_CLIENT_CHILDREN;
  return 0;
}

// copy_task_struct: a child of a process that asked becomes a client task,
// starting on the first client CPU.
void
partition_fork(struct task_struct *parent, struct task_struct *p)
{
  p->flags &= ~PF_CLIENT_CHILDREN;
  if (parent->flags & PF_CLIENT_CHILDREN) {
    p->flags |= PF_CLIENT;
    p->processor = nr_server_cpus;
  }
}

// Wake the first idle client CPU (p's own first), if there is one.
static void
kick_client_cpu(struct task_struct *p)
{
  int end = wire_cpu >= 0 ? wire_cpu : ncpus;   // the wire's CPU runs none
  int first = p->processor >= nr_server_cpus && p->processor < end ? p->processor
                                                                    : nr_server_cpus;
  for (int i = 0; i < end - nr_server_cpus; i++) {
    int cpu = nr_server_cpus + (first - nr_server_cpus + i) % (end - nr_server_cpus);
    if (!cpus[cpu].online || cpu_curr(cpu) != idle_tasks[cpu] ||
        idle_tasks[cpu]->need_resched)
      continue;
    idle_tasks[cpu]->need_resched = 1;
    if (cpu != smp_processor_id())
      smp_send_reschedule(cpu);
    return;
  }
}

int
client_wake_up(struct task_struct *p)
{
  int success = 0;
  uint64_t f = spin_lock_irqsave(&client_lock);
  p->state = TASK_RUNNING;
  if (!task_on_runqueue(p)) {
    __list32_add(&p->run_list, PTR(client_rq.prev), &client_rq);   // tail
    kick_client_cpu(p);
    success = 1;
  }
  spin_unlock_irqrestore(&client_lock, f);
  return success;
}

// schedule() on a client CPU.
void
client_schedule(void)
{
  struct task_struct *prev, *next;
again:
  prev = current;
  int cpu = prev->processor;
  struct task_struct *idle = idle_tasks[cpu];
  if (cpu == wire_cpu)                   // runs no tasks (wire.c)
    return;
  spin_lock_irq(&client_lock);
  if (prev->state == TASK_INTERRUPTIBLE && prev->sigpending)
    prev->state = TASK_RUNNING;
  bool runnable = prev != idle && prev->state == TASK_RUNNING;
  if (prev != idle && !runnable && task_on_runqueue(prev)) {
    list32_del(&prev->run_list);
    prev->run_list.next = 0;
  }
  prev->need_resched = 0;
  next = idle;
  if (runnable && prev->counter > 0 && !(prev->policy & SCHED_YIELD)) {
    next = prev;                         // slice left: keep running
  } else {
    if (runnable) {                      // slice used: to the tail
      list32_del(&prev->run_list);
      __list32_add(&prev->run_list, PTR(client_rq.prev), &client_rq);
    }
    for (uint32_t pos = client_rq.next; pos != P32(&client_rq);) {
      struct task_struct *p = container_of((struct list32 *)PTR(pos),
                                           struct task_struct, run_list);
      if (!READ_ONCE(p->has_cpu) || p == prev) {
        next = p;
        break;
      }
      pos = p->run_list.next;
    }
  }
  if (next != idle && next->counter <= 0)
    next->counter = NICE_TO_TICKS(next->nice);
  cpu_curr(cpu) = next;
  next->has_cpu = 1;
  next->processor = cpu;
  spin_unlock_irq(&client_lock);
  if (next != prev) {
    nr_client_switches++;
    prepare_switch(prev, next, cpu);
    prev = switch_context(&prev->thread.rsp, next->thread.rsp, prev);
    schedule_tail(prev);
  }
  if (READ_ONCE(current->need_resched))
    goto again;
}

// schedule_tail() for a client task that left a CPU (has_cpu is clear).
void
client_schedule_tail(struct task_struct *prev)
{
  if (prev->state == TASK_DEAD) {        // a thread that reaps itself
    spin_lock_irq(&tasklist_lock);
    struct task_struct *b = PTR(prev->prev_task), *n = PTR(prev->next_task);
    b->next_task = P32(n);
    n->prev_task = P32(b);
    nr_client_threads--;
    spin_unlock_irq(&tasklist_lock);
    release_task(prev);
    return;
  }
  if (prev->state == TASK_RUNNING) {     // preempted: another CPU may be idle
    uint64_t f = spin_lock_irqsave(&client_lock);
    kick_client_cpu(prev);
    spin_unlock_irqrestore(&client_lock, f);
  }
}
