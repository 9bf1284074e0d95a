// The task structure, the task_union, `current`, and the scheduler's API.
//
// Field order follows Linux 2.4.4 on i386 (see kernels/README.md).  This is
// a 64-bit kernel, so the fields in the first two lines are packed as 32-bit
// values (design option (a) of the facts sheet): the eight pre-block words
// fill 0x00-0x1f, and everything the run-queue walk reads for each task --
// counter, nice, policy, mm, has_cpu, processor, cpus_allowed and
// run_list.next -- sits in the one 32-byte line 0x20-0x3f, with has_cpu,
// the first word the walk touches, at 0x30.  Pointers kept as 32 bits are
// complete pointers: the kernel runs identity-mapped below 4 GiB.
#pragma once
#include "list.h"
#include "param.h"
#include "spinlock.h"
#include "types.h"
#include "wait.h"
#include "x86.h"

#define TASK_RUNNING         0
#define TASK_INTERRUPTIBLE   1
#define TASK_UNINTERRUPTIBLE 2
#define TASK_ZOMBIE          4

#define SCHED_OTHER 0
#define SCHED_FIFO  1
#define SCHED_RR    2
#define SCHED_YIELD 0x10

#define TASK_DEAD            8   // a thread that reaps itself (schedule_tail)

// The process fields after comm (0xa8..), and the padding that keeps the
// structure at 2.4's size.  The last 512 bytes are the FPU/SSE save area
// (2.4's thread.i387, an FXSAVE image; fpu.c).
#define TASK_EXT_BYTES (4 * 2 + 8 * 7 + 16 + 24)
#define TASK_I387_BYTES 512
#define TASK_REST_BYTES (1664 - 0xa8 - TASK_EXT_BYTES - TASK_I387_BYTES)

// task_struct.flags (2.4's values where 2.4 has the flag)
#define PF_USEDFPU  0x00100000   // the FPU registers are this task's, live
#define PF_USEDMATH 0x00200000   // i387 holds a state (2.4's used_math)
#define PF_CLIENT   0x01000000   // a client task (partition.c; not 2.4)
#define PF_CLIENT_CHILDREN 0x02000000   // its next children are client tasks

struct mm_struct;        // mm.h
struct files_struct;     // fs.h
struct sem_undo;         // sem.c

struct thread_struct {
  uint64_t rsp;  // saved kernel stack pointer while switched out
};

struct task_struct {
  // line 0x00-0x1f: touched by the current task, wake-ups and entry code
  volatile int32_t state;       // 0x00 -1 unrunnable, 0 runnable, >0 stopped
  uint32_t flags;               // 0x04
  int32_t sigpending;           // 0x08
  uint32_t addr_limit;          // 0x0c
  uint32_t exec_domain;         // 0x10
  volatile int32_t need_resched;// 0x14
  uint16_t ptrace;              // 0x18
  uint8_t wchan;                // 0x1a where it sleeps (waitstat.h; not 2.4)
  uint8_t wchan_counted;        // 0x1b 1 + the channel it is counted in, or 0
  int32_t lock_depth;           // 0x1c

  // line 0x20-0x3f: everything goodness() and the run-queue walk read
  int32_t counter;              // 0x20 ticks left in this epoch
  int32_t nice;                 // 0x24 -20..19
  uint32_t policy;              // 0x28 SCHED_* | SCHED_YIELD
  uint32_t mm;                  // 0x2c struct mm_struct * (32-bit)
  volatile int32_t has_cpu;     // 0x30 running on some CPU (first touched)
  int32_t processor;            // 0x34 last or current CPU
  uint32_t cpus_allowed;        // 0x38 CPU bit mask
  struct list32 run_list;       // 0x3c next (in this line), 0x40 prev

  // line 0x40-0x5f
  uint32_t sleep_time;          // 0x44 jiffies when dequeued
  uint32_t next_task, prev_task;// 0x48 0x4c all-tasks list (task pointers)
  uint32_t active_mm;           // 0x50
  uint32_t binfmt;              // 0x54
  int32_t exit_code, exit_signal;        // 0x58 0x5c
  int32_t pdeath_signal;        // 0x60
  uint32_t personality;         // 0x64
  uint32_t dumpable;            // 0x68
  int32_t pid;                  // 0x6c

  // the rest: 64-bit fields, and the bulk of a 2.4 task_struct
  struct thread_struct thread;  // saved rsp
  uint64_t block;               // base of this task's 8 KiB block
  void (*fn)(void *);           // kernel-thread body and its argument
  void *arg;
  uint64_t nvcsw;               // context switches into this task
  char comm[16];

