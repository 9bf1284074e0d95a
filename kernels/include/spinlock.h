// Spinlocks in the i386 Linux 2.4 style: test-and-test-and-set.
#pragma once
#include "types.h"
#include "x86.h"

// 1 = free, as on i386.  Aligned to a cache line so the lock word has a
// line of its own (runqueue_lock is SMP_CACHE_BYTES aligned in 2.4).
typedef struct {
  volatile int32_t slock;
} spinlock_t;

#define SPIN_LOCK_UNLOCKED {1}

void spin_lock(spinlock_t *l);
int spin_lock_waited(spinlock_t *l);   // spin_lock; 1 if the first try failed
void spin_unlock(spinlock_t *l);

static inline void spin_lock_irq(spinlock_t *l) { cli(); spin_lock(l); }
static inline void spin_unlock_irq(spinlock_t *l) { spin_unlock(l); sti(); }
static inline uint64_t spin_lock_irqsave(spinlock_t *l) {
  uint64_t f = local_irq_save();
  spin_lock(l);
  return f;
}
static inline void spin_unlock_irqrestore(spinlock_t *l, uint64_t f) {
  spin_unlock(l);
  local_irq_restore(f);
}
// One attempt, for taking a second run-queue lock in the multi-queue
// scheduler (kernel/sched_mq.c) without a lock order between CPUs.
static inline int spin_trylock(spinlock_t *l) {
  return __atomic_load_n(&l->slock, __ATOMIC_RELAXED) == 1 &&
         __atomic_exchange_n(&l->slock, 0, __ATOMIC_ACQUIRE) == 1;
}
