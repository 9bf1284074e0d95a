/* m5roi.h: mark a region of interest from a user program.
 *
 * On the colorsim testbed kernel these are one system call each (number
 * SYS_colorsim_m5, outside Linux's range); the kernel issues gem5's
 * address-form m5 operation and prints the same "roi:" console lines as
 * the built-in workload.  On a real Linux host the call fails with ENOSYS
 * and the program carries on, so the same binary is its own functional
 * test there.  Why a system call and not a user mapping of the m5 page:
 * the bus monitor recognises the op by its virtual address (0xFFFF0000 +
 * func << 8), which lies in the kernel's half of every address space, and
 * the kernel also records the scheduler counts of the region.
 */
#ifndef COLORSIM_M5ROI_H
#define COLORSIM_M5ROI_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SYS_colorsim_m5 0x4d35
#define M5_EXIT 0x21
#define M5_RESET_STATS 0x40
#define M5_DUMP_STATS 0x41
#define M5_WORK_BEGIN 0x5a
#define M5_WORK_END 0x5b

/* Real Linux 2.4 in the suite (kernels/linux24/) has no such call: its
 * init (workloads/linux24/l24web.c) sets COLORSIM_M5_PAGE, and the op is
 * then the load itself, from /dev/mem's page at physical 0xFFFF0000
 * mapped at the same virtual address (user space on x86_64, where the bus
 * monitor recognises it), with the "roi:" line the testbed kernel would
 * print.  On i386 that address is the kernel's, so the page is mapped at
 * 0xB0000000, the bus monitor's m5base= for the i386 images, and read
 * with one 8-byte MMX load (the monitor takes 8-byte loads only), as
 * l24tasks does.  A host never sets it, so there the call still fails. */
#define M5_PAGE 0xFFFF0000ul
#if defined(__i386__)
#define M5_PAGE_VADDR 0xB0000000ul
#else
#define M5_PAGE_VADDR M5_PAGE
#endif

static inline void m5_page_load(const volatile unsigned long *at)
{
#if defined(__i386__)
  __asm__ volatile("movq (%0), %%mm0\n\temms" : : "r"(at) : "memory");
#else
  (void)*at;
#endif
}

/* A mark inside the region (m5_mark below). */
#define M5_MARK 0x100

/* Linux 2.4's scheduler counts (kernel/colorsim_rq.c, in the suite's
 * run-queue patch, with the client partition): at the region's start the
 * program starts the kernel's new epoch, and at its marks and end prints
 * the counts in the testbed kernel's words ("roi: begin/mark/end" and
 * "rq:" lines; the testbed prints them itself), so a run on either kernel
 * shows the run queue its schedule() calls walked
 * (colorsim/run/console.py).  -1 where the kernel has no such file. */
#define M5_SCHED_PROC "/proc/colorsim_rq"
/* ... and where the other tasks slept (kernel/colorsim_wait.c): its epoch
 * starts with the region and its "wait:" line, already in the testbed's
 * words, is printed after the end's.  Nothing where the kernel lacks it. */
#define M5_WAIT_PROC "/proc/colorsim_wait"
static inline void m5_page_waits(int op)
{
  char line[512];
  FILE *f;
  int fd;
  if (op == M5_RESET_STATS) {
    fd = open(M5_WAIT_PROC, O_WRONLY);
    if (fd >= 0) {
      if (write(fd, "reset\n", 6) != 6)
        fprintf(stderr, "m5roi: %s: no new epoch\n", M5_WAIT_PROC);
      close(fd);
    }
    return;
  }
  f = fopen(M5_WAIT_PROC, "r");
  if (!f)
    return;
  if (fgets(line, sizeof line, f) && strncmp(line, "wait: ", 6) == 0)
    fputs(line, stdout);
  fclose(f);
}
static inline int m5_page_sched(int op)
{
  unsigned long j, s, w, c, sum, max;
  int nr, ok, fd;
  char line[512], hist[384];
  FILE *f;
  if (op == M5_RESET_STATS) {
    fd = open(M5_SCHED_PROC, O_WRONLY);
    if (fd < 0)
      return -1;
    ok = write(fd, "reset\n", 6) == 6;
    close(fd);
    if (!ok)
      return -1;
    m5_page_waits(op);
  }
  f = fopen(M5_SCHED_PROC, "r");
  if (!f)
    return -1;
  ok = fgets(line, sizeof line, f) &&
      sscanf(line, "jiffies %lu schedules %lu switches %lu recalcs %lu nr_running %d "
             "sum %lu max %lu hist %383[^\n]", &j, &s, &w, &c, &nr, &sum, &max, hist) == 8;
  fclose(f);
  if (!ok)
    return -1;
  if (op == M5_RESET_STATS)
    printf("roi: begin at jiffies %lu\n", j);
  else if (op == M5_MARK)
    printf("roi: mark at jiffies %lu: schedules %lu switches %lu recalcs %lu nr_running %d\n"
           "rq: mark samples %lu sum %lu max %lu\n", j, s, w, c, nr, s, sum, max);
  else
    printf("roi: end at jiffies %lu: schedules %lu switches %lu recalcs %lu nr_running %d\n"
           "rq: samples %lu sum %lu max %lu hist %s\n", j, s, w, c, nr, s, sum, max, hist);
  if (op == M5_DUMP_STATS)
    m5_page_waits(op);
  fflush(stdout);
  return 0;
}

