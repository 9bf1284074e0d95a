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

#include <unistd.h>
#include <sys/syscall.h>

#define SYS_colorsim_m5 0x4d35
#define M5_EXIT 0x21
#define M5_RESET_STATS 0x40
#define M5_DUMP_STATS 0x41

/* 0 on the testbed, -1 (errno ENOSYS) anywhere else. */
static inline long m5_op(int op) { return syscall(SYS_colorsim_m5, op); }
static inline long m5_reset_stats(void) { return m5_op(M5_RESET_STATS); }
static inline long m5_dump_stats(void) { return m5_op(M5_DUMP_STATS); }
static inline long m5_exit(void) { return m5_op(M5_EXIT); }

/* The caller's next children are client tasks: on the testbed with client
 * CPUs (colorsim run --client-cpus) they run there, outside the measured
 * machine, and reach the server through its network cards.  0 then;
 * -1 with ENODEV on a testbed without client CPUs, ENOSYS elsewhere. */
#define SYS_colorsim_client 0x4d36
static inline long colorsim_client(void) { return syscall(SYS_colorsim_client); }

#endif
