// Compile-time limits and the Linux 2.4 scheduler constants (i386 values).
#pragma once

#define NR_CPUS       16       // CPUs the testbed brings online at most (the
                               // server's and the client partition's)
#define NR_WORKLOAD_MAX 4096   // workload processes (colorsim/runspec.py agrees)
#define PAGE_SIZE     4096
#define PAGE_SHIFT    12
#define THREAD_SIZE   8192     // task_union: task_struct + kernel stack
#define KERNEL_STACK_MIN 4096  // stack a colored task_struct must leave free
                               // (colorsim/variants.py reads this line)
#define CMDLINE_MAX   1024     // bytes of the kernel command line with its
                               // NUL; a longer one is refused at boot (and by
                               // colorsim/describe/runspec.py, which reads
                               // this line, before boot)
#define INITARGS_MAX  512      // bytes of initargs= with its NUL (likewise)
#define MAX_ORDER     11       // buddy orders 0..10 (4 KiB .. 4 MiB)
#define MAX_PHYS      (2UL << 30)  // RAM above 2 GiB is ignored
#define PHYS_FREE_START (4UL << 20) // the page allocator starts here (or at
                                   // the kernel's end if that is higher), so
                                   // a growing kernel image does not move the
                                   // task blocks, and with them the results

#define HZ            100      // timer ticks per second
#define PROC_CHANGE_PENALTY 15 // goodness bonus for staying on the same CPU
#define DEF_COUNTER   10       // init_task's counter (10 * HZ / 100)
#define MAX_COUNTER   20

// NICE_TO_TICKS: TICK_SCALE(20 - nice) + 1 with TICK_SCALE(x) = x >> 2 at HZ=100.
#define NICE_TO_TICKS(nice) (((20 - (nice)) >> 2) + 1)

// Variant parameters come from the build (colorsim/variants.py -> SConscript).
#ifndef CONFIG_COLORS
#define CONFIG_COLORS      1
#endif
#ifndef CONFIG_COLOR_SHIFT
#define CONFIG_COLOR_SHIFT 0
#endif
#ifndef CONFIG_COLOR_MASK
#define CONFIG_COLOR_MASK  0x0
#endif
#ifndef CONFIG_LINE_SIZE
#define CONFIG_LINE_SIZE   32
#endif
#define SMP_CACHE_BYTES    CONFIG_LINE_SIZE
// The multi-queue scheduler (kernel/sched_mq.c) keeps the running task's
// na_goodness in each CPU's schedule_data line, beside curr and
// last_schedule, as the 2.4.7 MQ patch does (mq-scheduler-facts.md §2).
// A macro at the end of that struct's last line, so that the linux24 image,
// debug lines included, stays the same bytes.
#ifdef CONFIG_SCHED_MQ
#define SCHEDULE_DATA_MQ int32_t curr_na_goodness;
#else
#define SCHEDULE_DATA_MQ
#endif
