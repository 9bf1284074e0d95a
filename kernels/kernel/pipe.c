// Pipes (2.4's fs/pipe.c): one page of buffer shared by a read end and a
// write end, each a struct file.
//
// A reader sleeps while the pipe is empty and some writer is left; with no
// writer left an empty pipe reads as end of file.  A writer sleeps while
// the page is full; with no reader left it gets -EPIPE (there are no
// signals, so no SIGPIPE).  Writes of at most PIPE_BUF bytes are atomic.
// Both ends sleep on the one wait queue, and every change of the buffer or
// of the ends wakes it (readers, writers and poll alike).
#include "errno.h"
#include "fs.h"
#include "kernel.h"
#include "mm.h"
#include "poll.h"
#include "sched.h"
#include "wait_event.h"

#define PIPE_SIZE PAGE_SIZE
#define PIPE_BUF  PAGE_SIZE

struct pipe_inode_info {
  spinlock_t lock;
  struct wait_queue_head wait;
  char *base;                 // the page
  uint32_t start, len;        // ring: len bytes from start
  int readers, writers;       // open ends
};

static bool
pipe_readable(struct pipe_inode_info *p)
{
  return READ_ONCE(p->len) || !READ_ONCE(p->writers);
}

static long
pipe_read(struct file *f, uint64_t buf, uint64_t n)
{
  struct pipe_inode_info *p = f->private_data;
  char tmp[512];
  long done = 0;
  if (!n)
    return 0;
again:
  if (!pipe_readable(p) && (f->flags & O_NONBLOCK))
    return -EAGAIN;
  long r = wait_event_interruptible(&p->wait, pipe_readable(p), WCHAN_PIPE_READ);
  if (r)
    return r;
  // Copy out what is there now, through a small bounce buffer: a fault on
  // the user page must not happen with the pipe's spinlock held.
  while ((uint64_t)done < n) {
    uint64_t fl = spin_lock_irqsave(&p->lock);
    uint32_t chunk = p->len;
    if (chunk > n - done) chunk = n - done;
    if (chunk > sizeof tmp) chunk = sizeof tmp;
    if (chunk > PIPE_SIZE - p->start) chunk = PIPE_SIZE - p->start;
    memcpy(tmp, p->base + p->start, chunk);
    p->start = (p->start + chunk) % PIPE_SIZE;
    p->len -= chunk;
    spin_unlock_irqrestore(&p->lock, fl);
    if (!chunk)
      break;
    if (copy_to_user(buf + done, tmp, chunk) < 0) {
      done = done ? done : -EFAULT;
      break;
    }
    done += chunk;
  }
  // Woken with the others, but another reader took the bytes: this is
  // not end of file while a writer is left, so sleep again.
  if (!done && READ_ONCE(p->writers))
    goto again;
  wake_up(&p->wait, 1);              // room for writers
  return done;
}

static long
pipe_write(struct file *f, uint64_t buf, uint64_t n)
{
  struct pipe_inode_info *p = f->private_data;
  char small[512];
  uint64_t done = 0;
  // Up to PIPE_BUF bytes go in one piece: wait for that much room, and
  // bounce them through a page so they are appended under one lock hold.
  uint64_t atomic = n <= PIPE_BUF ? n : 1;
  char *tmp = small;
  uint64_t cap = sizeof small;
  if (atomic > sizeof small) {
    if (!(tmp = alloc_pages(0)))
      return -ENOMEM;
    cap = PAGE_SIZE;
  }
  long r = 0;
  while (done < n) {
    uint64_t need = done ? 1 : atomic;
    if ((f->flags & O_NONBLOCK) && READ_ONCE(p->readers) &&
        PIPE_SIZE - READ_ONCE(p->len) < need) {
      r = -EAGAIN;
      break;
    }
    r = wait_event_interruptible(&p->wait, !READ_ONCE(p->readers) ||
                                 PIPE_SIZE - READ_ONCE(p->len) >= need,
                                 WCHAN_PIPE_WRITE);
    if (r)
      break;
    if (!READ_ONCE(p->readers)) {
      r = -EPIPE;
      break;
    }
    // Copy from the user before taking the lock (a fault must not happen
    // under it), then append what fits.  The room is checked again under
    // the lock: another writer may have taken it meanwhile.
    uint64_t chunk = n - done < cap ? n - done : cap;
    if (copy_from_user(tmp, buf + done, chunk) < 0) {
      r = -EFAULT;
      break;
    }
    uint64_t fl = spin_lock_irqsave(&p->lock);
    uint64_t room = PIPE_SIZE - p->len;
    if (room < need) {
      spin_unlock_irqrestore(&p->lock, fl);
      continue;                      // lost the race: wait again
    }
    if (chunk > room)
      chunk = room;
    for (uint64_t i = 0; i < chunk; i++)
      p->base[(p->start + p->len + i) % PIPE_SIZE] = tmp[i];
    p->len += chunk;
    spin_unlock_irqrestore(&p->lock, fl);
    done += chunk;
    wake_up(&p->wait, 1);            // data for readers
  }
  if (tmp != small)
    free_pages(tmp, 0);
  return done ? (long)done : r;
}

