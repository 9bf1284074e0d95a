// System V semaphores: semget, semop, semctl, with SEM_UNDO (2.4's
// ipc/sem.c as workload-facts.md 1.3 describes it; no code copied).
//
// Apache 1.3's USE_SYSVSEM_SERIALIZED_ACCEPT takes one semaphore with
// semop(-1, SEM_UNDO) before accept() and gives it back with semop(+1,
// SEM_UNDO).  What matters for the scheduler is 2.4's wake-up on release
// (update_queue): the sleepers are tried in order, and the first one whose
// operation would now succeed *and changes a value* is woken and the scan
// stops -- wake-one.  The woken task runs its operation again itself (it
// may lose the race to a task that arrived meanwhile, and then sleeps
// again in its old place).  Sleepers that only wait for zero are done by
// the scan and woken, and the scan goes on.
//
// SEM_UNDO: each task keeps one undo record per set it used with SEM_UNDO
// (2.4's per-task semundo list; fork does not inherit it).  Every undoable
// operation subtracts its value from the record; at exit the record is
// added back, clamped to 0..SEMVMX, and sleepers are re-tried.
//
// One spinlock guards every set, as in 2.4, whose ipc_lock() takes the one
// sem_ids.ary spinlock whichever set it looks up (ipc/util.h).
#include "errno.h"
#include "kernel.h"
#include "mm.h"
#include "proc.h"
#include "sched.h"
#include "slab.h"
#include "waitstat.h"

#define SEMMNI 128          // sets (2.4's default)
#define SEMMSL 250          // semaphores per set
#define SEMOPM 32           // operations per semop call
#define SEMVMX 32767        // largest value
#define SEMAEM SEMVMX       // largest undo adjustment

#define IPC_CREAT  01000
#define IPC_EXCL   02000
#define IPC_NOWAIT 04000
#define IPC_RMID 0
#define IPC_SET  1
#define IPC_STAT 2
#define IPC_64   0x100      // glibc/musl's "new ipc_perm" flag: ignored
#define GETPID  11
#define GETVAL  12
#define GETALL  13
#define GETNCNT 14
#define GETZCNT 15
#define SETVAL  16
#define SETALL  17
#define SEM_UNDO 0x1000

struct sembuf {             // the user's layout
  uint16_t sem_num;
  int16_t sem_op;
  int16_t sem_flg;
};

struct sem {
  int32_t semval;
  int32_t sempid;           // last task to operate on it
};

struct sem_undo {
  struct sem_undo *proc_next;   // this task's records
  struct list64 set_link;       // the set's records (SETVAL clears them)
  long semid;                   // -1 once the set is gone
  int16_t semadj[SEMMSL];
};

// A sleeping semop, on its sleeper's stack: two 32-byte lines in every
// kernel variant, however deep the sleeper's frames (kernels/README.md,
// "What else moves with the colors").
struct sem_queue {
  struct list64 link;
  struct task_struct *sleeper;
  struct sembuf *sops;
  int nsops;
  bool alter;               // some operation changes a value
  struct sem_undo *undo;
  long status;              // 1: woken to retry; 0/-E: done by the waker
} __attribute__((aligned(32)));

struct sem_array {
  long key;
  int nsems;
  int mode;
  struct list64 pending;    // sleepers: changers at the tail, zero-waiters at the head
  struct list64 undos;
  struct sem sems[SEMMSL];
};

static spinlock_t sem_lock = SPIN_LOCK_UNLOCKED;
static struct sem_array *sets[SEMMNI];
static bool used;                   // a set was ever made: report at the end
// How sleepers were woken (sem_report): a wake-all release shows up as
// retries that had to sleep again.
static uint64_t nr_sleeps, nr_wakeups, nr_resleeps;
static uint32_t seqs[SEMMNI];       // bumped at each removal: stale ids fail
static struct kmem_cache set_cache =
    KMEM_CACHE_INIT("sem_array", (sizeof(struct sem_array) + 63) & ~63ul);
static struct kmem_cache undo_cache =
    KMEM_CACHE_INIT("sem_undo", (sizeof(struct sem_undo) + 63) & ~63ul);

static long
make_id(int idx)
{
  return (long)seqs[idx] * SEMMNI + idx;
}

// The set semid names, or NULL with *err = -EINVAL, also for the id of a
// removed set, as Linux says (a task asleep in one gets -EIDRM).
static struct sem_array *
lookup(long semid, long *err)
{
  int idx = semid % SEMMNI;
  if (semid < 0 || (uint64_t)(semid / SEMMNI) != seqs[idx] || !sets[idx]) {
    *err = -EINVAL;
    return NULL;
  }
  return sets[idx];
}

