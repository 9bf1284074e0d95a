/* isolation: a child's writes to a global, the heap and the stack do not
 * change the parent's copies (fork copies the address space). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

int global = 1;

int main(void)
{
  int local = 2;
  char *heap = malloc(64);
  CHECK("isolation", heap != NULL);
  strcpy(heap, "parent");
  pid_t p = fork();
  CHECK("isolation", p >= 0);
  if (p == 0) {
    global = 42;
    local = 43;
    strcpy(heap, "child");
    _exit(global == 42 && local == 43 && !strcmp(heap, "child") ? 5 : 6);
  }
  int status;
  CHECK("isolation", waitpid(p, &status, 0) == p);
  CHECK("isolation", WIFEXITED(status) && WEXITSTATUS(status) == 5);
  CHECK("isolation", global == 1);
  CHECK("isolation", local == 2);
  CHECK("isolation", strcmp(heap, "parent") == 0);
  printf("isolation: ok\n");
  return 0;
}
