// Log files: /var/log/NAME opened for writing, every write appended (a web
// server's access log).  The root file system is a read-only image, so
// these live in memory only.
//
// 2.4's generic_file_write copies an append into the file's last page in
// the page cache and marks it dirty; bdflush writes it to disk later.  Here
// the tail lives in a ring of LOG_RING_PAGES page-cache pages, reused as
// the log grows: a write costs what 2.4's costs on the CPU (the inode's
// lock, the copy from user into the page, the lines it dirties), and the
// bytes are not kept beyond the ring.  The disk write is not modelled.
#include "errno.h"
#include "fs.h"
#include "kernel.h"
#include "mm.h"
#include "param.h"

#define NR_LOGS 8
#define LOG_RING_PAGES 32              // 128 KiB of tail
#define LOG_DIR "/var/log/"
#define LOG_CHUNK 256                  // copied from user per step

static struct logfile {
  char path[RFS_NAME_MAX];
  struct inode ino;
  void *ring[LOG_RING_PAGES];
} logs[NR_LOGS];
static spinlock_t logs_lock = SPIN_LOCK_UNLOCKED;

bool
is_log_path(const char *path)
{
  return !strncmp(path, LOG_DIR, sizeof LOG_DIR - 1) && path[sizeof LOG_DIR - 1];
}

// The log file of this path, made on first open; NULL if the table is full.
static struct inode *
log_lookup(const char *path)
{
  struct inode *ino = NULL;
  uint64_t f = spin_lock_irqsave(&logs_lock);
  for (int i = 0; i < NR_LOGS && !ino; i++) {
    struct logfile *l = &logs[i];
    if (!l->path[0]) {
      strlcpy(l->path, path, sizeof l->path);
      l->ino = (struct inode){.path = l->path, .ino = 0x10000 + i, .mode = 0100644,
                              .lock = SPIN_LOCK_UNLOCKED};
    }
    if (!strncmp(l->path, path, sizeof l->path))
      ino = &l->ino;
  }
  spin_unlock_irqrestore(&logs_lock, f);
  return ino;
}

static struct logfile *log_of(struct inode *ino) { return (struct logfile *)((char *)ino - __builtin_offsetof(struct logfile, ino)); }

// Append n bytes at buf (user) to the log's tail.
static long
log_write(struct file *file, uint64_t buf, uint64_t n)
{
  struct inode *ino = file->inode;
  struct logfile *l = log_of(ino);
  char tmp[LOG_CHUNK];
  for (uint64_t done = 0; done < n;) {
    uint64_t chunk = n - done < LOG_CHUNK ? n - done : LOG_CHUNK;
    if (copy_from_user(tmp, buf + done, chunk) < 0)
      return done ? (long)done : -EFAULT;
    uint64_t f = spin_lock_irqsave(&ino->lock);
    for (uint64_t k = 0; k < chunk;) {
      uint64_t pos = ino->size, in_page = pos % PAGE_SIZE;
      uint64_t step = PAGE_SIZE - in_page < chunk - k ? PAGE_SIZE - in_page : chunk - k;
      void **slot = &l->ring[pos / PAGE_SIZE % LOG_RING_PAGES];
      if (!*slot && !(*slot = alloc_pages(0))) {
        spin_unlock_irqrestore(&ino->lock, f);
        return done + k ? (long)(done + k) : -ENOSPC;
      }
      memcpy((char *)*slot + in_page, tmp + k, step);
      ino->size += step;
      k += step;
    }
    spin_unlock_irqrestore(&ino->lock, f);
    done += chunk;
  }
  return n;
}

static long
log_read(struct file *file, uint64_t buf, uint64_t n)
{
  return -EBADF;                       // opened for writing only
}

static const struct file_operations log_fops = {.read = log_read, .write = log_write};

// open(path) for writing under /var/log: a file descriptor, or -errno.
long
log_open(const char *path)
{
  struct inode *ino = log_lookup(path);
  if (!ino)
    return -ENOSPC;
  struct file *f = get_empty_filp(FILE_INODE, ino);
  if (!f)
    return -ENOMEM;
  f->f_op = &log_fops;
  f->flags = O_WRONLY;
  int fd = install_fd(f);
  if (fd < 0)
    fput(f);
  return fd;
}