  // processes and threads in user mode (0xa8 on): 2.4's pid/tgid/parent
  // links, files, the TLS base and the clear-tid word of CLONE_CHILD_CLEARTID
  int32_t tgid;                 // thread group = process id
  int32_t group_exit;           // exit_group(): exit_code is the group's
  struct task_struct *p_pptr;   // parent (init after reparenting)
  struct task_struct *group_leader;
  struct files_struct *files;
  uint64_t fsbase;              // arch_prctl(ARCH_SET_FS)
  uint64_t clear_child_tid;     // user address, or 0
  uint64_t timeout;             // jiffies to wake at, 0 = none (ktimer.c)
  struct list64 timer_link;
  struct wait_queue_head wait_chldexit;  // wait4() sleeps here
  struct sem_undo *semundo;     // SysV semaphore undo records (sem.c)
  uint8_t rest[TASK_REST_BYTES];  // timers, creds, rlimits, ...
  // FXSAVE image of the user FPU/SSE registers while they are not live
  // (16-byte aligned: the structure starts on a cache line)
  uint8_t i387[TASK_I387_BYTES] __attribute__((aligned(16)));
};

// The layout the experiment depends on, checked at compile time: Linux
// 2.4.4's i386 offsets, the walk's fields in the one line 0x20-0x3f, and the
// size of a 2.4 SMP task_struct (about 1.6-1.7 KiB).
#define TASK_STRUCT_SIZE 1664
_Static_assert(offsetof(struct task_struct, need_resched) == 0x14, "need_resched");
_Static_assert(offsetof(struct task_struct, counter) == 0x20, "counter");
_Static_assert(offsetof(struct task_struct, mm) == 0x2c, "mm");
_Static_assert(offsetof(struct task_struct, has_cpu) == 0x30, "has_cpu");
_Static_assert(offsetof(struct task_struct, cpus_allowed) == 0x38, "cpus_allowed");
_Static_assert(offsetof(struct task_struct, run_list.next) == 0x3c, "run_list");
_Static_assert(offsetof(struct task_struct, next_task) == 0x48, "next_task");
_Static_assert(offsetof(struct task_struct, tgid) == 0xa8, "tgid");
_Static_assert(offsetof(struct task_struct, rest) == 0xa8 + TASK_EXT_BYTES, "rest");
_Static_assert(sizeof(struct task_struct) == TASK_STRUCT_SIZE, "task_struct size");
_Static_assert(offsetof(struct task_struct, i387) ==
               TASK_STRUCT_SIZE - TASK_I387_BYTES, "i387 at the end");

// The 8 KiB block: a task_struct near the base, the kernel stack above it.
union task_union {
  struct task_struct task;
  uint64_t stack[THREAD_SIZE / 8];
};

// Coloring (the paper's Fig. 4b, eq. 1): copy the block-address bits just
// above the L2 way size down into the line-offset bits.  The block is 8 KiB
// aligned, so OR and ADD agree.  Every place that maps a block to its task
// -- allocation, `current`, the idle tasks, the self-checks -- calls this.
static inline uint64_t task_color_offset(uint64_t block) {
  return (block >> CONFIG_COLOR_SHIFT) & CONFIG_COLOR_MASK;
}
static inline struct task_struct *task_of_block(uint64_t block) {
  return (struct task_struct *)(block | task_color_offset(block));
}
static inline uint64_t block_of_task(struct task_struct *p) {
  return (uint64_t)p & ~(uint64_t)(THREAD_SIZE - 1);
}
// current: mask the stack pointer to the block base, then color it.
static inline struct task_struct *get_current(void) {
  return task_of_block(read_rsp() & ~(uint64_t)(THREAD_SIZE - 1));
}
#define current get_current()

static inline struct mm_struct *task_mm(struct task_struct *p) {
  return PTR(p->mm);
}
static inline bool task_on_runqueue(struct task_struct *p) {
  return p->run_list.next != 0;
}

// Per-CPU scheduler data, one cache line each (aligned_data in 2.4).
struct schedule_data {
  struct task_struct *curr;
  uint64_t last_schedule; SCHEDULE_DATA_MQ
} __attribute__((aligned(SMP_CACHE_BYTES)));

