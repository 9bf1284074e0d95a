// Open files and descriptor tables, and the file system calls: open,
// read, write, writev, close, lseek, fstat/stat, ioctl.
//
// Pipes and sockets bring their own file_operations (pipe.c, socket.c);
// this file dispatches to them.  The two built-in kinds: the console (fds 0-2 of init, inherited; reads give
// end of file, writes go to the serial port) and files of the image, read
// through the page cache.  User buffers are copied through a small
// kernel buffer, so a bad pointer is -EFAULT, never a kernel fault.
#include "errno.h"
#include "fs.h"
#include "kernel.h"
#include "param.h"
#include "mm.h"
#include "sched.h"

#define NR_FILES 4096      // a web run holds 2 sockets per connection
#define O_ACCMODE 3
#define O_DIRECTORY 0200000
#define SEEK_SET 0
#define SEEK_CUR 1
#define SEEK_END 2
#define AT_FDCWD (-100)
#define AT_EMPTY_PATH 0x1000
#define S_IFCHR 0020000
#define CHUNK 512


static struct file file_pool[NR_FILES];
static spinlock_t file_pool_lock = SPIN_LOCK_UNLOCKED;

static int file_rotor;            // where the next search starts

// A free slot has kind 0: fput clears it only after the release hook, so
// a file is never reused while its pipe or socket is still being freed.
struct file *
get_empty_filp(int kind, struct inode *ino)
{
  struct file *f = NULL;
  uint64_t fl = spin_lock_irqsave(&file_pool_lock);
  for (int n = 0; n < NR_FILES && !f; n++) {
    int i = (file_rotor + n) % NR_FILES;
    if (!file_pool[i].kind) {
      f = &file_pool[i];
      file_rotor = i + 1;
    }
  }
  if (f)
    *f = (struct file){.kind = kind, .count = 1, .inode = ino,
                       .lock = SPIN_LOCK_UNLOCKED};
  spin_unlock_irqrestore(&file_pool_lock, fl);
  return f;
}

void get_file(struct file *f) { __atomic_add_fetch(&f->count, 1, __ATOMIC_SEQ_CST); }

void
fput(struct file *f)
{
  if (__atomic_sub_fetch(&f->count, 1, __ATOMIC_SEQ_CST))
    return;
  locks_remove_flock(f);
  if (f->f_op && f->f_op->release)
    f->f_op->release(f);
  __atomic_store_n(&f->kind, 0, __ATOMIC_SEQ_CST);
}

static struct files_struct *
files_alloc(void)
{
  _Static_assert(sizeof(struct files_struct) <= (PAGE_SIZE << FILES_ORDER), "files");
  struct files_struct *fs = alloc_pages(FILES_ORDER);
  if (fs) {
    memset(fs, 0, sizeof *fs);
    fs->count = 1;
    fs->lock = (spinlock_t)SPIN_LOCK_UNLOCKED;
  }
  return fs;
}

// init's table: 0, 1 and 2 on one console file.
struct files_struct *
files_alloc_console(void)
{
  struct files_struct *fs = files_alloc();
  struct file *con = get_empty_filp(FILE_CONSOLE, NULL);
  if (!fs || !con)
    panic("no memory for init's files");
  for (int i = 0; i < 3; i++) {
    fs->fd[i] = con;
    if (i) get_file(con);
  }
  return fs;
}

struct files_struct *
dup_files(struct files_struct *old)
{
  struct files_struct *fs = files_alloc();
  if (!fs)
    return NULL;
  uint64_t f = spin_lock_irqsave(&old->lock);
  for (int i = 0; i < NR_OPEN; i++)
    if ((fs->fd[i] = old->fd[i]))
      get_file(fs->fd[i]);
  spin_unlock_irqrestore(&old->lock, f);
  return fs;
}

void
put_files(struct files_struct *fs)
{
  if (__atomic_sub_fetch(&fs->count, 1, __ATOMIC_SEQ_CST))
    return;
  for (int i = 0; i < NR_OPEN; i++)
    if (fs->fd[i]) {
      locks_remove_posix(fs->fd[i]);   // the last user of the table goes
      fput(fs->fd[i]);
    }
  free_pages(fs, FILES_ORDER);
}

// fget: the file behind fd, with a reference the caller drops.
struct file *
fget(int fd)
{
  struct files_struct *fs = current->files;
  if (fd < 0 || fd >= NR_OPEN || !fs)
    return NULL;
  uint64_t f = spin_lock_irqsave(&fs->lock);
  struct file *file = fs->fd[fd];
  if (file)
    get_file(file);
  spin_unlock_irqrestore(&fs->lock, f);
  return file;
}