static unsigned
pipe_poll(struct file *f, struct poll_table *pt)
{
  struct pipe_inode_info *p = f->private_data;
  poll_wait(&p->wait, pt);
  unsigned mask = 0;
  if ((f->flags & 3) == O_RDONLY) {
    if (READ_ONCE(p->len))
      mask |= POLLIN | POLLRDNORM;
    if (!READ_ONCE(p->writers))
      mask |= POLLHUP;
  } else {
    if (READ_ONCE(p->len) < PIPE_SIZE)
      mask |= POLLOUT | POLLWRNORM;
    if (!READ_ONCE(p->readers))
      mask |= POLLERR;
  }
  return mask;
}

// The last close of an end; the last end frees the pipe.
static void
pipe_release(struct file *f)
{
  struct pipe_inode_info *p = f->private_data;
  uint64_t fl = spin_lock_irqsave(&p->lock);
  if ((f->flags & 3) == O_RDONLY)
    p->readers--;
  else
    p->writers--;
  bool last = !p->readers && !p->writers;
  // EOF for readers, EPIPE for writers.  Under the lock: once it is
  // dropped the other end's last close may free the pipe on another CPU,
  // and a wake-up after that would write into a free page.
  if (!last)
    wake_up(&p->wait, 1);
  spin_unlock_irqrestore(&p->lock, fl);
  if (last) {
    free_pages(p->base, 0);
    free_pages(p, 0);
  }
}

static const struct file_operations pipe_fops = {
  .read = pipe_read, .write = pipe_write, .poll = pipe_poll,
  .release = pipe_release,
};

long
sys_pipe2(uint64_t ufds, long flags)
{
  if (flags & ~(O_NONBLOCK | O_CLOEXEC))
    return -EINVAL;
  struct pipe_inode_info *p = alloc_pages(0);
  char *base = alloc_pages(0);
  struct file *rf = get_empty_filp(FILE_PIPE, NULL);
  struct file *wf = get_empty_filp(FILE_PIPE, NULL);
  if (!p || !base || !rf || !wf) {
    if (p) free_pages(p, 0);
    if (base) free_pages(base, 0);
    if (rf) fput(rf);
    if (wf) fput(wf);
    return -ENOMEM;
  }
  *p = (struct pipe_inode_info){.lock = SPIN_LOCK_UNLOCKED, .base = base,
                                .readers = 1, .writers = 1};
  init_waitqueue_head(&p->wait);
  rf->flags = O_RDONLY | (flags & O_NONBLOCK);
  wf->flags = O_WRONLY | (flags & O_NONBLOCK);
  rf->f_op = wf->f_op = &pipe_fops;
  rf->private_data = wf->private_data = p;
  int fds[2] = {install_fd(rf), -1};
  if (fds[0] >= 0)
    fds[1] = install_fd(wf);
  if (fds[1] < 0) {
    if (fds[0] >= 0)
      sys_close(fds[0]);
    else
      fput(rf);
    fput(wf);
    return -EMFILE;
  }
  if (copy_to_user(ufds, fds, sizeof fds) < 0) {
    sys_close(fds[0]);
    sys_close(fds[1]);
    return -EFAULT;
  }
  return 0;
}

long sys_pipe(uint64_t ufds) { return sys_pipe2(ufds, 0); }
