/* exectest: fork, exec /bin/hello from the image with arguments, check
 * its exit code; an exec of a missing file fails with ENOENT. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

int main(int argc, char **argv)
{
  const char *dir = argc > 1 ? argv[1] : "/bin";   /* host: the build dir */
  char path[256];
  snprintf(path, sizeof path, "%s/hello", dir);
  char *args[] = {path, "one", "two", NULL};
  char *env[] = {NULL};
  pid_t p = fork();
  CHECK("exectest", p >= 0);
  if (p == 0) {
    execve(path, args, env);
    _exit(99);
  }
  int status;
  CHECK("exectest", waitpid(p, &status, 0) == p);
  CHECK("exectest", WIFEXITED(status) && WEXITSTATUS(status) == 7);
  CHECK("exectest", execve("/no/such/program", args, env) == -1 && errno == ENOENT);
  printf("exectest: ok\n");
  return 0;
}
