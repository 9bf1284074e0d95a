/* semtest: System V semaphores (semget, semop, semctl), as Apache 1.3's
 * USE_SYSVSEM_SERIALIZED_ACCEPT and Chat use them.
 *   - bad arguments fail with Linux's errors (EINVAL, ENOENT, EEXIST,
 *     E2BIG, EFBIG, EFAULT, EAGAIN, ERANGE), before anything changes;
 *   - values: SETVAL/GETVAL, SETALL/GETALL, several operations at once
 *     are all or nothing, GETPID;
 *   - wake-one: 6 children asleep in semop(-1); each +1 lets exactly one
 *     through (GETNCNT counts the rest), and all 6 get through in 6
 *     releases (the kernel's "sem:" line says none was woken in vain);
 *   - SEM_UNDO: a child's undoable -1 is given back when it exits, when
 *     it is killed by a fault, and wakes a sleeper; without SEM_UNDO it is
 *     not; a wait-for-zero sleeper wakes when the value reaches 0;
 *   - IPC_RMID wakes a sleeper with EIDRM, and the id is then invalid.
 * Runs on the testbed and on a Linux host. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define T "semtest"
#define WAITERS 6

static volatile int *volatile nowhere = (int *)16;   /* unmapped */

union semun {
  int val;
  struct semid_ds *buf;
  unsigned short *array;
};

static int setval(int id, int n, int v)
{
  union semun a = {.val = v};
  return semctl(id, n, SETVAL, a);
}

static int op(int id, int n, int v, int flags)
{
  struct sembuf b = {.sem_num = n, .sem_op = v, .sem_flg = flags};
  return semop(id, &b, 1);
}

/* Wait until `count` tasks sleep on semaphore n (GETNCNT). */
static void await_sleepers(int id, int n, int count)
{
  for (int i = 0; semctl(id, n, GETNCNT) != count; i++) {
    CHECK(T, i < 1000000);
    sched_yield();
  }
}

static int wait_status(pid_t p)
{
  int st;
  CHECK(T, waitpid(p, &st, 0) == p);
  return st;
}

static void bad_arguments(void)
{
  errno = 0;
  CHECK(T, semget(IPC_PRIVATE, -1, 0600) < 0 && errno == EINVAL);
  CHECK(T, semget(IPC_PRIVATE, 32001, 0600) < 0 && errno == EINVAL);
  CHECK(T, semget(IPC_PRIVATE, 0, 0600) < 0 && errno == EINVAL);
  key_t key = 0x5e3a7e57;
  int stale = semget(key, 0, 0);             /* a host run that failed midway */
  if (stale >= 0)
    semctl(stale, 0, IPC_RMID);
  CHECK(T, semget(key, 1, 0600) < 0 && errno == ENOENT);
  int id = semget(key, 2, IPC_CREAT | IPC_EXCL | 0600);
  CHECK(T, id >= 0);
  CHECK(T, semget(key, 2, IPC_CREAT | IPC_EXCL | 0600) < 0 && errno == EEXIST);
  CHECK(T, semget(key, 3, 0600) < 0 && errno == EINVAL);     /* more than it has */
  CHECK(T, semget(key, 1, 0600) == id && semget(key, 0, 0) == id);

  struct sembuf many[501];
  memset(many, 0, sizeof many);
  CHECK(T, semop(id, many, 0) < 0 && errno == EINVAL);
  CHECK(T, semop(id, many, 501) < 0 && errno == E2BIG);
  CHECK(T, op(id, 2, 1, 0) < 0 && errno == EFBIG);             /* no semaphore 2 */
  CHECK(T, op(id + 1, 0, 1, 0) < 0 && errno == EINVAL);        /* no such set */
  CHECK(T, op(-1, 0, 1, 0) < 0 && errno == EINVAL);
  CHECK(T, semop(id, (struct sembuf *)8, 1) < 0 && errno == EFAULT);
  CHECK(T, op(id, 0, -1, IPC_NOWAIT) < 0 && errno == EAGAIN);
  CHECK(T, setval(id, 0, 32767) == 0);
  CHECK(T, op(id, 0, 1, 0) < 0 && errno == ERANGE);
  CHECK(T, semctl(id, 0, GETVAL) == 32767);                    /* unchanged */
  CHECK(T, setval(id, 0, -1) < 0 && errno == ERANGE);
  CHECK(T, setval(id, 0, 32768) < 0 && errno == ERANGE);
  CHECK(T, semctl(id, 2, GETVAL) < 0 && errno == EINVAL);
  CHECK(T, semctl(id, -1, SETVAL, 0) < 0 && errno == EINVAL);
  CHECK(T, semctl(id, 0, 12345) < 0 && errno == EINVAL);       /* no such command */
  CHECK(T, semctl(id + 1, 0, GETVAL) < 0 && errno == EINVAL);
  CHECK(T, semctl(id, 0, IPC_RMID) == 0);
  CHECK(T, semctl(id, 0, GETVAL) < 0 && errno == EINVAL);      /* gone */
  CHECK(T, op(id, 0, 1, 0) < 0 && errno == EINVAL);
  CHECK(T, semget(key, 1, 0600) < 0 && errno == ENOENT);
}

