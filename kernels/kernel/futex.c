// Futexes: FUTEX_WAIT and FUTEX_WAKE, enough for musl's mutexes, condition
// variables, pthread_join and the CLONE_CHILD_CLEARTID wake.
//
// A waiter is keyed by (mm, user address) and hashed into a bucket whose
// lock orders "check the word, then sleep" against "change the word, then
// wake", so no wake-up is lost.
#include "errno.h"
#include "kernel.h"
#include "mm.h"
#include "proc.h"
#include "sched.h"
#include "waitstat.h"

#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#define NR_FUTEX_BUCKETS 64

// A waiter, on its sleeper's stack.  futex_wake reads link, mm and uaddr
// of every waiter in the bucket: they fill the first 32-byte line, and the
// alignment keeps them there in every kernel variant (kernels/README.md,
// "What else moves with the colors").
struct futex_q {
  struct list64 link;
  struct mm_struct *mm;
  uint64_t uaddr;
  struct task_struct *task;     // read only for the waiter woken
} __attribute__((aligned(32)));
_Static_assert(offsetof(struct futex_q, uaddr) + 8 <= 32, "compared fields in one line");

static struct futex_bucket {
  spinlock_t lock;
  struct list64 waiters;
} buckets[NR_FUTEX_BUCKETS];

void
futex_init(void)
{
  for (int i = 0; i < NR_FUTEX_BUCKETS; i++) {
    buckets[i].lock = (spinlock_t)SPIN_LOCK_UNLOCKED;
    list64_init(&buckets[i].waiters);
  }
}

static struct futex_bucket *
bucket_of(struct mm_struct *mm, uint64_t uaddr)
{
  return &buckets[((uaddr >> 2) ^ (uint64_t)mm) % NR_FUTEX_BUCKETS];
}

static long
futex_wait(uint64_t uaddr, uint32_t val, uint64_t utimeout)
{
  struct mm_struct *mm = task_mm(current);
  uint32_t cur;
  uint64_t ticks = 0;
  if (uaddr & 3)
    return -EINVAL;
  if (utimeout) {
    uint64_t ts[2];
    if (copy_from_user(ts, utimeout, sizeof ts) < 0)
      return -EFAULT;
    ticks = timespec_to_ticks(ts[0], ts[1]);
  }
  if (copy_from_user(&cur, uaddr, 4) < 0)   // faults the page in
    return -EFAULT;
  struct futex_q q = {.task = current, .mm = mm, .uaddr = uaddr};
  struct futex_bucket *b = bucket_of(mm, uaddr);
  uint64_t f = spin_lock_irqsave(&b->lock);
  cur = *(volatile uint32_t *)PTR(uaddr);
  if (cur != val) {
    spin_unlock_irqrestore(&b->lock, f);
    return -EAGAIN;
  }
  list64_add_tail(&q.link, &b->waiters);
  current->state = TASK_INTERRUPTIBLE;
  current->wchan = WCHAN_FUTEX;
  spin_unlock_irqrestore(&b->lock, f);

  if (utimeout)
    add_timeout(current, ticks);
  schedule();
  current->wchan = WCHAN_NONE;
  if (utimeout)
    del_timeout(current);

  long r = 0;
  f = spin_lock_irqsave(&b->lock);
  if (q.link.next != &q.link) {        // still queued: not woken by a WAKE
    list64_del(&q.link);
    r = utimeout ? -ETIMEDOUT : -EINTR;
  }
  spin_unlock_irqrestore(&b->lock, f);
  return r;
}

long
futex_wake(uint64_t uaddr, int n)
{
  struct mm_struct *mm = task_mm(current);
  struct futex_bucket *b = bucket_of(mm, uaddr);
  int woken = 0;
  uint64_t f = spin_lock_irqsave(&b->lock);
  for (struct list64 *e = b->waiters.next, *next; e != &b->waiters && woken < n; e = next) {
    next = e->next;
    struct futex_q *q = container_of(e, struct futex_q, link);
    if (q->mm == mm && q->uaddr == uaddr) {
      list64_del(&q->link);           // self-linked: "woken"
      wake_up_process(q->task);
      woken++;
    }
  }
  spin_unlock_irqrestore(&b->lock, f);
  return woken;
}

static void
lock_two(struct futex_bucket *a, struct futex_bucket *b)
{
  if (a > b) { struct futex_bucket *t = a; a = b; b = t; }
  spin_lock(&a->lock);
  if (b != a)
    spin_lock(&b->lock);
}

static void
unlock_two(struct futex_bucket *a, struct futex_bucket *b)
{
  spin_unlock(&a->lock);
  if (b != a)
    spin_unlock(&b->lock);
}

// Wake nwake waiters on uaddr and move up to nmove more to uaddr2, so a
// broadcast does not wake a herd that would only fight for the mutex.
static long
futex_requeue(uint64_t uaddr, uint64_t uaddr2, int nwake, int nmove,
              bool cmp, uint32_t val3)
{
  struct mm_struct *mm = task_mm(current);
  struct futex_bucket *b1 = bucket_of(mm, uaddr), *b2 = bucket_of(mm, uaddr2);
  uint32_t cur;
  if (cmp && copy_from_user(&cur, uaddr, 4) < 0)
    return -EFAULT;
  long done = 0;
  uint64_t f = local_irq_save();
  lock_two(b1, b2);
  if (cmp && *(volatile uint32_t *)PTR(uaddr) != val3) {
    done = -EAGAIN;
    goto out;
  }
  for (struct list64 *e = b1->waiters.next, *next; e != &b1->waiters; e = next) {
    next = e->next;
    struct futex_q *q = container_of(e, struct futex_q, link);
    if (q->mm != mm || q->uaddr != uaddr)
      continue;
    list64_del(&q->link);
    if (nwake > 0) {
      nwake--;
      wake_up_process(q->task);
    } else if (nmove > 0) {
      nmove--;
      q->uaddr = uaddr2;
      list64_add_tail(&q->link, &b2->waiters);
    } else {
      list64_add_tail(&q->link, &b1->waiters);   // put back: done
      break;
    }
    done++;
  }
out:
  unlock_two(b1, b2);
  local_irq_restore(f);
  return done;
}

long
sys_futex(uint64_t uaddr, long op, long val, uint64_t timeout,
          uint64_t uaddr2, long val3)
{
  switch (op & ~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME)) {
  case FUTEX_WAIT:
    return futex_wait(uaddr, (uint32_t)val, timeout);
  case FUTEX_WAKE:
    return futex_wake(uaddr, val < 0 ? 0x7fffffff : (int)val);
  case FUTEX_REQUEUE:
  case FUTEX_CMP_REQUEUE:
    return futex_requeue(uaddr, uaddr2, (int)val, (int)timeout,
                         (op & 0x7f) == FUTEX_CMP_REQUEUE, (uint32_t)val3);
  default:
    return -ENOSYS;
  }
}
