/* fputest: each process keeps its own SSE registers and MXCSR.
 *   - 8 children, more than the CPUs, each load their own pattern into
 *     xmm0-xmm14 and their own rounding mode into MXCSR, then loop: yield
 *     (a system call and, with 8 runnable, a switch to another process),
 *     spin (so the tick preempts them on the way back to user mode), and
 *     check all 15 registers and MXCSR.  Every other child does the same
 *     with other values, so a kernel that does not save and restore the
 *     FPU/SSE state at a context switch hands a process another one's
 *     registers, and the check fails;
 *   - then a child forked after the parent set its MXCSR starts with the
 *     parent's (fork copies the FPU state).
 * Compilers keep values in xmm registers (struct copies, doubles), so a
 * lost register is a corrupted variable: a wrong descriptor, a wrong
 * pointer.  Runs on the testbed and on a Linux host. */
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define T "fputest"
#define N 8
#define ROUNDS 60
#define SPIN 20000

/* The pattern, one 16-byte value per register: xmm_i = pattern ^ i. */
static uint32_t pat[15][4] __attribute__((aligned(16)));

#define LOAD(i) "movdqa " #i "*16(%[p]), %%xmm" #i "\n\t"
#define CHECKREG(i)                                                    \
  "movdqa %%xmm" #i ", %%xmm15\n\t"                                    \
  "pcmpeqd " #i "*16(%[p]), %%xmm15\n\t"                               \
  "pmovmskb %%xmm15, %%eax\n\t"                                        \
  "cmp $0xffff, %%eax\n\t"                                             \
  "jne 3f\n\t"

/* Load the registers once, then ROUNDS x (yield, spin, check).  Returns
 * the number of rounds that passed: ROUNDS when no register changed. */
static long
hold_registers(void)
{
  long rounds = 0;
  __asm__ volatile(
      LOAD(0) LOAD(1) LOAD(2) LOAD(3) LOAD(4) LOAD(5) LOAD(6) LOAD(7)
      LOAD(8) LOAD(9) LOAD(10) LOAD(11) LOAD(12) LOAD(13) LOAD(14)
      "1:\n\t"
      "mov $24, %%eax\n\t"                 /* sched_yield */
      "syscall\n\t"
      "mov $" "20000" ", %%edx\n\t"
      "2: dec %%edx\n\t"
      "jnz 2b\n\t"
      CHECKREG(0) CHECKREG(1) CHECKREG(2) CHECKREG(3) CHECKREG(4)
      CHECKREG(5) CHECKREG(6) CHECKREG(7) CHECKREG(8) CHECKREG(9)
      CHECKREG(10) CHECKREG(11) CHECKREG(12) CHECKREG(13) CHECKREG(14)
      "inc %[r]\n\t"
      "cmp %[n], %[r]\n\t"
      "jl 1b\n\t"
      "3:\n\t"
      : [r] "+r"(rounds)
      : [p] "r"(pat), [n] "i"(ROUNDS)
      : "rax", "rcx", "rdx", "r11", "memory", "cc", "xmm0", "xmm1", "xmm2",
        "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
  return rounds;
}

static uint32_t get_mxcsr(void) { uint32_t m; __asm__ volatile("stmxcsr %0" : "=m"(m)); return m; }
static void set_mxcsr(uint32_t m) { __asm__ volatile("ldmxcsr %0" ::"m"(m)); }

static int
child(int id)
{
  for (int i = 0; i < 15; i++)
    for (int j = 0; j < 4; j++)
      pat[i][j] = 0x9E3779B9u * (uint32_t)(id + 1) ^ (uint32_t)(i << 8 | j);
  uint32_t mx = (get_mxcsr() & ~0x6000u) | (uint32_t)(id & 3) << 13;   /* RC */
  set_mxcsr(mx);
  long r = hold_registers();
  if (r != ROUNDS) {
    printf(T ": FAIL child %d: an xmm register changed after %ld of %d rounds\n",
           id, r, ROUNDS);
    return 1;
  }
  if (get_mxcsr() != mx) {
    printf(T ": FAIL child %d: MXCSR %#x, set %#x\n", id, get_mxcsr(), mx);
    return 1;
  }
  return 0;
}

int
main(void)
{
  pid_t p;
  int st;
  for (int i = 0; i < N; i++) {
    p = fork();
    CHECK(T, p >= 0);
    if (p == 0)
      _exit(child(i));
  }
  int bad = 0;
  for (int i = 0; i < N; i++) {
    CHECK(T, wait(&st) > 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      bad++;
  }
  CHECK(T, bad == 0);
  /* fork copies the FPU state: a child sees the parent's MXCSR. */
  uint32_t mx = (get_mxcsr() & ~0x6000u) | 0x4000u;    /* round up */
  set_mxcsr(mx);
  p = fork();
  CHECK(T, p >= 0);
  if (p == 0)
    _exit(get_mxcsr() == mx ? 0 : 1);
  CHECK(T, waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  CHECK(T, get_mxcsr() == mx);

  printf(T ": ok (%d processes x %d rounds kept their xmm registers and MXCSR)\n",
         N, ROUNDS);
  return 0;
}
