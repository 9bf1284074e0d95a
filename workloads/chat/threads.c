/* threads.c: thread stacks from one pool (chat.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

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
