/* threads.c: thread stacks from one pool, and the SysV semaphores chat_s
 * and chat_c block on (chat.h). */
#include <errno.h>
#include <pthread.h>
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