long
sys_semget(long key, long nsems, long flags)
{
  key = (int32_t)key;
  if (nsems < 0 || nsems > SEMMSL)
    return -EINVAL;
  long r = -ENOSPC;
  uint64_t f = spin_lock_irqsave(&sem_lock);
  if (key != 0) {                       // not IPC_PRIVATE: look it up
    for (int i = 0; i < SEMMNI; i++) {
      if (!sets[i] || sets[i]->key != key)
        continue;
      if ((flags & IPC_CREAT) && (flags & IPC_EXCL))
        r = -EEXIST;
      else if (nsems > sets[i]->nsems)
        r = -EINVAL;
      else
        r = make_id(i);
      goto out;
    }
    if (!(flags & IPC_CREAT)) {
      r = -ENOENT;
      goto out;
    }
  }
  if (nsems == 0) {
    r = -EINVAL;
    goto out;
  }
  for (int i = 0; i < SEMMNI; i++) {
    if (sets[i])
      continue;
    struct sem_array *s = kmem_cache_alloc(&set_cache);
    if (!s) {
      r = -ENOMEM;
      goto out;
    }
    memset(s, 0, sizeof *s);
    s->key = key;
    s->nsems = nsems;
    s->mode = flags & 0777;
    list64_init(&s->pending);
    list64_init(&s->undos);
    sets[i] = s;
    used = true;
    r = make_id(i);
    break;
  }
out:
  spin_unlock_irqrestore(&sem_lock, f);
  return r;
}

// Try every operation in order, all or nothing.  0: done (values, undo
// record and sempid updated; undone again if test_only); 1: some
// operation must wait; -EAGAIN: it must wait but asked not to; -ERANGE: a
// value or an undo adjustment would leave its range.
static long
try_ops(struct sem_array *s, struct sembuf *sops, int n, struct sem_undo *un,
        int pid, bool test_only)
{
  long r = 0;
  int i;
  for (i = 0; i < n; i++) {
    struct sem *sem = &s->sems[sops[i].sem_num];
    int op = sops[i].sem_op, v = sem->semval + op;
    if ((op == 0 && sem->semval != 0) || v < 0) {
      r = (sops[i].sem_flg & IPC_NOWAIT) ? -EAGAIN : 1;
      break;
    }
    if (v > SEMVMX) {
      r = -ERANGE;
      break;
    }
    if (sops[i].sem_flg & SEM_UNDO) {
      int adj = un->semadj[sops[i].sem_num] - op;
      if (adj < -SEMAEM - 1 || adj > SEMAEM) {
        r = -ERANGE;
        break;
      }
      un->semadj[sops[i].sem_num] = adj;
    }
    sem->semval = v;
  }
  if (r == 0 && !test_only) {
    for (int j = 0; j < n; j++)
      s->sems[sops[j].sem_num].sempid = pid;
    return 0;
  }
  while (--i >= 0) {                    // put back what was applied
    s->sems[sops[i].sem_num].semval -= sops[i].sem_op;
    if (sops[i].sem_flg & SEM_UNDO)
      un->semadj[sops[i].sem_num] += sops[i].sem_op;
  }
  return r;
}

// After values changed: wake sleepers that can now go on (2.4's
// update_queue).  A changer is woken to retry itself, and the scan stops
// there: one release wakes one task.  Sem lock held.
static void
update_queue(struct sem_array *s)
{
  for (struct list64 *e = s->pending.next, *next; e != &s->pending; e = next) {
    next = e->next;
    struct sem_queue *q = container_of(e, struct sem_queue, link);
    if (q->status == 1)
      continue;                         // woken already, not yet back
    long r = try_ops(s, q->sops, q->nsops, q->undo, q->sleeper->pid, q->alter);
    if (r > 0)
      continue;                         // still has to wait
    if (r == 0 && q->alter) {
      q->status = 1;
      nr_wakeups++;
      wake_up_process(q->sleeper);
      return;
    }
    q->status = r;                      // done here (or failed): dequeue
    list64_del(&q->link);
    nr_wakeups++;
    wake_up_process(q->sleeper);
  }
}

// This task's undo record for semid, made on first use.  Sem lock held.
static struct sem_undo *
undo_for(struct sem_array *s, long semid)
{
  struct task_struct *me = current;
  for (struct sem_undo *u = me->semundo; u; u = u->proc_next)
    if (u->semid == semid)
      return u;
  struct sem_undo *u = kmem_cache_alloc(&undo_cache);
  if (!u)
    return NULL;
  memset(u, 0, sizeof *u);
  u->semid = semid;
  u->proc_next = me->semundo;
  me->semundo = u;
  list64_add_tail(&u->set_link, &s->undos);
  return u;
}

