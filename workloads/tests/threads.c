/* threads: pthread_create/join; T threads add to one counter under a
 * (futex-based) mutex, and wait on a condition variable for a start flag. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "check.h"

#define T 4
#define ADDS 20000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER;
static int go, ready;
static long counter;
static long tids[T];
static __thread int mine;          /* TLS: each thread its own copy */
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

/* Blocks for ever (in FUTEX_WAIT): exit() must still end the process. */
static void *blocker(void *arg)
{
  (void)arg;
  pthread_mutex_lock(&held);
  return NULL;
}

static void *worker(void *arg)
{
  long i = (long)arg;
  tids[i] = syscall(SYS_gettid);
  mine = (int)i + 100;
  pthread_mutex_lock(&lock);
  ready++;
  while (!go)
    pthread_cond_wait(&go_cond, &lock);
  pthread_mutex_unlock(&lock);
  for (int k = 0; k < ADDS; k++) {
    pthread_mutex_lock(&lock);
    counter++;
    pthread_mutex_unlock(&lock);
    if (k % 1000 == 0)
      sched_yield();
  }
  return (void *)(long)(mine == (int)i + 100 ? i + 1 : -1);
}

int main(void)
{
  pthread_t th[T];
  mine = 7;
  for (long i = 0; i < T; i++)
    CHECK("threads", pthread_create(&th[i], NULL, worker, (void *)i) == 0);
  for (;;) {                       /* everyone is waiting: start them */
    pthread_mutex_lock(&lock);
    int all = ready == T;
    if (all) {
      go = 1;
      pthread_cond_broadcast(&go_cond);
    }
    pthread_mutex_unlock(&lock);
    if (all)
      break;
    sched_yield();
  }
  for (long i = 0; i < T; i++) {
    void *ret;
    CHECK("threads", pthread_join(th[i], &ret) == 0);
    CHECK("threads", (long)ret == i + 1);
  }
  CHECK("threads", counter == (long)T * ADDS);
  CHECK("threads", mine == 7);
  for (int i = 0; i < T; i++) {
    CHECK("threads", tids[i] > 0 && tids[i] != getpid());
    for (int j = 0; j < i; j++)
      CHECK("threads", tids[i] != tids[j]);
  }
  pthread_t stuck;
  pthread_mutex_lock(&held);
  CHECK("threads", pthread_create(&stuck, NULL, blocker, NULL) == 0);
  for (int i = 0; i < 20; i++)
    sched_yield();                  /* let it block */
  printf("threads: ok (%d threads, counter %ld)\n", T, counter);
  return 0;                         /* exit_group ends the blocked thread */
}
