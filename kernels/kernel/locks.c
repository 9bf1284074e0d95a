// File locks: fcntl() record locks and flock(), as Apache 1.3 takes them
// to serialize accept() (USE_FCNTL_SERIALIZED_ACCEPT: F_SETLKW on a lock
// file the parent opened; USE_FLOCK_SERIALIZED_ACCEPT: LOCK_EX on a lock
// file each child opens itself; workload-facts.md 1.3).
//
// What those builds take is one exclusive lock on the whole file, so that
// is all there is here: one lock per inode, held by a process (fcntl: the
// thread group) or by an open file (flock).  What matters is how 2.4's
// fs/locks.c wakes: a blocked locker sleeps on the holder's block list,
// and every unlock wakes *every* blocked locker (locks_wake_up_blocks).
// They all become runnable, race for the lock, and all but one sleep
// again: the herd that puts idle httpd on the run queue.
#include "errno.h"
#include "fs.h"
#include "kernel.h"
#include "mm.h"
#include "sched.h"
#include "wait_event.h"

#define F_GETLK  5
#define F_SETLK  6
#define F_SETLKW 7
#define F_RDLCK  0
#define F_WRLCK  1
#define F_UNLCK  2
#define LOCK_SH  1
#define LOCK_EX  2
#define LOCK_NB  4
#define LOCK_UN  8

enum { LOCK_FREE, LOCK_POSIX, LOCK_FLOCK };

// struct flock as x86_64 user space lays it out.
struct user_flock {
  int16_t l_type, l_whence;
  int64_t l_start, l_len;
  int32_t l_pid;
};

// How the blocked were woken (locks_report): lockers that had to wait,
// releases, and the waiters each release made runnable (a wake-all
// release wakes every one; all but one sleep again).
static uint64_t nr_blocked, nr_releases, nr_woken;
static bool used;

// The owner of a lock of kind: fcntl locks belong to the process, flock
// locks to the open file.
static void *
owner_of(int kind, struct file *f)
{
  return kind == LOCK_POSIX ? (void *)current->group_leader : (void *)f;
}

static bool
lock_try(struct inode *ino, int kind, void *owner)
{
  uint64_t fl = spin_lock_irqsave(&ino->lock);
  bool got = ino->lock_kind == LOCK_FREE ||
             (ino->lock_kind == kind && ino->lock_owner == owner);
  if (got) {
    ino->lock_kind = kind;
    ino->lock_owner = owner;
  }
  spin_unlock_irqrestore(&ino->lock, fl);
  return got;
}

// Take the lock, sleeping until it is free when wait is set.  Every wake-up
// retries; a locker that loses the race sleeps again.
static long
lock_take(struct inode *ino, int kind, void *owner, bool wait)
{
  used = true;
  if (lock_try(ino, kind, owner))
    return 0;
  if (!wait)
    return -EAGAIN;
  __atomic_add_fetch(&nr_blocked, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&ino->lock_waiters, 1, __ATOMIC_SEQ_CST);
  // Non-exclusive: the release below wakes every one of us.
  long r = wait_event_interruptible(&ino->lock_wait, lock_try(ino, kind, owner),
                                    WCHAN_LOCK);
  __atomic_sub_fetch(&ino->lock_waiters, 1, __ATOMIC_SEQ_CST);
  return r;
}

// Release the lock if owner holds it; wake every blocked locker.
static void
lock_release(struct inode *ino, int kind, void *owner)
{
  uint64_t fl = spin_lock_irqsave(&ino->lock);
  bool held = ino->lock_kind == kind && ino->lock_owner == owner;
  if (held) {
    ino->lock_kind = LOCK_FREE;
    ino->lock_owner = NULL;
  }
  spin_unlock_irqrestore(&ino->lock, fl);
  if (!held)
    return;
  __atomic_add_fetch(&nr_releases, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&nr_woken, READ_ONCE(ino->lock_waiters), __ATOMIC_RELAXED);
  wake_up(&ino->lock_wait, 0);
}

// fcntl(F_GETLK/F_SETLK/F_SETLKW): whole-file write locks and unlocks.
long
fcntl_lock(struct file *f, long cmd, uint64_t uarg)
{
  struct user_flock fl;
  if (f->kind != FILE_INODE)
    return -EBADF;                     // 2.4 locks only files (not pipes here)
  if (copy_from_user(&fl, uarg, sizeof fl))
    return -EFAULT;
  if (fl.l_whence != 0 || fl.l_start != 0 || fl.l_len != 0)
    return -EINVAL;                    // only the whole file, as Apache locks it
  void *me = owner_of(LOCK_POSIX, f);
  if (cmd == F_GETLK) {
    struct inode *ino = f->inode;
    bool other = ino->lock_kind != LOCK_FREE &&
                 !(ino->lock_kind == LOCK_POSIX && ino->lock_owner == me);
    fl.l_type = other ? F_WRLCK : F_UNLCK;
    fl.l_pid = other && ino->lock_kind == LOCK_POSIX
                   ? ((struct task_struct *)ino->lock_owner)->tgid : 0;
    return copy_to_user(uarg, &fl, sizeof fl) ? -EFAULT : 0;
  }
  if (fl.l_type == F_UNLCK) {
    lock_release(f->inode, LOCK_POSIX, me);
    return 0;
  }
  if (fl.l_type != F_WRLCK)
    return -EINVAL;                    // read locks: not what Apache takes
  return lock_take(f->inode, LOCK_POSIX, me, cmd == F_SETLKW);
}

long
sys_flock(long fd, long op)
{
  struct file *f = fget(fd);
  long r;
  if (!f)
    return -EBADF;
  if (f->kind != FILE_INODE)
    r = -EINVAL;
  else if ((op & ~LOCK_NB) == LOCK_UN)
    r = (lock_release(f->inode, LOCK_FLOCK, f), 0);
  else if ((op & ~LOCK_NB) == LOCK_EX)
    r = lock_take(f->inode, LOCK_FLOCK, f, !(op & LOCK_NB));
  else
    r = -EINVAL;                       // shared locks: not what Apache takes
  fput(f);
  return r;
}

// close(): a process's fcntl lock on the file goes (2.4's
// locks_remove_posix, called for every close of any descriptor of it).
void
locks_remove_posix(struct file *f)
{
  if (f->kind == FILE_INODE && f->inode)
    lock_release(f->inode, LOCK_POSIX, owner_of(LOCK_POSIX, f));
}

// The last reference to an open file: its flock lock goes
// (locks_remove_flock).
void
locks_remove_flock(struct file *f)
{
  if (f->kind == FILE_INODE && f->inode)
    lock_release(f->inode, LOCK_FLOCK, f);
}

void
locks_report(void)
{
  if (used)
    printk("locks: blocked %lu releases %lu woken %lu\n", nr_blocked,
           nr_releases, nr_woken);
}
