// Descriptor duplication and flags: dup, dup2, dup3, fcntl.
//
// There is no close-on-exec: exec keeps every descriptor (kernels/README,
// "Not modelled"), so FD_CLOEXEC and O_CLOEXEC are accepted and ignored.
#include "errno.h"
#include "fs.h"
#include "kernel.h"
#include "sched.h"

#define F_DUPFD 0
#define F_GETFD 1
#define F_SETFD 2
#define F_GETFL 3
#define F_SETFL 4
#define F_DUPFD_CLOEXEC 1030

long
sys_dup(long fd)
{
  struct file *f = fget(fd);
  if (!f)
    return -EBADF;
  int r = install_fd(f);             // the table takes fget's reference
  if (r < 0)
    fput(f);
  return r;
}

long
sys_dup3(long oldfd, long newfd, long flags)
{
  if (oldfd == newfd || (flags & ~O_CLOEXEC))
    return -EINVAL;
  if (newfd < 0 || newfd >= NR_OPEN)
    return -EBADF;
  struct file *f = fget(oldfd);
  if (!f)
    return -EBADF;
  return install_fd_at(f, newfd, 0);  // closes what newfd held
}

long
sys_dup2(long oldfd, long newfd)
{
  if (oldfd == newfd) {
    struct file *f = fget(oldfd);
    if (!f)
      return -EBADF;
    fput(f);
    return newfd;
  }
  return sys_dup3(oldfd, newfd, 0);
}

long
sys_fcntl(long fd, long cmd, long arg)
{
  struct file *f = fget(fd);
  long r = 0;
  if (!f)
    return -EBADF;
  switch (cmd) {
  case F_DUPFD:
  case F_DUPFD_CLOEXEC:
    if (arg < 0 || arg >= NR_OPEN) {
      r = -EINVAL;
      break;
    }
    r = install_fd_at(f, -1, arg);
    if (r >= 0)
      return r;                      // the table keeps the reference
    break;
  case F_GETFD:
  case F_SETFD:
    break;
  case F_GETFL:
    r = f->flags;
    break;
  case F_SETFL:                      // only O_NONBLOCK may change
    f->flags = (f->flags & ~O_NONBLOCK) | (arg & O_NONBLOCK);
    break;
  case 5: case 6: case 7:            // F_GETLK, F_SETLK, F_SETLKW (locks.c)
    r = fcntl_lock(f, cmd, arg);
    break;
  default:
    r = -EINVAL;
  }
  fput(f);
  return r;
}
