/* init: the image's /init.  Runs every test program in turn (fork, exec,
 * wait) and exits 0 only if all of them did. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *tests[] = {"forktest", "exectest", "isolation", "threads",
                              "memtest", "filetest", "misctest", "faulttest",
                              "pipetest", "socktest", "fputest", "semtest"};

int main(void)
{
  int failed = 0;
  for (unsigned i = 0; i < sizeof tests / sizeof tests[0]; i++) {
    char path[64];
    snprintf(path, sizeof path, "/bin/%s", tests[i]);
    pid_t p = fork();
    if (p == 0) {
      char *argv[] = {path, NULL}, *envp[] = {NULL};
      execve(path, argv, envp);
      _exit(127);
    }
    int status = -1;
    if (p < 0 || waitpid(p, &status, 0) != p || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      printf("init: %s FAILED (status %d)\n", tests[i], status);
      failed++;
    }
  }
  printf("init: %s\n", failed ? "some tests failed" : "all tests passed");
  return failed ? 1 : 0;
}
