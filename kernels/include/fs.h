// Files: the root-file-system image (disk-images/README.md has the format),
// its page cache, open files and descriptor tables.
#pragma once
#include "spinlock.h"
#include "types.h"
#include "wait.h"

#define RFS_MAGIC      "CSRFS\0\0\1"   // 8 bytes
#define RFS_NAME_MAX   96
#define RFS_ENTRY_SIZE 128
#define NR_OPEN        1024  // a Chat server holds 600+ sockets in one table
#define FILES_ORDER    2     // pages of a files_struct (order-2 block, 16 KiB)

// One file of the image: a read-only inode.  pages[] is its page cache
// (2.4's address_space in miniature): page i of the file once read.
struct inode {
  const char *path;      // absolute, e.g. "/bin/forktest"
  uint32_t ino, mode;
  uint64_t size, mtime;
  uint64_t data;         // byte offset in the image
  void **pages;          // page cache, allocated on first use
  spinlock_t lock;
  // its one file lock (locks.c): kind, holder, who waits for it
  int lock_kind, lock_waiters;
  void *lock_owner;
  struct wait_queue_head lock_wait;
};

enum file_kind { FILE_CONSOLE = 1, FILE_INODE = 2, FILE_PIPE = 3, FILE_SOCKET = 4 };

#define O_RDONLY   0
#define O_WRONLY   1
#define O_RDWR     2
#define O_NONBLOCK 04000
#define O_CLOEXEC  02000000

struct file;
struct poll_table;

// 2.4's file_operations, for the kinds that are not plain console or
// image files (pipes, sockets).  release runs once, on the last fput.
struct file_operations {
  long (*read)(struct file *f, uint64_t buf, uint64_t n);
  long (*write)(struct file *f, uint64_t buf, uint64_t n);
  unsigned (*poll)(struct file *f, struct poll_table *pt);
  void (*release)(struct file *f);
};

struct file {
  int kind;              // 0: free slot (set back only after release)
  int count;             // descriptors (and processes) sharing it (atomic)
  struct inode *inode;
  uint64_t pos;
  spinlock_t lock;       // pos
  uint32_t flags;        // O_ACCMODE bits and O_NONBLOCK
  const struct file_operations *f_op;  // pipes and sockets
  void *private_data;    // struct pipe_inode_info or struct socket
};

struct files_struct {
  int count;             // tasks sharing this table (CLONE_FILES)
  spinlock_t lock;
  struct file *fd[NR_OPEN];
};

// rootfs.c
void rootfs_init(uint64_t base, uint64_t size);
bool rootfs_present(void);
struct inode *rootfs_lookup(const char *path);
// pagecache.c
void *find_get_page(struct inode *ino, uint64_t index);
long inode_read(struct inode *ino, uint64_t pos, void *dst, uint64_t n);
// file.c
struct files_struct *files_alloc_console(void);
struct files_struct *dup_files(struct files_struct *old);
void put_files(struct files_struct *f);
struct file *get_empty_filp(int kind, struct inode *ino);
struct file *fget(int fd);
void get_file(struct file *f);
void fput(struct file *f);
int install_fd(struct file *file);
long sys_close(long fd);
int install_fd_at(struct file *file, int fd, int min);
// logfile.c: /var/log files, written in memory
bool is_log_path(const char *path);
long log_open(const char *path);
// locks.c: fcntl and flock locks (whole-file, exclusive)
long fcntl_lock(struct file *f, long cmd, uint64_t uarg);
long sys_flock(long fd, long op);
void locks_remove_posix(struct file *f);
void locks_remove_flock(struct file *f);
void locks_report(void);
// poll.c: the console and image files are always ready
unsigned file_poll(struct file *f, struct poll_table *pt);
