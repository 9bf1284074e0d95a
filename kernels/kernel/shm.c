// Shared anonymous memory: mmap(MAP_SHARED | MAP_ANONYMOUS), which 2.4
// backs with a shmem object, so a parent's mapping is the same memory in
// every child it forks (Apache 1.3's scoreboard on Linux).
//
// A region owns its zeroed pages, allocated when it is made; every area
// (VMA) that maps part of it holds a reference, and the pages go when the
// last area does (munmap, exit, exec).  Its PTEs carry PTE_SHARED, so
// fork maps the same page instead of copying it and unmapping does not
// free it (vm.c).
#include "errno.h"
#include "kernel.h"
#include "param.h"
#include "mm.h"
#include "slab.h"

struct shm_region {
  int refs;                    // areas that map it (atomic)
  uint32_t npages;
  void *page[];
};

// A region of len bytes (whole pages), zeroed, one reference; NULL if
// memory is short.  The page array must fit in one page.
struct shm_region *
shm_create(uint64_t len)
{
  uint64_t n = (len + PAGE_SIZE - 1) / PAGE_SIZE;
  if (n == 0 || sizeof(struct shm_region) + n * sizeof(void *) > PAGE_SIZE)
    return NULL;
  struct shm_region *r = alloc_pages(0);
  if (!r)
    return NULL;
  r->refs = 1;
  r->npages = 0;
  for (; r->npages < n; r->npages++) {
    void *p = alloc_pages(0);
    if (!p) {
      shm_put(r);
      return NULL;
    }
    memset(p, 0, PAGE_SIZE);
    r->page[r->npages] = p;
  }
  return r;
}

void shm_get(struct shm_region *r) { __atomic_add_fetch(&r->refs, 1, __ATOMIC_SEQ_CST); }

void
shm_put(struct shm_region *r)
{
  if (__atomic_sub_fetch(&r->refs, 1, __ATOMIC_SEQ_CST))
    return;
  for (uint32_t i = 0; i < r->npages; i++)
    free_pages(r->page[i], 0);
  free_pages(r, 0);
}

// The region's page i, or NULL past its end.
void *
shm_page(struct shm_region *r, uint64_t i)
{
  return i < r->npages ? r->page[i] : NULL;
}