long
sys_semop(long semid, uint64_t usops, long nsops)
{
  struct sembuf sops[SEMOPM];
  if (nsops < 1)
    return -EINVAL;
  if (nsops > SEMOPM)
    return -E2BIG;
  if (copy_from_user(sops, usops, nsops * sizeof sops[0]) < 0)
    return -EFAULT;
  int max = 0;
  bool undos = false, alter = false;
  for (int i = 0; i < nsops; i++) {
    if (sops[i].sem_num > max)
      max = sops[i].sem_num;
    undos |= (sops[i].sem_flg & SEM_UNDO) != 0;
    alter |= sops[i].sem_op != 0;
  }
  long r;
  uint64_t f = spin_lock_irqsave(&sem_lock);
  struct sem_array *s = lookup(semid, &r);
  if (!s)
    goto out;
  if (max >= s->nsems) {
    r = -EFBIG;
    goto out;
  }
  struct sem_undo *un = NULL;
  if (undos && !(un = undo_for(s, semid))) {
    r = -ENOMEM;
    goto out;
  }
  r = try_ops(s, sops, nsops, un, current->pid, false);
  if (r <= 0)
    goto done;
  // Sleep until a release lets this operation through.
  struct sem_queue q = {.sleeper = current, .sops = sops, .nsops = nsops,
                        .alter = alter, .undo = un};
  if (alter)
    list64_add_tail(&q.link, &s->pending);
  else
    list64_add(&q.link, &s->pending);
  for (;;) {
    nr_sleeps++;
    q.status = -EINTR;
    current->state = TASK_INTERRUPTIBLE;
    current->wchan = WCHAN_SEM;
    spin_unlock_irqrestore(&sem_lock, f);
    schedule();
    current->wchan = WCHAN_NONE;
    f = spin_lock_irqsave(&sem_lock);
    if (q.status == -EIDRM) {           // the set was removed (dequeued)
      r = -EIDRM;
      goto out;
    }
    if (q.status != 1) {                // done by update_queue, or killed
      r = q.status;
      if (r == -EINTR)
        list64_del(&q.link);
      goto done;
    }
    if (current->sigpending) {
      list64_del(&q.link);
      r = -EINTR;
      update_queue(s);                  // pass the wake-up on
      goto out;
    }
    r = try_ops(s, sops, nsops, un, current->pid, false);
    if (r <= 0) {
      list64_del(&q.link);
      goto done;
    }
    nr_resleeps++;                      // another task got there first
  }
done:
  if (r == 0 && alter)
    update_queue(s);
out:
  spin_unlock_irqrestore(&sem_lock, f);
  return r;
}

// The counts GETNCNT and GETZCNT report: sleepers waiting for semnum to
// grow (a negative op) or to be zero.
static long
count_waiters(struct sem_array *s, int semnum, bool zero)
{
  long n = 0;
  for (struct list64 *e = s->pending.next; e != &s->pending; e = e->next) {
    struct sem_queue *q = container_of(e, struct sem_queue, link);
    for (int i = 0; i < q->nsops; i++)
      if (q->sops[i].sem_num == semnum &&
          (zero ? q->sops[i].sem_op == 0 : q->sops[i].sem_op < 0)) {
        n++;
        break;
      }
  }
  return n;
}

static void
clear_undos(struct sem_array *s, int semnum)    // -1: every semaphore
{
  for (struct list64 *e = s->undos.next; e != &s->undos; e = e->next) {
    struct sem_undo *u = container_of(e, struct sem_undo, set_link);
    if (semnum < 0)
      memset(u->semadj, 0, sizeof u->semadj);
    else
      u->semadj[semnum] = 0;
  }
}

static void
remove_set(long semid, struct sem_array *s)
{
  int idx = semid % SEMMNI;
  while (s->pending.next != &s->pending) {
    struct sem_queue *q = container_of(s->pending.next, struct sem_queue, link);
    list64_del(&q->link);
    q->status = -EIDRM;
    nr_wakeups++;
    wake_up_process(q->sleeper);
  }
  while (s->undos.next != &s->undos) {  // records live on with their task
    struct sem_undo *u = container_of(s->undos.next, struct sem_undo, set_link);
    list64_del(&u->set_link);
    u->semid = -1;
  }
  sets[idx] = NULL;
  seqs[idx]++;
  kmem_cache_free(&set_cache, s);
}

