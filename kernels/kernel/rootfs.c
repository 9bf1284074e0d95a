// The root file system: a read-only image in RAM (QEMU's -initrd, a
// multiboot module).  Format (disk-images/README.md): a 16-byte header
// "CSRFS\0\0\1", u32 count, u32 0; then count 128-byte entries sorted by
// path: path[96] NUL-padded, u32 mode, u32 0, u64 size, u64 data offset
// (4 KiB aligned), u64 mtime; then the data.  The image stands for a
// block device: only the page cache (pagecache.c) reads file data from it.
#include "fs.h"
#include "kernel.h"

#define NR_INODES 256

static uint64_t image_base, image_size;
static struct inode inodes[NR_INODES];
static int ninodes;

static bool
entry_ok(const uint8_t *e)
{
  const char *path = (const char *)e;
  uint64_t size = *(uint64_t *)(e + 104), data = *(uint64_t *)(e + 112);
  return path[0] == '/' && path[RFS_NAME_MAX - 1] == 0 &&
         data <= image_size && size <= image_size - data;
}

void
rootfs_init(uint64_t base, uint64_t size)
{
  const uint8_t *h = PTR(base);
  if (size < 16 || memcmp(h, RFS_MAGIC, 8))
    panic("rootfs: the image at %lx is not a CSRFS image", base);
  uint32_t n = *(uint32_t *)(h + 8);
  if (n > NR_INODES || 16 + (uint64_t)n * RFS_ENTRY_SIZE > size)
    panic("rootfs: %u entries do not fit (max %d, image %lu bytes)", n, NR_INODES, size);
  image_base = base;
  image_size = size;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *e = h + 16 + i * RFS_ENTRY_SIZE;
    if (!entry_ok(e))
      panic("rootfs: entry %u is damaged", i);
    struct inode *ino = &inodes[ninodes++];
    ino->path = (const char *)e;
    ino->ino = i + 2;
    ino->mode = *(uint32_t *)(e + 96);
    ino->size = *(uint64_t *)(e + 104);
    ino->data = *(uint64_t *)(e + 112);
    ino->mtime = *(uint64_t *)(e + 120);
    ino->lock = (spinlock_t)SPIN_LOCK_UNLOCKED;
    init_waitqueue_head(&ino->lock_wait);
  }
  printk("rootfs: %d files in a %lu KiB image at %lx\n", ninodes, size >> 10, base);
}

bool
rootfs_present(void)
{
  return image_base != 0;
}

struct inode *
rootfs_lookup(const char *path)
{
  for (int i = 0; i < ninodes; i++)
    if (!strncmp(inodes[i].path, path, RFS_NAME_MAX))
      return &inodes[i];
  return NULL;
}

// The "block device": copy bytes of the image (pagecache.c only).
void
rootfs_read_block(uint64_t off, void *dst, uint64_t n)
{
  memcpy(dst, PTR(image_base + off), n);
}
