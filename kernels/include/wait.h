// Wait queues: sleep until woken, as in 2.4's sleep_on/wake_up.
#pragma once
#include "list.h"
#include "spinlock.h"

struct task_struct;

struct wait_queue_entry {
  struct task_struct *task;
  int exclusive;          // wake_up wakes all non-exclusive and one exclusive
  struct list64 link;
};

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
