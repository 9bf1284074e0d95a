/* roitest: a user program that marks its own region of interest: reset
 * the stats, run P processes that compute and yield, dump the stats,
 * stop the machine.  Off the testbed the m5 calls fail (ENOSYS) and the
 * program just does the work. */
#include <stdio.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "m5roi.h"

#define P 8
#define ROUNDS 200

static volatile unsigned char buf[4096];

static void work(int id)
{
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < 4096; i += 32)
      buf[i] += (unsigned char)(r + id);
    sched_yield();
  }
}

int main(void)
{
  long on_testbed = m5_reset_stats() == 0;
  for (int i = 0; i < P; i++) {
    pid_t p = fork();
    CHECK("roitest", p >= 0);
    if (p == 0) {
      work(i);
      _exit(0);
    }
  }
  for (int i = 0; i < P; i++) {
    int status;
    CHECK("roitest", wait(&status) > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  CHECK("roitest", (m5_dump_stats() == 0) == on_testbed);
  printf("roitest: ok (%d processes%s)\n", P, on_testbed ? ", region measured" : "");
  fflush(stdout);
  if (on_testbed)
    m5_exit();                      /* does not return on the testbed */
  return 0;
}