static void values(void)
{
  int id = semget(IPC_PRIVATE, 3, 0600);
  CHECK(T, id >= 0);
  struct semid_ds ds;
  union semun a = {.buf = &ds};
  CHECK(T, semctl(id, 0, IPC_STAT, a) == 0 && ds.sem_nsems == 3);
  unsigned short v[3] = {4, 0, 7}, w[3] = {0, 0, 0};
  a.array = v;
  CHECK(T, semctl(id, 0, SETALL, a) == 0);
  a.array = w;
  CHECK(T, semctl(id, 0, GETALL, a) == 0 && w[0] == 4 && w[1] == 0 && w[2] == 7);
  /* all or nothing: the second operation would block, so the first
   * must not stay applied */
  struct sembuf two[2] = {{0, -3, 0}, {1, -1, IPC_NOWAIT}};
  CHECK(T, semop(id, two, 2) < 0 && errno == EAGAIN);
  CHECK(T, semctl(id, 0, GETVAL) == 4);
  two[1].sem_op = 2;
  CHECK(T, semop(id, two, 2) == 0);
  CHECK(T, semctl(id, 0, GETVAL) == 1 && semctl(id, 1, GETVAL) == 2);
  CHECK(T, semctl(id, 0, GETPID) == getpid());
  CHECK(T, semctl(id, 0, IPC_RMID) == 0);
}

/* Six sleepers, six single releases: each release lets one through. */
static void wake_one(void)
{
  int id = semget(IPC_PRIVATE, 1, 0600), done[2];
  CHECK(T, id >= 0 && pipe(done) == 0);
  pid_t kids[WAITERS];
  for (int i = 0; i < WAITERS; i++) {
    kids[i] = fork();
    CHECK(T, kids[i] >= 0);
    if (kids[i] == 0) {
      char c = 'a' + i;
      if (op(id, 0, -1, 0) != 0 || write(done[1], &c, 1) != 1)
        _exit(1);
      _exit(0);
    }
  }
  await_sleepers(id, 0, WAITERS);
  for (int left = WAITERS; left > 0; left--) {
    char c;
    CHECK(T, op(id, 0, 1, 0) == 0);
    CHECK(T, read(done[0], &c, 1) == 1);     /* one got through */
    await_sleepers(id, 0, left - 1);           /* the others still sleep */
    CHECK(T, semctl(id, 0, GETVAL) == 0);
  }
  for (int i = 0; i < WAITERS; i++)
    CHECK(T, wait_status(kids[i]) == 0);
  close(done[0]);
  close(done[1]);
  CHECK(T, semctl(id, 0, IPC_RMID) == 0);
}

