// Compiled with -S only: each LAYOUT() line becomes an "@@LAYOUT name off
// size" marker in the assembly, which mklayout.py turns into layout.json.
// This is how the build tells the tools where every field is, so nothing
// outside the kernel hard-codes an offset.
#include "sched.h"

#define LAYOUT(name, field)                                             \
  __asm__ volatile("\n.ascii \"@@LAYOUT " name " %c0 %c1\"" ::"i"(      \
      offsetof(struct task_struct, field)),                             \
      "i"(sizeof(((struct task_struct *)0)->field)))

void
layout(void)
{
  LAYOUT("state", state);
  LAYOUT("flags", flags);
  LAYOUT("sigpending", sigpending);
  LAYOUT("addr_limit", addr_limit);
  LAYOUT("exec_domain", exec_domain);
  LAYOUT("need_resched", need_resched);
  LAYOUT("ptrace", ptrace);
  LAYOUT("lock_depth", lock_depth);
  LAYOUT("counter", counter);
  LAYOUT("nice", nice);
  LAYOUT("policy", policy);
  LAYOUT("mm", mm);
  LAYOUT("has_cpu", has_cpu);
  LAYOUT("processor", processor);
  LAYOUT("cpus_allowed", cpus_allowed);
  LAYOUT("run_list.next", run_list.next);
  LAYOUT("run_list.prev", run_list.prev);
  LAYOUT("sleep_time", sleep_time);
  LAYOUT("next_task", next_task);
  LAYOUT("prev_task", prev_task);
  LAYOUT("active_mm", active_mm);
  LAYOUT("pid", pid);
  LAYOUT("thread.rsp", thread.rsp);
  LAYOUT("comm", comm);
  __asm__ volatile("\n.ascii \"@@SIZE task_struct %c0\"" ::"i"(
      sizeof(struct task_struct)));
#ifdef CONFIG_SCHED_MQ
  // the multi-queue scheduler's per-CPU queue (sched.h): where each
  // CPU's runqueue_lock is, for the lock meter
#define RQLAYOUT(name, field)                                           \
  __asm__ volatile("\n.ascii \"@@RQLAYOUT " name " %c0 %c1\"" ::"i"(    \
      offsetof(struct runqueue_data, field)),                           \
      "i"(sizeof(((struct runqueue_data *)0)->field)))
  RQLAYOUT("nt_running", nt_running);
  RQLAYOUT("max_na_goodness", max_na_goodness);
  RQLAYOUT("max_na_ptr", max_na_ptr);
  RQLAYOUT("max_na_cpus_allowed", max_na_cpus_allowed);
  RQLAYOUT("runqueue", runqueue);
  RQLAYOUT("running_non_idle", running_non_idle);
  RQLAYOUT("runqueue_lock", runqueue_lock);
  __asm__ volatile("\n.ascii \"@@SIZE runqueue_data %c0\"" ::"i"(
      sizeof(struct runqueue_data)));
#endif
}
