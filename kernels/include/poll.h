// poll and select: a task waits on the wait queues of several files at
// once (2.4's poll_table: one wait-queue entry per file polled).
#pragma once
#include "types.h"
#include "wait.h"

#define POLLIN   0x001
#define POLLPRI  0x002
#define POLLOUT  0x004
#define POLLERR  0x008
#define POLLHUP  0x010
#define POLLNVAL 0x020
#define POLLRDNORM 0x040
#define POLLWRNORM 0x100

struct poll_table_entry {
  struct wait_queue_head *q;
  struct wait_queue_entry w;
};

// Two pages of entries (128): the kernel stack (4 KiB at the worst color)
// has no room for them.  2.4 adds a page at a time; here a poll that would
// sleep on more files fails with -ENOMEM (2.4's error when it cannot get
// another page) rather than sleep on some of them only.
#define POLL_TABLE_ORDER 1
struct poll_table {
  int nr, max;
  struct poll_table_entry *entry;
  bool overflow;           // a file found the table full
};

// A file's poll method calls this for each wait queue its readiness
// depends on; pt is NULL on the re-checks after the first pass.
void poll_wait(struct wait_queue_head *q, struct poll_table *pt);