// Install file (whose reference the table takes over) in the lowest free
// slot >= min, or exactly at fd (fd >= 0: dup2; the file there is closed).
int
install_fd_at(struct file *file, int fd, int min)
{
  struct files_struct *fs = current->files;
  struct file *old = NULL;
  uint64_t f = spin_lock_irqsave(&fs->lock);
  int r = -EMFILE;
  if (fd >= 0) {
    old = fs->fd[fd];
    fs->fd[fd] = file;
    r = fd;
  } else {
    for (int i = min; i < NR_OPEN; i++)
      if (!fs->fd[i]) {
        fs->fd[i] = file;
        r = i;
        break;
      }
  }
  spin_unlock_irqrestore(&fs->lock, f);
  if (old)
    fput(old);
  return r;
}

int install_fd(struct file *file) { return install_fd_at(file, -1, 0); }

static long
open_path(uint64_t upath, int flags)
{
  char path[RFS_NAME_MAX];
  long r = strncpy_from_user(path, upath, sizeof path);
  if (r < 0)
    return r;
  if ((flags & O_ACCMODE) != 0 && is_log_path(path))
    return log_open(path);             // logs are written in memory
  if ((flags & O_ACCMODE) != 0)
    return -EROFS;                     // the image is read-only
  struct inode *ino = rootfs_lookup(path);
  if (!ino)
    return -ENOENT;
  if (flags & O_DIRECTORY)
    return -ENOTDIR;
  struct file *f = get_empty_filp(FILE_INODE, ino);
  if (!f)
    return -ENOMEM;
  int fd = install_fd(f);
  if (fd < 0)
    fput(f);
  return fd;
}

long sys_open(uint64_t path, long flags, long mode) { return open_path(path, flags); }

long
sys_openat(long dirfd, uint64_t path, long flags, long mode)
{
  if ((int)dirfd != AT_FDCWD)
    return -EINVAL;
  return open_path(path, flags);
}

long
sys_close(long fd)
{
  struct files_struct *fs = current->files;
  if (fd < 0 || fd >= NR_OPEN)
    return -EBADF;
  uint64_t f = spin_lock_irqsave(&fs->lock);
  struct file *file = fs->fd[fd];
  fs->fd[fd] = NULL;
  spin_unlock_irqrestore(&fs->lock, f);
  if (!file)
    return -EBADF;
  locks_remove_posix(file);            // any close drops the process's lock
  fput(file);
  return 0;
}

static long
file_read(struct file *f, uint64_t buf, uint64_t n)
{
  char tmp[CHUNK];
  long done = 0;
  if (f->f_op)
    return f->f_op->read ? f->f_op->read(f, buf, n) : -EINVAL;
  if (f->kind == FILE_CONSOLE)
    return 0;                          // no console input: end of file
  uint64_t fl = spin_lock_irqsave(&f->lock);
  uint64_t pos = f->pos;
  spin_unlock_irqrestore(&f->lock, fl);
  while ((uint64_t)done < n) {
    uint64_t want = n - done < CHUNK ? n - done : CHUNK;
    long got = inode_read(f->inode, pos + done, tmp, want);
    if (got < 0)
      return done ? done : -ENOMEM;
    if (got == 0)
      break;
    if (copy_to_user(buf + done, tmp, got) < 0)
      return done ? done : -EFAULT;
    done += got;
  }
  fl = spin_lock_irqsave(&f->lock);
  f->pos = pos + done;
  spin_unlock_irqrestore(&f->lock, fl);
  return done;
}

static long
file_write(struct file *f, uint64_t buf, uint64_t n)
{
  char tmp[CHUNK];
  if (f->f_op)
    return f->f_op->write ? f->f_op->write(f, buf, n) : -EINVAL;
  if (f->kind != FILE_CONSOLE)
    return -EBADF;                     // image files are opened read-only
  for (uint64_t done = 0; done < n;) {
    uint64_t chunk = n - done < CHUNK ? n - done : CHUNK;
    if (copy_from_user(tmp, buf + done, chunk) < 0)
      return done ? (long)done : -EFAULT;
    console_write(tmp, chunk);
    done += chunk;
  }
  return n;
}

long
sys_read(long fd, uint64_t buf, uint64_t n)
{
  struct file *f = fget(fd);
  if (!f)
    return -EBADF;
  long r = file_read(f, buf, n);
  fput(f);
  return r;
}

