// poll and select (2.4's do_poll / do_select): ask each file for its
// readiness; if none is ready, sleep on every file's wait queue at once
// until a wake-up, the timeout or a kill, then ask again.
//
// The first pass queues one wait entry per file (poll_wait); later passes
// only re-check.  The task marks itself asleep before each pass, so a
// wake-up between the check and schedule() is not lost (wait_event.h).
#include "errno.h"
#include "fs.h"
#include "kernel.h"
#include "mm.h"
#include "poll.h"
#include "proc.h"
#include "sched.h"
#include "waitstat.h"
#include "wait_event.h"

#define POLL_ORDER 1            // a page and a half of pollfds: NR_OPEN of them

struct kpollfd { int32_t fd; int16_t events, revents; };
_Static_assert(sizeof(struct kpollfd) * NR_OPEN <= (PAGE_SIZE << POLL_ORDER), "pollfds");

void
poll_wait(struct wait_queue_head *q, struct poll_table *pt)
{
  if (!pt)
    return;
  if (pt->nr >= pt->max) {
    pt->overflow = true;
    return;
  }
  struct poll_table_entry *e = &pt->entry[pt->nr++];
  e->q = q;
  e->w = (struct wait_queue_entry){.task = current};
  add_wait_queue(q, &e->w);
}

// Console and image files never block.
unsigned
file_poll(struct file *f, struct poll_table *pt)
{
  if (f->f_op && f->f_op->poll)
    return f->f_op->poll(f, pt);
  return POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
}

// ticks < 0: no timeout.  Returns the number of ready entries.
static long
do_poll(struct kpollfd *fds, int n, long ticks)
{
  struct poll_table pt = {0, (PAGE_SIZE << POLL_TABLE_ORDER) / sizeof(struct poll_table_entry),
                          alloc_pages(POLL_TABLE_ORDER), false};
  struct poll_table *wait = &pt;
  long count = 0;
  uint64_t end = jiffies + (ticks > 0 ? ticks : 0);
  if (!pt.entry)
    return -ENOMEM;
  if (ticks > 0)
    add_timeout(current, ticks);
  current->wchan = WCHAN_POLL;
  for (;;) {
    set_current_state_mb(TASK_INTERRUPTIBLE);
    count = 0;
    for (int i = 0; i < n; i++) {
      fds[i].revents = 0;
      if (fds[i].fd < 0)
        continue;
      struct file *f = fget(fds[i].fd);
      unsigned mask = POLLNVAL;
      if (f) {
        mask = file_poll(f, wait) & (fds[i].events | POLLERR | POLLHUP);
        fput(f);
      }
      if ((fds[i].revents = mask))
        count++;
    }
    wait = NULL;                     // queued once; now only re-check
    if (count || ticks == 0 || (ticks > 0 && jiffies >= end))
      break;
    if (pt.overflow) {               // it could not wait on every file
      count = -ENOMEM;
      break;
    }
    if (current->sigpending) {
      count = -EINTR;
      break;
    }
    schedule();
  }
  current->state = TASK_RUNNING;
  current->wchan = WCHAN_NONE;
  if (ticks > 0)
    del_timeout(current);
  for (int i = 0; i < pt.nr; i++)
    remove_wait_queue(pt.entry[i].q, &pt.entry[i].w);
  free_pages(pt.entry, POLL_TABLE_ORDER);
  return count;
}

static long
ms_to_ticks(long ms)
{
  return ms < 0 ? -1 : (long)timespec_to_ticks(ms / 1000, (ms % 1000) * 1000000);
}

long
sys_poll(uint64_t ufds, long nfds, long timeout_ms)
{
  if (nfds < 0 || nfds > NR_OPEN)
    return -EINVAL;
  struct kpollfd *fds = alloc_pages(POLL_ORDER);
  if (!fds)
    return -ENOMEM;
  long r = copy_from_user(fds, ufds, nfds * sizeof *fds);
  if (r == 0) {
    r = do_poll(fds, nfds, ms_to_ticks((int)timeout_ms));
    if (r >= 0 && copy_to_user(ufds, fds, nfds * sizeof *fds) < 0)
      r = -EFAULT;
  }
  free_pages(fds, POLL_ORDER);
  return r;
}

// select: the three bit maps become poll entries and back.
long
sys_select(long n, uint64_t uin, uint64_t uout, uint64_t uex, uint64_t utv)
{
  uint64_t in[NR_OPEN / 64] = {0}, out[NR_OPEN / 64] = {0};
  long ticks = -1;
  if (n < 0 || n > NR_OPEN)
    return -EINVAL;
  size_t bytes = (n + 63) / 64 * 8;
  if ((uin && copy_from_user(in, uin, bytes) < 0) ||
      (uout && copy_from_user(out, uout, bytes) < 0))
    return -EFAULT;
  if (utv) {
    int64_t tv[2];
    if (copy_from_user(tv, utv, sizeof tv) < 0)
      return -EFAULT;
    if (tv[0] < 0 || tv[1] < 0)
      return -EINVAL;
    ticks = timespec_to_ticks(tv[0], tv[1] * 1000);
  }
  struct kpollfd *fds = alloc_pages(POLL_ORDER);
  if (!fds)
    return -ENOMEM;
  int m = 0;
  for (int fd = 0; fd < n; fd++) {
    int16_t ev = ((in[fd / 64] >> (fd % 64)) & 1 ? POLLIN : 0) |
                 ((out[fd / 64] >> (fd % 64)) & 1 ? POLLOUT : 0);
    if (ev)
      fds[m++] = (struct kpollfd){fd, ev, 0};
  }
  long r = do_poll(fds, m, ticks);
  if (r >= 0) {
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    r = 0;
    for (int i = 0; i < m; i++) {
      int fd = fds[i].fd;
      if (fds[i].revents & POLLNVAL) {
        r = -EBADF;
        break;
      }
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR) & (fds[i].events | POLLHUP | POLLERR) &&
          (fds[i].events & POLLIN)) {
        in[fd / 64] |= 1UL << (fd % 64);
        r++;
      }
      if (fds[i].revents & (POLLOUT | POLLERR) && (fds[i].events & POLLOUT)) {
        out[fd / 64] |= 1UL << (fd % 64);
        r++;
      }
    }
    uint64_t zero[NR_OPEN / 64] = {0};
    if (r >= 0 && ((uin && copy_to_user(uin, in, bytes) < 0) ||
                   (uout && copy_to_user(uout, out, bytes) < 0) ||
                   (uex && copy_to_user(uex, zero, bytes) < 0)))
      r = -EFAULT;
  }
  free_pages(fds, POLL_ORDER);
  return r;
}
