// Timeouts: tasks sleeping until a given jiffy (nanosleep, futex waits
// with a timeout).  CPU 0's tick runs the list, as 2.4's run_timer_list
// runs from the timer bottom half.
#include "kernel.h"
#include "proc.h"
#include "sched.h"
#include "waitstat.h"

static struct list64 timeouts = {&timeouts, &timeouts};
static spinlock_t timeout_lock = SPIN_LOCK_UNLOCKED;

void
add_timeout(struct task_struct *p, uint64_t ticks)
{
  uint64_t f = spin_lock_irqsave(&timeout_lock);
  p->timeout = jiffies + (ticks ? ticks : 1);
  list64_add_tail(&p->timer_link, &timeouts);
  spin_unlock_irqrestore(&timeout_lock, f);
}

void
del_timeout(struct task_struct *p)
{
  uint64_t f = spin_lock_irqsave(&timeout_lock);
  if (p->timeout) {
    list64_del(&p->timer_link);
    p->timeout = 0;
  }
  spin_unlock_irqrestore(&timeout_lock, f);
}

// From the tick: wake every task whose time has come.
void
run_timeouts(uint64_t now)
{
  if (timeouts.next == &timeouts)
    return;                          // the built-in workload never sleeps so
  spin_lock(&timeout_lock);
  for (struct list64 *e = timeouts.next, *n; e != &timeouts; e = n) {
    n = e->next;
    struct task_struct *p = container_of(e, struct task_struct, timer_link);
    if (p->timeout <= now) {
      list64_del(&p->timer_link);
      p->timeout = 0;
      wake_up_process(p);
    }
  }
  spin_unlock(&timeout_lock);
}

// Sleep for ticks (interruptibly); the ticks left, 0 if they all passed.
long
schedule_timeout(uint64_t ticks)
{
  struct task_struct *me = current;
  uint64_t end = jiffies + ticks;
  me->state = TASK_INTERRUPTIBLE;
  me->wchan = WCHAN_SLEEP;
  add_timeout(me, ticks);
  schedule();
  me->wchan = WCHAN_NONE;
  del_timeout(me);
  return jiffies >= end ? 0 : end - jiffies;
}

// Round up to whole ticks (HZ = 100: 10 ms each).
uint64_t
timespec_to_ticks(uint64_t sec, uint64_t nsec)
{
  return sec * HZ + (nsec + (1000000000 / HZ) - 1) / (1000000000 / HZ);
}
