/* misctest: ids, sleeping and the clocks, yield. */
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "check.h"

static long ms(struct timespec a, struct timespec b)
{
  return (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
}

int main(void)
{
  CHECK("misctest", getpid() > 0 && getppid() >= 0);
  CHECK("misctest", syscall(SYS_gettid) == getpid());
  struct timespec t0, t1, nap = {0, 30 * 1000000};
  CHECK("misctest", clock_gettime(CLOCK_MONOTONIC, &t0) == 0);
  CHECK("misctest", nanosleep(&nap, NULL) == 0);
  CHECK("misctest", clock_gettime(CLOCK_MONOTONIC, &t1) == 0);
  CHECK("misctest", ms(t0, t1) >= 30);
  CHECK("misctest", sched_yield() == 0);
  struct timespec rt;
  CHECK("misctest", clock_gettime(CLOCK_REALTIME, &rt) == 0 && rt.tv_sec > 1000000000);
  printf("misctest: ok (slept %ld ms)\n", ms(t0, t1));
  return 0;
}