// The fields of struct semid_ds (x86_64) that IPC_STAT fills.
struct semid_ds_user {
  int32_t key;
  uint32_t uid, gid, cuid, cgid;
  uint16_t mode, pad1;
  uint16_t seq, pad2;
  uint64_t unused1, unused2;
  uint64_t otime, unused3, ctime, unused4, nsems, unused5, unused6;
};

long
sys_semctl(long semid, long semnum, long cmd, uint64_t arg)
{
  cmd &= ~IPC_64;
  long r = 0;
  uint16_t vals[SEMMSL];
  if (cmd == SETALL) {                  // fetched before taking the lock
    uint64_t f = spin_lock_irqsave(&sem_lock);
    struct sem_array *s = lookup(semid, &r);
    int n = s ? s->nsems : 0;
    spin_unlock_irqrestore(&sem_lock, f);
    if (!s)
      return r;
    if (copy_from_user(vals, arg, n * sizeof vals[0]) < 0)
      return -EFAULT;
  }
  uint64_t f = spin_lock_irqsave(&sem_lock);
  struct sem_array *s = lookup(semid, &r);
  if (!s)
    goto out;
  bool one = cmd == GETVAL || cmd == SETVAL || cmd == GETPID ||
             cmd == GETNCNT || cmd == GETZCNT;
  if (one && (semnum < 0 || semnum >= s->nsems)) {
    r = -EINVAL;
    goto out;
  }
  switch (cmd) {
  case IPC_RMID:
    remove_set(semid, s);
    break;
  case IPC_SET:                         // owners and modes: everyone is root
    break;
  case IPC_STAT: {
    struct semid_ds_user d = {.key = s->key, .mode = s->mode,
                              .seq = semid / SEMMNI, .nsems = s->nsems};
    spin_unlock_irqrestore(&sem_lock, f);
    return copy_to_user(arg, &d, sizeof d) < 0 ? -EFAULT : 0;
  }
  case GETVAL:
    r = s->sems[semnum].semval;
    break;
  case GETPID:
    r = s->sems[semnum].sempid;
    break;
  case GETNCNT:
  case GETZCNT:
    r = count_waiters(s, semnum, cmd == GETZCNT);
    break;
  case GETALL: {
    int n = s->nsems;
    for (int i = 0; i < n; i++)
      vals[i] = s->sems[i].semval;
    spin_unlock_irqrestore(&sem_lock, f);
    return copy_to_user(arg, vals, n * sizeof vals[0]) < 0 ? -EFAULT : 0;
  }
  case SETVAL: {
    int v = (int)arg;
    if (v < 0 || v > SEMVMX) {
      r = -ERANGE;
      break;
    }
    s->sems[semnum].semval = v;
    clear_undos(s, semnum);
    update_queue(s);
    break;
  }
  case SETALL:
    for (int i = 0; i < s->nsems; i++)
      if (vals[i] > SEMVMX) {
        r = -ERANGE;
        goto out;
      }
    for (int i = 0; i < s->nsems; i++)
      s->sems[i].semval = vals[i];
    clear_undos(s, -1);
    update_queue(s);
    break;
  default:
    r = -EINVAL;
  }
out:
  spin_unlock_irqrestore(&sem_lock, f);
  return r;
}

// At exit: give back what this task's undoable operations took (2.4's
// sem_exit), clamped to the value range, and let sleepers through.
void
sem_exit(void)
{
  struct task_struct *me = current;
  if (!me->semundo)
    return;
  uint64_t f = spin_lock_irqsave(&sem_lock);
  for (struct sem_undo *u = me->semundo, *next; u; u = next) {
    next = u->proc_next;
    long err;
    struct sem_array *s = u->semid >= 0 ? lookup(u->semid, &err) : NULL;
    if (s) {
      for (int i = 0; i < s->nsems; i++) {
        if (!u->semadj[i])
          continue;
        int v = s->sems[i].semval + u->semadj[i];
        s->sems[i].semval = v < 0 ? 0 : v > SEMVMX ? SEMVMX : v;
        s->sems[i].sempid = me->pid;
      }
      list64_del(&u->set_link);
      update_queue(s);
    }
    kmem_cache_free(&undo_cache, u);
  }
  me->semundo = NULL;
  spin_unlock_irqrestore(&sem_lock, f);
}

// At init's exit, if semaphores were used: how many semop calls slept,
// how many sleepers a release woke, and how many of those found the
// value taken again and went back to sleep (0 when each release wakes
// only the one that can go on).
void
sem_report(void)
{
  if (used)
    printk("sem: sleeps %lu wakeups %lu resleeps %lu\n", nr_sleeps, nr_wakeups,
           nr_resleeps);
}
