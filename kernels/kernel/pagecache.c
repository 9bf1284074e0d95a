// The page cache: each file page is read from the image once, into a page
// of its own, and every later read, and exec, copies from that page.
#include "fs.h"
#include "kernel.h"
#include "param.h"

void rootfs_read_block(uint64_t off, void *dst, uint64_t n);

static uint64_t
nr_file_pages(struct inode *ino)
{
  return (ino->size + PAGE_SIZE - 1) / PAGE_SIZE;
}

// 2.4's find_get_page + read on a miss.  NULL past the end or out of memory.
void *
find_get_page(struct inode *ino, uint64_t index)
{
  if (index >= nr_file_pages(ino))
    return NULL;
  uint64_t f = spin_lock_irqsave(&ino->lock);
  if (!ino->pages) {
    uint64_t bytes = nr_file_pages(ino) * sizeof(void *);
    int order = 0;
    while (((uint64_t)PAGE_SIZE << order) < bytes) order++;
    ino->pages = alloc_pages(order);
    if (ino->pages)
      memset(ino->pages, 0, PAGE_SIZE << order);
  }
  void *page = NULL;
  if (ino->pages && !(page = ino->pages[index]) && (page = alloc_pages(0))) {
    uint64_t off = index * PAGE_SIZE, n = ino->size - off;
    if (n > PAGE_SIZE) n = PAGE_SIZE;
    memset(page, 0, PAGE_SIZE);
    rootfs_read_block(ino->data + off, page, n);
    ino->pages[index] = page;
  }
  spin_unlock_irqrestore(&ino->lock, f);
  return page;
}

// Copy up to n bytes at pos into dst (a kernel or current-user address);
// bytes copied, or -1 if out of memory.
long
inode_read(struct inode *ino, uint64_t pos, void *dst, uint64_t n)
{
  uint64_t done = 0;
  if (pos >= ino->size)
    return 0;
  if (n > ino->size - pos)
    n = ino->size - pos;
  while (done < n) {
    uint64_t p = pos + done, in_page = p % PAGE_SIZE, chunk = PAGE_SIZE - in_page;
    if (chunk > n - done) chunk = n - done;
    uint8_t *page = find_get_page(ino, p / PAGE_SIZE);
    if (!page)
      return done ? (long)done : -1;
    memcpy((uint8_t *)dst + done, page + in_page, chunk);
    done += chunk;
  }
  return done;
}
