// Spinlocks, i386 2.4 style: a locked decrement takes the lock when the
// result is zero; otherwise spin *reading* the word (with pause, which also
// lets QEMU's round-robin scheduler run the lock holder) until it looks
// free, then try again.
#include "spinlock.h"

int
spin_lock_waited(spinlock_t *l)
{
  for (int waited = 0;; waited = 1) {
    int32_t old = __atomic_fetch_sub(&l->slock, 1, __ATOMIC_ACQUIRE);
    if (old == 1)
      return waited;
    while (__atomic_load_n(&l->slock, __ATOMIC_RELAXED) <= 0)
      cpu_relax();
  }
}

void
spin_lock(spinlock_t *l)
{
  spin_lock_waited(l);
}

void
spin_unlock(spinlock_t *l)
{
  __atomic_store_n(&l->slock, 1, __ATOMIC_RELEASE);
}
