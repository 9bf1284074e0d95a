// The page allocator: a binary buddy system in the Linux 2.4 style.
//
// Free blocks of 2^order pages sit on per-order lists (LIFO, like 2.4's
// list_add/list_del at the head); a block's buddy is found by flipping bit
// `order` of its page number, and two free buddies merge.  An order-k block
// is aligned to 2^k pages, which is why task_unions (order 1) are 8 KiB
// aligned -- and why, after some allocation history, they are scattered
// rather than contiguous: buddy_age() supplies that history.
#include "kernel.h"
#include "param.h"
#include "spinlock.h"

struct free_block {
  struct free_block *next, *prev;
};

struct page {
  uint8_t order;    // order of the free block this page heads
  uint8_t free;     // 1 when it heads a free block
};

static struct page mem_map[MAX_PHYS / PAGE_SIZE];
static struct free_block free_area[MAX_ORDER];
static uint64_t max_pfn, free_pages_count;
// 2.4's zone lock: processes fork, fault and exit on every CPU at once.
static spinlock_t zone_lock = SPIN_LOCK_UNLOCKED;

static void
area_add(int order, uint64_t pfn)
{
  struct free_block *b = PTR(pfn << PAGE_SHIFT), *h = &free_area[order];
  b->next = h->next;
  b->prev = h;
  h->next->prev = b;
  h->next = b;
  mem_map[pfn].order = order;
  mem_map[pfn].free = 1;
}

static void
area_del(int order, uint64_t pfn)
{
  struct free_block *b = PTR(pfn << PAGE_SHIFT);
  b->prev->next = b->next;
  b->next->prev = b->prev;
  mem_map[pfn].free = 0;
  (void)order;
}

static void __free_pages(void *addr, int order);

void
free_pages(void *addr, int order)
{
  uint64_t f = spin_lock_irqsave(&zone_lock);
  __free_pages(addr, order);
  spin_unlock_irqrestore(&zone_lock, f);
}

static void
__free_pages(void *addr, int order)
{
  uint64_t pfn = (uint64_t)addr >> PAGE_SHIFT;
  BUG_ON((uint64_t)addr & ((PAGE_SIZE << order) - 1));
  free_pages_count += 1UL << order;
  while (order < MAX_ORDER - 1) {
    uint64_t buddy = pfn ^ (1UL << order);
    if (buddy >= max_pfn || !mem_map[buddy].free || mem_map[buddy].order != order)
      break;
    area_del(order, buddy);
    pfn &= ~(1UL << order);
    order++;
  }
  area_add(order, pfn);
}

static void *__alloc_pages(int order);

void *
alloc_pages(int order)
{
  uint64_t f = spin_lock_irqsave(&zone_lock);
  void *p = __alloc_pages(order);
  spin_unlock_irqrestore(&zone_lock, f);
  return p;
}

static void *
__alloc_pages(int order)
{
  int k = order;
  while (k < MAX_ORDER && free_area[k].next == &free_area[k])
    k++;
  if (k == MAX_ORDER)
    return NULL;
  struct free_block *b = free_area[k].next;
  uint64_t pfn = (uint64_t)b >> PAGE_SHIFT;
  area_del(k, pfn);
  // Split: keep the low half, free the high halves (2.4's expand()).
  while (k > order) {
    k--;
    area_add(k, pfn + (1UL << k));
  }
  free_pages_count -= 1UL << order;
  return b;
}

uint64_t
nr_free_pages(void)
{
  return free_pages_count;
}

// Free [start, end) as large aligned blocks, like free_all_bootmem.
static void
free_range(uint64_t start, uint64_t end)
{
  uint64_t pfn = (start + PAGE_SIZE - 1) >> PAGE_SHIFT;
  uint64_t last = end >> PAGE_SHIFT;
  while (pfn < last) {
    int order = MAX_ORDER - 1;
    while (order > 0 && ((pfn & ((1UL << order) - 1)) || pfn + (1UL << order) > last))
      order--;
    free_pages(PTR(pfn << PAGE_SHIFT), order);
    pfn += 1UL << order;
  }
}

void
buddy_init(struct mem_region *r, int n)
{
  uint64_t kend = ((uint64_t)__kernel_end + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1);
  if (kend < PHYS_FREE_START)
    kend = PHYS_FREE_START;
  for (int i = 0; i < MAX_ORDER; i++)
    free_area[i].next = free_area[i].prev = &free_area[i];
  for (int i = 0; i < n; i++) {
    uint64_t end = r[i].base + r[i].len;
    if (end > MAX_PHYS) end = MAX_PHYS;
    if (end >> PAGE_SHIFT > max_pfn) max_pfn = end >> PAGE_SHIFT;
  }
  for (int i = 0; i < n; i++) {
    uint64_t start = r[i].base, end = r[i].base + r[i].len;
    if (end > MAX_PHYS) end = MAX_PHYS;
    if (start < kend) start = kend;   // low memory and the kernel stay out
    if (start < end)
      free_range(start, end);
  }
}

// Allocation history: allocate `rounds` blocks of order 0-3, then free a
// seeded-random half of them.  What stays allocated stands for the page
// cache, slabs and other processes of a running system; what is freed
// leaves holes.  Later order-1 task blocks are then not contiguous, so
// their colors are uneven, as on the paper's machines.
void
buddy_age(uint64_t seed, int rounds)
{
  static void *blk[8192];
  static uint8_t ord[8192];
  uint64_t s = seed * 0x9E3779B97F4A7C15UL + 1;
  if (rounds > 8192) rounds = 8192;
  for (int i = 0; i < rounds; i++) {
    ord[i] = xorshift64(&s) & 3;
    blk[i] = alloc_pages(ord[i]);
  }
  for (int i = rounds - 1; i > 0; i--) {       // shuffle the free order
    int j = xorshift64(&s) % (i + 1);
    void *t = blk[i]; blk[i] = blk[j]; blk[j] = t;
    uint8_t o = ord[i]; ord[i] = ord[j]; ord[j] = o;
  }
  for (int i = 0; i < rounds; i += 2)
    if (blk[i])
      free_pages(blk[i], ord[i]);
}
