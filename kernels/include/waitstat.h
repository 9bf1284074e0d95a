// Where tasks wait (kernel/waitstat.c): what each sleeping task sleeps in.
// A sleep site names its channel in current->wchan before it sleeps and
// sets WCHAN_NONE after; schedule() counts the task in that channel when
// it leaves the run queue, try_to_wake_up() uncounts it when it comes back.
#pragma once
#include "types.h"

struct task_struct;

enum wchan {
  WCHAN_NONE,           // any other sleep
  WCHAN_ACCEPT,         // accept() on a listening socket
  WCHAN_CONNECT,        // connect() waiting for the listener
  WCHAN_RECV_ACCEPTED,  // reading a socket that accept() returned (servers)
  WCHAN_RECV_CONNECTED, // reading a socket that connect() made (clients)
  WCHAN_SEND_ACCEPTED,  // writing, the peer's receive buffer full (servers)
  WCHAN_SEND_CONNECTED, // the same on a connected socket (clients)
  WCHAN_PIPE_READ,
  WCHAN_PIPE_WRITE,
  WCHAN_POLL,           // poll and select
  WCHAN_FUTEX,
  WCHAN_SEM,            // semop
  WCHAN_WAIT4,          // waiting for a child
  WCHAN_SLEEP,          // nanosleep
  WCHAN_EXITED,         // exited, not yet reaped (not a sleep: set by schedule)
  WCHAN_LOCK,           // fcntl or flock lock (locks.c)
  NR_WCHAN
};

void waitstat_sleep(struct task_struct *p, int cpu);
void waitstat_wake(struct task_struct *p, int cpu);
void waitstat_release(struct task_struct *p, int cpu);
void waitstat_tick(int cpu);
void waitstat_reset(void);
void waitstat_freeze(void);
void waitstat_report(void);
