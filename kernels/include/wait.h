// Wait queues: sleep until woken, as in 2.4's sleep_on/wake_up.
#pragma once
#include "list.h"
#include "spinlock.h"

struct task_struct;

// An entry lives on its sleeper's kernel stack, and a wake-all reads every
// waiter's entry from another CPU: with the fcntl accept lock that is most
// httpd per request.  It is aligned to its own size so that it takes one
// 32-byte line in every kernel variant.  Left to the stack, its place
// follows the depth of the compiler's frames, which the colored `current`
// changes: a colored build whose syscall_dispatch kept one more register
// put every entry on one line where vanilla's straddled two, and so did a
// bus transaction per woken waiter less for a reason that is not coloring.
struct wait_queue_entry {
  struct task_struct *task;
  int exclusive;          // wake_up wakes all non-exclusive and one exclusive
  struct list64 link;
} __attribute__((aligned(32)));
_Static_assert(sizeof(struct wait_queue_entry) == 32, "one 32-byte line");

struct wait_queue_head {
  spinlock_t lock;
  struct list64 waiters;
};

void init_waitqueue_head(struct wait_queue_head *q);
void sleep_on_exclusive(struct wait_queue_head *q);
void wake_up(struct wait_queue_head *q, int nr_exclusive);
void add_wait_queue(struct wait_queue_head *q, struct wait_queue_entry *w);
void add_wait_queue_exclusive(struct wait_queue_head *q, struct wait_queue_entry *w);
void remove_wait_queue(struct wait_queue_head *q, struct wait_queue_entry *w);
