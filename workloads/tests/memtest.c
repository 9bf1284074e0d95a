/* memtest: brk grows and shrinks the heap; anonymous mmap gives zeroed
 * memory that munmap takes away; large malloc works; a shared anonymous
 * mapping is the same memory in a forked child (Apache's scoreboard), also
 * after part of it is unmapped, and its pages outlive the child. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

static uintptr_t brk_to(uintptr_t a) { return (uintptr_t)syscall(SYS_brk, a); }

int main(void)
{
  uintptr_t b0 = brk_to(0);
  CHECK("memtest", b0 != 0);
  uintptr_t b1 = brk_to(b0 + 3 * 4096 + 100);
  CHECK("memtest", b1 == b0 + 3 * 4096 + 100);
  memset((void *)b0, 0xab, 3 * 4096 + 100);
  CHECK("memtest", ((unsigned char *)b0)[3 * 4096 + 99] == 0xab);
  CHECK("memtest", brk_to(b0) == b0);               /* shrink back */

  size_t len = 5 * 4096;
  unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK("memtest", m != MAP_FAILED);
  for (size_t i = 0; i < len; i++)
    CHECK("memtest", m[i] == 0);
  for (size_t i = 0; i < len; i++)
    m[i] = (unsigned char)(i * 13);
  for (size_t i = 0; i < len; i++)
    CHECK("memtest", m[i] == (unsigned char)(i * 13));
  CHECK("memtest", munmap(m + 4096, 4096) == 0);    /* a hole */
  CHECK("memtest", m[0] == 0 && m[2 * 4096] == (unsigned char)(2 * 4096 * 13));
  CHECK("memtest", munmap(m, len) == 0);

  char *big = malloc(1 << 20);                      /* mmap'ed by musl */
  CHECK("memtest", big != NULL);
  memset(big, 1, 1 << 20);
  long sum = 0;
  for (int i = 0; i < (1 << 20); i += 4096)
    sum += big[i];
  CHECK("memtest", sum == 256);
  free(big);

  /* shared: the children write, the parent reads */
  size_t slen = 4 * 4096;
  volatile unsigned *sh = mmap(NULL, slen, PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK("memtest", sh != MAP_FAILED && sh[0] == 0 && sh[slen / 4 - 1] == 0);
  sh[1] = 7;                                         /* touched before fork */
  for (unsigned k = 0; k < 3; k++) {
    pid_t pid = fork();
    CHECK("memtest", pid >= 0);
    if (pid == 0) {
      CHECK("memtest", sh[1] == 7 + k);                 /* sees the parent's */
      sh[1] = 8 + k;
      sh[1024 * (k + 1)] = 100 + k;                    /* a page the parent never touched */
      _exit(0);
    }
    int st;
    CHECK("memtest", waitpid(pid, &st, 0) == pid && st == 0);
    CHECK("memtest", sh[1] == 8 + k && sh[1024 * (k + 1)] == 100 + k);
  }
  volatile unsigned *priv = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK("memtest", priv != MAP_FAILED);
  priv[0] = 1;
  if (fork() == 0) {                                   /* private stays private */
    priv[0] = 2;
    _exit(0);
  }
  wait(NULL);
  CHECK("memtest", priv[0] == 1);
  CHECK("memtest", munmap((void *)(sh + 1024), 4096) == 0);   /* split the area */
  if (fork() == 0) {
    sh[3 * 1024] = 42;                                 /* the tail, shared still */
    _exit(0);
  }
  wait(NULL);
  CHECK("memtest", sh[3 * 1024] == 42 && sh[2 * 1024] == 101);
  CHECK("memtest", munmap((void *)sh, slen) == 0);
  printf("memtest: ok\n");
  return 0;
}
