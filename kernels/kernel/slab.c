// Fixed-size object caches (include/slab.h): sk_buffs and socks.
#include "kernel.h"
#include "param.h"
#include "slab.h"

void *
kmem_cache_alloc(struct kmem_cache *c)
{
  uint64_t f = spin_lock_irqsave(&c->lock);
  if (!c->free) {
    // A new page, cut into objects.  Objects line up on cache lines
    // (size is a multiple of SMP_CACHE_BYTES), as SLAB_HWCACHE_ALIGN does.
    char *page = alloc_pages(0);
    if (!page) {
      spin_unlock_irqrestore(&c->lock, f);
      return NULL;
    }
    c->pages++;
    for (uint32_t off = 0; off + c->size <= PAGE_SIZE; off += c->size) {
      *(void **)(page + off) = c->free;
      c->free = page + off;
    }
  }
  void *obj = c->free;
  c->free = *(void **)obj;
  c->active++;
  spin_unlock_irqrestore(&c->lock, f);
  return obj;
}

void
kmem_cache_free(struct kmem_cache *c, void *obj)
{
  uint64_t f = spin_lock_irqsave(&c->lock);
  *(void **)obj = c->free;
  c->free = obj;
  c->active--;
  spin_unlock_irqrestore(&c->lock, f);
}
