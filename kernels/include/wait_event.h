// Sleeping until a condition holds, as 2.4's wait_event_interruptible:
// queue on q, mark the task asleep (with a full barrier, 2.4's set_mb, so
// the condition is read after the state is visible to a waker), re-check,
// schedule().  A waker changes the condition, then calls wake_up(q): it
// either sees us asleep and wakes us, or we see its change.  A task killed
// by exit_group (sigpending) stops waiting with -EINTR.
#pragma once
#include "errno.h"
#include "sched.h"
#include "wait.h"
#include "waitstat.h"

static inline void set_current_state_mb(int state) {
  __atomic_store_n(&current->state, state, __ATOMIC_SEQ_CST);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

#define __wait_event(q, cond, exclusive, ch)                                 \
  ({                                                                       \
    long __r = 0;                                                          \
    if (!(cond)) {                                                         \
      struct wait_queue_entry __w = {.task = current};                     \
      if (exclusive)                                                       \
        add_wait_queue_exclusive((q), &__w);                               \
      else                                                                 \
        add_wait_queue((q), &__w);                                         \
      current->wchan = (ch);                                               \
      for (;;) {                                                           \
        set_current_state_mb(TASK_INTERRUPTIBLE);                          \
        if (cond)                                                          \
          break;                                                           \
        if (current->sigpending) {                                         \
          __r = -EINTR;                                                    \
          break;                                                           \
        }                                                                  \
        schedule();                                                        \
      }                                                                    \
      current->state = TASK_RUNNING;                                       \
      current->wchan = WCHAN_NONE;                                         \
      remove_wait_queue((q), &__w);                                        \
    }                                                                      \
    __r;                                                                   \
  })

// ch: the channel the task is counted in while asleep (waitstat.h).
#define wait_event_interruptible(q, cond, ch) __wait_event(q, cond, 0, ch)
// accept(): one waiter per connection is woken, not the herd (2.4.0 on).
#define wait_event_interruptible_exclusive(q, cond, ch) __wait_event(q, cond, 1, ch)