long
sys_write(long fd, uint64_t buf, uint64_t n)
{
  struct file *f = fget(fd);
  if (!f)
    return -EBADF;
  long r = file_write(f, buf, n);
  fput(f);
  return r;
}

// readv/writev: musl's stdio writes through writev.
static long
do_iov(long fd, uint64_t iov, long cnt, bool write)
{
  struct file *f = fget(fd);
  if (!f)
    return -EBADF;
  long total = 0;
  if (cnt < 0 || cnt > 1024)
    total = -EINVAL;
  for (long i = 0; total >= 0 && i < cnt; i++) {
    uint64_t v[2];
    if (copy_from_user(v, iov + 16 * i, sizeof v) < 0) {
      total = total ? total : -EFAULT;
      break;
    }
    long r = write ? file_write(f, v[0], v[1]) : file_read(f, v[0], v[1]);
    if (r < 0) {
      total = total ? total : r;
      break;
    }
    total += r;
    if ((uint64_t)r < v[1])
      break;
  }
  fput(f);
  return total;
}

long sys_readv(long fd, uint64_t iov, long cnt) { return do_iov(fd, iov, cnt, false); }
long sys_writev(long fd, uint64_t iov, long cnt) { return do_iov(fd, iov, cnt, true); }

long
sys_lseek(long fd, long off, long whence)
{
  struct file *f = fget(fd);
  if (!f)
    return -EBADF;
  long r;
  if (f->kind != FILE_INODE) {
    r = -ESPIPE;
  } else {
    uint64_t fl = spin_lock_irqsave(&f->lock);
    long base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (long)f->pos :
                whence == SEEK_END ? (long)f->inode->size : -1;
    r = (base < 0 || base + off < 0) ? -EINVAL : base + off;
    if (r >= 0)
      f->pos = r;
    spin_unlock_irqrestore(&f->lock, fl);
  }
  fput(f);
  return r;
}

// struct stat of x86_64 Linux (144 bytes).
struct kstat {
  uint64_t dev, ino, nlink;
  uint32_t mode, uid, gid, pad0;
  uint64_t rdev;
  int64_t size, blksize, blocks;
  uint64_t atime, atime_ns, mtime, mtime_ns, ctime, ctime_ns;
  int64_t reserved[3];
};
_Static_assert(sizeof(struct kstat) == 144, "struct stat");

static long
fill_stat(struct file *f, struct inode *ino, uint64_t ust)
{
  struct kstat st = {.dev = 1, .nlink = 1, .blksize = PAGE_SIZE};
  if (ino) {
    st.ino = ino->ino;
    st.mode = ino->mode;
    st.size = ino->size;
    st.blocks = (ino->size + 511) / 512;
    st.atime = st.mtime = st.ctime = ino->mtime;
  } else if (f && f->kind == FILE_PIPE) {
    st.mode = 0010600;                 // S_IFIFO
  } else if (f && f->kind == FILE_SOCKET) {
    st.mode = 0140777;                 // S_IFSOCK
  } else {
    st.mode = S_IFCHR | 0620;          // the console
    st.rdev = (4 << 8) | 64;           // ttyS0
  }
  return copy_to_user(ust, &st, sizeof st);
}

long
sys_fstat(long fd, uint64_t ust)
{
  struct file *f = fget(fd);
  if (!f)
    return -EBADF;
  long r = fill_stat(f, f->inode, ust);
  fput(f);
  return r;
}

long
sys_stat(uint64_t upath, uint64_t ust)
{
  char path[RFS_NAME_MAX];
  long r = strncpy_from_user(path, upath, sizeof path);
  if (r < 0)
    return r;
  struct inode *ino = rootfs_lookup(path);
  return ino ? fill_stat(NULL, ino, ust) : -ENOENT;
}

long
sys_newfstatat(long dirfd, uint64_t upath, uint64_t ust, long flags)
{
  char c;
  if ((flags & AT_EMPTY_PATH) && copy_from_user(&c, upath, 1) == 0 && !c)
    return sys_fstat(dirfd, ust);
  if ((int)dirfd != AT_FDCWD)
    return -EINVAL;
  return sys_stat(upath, ust);
}

// The console is a terminal (musl line-buffers stdout then); files are not.
long
sys_ioctl(long fd, long cmd, uint64_t arg)
{
  struct file *f = fget(fd);
  if (!f)
    return -EBADF;
  long r = -ENOTTY;
  if (f->kind == FILE_CONSOLE && cmd == 0x5413) {   // TIOCGWINSZ
    uint16_t ws[4] = {24, 80, 0, 0};
    r = copy_to_user(arg, ws, sizeof ws);
  }
  fput(f);
  return r;
}
