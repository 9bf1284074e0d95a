// Wait queues (2.4's sleep_on / __wake_up with exclusive waiters).
//
// The sleeper marks itself INTERRUPTIBLE before it queues itself and calls
// schedule(); a wake-up in between just makes it RUNNING again, so
// schedule() keeps it on the run queue and no wake-up is lost.
#include "kernel.h"
#include "sched.h"
#include "wait.h"

void
init_waitqueue_head(struct wait_queue_head *q)
{
  q->lock = (spinlock_t)SPIN_LOCK_UNLOCKED;
  list64_init(&q->waiters);
}

void
sleep_on_exclusive(struct wait_queue_head *q)
{
  struct wait_queue_entry w = {.task = current, .exclusive = 1};
  current->state = TASK_INTERRUPTIBLE;
  uint64_t f = spin_lock_irqsave(&q->lock);
  list64_add_tail(&w.link, &q->waiters);   // exclusive waiters at the tail
  spin_unlock_irqrestore(&q->lock, f);
  schedule();
  f = spin_lock_irqsave(&q->lock);
  list64_del(&w.link);
  spin_unlock_irqrestore(&q->lock, f);
}

// Wake every non-exclusive waiter and up to nr_exclusive exclusive ones.
void
wake_up(struct wait_queue_head *q, int nr_exclusive)
{
  uint64_t f = spin_lock_irqsave(&q->lock);
  for (struct list64 *e = q->waiters.next; e != &q->waiters; e = e->next) {
    struct wait_queue_entry *w = container_of(e, struct wait_queue_entry, link);
    if (w->task->state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE)) {
      if (try_to_wake_up(w->task, 0) && w->exclusive && !--nr_exclusive)
        break;
    }
  }
  spin_unlock_irqrestore(&q->lock, f);
}

// Non-exclusive waiters at the head (2.4's add_wait_queue): for callers
// that set their state, queue, re-check a condition, then schedule().
void
add_wait_queue(struct wait_queue_head *q, struct wait_queue_entry *w)
{
  uint64_t f = spin_lock_irqsave(&q->lock);
  w->exclusive = 0;
  struct list64 *h = &q->waiters;
  w->link.next = h->next;
  w->link.prev = h;
  h->next->prev = &w->link;
  h->next = &w->link;
  spin_unlock_irqrestore(&q->lock, f);
}

void
remove_wait_queue(struct wait_queue_head *q, struct wait_queue_entry *w)
{
  uint64_t f = spin_lock_irqsave(&q->lock);
  list64_del(&w->link);
  spin_unlock_irqrestore(&q->lock, f);
}

// Exclusive waiters at the tail (2.4's add_wait_queue_exclusive): a
// wake_up with nr_exclusive = 1 wakes the first of them only.
void
add_wait_queue_exclusive(struct wait_queue_head *q, struct wait_queue_entry *w)
{
  uint64_t f = spin_lock_irqsave(&q->lock);
  w->exclusive = 1;
  list64_add_tail(&w->link, &q->waiters);
  spin_unlock_irqrestore(&q->lock, f);
}
