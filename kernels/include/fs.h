// Files: the root-file-system image (disk-images/README.md has the format),
// its page cache, open files and descriptor tables.
#pragma once
#include "spinlock.h"
#include "types.h"

#define RFS_MAGIC      "CSRFS\0\0\1"   // 8 bytes
#define RFS_NAME_MAX   96
#define RFS_ENTRY_SIZE 128
#define NR_OPEN        64

// One file of the image: a read-only inode.  pages[] is its page cache
// (2.4's address_space in miniature): page i of the file once read.
struct inode {
  const char *path;      // absolute, e.g. "/bin/forktest"
  uint32_t ino, mode;
  uint64_t size, mtime;
  uint64_t data;         // byte offset in the image
  void **pages;          // page cache, allocated on first use
  spinlock_t lock;
};

enum file_kind { FILE_CONSOLE = 1, FILE_INODE = 2 };

struct file {
  int kind;
  int count;             // descriptors (and processes) sharing it (atomic)
  struct inode *inode;
  uint64_t pos;
  spinlock_t lock;       // pos
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
