/* threads.c: thread stacks from one pool, and the SysV semaphores chat_s
 * and chat_c block on (chat.h). */
#define _GNU_SOURCE                 /* clone() */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/sem.h>
#include <unistd.h>

#include "chat.h"

static char *pool;
static long used, size;

void *stack_pool(long n)
{
  size = n * (long)STACK_SIZE;
  pool = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pool == MAP_FAILED) {
    printf("chat: FAIL cannot map %ld thread stacks\n", n);
    exit(1);
  }
  used = 0;
  return pool;
}

#if defined(CHAT_LINUX24)
/* Threads as LinuxThreads made them on 2.4 (chat built for the Linux 2.4
 * images, CHAT_LINUX24: 2.4 has no futex, no set_tid_address and no TLS
 * through clone, which musl's pthreads need): a task that shares the
 * address space, files, file-system context and signal handlers, made by
 * clone(2) with no thread-local storage of its own.  Its function and
 * argument sit at the top of its own stack.  It ends with the function
 * (exit) and stays a zombie until the machine stops: chat never joins. */
struct start {
  void *(*fn)(void *);
  void *arg;
};

static int run_thread(void *p)
{
  struct start *s = p;
  s->fn(s->arg);
  return 0;
}

int start_thread(void *(*fn)(void *), void *arg, void *unused)
{
  (void)unused;
  if (used + STACK_SIZE > size)
    return -1;
  struct start *s = (struct start *)(pool + used + STACK_SIZE) - 1;
  used += STACK_SIZE;
  s->fn = fn;
  s->arg = arg;
  /* the stack grows down from below the start record, 16-byte aligned */
  void *top = (void *)((unsigned long)s & ~15ul);
  return clone(run_thread, top, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND, s) < 0 ? -1 : 0;
}
#else
int start_thread(void *(*fn)(void *), void *arg, void *unused)
{
  (void)unused;
  pthread_attr_t a;
  pthread_t t;
  if (used + STACK_SIZE > size)
    return -1;
  pthread_attr_init(&a);
  pthread_attr_setstack(&a, pool + used, STACK_SIZE);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  used += STACK_SIZE;
  int r = pthread_create(&t, &a, fn, arg);
  pthread_attr_destroy(&a);
  return r;
}
#endif

union semun {
  int val;
  struct semid_ds *buf;
  unsigned short *array;
};

int sem_set(int n, int value)
{
  int id = semget(IPC_PRIVATE, n, 0600);
  for (int i = 0; id >= 0 && i < n; i++)
    if (semctl(id, i, SETVAL, (union semun){.val = value}) < 0)
      return -1;
  return id;
}

void sem_change(int semid, int num, int op)
{
  struct sembuf b = {.sem_num = num, .sem_op = op, .sem_flg = 0};
  while (semop(semid, &b, 1) < 0)
    if (errno != EINTR) {
      printf("chat: FAIL semop (%d)\n", errno);
      fflush(stdout);
      _exit(1);
    }
}
