/* faulttest: a child that touches an unmapped address dies by SIGSEGV,
 * and the parent goes on; an unknown system call fails with ENOSYS. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

static volatile int *volatile nowhere = (int *)16;

int main(void)
{
  pid_t p = fork();
  CHECK("faulttest", p >= 0);
  if (p == 0) {
    *nowhere = 1;                     /* no such page: killed here */
    _exit(0);
  }
  int status;
  CHECK("faulttest", waitpid(p, &status, 0) == p);
  CHECK("faulttest", WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
  for (int i = 0; i < 2; i++)          /* the kernel notes it once */
    CHECK("faulttest", syscall(1000) == -1 && errno == ENOSYS);
  printf("faulttest: ok\n");
  return 0;
}