static inline long m5_page_op(int op)
{
  static volatile unsigned long *page;
  if (!page) {
    int fd = open("/dev/mem", O_RDONLY);
    void *p = fd < 0 ? MAP_FAILED :
        mmap((void *)M5_PAGE_VADDR, 0x10000, PROT_READ, MAP_SHARED | MAP_FIXED, fd,
             M5_PAGE);
    if (fd >= 0)
      close(fd);
    if (p != (void *)M5_PAGE_VADDR)
      return -1;
    page = p;
  }
  if (op == M5_DUMP_STATS || op == M5_EXIT)   /* the region ends at the load */
    m5_page_load(&page[((unsigned)op << 8) / sizeof *page]);
  if (op == M5_RESET_STATS)
    m5_page_sched(op);
  printf("roi: %s\n", op == M5_RESET_STATS ? "resetstats"
         : op == M5_DUMP_STATS ? "dumpstats" : "exit");
  fflush(stdout);
  if (op == M5_RESET_STATS)                   /* ... and begins after the line */
    m5_page_load(&page[((unsigned)op << 8) / sizeof *page]);
  if (op == M5_DUMP_STATS)
    m5_page_sched(op);
  return 0;
}

/* 0 on the testbed (and on Linux 2.4 under the suite's init), -1 (errno
 * ENOSYS) anywhere else. */
static inline long m5_op(int op)
{
  if (syscall(SYS_colorsim_m5, op) == 0)
    return 0;
  if (errno == ENOSYS && getenv("COLORSIM_M5_PAGE"))
    return m5_page_op(op);
  return -1;
}
static inline long m5_reset_stats(void) { return m5_op(M5_RESET_STATS); }
static inline long m5_dump_stats(void) { return m5_op(M5_DUMP_STATS); }
static inline long m5_exit(void) { return m5_op(M5_EXIT); }
/* A unit of work begins (1) or ends (0): the bus monitor's working-set
 * window on this CPU.  The testbed only (no /dev/mem fallback). */
static inline long m5_work(int begin)
{
  return syscall(SYS_colorsim_m5, begin ? M5_WORK_BEGIN : M5_WORK_END);
}

/* A mark inside the region: the testbed kernel prints the scheduler's
 * counts and the run queue's samples since the region began ("roi: mark",
 * "rq: mark"), so a reader sees whether the region was steady; on Linux
 * 2.4 the program prints the same from the kernel's counts
 * (m5_page_sched).  No engine sees it. */
static inline long m5_mark(void)
{
  if (syscall(SYS_colorsim_m5, M5_MARK) == 0)
    return 0;
  if (errno == ENOSYS && getenv("COLORSIM_M5_PAGE"))
    return m5_page_sched(M5_MARK);
  return -1;
}

/* The caller's next children are client tasks: on the testbed with client
 * CPUs (colorsim run --client-cpus) they run there, outside the measured
 * machine, and reach the server through its network cards.  0 then;
 * -1 with ENODEV on a testbed without client CPUs, ENOSYS elsewhere. */
#define SYS_colorsim_client 0x4d36
static inline long colorsim_client(void) { return syscall(SYS_colorsim_client); }

#endif