static void undo(void)
{
  int id = semget(IPC_PRIVATE, 2, 0600);
  CHECK(T, id >= 0 && setval(id, 0, 1) == 0);
  /* an undoable -1 (and +3 on the other) given back at exit */
  pid_t p = fork();
  if (p == 0) {
    struct sembuf b[2] = {{0, -1, SEM_UNDO}, {1, 3, SEM_UNDO}};
    _exit(semop(id, b, 2) == 0 && semctl(id, 0, GETVAL) == 0 &&
          semctl(id, 1, GETVAL) == 3 ? 0 : 1);
  }
  CHECK(T, wait_status(p) == 0);
  CHECK(T, semctl(id, 0, GETVAL) == 1 && semctl(id, 1, GETVAL) == 0);
  /* the same when the holder is killed by a fault */
  p = fork();
  if (p == 0) {
    if (op(id, 0, -1, SEM_UNDO) == 0)
      *nowhere = 1;
    _exit(1);
  }
  int st = wait_status(p);
  CHECK(T, WIFSIGNALED(st) && WTERMSIG(st) == 11);
  CHECK(T, semctl(id, 0, GETVAL) == 1);
  /* without SEM_UNDO the -1 stays */
  p = fork();
  if (p == 0)
    _exit(op(id, 0, -1, 0) == 0 ? 0 : 1);
  CHECK(T, wait_status(p) == 0 && semctl(id, 0, GETVAL) == 0);
  /* a holder's exit wakes a sleeper: the holder takes it with SEM_UNDO
   * and exits while a second child sleeps for it */
  CHECK(T, setval(id, 0, 1) == 0);
  int go[2];
  CHECK(T, pipe(go) == 0);
  pid_t holder = fork();
  if (holder == 0) {
    char c;
    if (op(id, 0, -1, SEM_UNDO) != 0 || read(go[0], &c, 1) != 1)
      _exit(1);
    _exit(0);                                  /* no +1: the undo gives it */
  }
  for (int i = 0; semctl(id, 0, GETVAL) != 0; i++) {
    CHECK(T, i < 1000000);
    sched_yield();
  }
  pid_t sleeper = fork();
  if (sleeper == 0)
    _exit(op(id, 0, -1, 0) == 0 ? 0 : 1);
  await_sleepers(id, 0, 1);
  CHECK(T, write(go[1], "x", 1) == 1);
  CHECK(T, wait_status(holder) == 0 && wait_status(sleeper) == 0);
  CHECK(T, semctl(id, 0, GETVAL) == 0);
  /* a wait-for-zero sleeper wakes when the value reaches 0 */
  CHECK(T, setval(id, 1, 2) == 0);
  p = fork();
  if (p == 0)
    _exit(op(id, 1, 0, 0) == 0 && semctl(id, 1, GETVAL) == 0 ? 0 : 1);
  for (int i = 0; semctl(id, 1, GETZCNT) != 1; i++) {
    CHECK(T, i < 1000000);
    sched_yield();
  }
  CHECK(T, op(id, 1, -2, 0) == 0);
  CHECK(T, wait_status(p) == 0);
  CHECK(T, semctl(id, 0, IPC_RMID) == 0);
  close(go[0]);
  close(go[1]);
}

static void removed_while_asleep(void)
{
  int id = semget(IPC_PRIVATE, 1, 0600);
  CHECK(T, id >= 0);
  pid_t p = fork();
  if (p == 0)
    _exit(op(id, 0, -1, 0) < 0 && errno == EIDRM ? 0 : 1);
  await_sleepers(id, 0, 1);
  CHECK(T, semctl(id, 0, IPC_RMID) == 0);
  CHECK(T, wait_status(p) == 0);
}

int main(void)
{
  bad_arguments();
  values();
  wake_one();
  undo();
  removed_while_asleep();
  printf(T ": ok (%d sleepers woken one per release)\n", WAITERS);
  return 0;
}
