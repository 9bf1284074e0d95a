/* l24tasks: /init for real Linux 2.4 (kernels/linux24/).  The built-in
 * workload's shape in user space: N processes that compute a burst over
 * their own small buffer and yield, so the run queue stays about N long,
 * while init marks the region of interest with gem5's address-form m5 ops.
 *
 * Settings come from the kernel command line: Linux hands init every
 * "name=value" word it does not know as an environment variable.
 *   tasks=N burst=N buffer=BYTES warmup=TICKS roi=TICKS   (ticks of 10 ms)
 *
 * The m5 ops: /dev/mem's page at physical 0xFFFF0000 (BIOS ROM) is mapped
 * at the same virtual address, which lies in user space on x86_64 (on
 * i386, where it is the kernel's, at 0xB0000000: the layout tells the bus
 * monitor, m5base=); the bus monitor recognises an 8-byte load from that
 * base + (func << 8) by its virtual address, and gem5 executes it (its
 * X86Board's m5-op range, by the physical address).  On
 * QEMU the run ends through the isa-debug-exit port 0xf4 (ioperm: init runs
 * as root); on gem5 the m5 exit before it ends the run. */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/io.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "l24exit.h"

#define M5_BASE 0xFFFF0000ul        /* physical */
#if defined(__x86_64__)
#define M5_VADDR M5_BASE
#else
#define M5_VADDR 0xB0000000ul       /* i386: below the kernel's 3 GiB */
#endif
#define M5_EXIT 0x21
#define M5_RESET_STATS 0x40
#define M5_DUMP_STATS 0x41
#define M5_CHECKPOINT 0x43

static volatile uint64_t *m5page;

static long setting(const char *name, long dflt, long lo, long hi)
{
  const char *v = getenv(name);
  long x = v ? strtol(v, NULL, 0) : dflt;
  if (x < lo || x > hi) {
    printf("init: %s=%ld out of range %ld..%ld\n", name, x, lo, hi);
    exit(2);
  }
  return x;
}

/* gem5 reads an op's two arguments (delay, period) from rdi and rsi:
 * zero means now and once, as the testbed kernel's m5op.h passes them. */
static void m5_op(unsigned func)
{
  const volatile uint64_t *at = &m5page[(func << 8) / sizeof *m5page];
#if defined(__x86_64__)
  uint64_t r;
  __asm__ volatile("xor %%edi, %%edi\n\txor %%esi, %%esi\n\tmovq (%1), %0"
                   : "=r"(r) : "r"(at) : "rdi", "rsi", "memory");
  (void)r;
#else
  /* i386 (QEMU only: gem5 loads no 32-bit kernel): one 8-byte load, MMX's */
  __asm__ volatile("movq (%0), %%mm0\n\temms" : : "r"(at) : "memory");
#endif
}

static void sleep_ticks(long ticks)
{
  struct timespec ts = {ticks / 100, (ticks % 100) * 10000000L};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

/* One burst over the buffer.  Out of line and not cloned, so that its
 * entry is one address: colorsim run --timing counts its calls as units of
 * work (busmon unit=, the address from this program's symbol table). */
__attribute__((noipa)) static unsigned compute(unsigned char *buf, long burst,
                                              long bytes, unsigned sum)
{
  for (long i = 0; i < burst; i++)
    sum += buf[i % bytes] += (unsigned char)sum;
  return sum;
}

/* One task: wait at the gate until every task exists, then compute over
 * a private buffer and give the CPU away, for ever. */
static void task(int gate, long burst, long bytes)
{
  unsigned char *buf = malloc(bytes);
  unsigned sum = 0;
  char c;
  memset(buf, 1, bytes);
  while (read(gate, &c, 1) < 0)
    ;
  close(gate);
  for (;;) {
    sum = compute(buf, burst, bytes, sum);
    sched_yield();
  }
}

int main(void)
{
  long tasks = setting("tasks", 64, 1, 4000);
  long burst = setting("burst", 2000, 1, 100000000);
  long bytes = setting("buffer", 256, 8, 4096);
  long warmup = setting("warmup", 10, 1, 100000);
  long roi = setting("roi", 10, 1, 100000);
  setvbuf(stdout, NULL, _IONBF, 0);

  int fd = open("/dev/mem", O_RDONLY);
  void *p = fd < 0 ? MAP_FAILED :
      mmap((void *)M5_VADDR, 0x10000, PROT_READ, MAP_SHARED | MAP_FIXED, fd, M5_BASE);
  if (p != (void *)M5_VADDR) {
    printf("init: cannot map the m5-op page from /dev/mem\n");
    machine_exit();
  }
  m5page = p;

  printf("workload: %ld tasks, burst %ld, buffer %ld B\n", tasks, burst, bytes);
  /* The tasks sleep on a pipe until the last one is forked: forking under
   * a run queue that grows by one runnable task per fork would make every
   * fork pay a walk of all the tasks before it (quadratic in N). */
  int gate[2];
  if (pipe(gate) != 0) {
    printf("init: pipe failed\n");
    machine_exit();
  }
  for (long i = 0; i < tasks; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      close(gate[1]);
      task(gate[0], burst, bytes);
    }
    if (pid < 0) {
      printf("init: fork %ld failed\n", i);
      machine_exit();
    }
  }
  /* The region's length is init's: it sleeps warmup, then roi ticks.  As
   * a normal task, init runs again only when goodness() picks it among N
   * runnable tasks, which takes from nothing to a whole epoch (a run whose
   * init happened to wait measured four times as long a region).  As a
   * real-time task, it runs at the first schedule() after its timer, and
   * the region is its ticks.  The tasks, forked already, stay normal.
   * (musl does not wrap sched_setscheduler: the raw call.) */
  struct sched_param rt = {.sched_priority = 1};
  if (syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &rt) != 0) {
    printf("init: cannot become SCHED_FIFO\n");
    machine_exit();
  }
  close(gate[0]);
  close(gate[1]);            /* end of file: every task's read returns */
  /* Booted and forked: gem5 checkpoints here, so that its measured runs
   * restore into their detailed CPUs; QEMU's bus monitor ignores it. */
  m5_op(M5_CHECKPOINT);
  sleep_ticks(warmup);
  printf("roi: resetstats\n");
  m5_op(M5_RESET_STATS);
  sleep_ticks(roi);
  m5_op(M5_DUMP_STATS);
  printf("roi: dumpstats\n");
  printf("roi: exit requested by pid %d\n", (int)getpid());
  m5_op(M5_EXIT);
  machine_exit();
}
