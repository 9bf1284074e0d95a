// exit, exit_group and wait4 (2.4's do_exit, release_task, sys_wait4).
//
// A process's leader becomes a zombie and its parent reaps it.  Other
// threads of a group reap themselves: schedule_tail frees a TASK_DEAD
// block once the thread has switched away from it for good.  When init
// (the process with pid 1 in an init= run) is gone, the machine stops.
#include "errno.h"
#include "fs.h"
#include "kernel.h"
#include "m5op.h"
#include "mm.h"
#include "net.h"
#include "proc.h"
#include "sched.h"
#include "waitstat.h"
#include "user.h"

#define WNOHANG 1

static void
unlink_task(struct task_struct *p)       // tasklist_lock held
{
  struct task_struct *prev = PTR(p->prev_task), *next = PTR(p->next_task);
  prev->next_task = P32(next);
  next->prev_task = P32(prev);
  if (p->flags & PF_CLIENT)
    nr_client_threads--;
  else
    nr_threads--;
}

// Free a task that will never run again (has_cpu is 0).
void
release_task(struct task_struct *p)
{
  while (READ_ONCE(p->has_cpu))          // SMP: it may still be switching out
    cpu_relax();
  uint64_t f = local_irq_save();         // the count is this CPU's row
  waitstat_release(p, smp_processor_id());
  local_irq_restore(f);
  free_task_struct(p);
}

static int
live_threads(int tgid)                   // tasklist_lock held
{
  int n = 0;
  for (struct task_struct *p = first_task_all(); p; p = next_task_all(p))
    if (p->tgid == tgid && p->state != TASK_ZOMBIE && p->state != TASK_DEAD)
      n++;
  return n;
}

// Children of the dying task go to init (2.4's forget_original_parent).
static void
reparent_children(struct task_struct *me)   // tasklist_lock held
{
  struct task_struct *reaper = NULL;
  for (struct task_struct *p = first_task_all(); p; p = next_task_all(p))
    if (p->pid == 1)
      reaper = p;
  for (struct task_struct *p = first_task_all(); p; p = next_task_all(p))
    if (p->p_pptr == me && p != me)
      p->p_pptr = reaper ? reaper : init_task;
  if (reaper && reaper != me)
    wake_up(&reaper->wait_chldexit, 1);
}

static void
exit_mm(struct task_struct *me)
{
  struct mm_struct *mm = task_mm(me);
  if (!mm)
    return;
  mmgrab(mm);                  // keep the page tables while we still run
  me->mm = 0;                  // on them (active_mm stays; schedule drops)
  mmput(mm);
}

static void
init_gone(int status)
{
  net_report();
  sem_report();
  locks_report();
  printk("init: exited with status %d\n", status);
  // gem5 has no isa-debug-exit: m5 exit ends its simulation (the runner
  // reads the status from the line above); our plugin only notes it.
  m5_op(M5OP_EXIT);
  machine_exit(status == 0 ? 0 : 3);
}

void
do_exit(int code)
{
  struct task_struct *me = current;
  if (me->clear_child_tid) {             // CLONE_CHILD_CLEARTID: joiners
    int zero = 0;
    if (copy_to_user(me->clear_child_tid, &zero, 4) == 0)
      futex_wake(me->clear_child_tid, 1);
  }
  sem_exit();                            // SEM_UNDO (sem.c)
  if (me->files) {
    put_files(me->files);
    me->files = NULL;
  }
  exit_mm(me);
  struct task_struct *leader = me->group_leader;
  spin_lock_irq(&tasklist_lock);
  if (!leader->group_exit && me == leader)
    me->exit_code = code;
  reparent_children(me);
  me->state = me == leader ? TASK_ZOMBIE : TASK_DEAD;
  int left = live_threads(me->tgid);
  struct task_struct *parent = leader->p_pptr;
  bool init_done = !left && leader->pid == 1;
  spin_unlock_irq(&tasklist_lock);
  if (init_done)
    init_gone(leader->exit_code);
  if (!left && parent && parent->group_leader)  // wait4 sleeps on the leader's
    wake_up(&parent->group_leader->wait_chldexit, 1);
  cli();
  schedule();                            // never returns
  panic("do_exit: pid %d came back", me->pid);
}

// Killed: by a fault (sig) or by exit_group in another thread (sig 0).
void
force_exit(int sig)
{
  struct task_struct *leader = current->group_leader;
  if (sig && leader && !leader->group_exit) {
    leader->exit_code = sig;             // wait status: killed by sig
    leader->group_exit = 1;
    sys_exit_group(-1);
  }
  do_exit(sig);
}

// Mark every other thread of the group; each dies on its way back to
// user mode (sigpending, checked with need_resched), waking if asleep.
long
sys_exit_group(long code)
{
  struct task_struct *me = current, *leader = me->group_leader;
  spin_lock_irq(&tasklist_lock);
  if (code >= 0 && !leader->group_exit) {
    leader->exit_code = (code & 0xff) << 8;
    leader->group_exit = 1;
  }
  for (struct task_struct *p = first_task_all(); p; p = next_task_all(p))
    if (p->tgid == me->tgid && p != me && p->state != TASK_ZOMBIE &&
        p->state != TASK_DEAD) {
      p->sigpending = 1;
      wake_up_process(p);              // runqueue_lock nests inside
    }
  spin_unlock_irq(&tasklist_lock);
  if (code >= 0)
    do_exit((code & 0xff) << 8);
  return 0;
}

// A reapable child: a zombie leader whose threads are all gone.
static struct task_struct *
find_zombie(long pid, bool *any)            // tasklist_lock held
{
  struct task_struct *me = current;
  for (struct task_struct *p = first_task_all(); p; p = next_task_all(p)) {
    if (p->p_pptr != me->group_leader && p->p_pptr != me)
      continue;
    if (p->group_leader != p || (pid > 0 && p->pid != pid))
      continue;
    *any = true;
    if (p->state == TASK_ZOMBIE && !live_threads(p->tgid))
      return p;
  }
  return NULL;
}

long
sys_wait4(long pid, uint64_t ustatus, long options, uint64_t rusage)
{
  struct task_struct *me = current;
  struct wait_queue_head *q = &me->group_leader->wait_chldexit;
  struct wait_queue_entry w = {.task = me};
  if (pid < -1 || pid == 0)
    return -EINVAL;                      // no process groups
  add_wait_queue(q, &w);
  me->wchan = WCHAN_WAIT4;
  long r;
  for (;;) {
    bool any = false;
    me->state = TASK_INTERRUPTIBLE;
    spin_lock_irq(&tasklist_lock);
    struct task_struct *z = find_zombie(pid, &any);
    if (z)
      unlink_task(z);
    spin_unlock_irq(&tasklist_lock);
    if (z) {
      me->state = TASK_RUNNING;
      int status = z->exit_code, zpid = z->pid;
      release_task(z);
      r = ustatus && copy_to_user(ustatus, &status, 4) < 0 ? -EFAULT : zpid;
      break;
    }
    if (!any || (options & WNOHANG) || me->sigpending) {
      me->state = TASK_RUNNING;
      r = !any ? -ECHILD : me->sigpending ? -EINTR : 0;
      break;
    }
    schedule();
  }
  me->wchan = WCHAN_NONE;
  remove_wait_queue(q, &w);
  return r;
}
