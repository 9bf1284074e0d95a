/* forktest: fork N children, each exits with its own code; wait for all
 * and check every code came back exactly once. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

#define N 12

int main(void)
{
  int seen[N + 1] = {0};
  pid_t pids[N];
  for (int i = 0; i < N; i++) {
    pids[i] = fork();
    CHECK("forktest", pids[i] >= 0);
    if (pids[i] == 0)
      _exit(i + 1);
  }
  for (int i = 0; i < N; i++) {
    int status;
    pid_t p = wait(&status);
    CHECK("forktest", p > 0);
    CHECK("forktest", WIFEXITED(status));
    int code = WEXITSTATUS(status);
    CHECK("forktest", code >= 1 && code <= N && !seen[code]);
    CHECK("forktest", pids[code - 1] == p);
    seen[code] = 1;
  }
  CHECK("forktest", wait(NULL) == -1);      /* ECHILD: none left */
  printf("forktest: ok (%d children)\n", N);
  return 0;
}
