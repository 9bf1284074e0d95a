// Object caches for the network (2.4's kmem_cache in miniature): fixed-size
// objects carved from pages, kept on a free list.  Freed objects are
// reused last-in first-out, so a busy cache keeps its objects warm, as the
// slab allocator does.  Pages are never given back.
#pragma once
#include "spinlock.h"
#include "types.h"

struct kmem_cache {
  const char *name;
  uint32_t size;             // bytes per object, a multiple of the line size
  spinlock_t lock;
  void *free;                // free list, linked through the first word
  uint64_t active, pages;    // statistics
};

#define KMEM_CACHE_INIT(n, sz) \
  {.name = (n), .size = (sz), .lock = SPIN_LOCK_UNLOCKED}

void *kmem_cache_alloc(struct kmem_cache *c);
void kmem_cache_free(struct kmem_cache *c, void *obj);