extern struct schedule_data aligned_data[NR_CPUS];
extern struct task_struct *idle_tasks[NR_CPUS];
extern spinlock_t runqueue_lock;
extern spinlock_t tasklist_lock;
extern struct list32 runqueue_head;
extern struct task_struct *init_task;
extern int nr_running, nr_threads;
extern volatile uint64_t jiffies;
extern uint64_t nr_schedules, nr_recalcs, nr_switches;

#define cpu_curr(cpu) aligned_data[(cpu)].curr
#define smp_processor_id() (current->processor)

// sched.c
void schedule(void);
void schedule_tail(struct task_struct *prev);
int wake_up_process(struct task_struct *p);
int try_to_wake_up(struct task_struct *p, int sync);
void sched_init(void);
// the scheduler's switch half (sched.c, sched_mq.c), shared with partition.c
void prepare_switch(struct task_struct *prev, struct task_struct *next, int cpu);
void release_task(struct task_struct *p);   // exit.c
// partition.c: the client CPUs and tasks, outside the measured machine
extern int nr_server_cpus, nr_client_threads;
extern uint64_t nr_client_switches;
static inline bool cpu_is_client(int cpu) { return cpu >= nr_server_cpus; }
void partition_init(void);
void partition_fork(struct task_struct *parent, struct task_struct *p);
struct task_struct *client_list_head(void);
struct task_struct *first_task_all(void);
struct task_struct *next_task_all(struct task_struct *p);
int client_wake_up(struct task_struct *p);
void client_schedule(void);
void client_schedule_tail(struct task_struct *prev);
long sys_colorsim_client(void);
// rqstat.c: run-queue length at each schedule(), for the region's report
void rqstat_sample(int n);
void rqstat_reset(void);
void rqstat_freeze(void);
void rqstat_report(void);
void rqstat_mark(void);
// lockstat.c: runqueue_lock as the kernel sees it, for the region's report
void lockstat_acquired(int contended);
void lockstat_released(void);
void lockstat_reset(void);
void lockstat_freeze(void);
void lockstat_report(void);
// task.c
struct task_struct *alloc_task_struct(void);
void free_task_struct(struct task_struct *p);
struct task_struct *kernel_thread(void (*fn)(void *), void *arg,
                                  const char *name);
struct task_struct *create_task(void (*fn)(void *), void *arg,
                                const char *name, struct mm_struct *mm);
struct task_struct *kernel_thread_for_user(void (*fn)(void *), void *arg,
                                          const char *name);
struct task_struct *copy_task_struct(const char *name);
void enter_task(struct task_struct *p);
void cpu_idle(void) __attribute__((noreturn));
void task_init_boot(void);
struct task_struct *make_idle_task(int cpu);
void task_selfcheck(struct task_struct *p);
// switch.S
struct task_struct *switch_context(uint64_t *prev_rsp, uint64_t next_rsp,
                                   struct task_struct *prev);
void task_start(void);
// timer.c
void update_process_times(void);
void timer_interrupt(int cpu);

#ifdef CONFIG_SCHED_MQ
// The multi-queue scheduler (kernel/sched_mq.c, mq-scheduler-facts.md §2):
// one run queue per CPU, each with its own lock, and a summary that other
// CPUs read without the lock -- the best task waiting here that is not
// running (max_na_*).  Field order of the 2.4.7 patch; with 32-bit task
// pointers and list links (as on i386) the element is exactly 32 bytes, one
// P6 line, and it is padded to a line of its own.
#define MIN_NA_GOODNESS (-10000)   // "no candidate" (NA_GOODNESS_INIT, 2.4.7)
struct runqueue_data {
  int32_t nt_running;            // tasks on this queue
  int32_t max_na_goodness;       // na_goodness of max_na_ptr, or MIN_NA_GOODNESS
  uint32_t max_na_ptr;           // struct task_struct * (32-bit), or 0
  uint32_t max_na_cpus_allowed;  // copy of its cpus_allowed
  struct list32 runqueue;        // head: tasks whose processor is this CPU
  int32_t running_non_idle;      // this CPU runs something other than idle
  spinlock_t runqueue_lock;      // guards all of the above (writes)
} __attribute__((aligned(SMP_CACHE_BYTES)));
_Static_assert(offsetof(struct runqueue_data, runqueue_lock) + sizeof(spinlock_t) == 32,
               "runqueue_data is one 32-byte line, as on i386");

extern struct runqueue_data runqueue_data[NR_CPUS];
extern uint64_t nr_steals, nr_premature_idle, nr_wakeup_moves, nr_balanced;
// 2.4.7 MQ replaces the global count by a sum over the queues.
int nr_running_mq(void);
#define nr_running nr_running_mq()
#endif
