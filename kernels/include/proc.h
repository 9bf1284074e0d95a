// Processes: fork/clone, exec, exit/wait, futexes, sleeping with a timeout.
#pragma once
#include "types.h"

struct task_struct;
struct trapframe;

#define CLONE_VM             0x00000100
#define CLONE_FS             0x00000200
#define CLONE_FILES          0x00000400
#define CLONE_SIGHAND        0x00000800
#define CLONE_VFORK          0x00004000
#define CLONE_THREAD         0x00010000
#define CLONE_SETTLS         0x00080000
#define CLONE_PARENT_SETTID  0x00100000
#define CLONE_CHILD_CLEARTID 0x00200000
#define CLONE_CHILD_SETTID   0x01000000

// fork.c
long do_clone(struct trapframe *tf, uint64_t flags, uint64_t newsp,
              uint64_t ptid, uint64_t ctid, uint64_t tls);
// exec.c
long do_execve(const char *path, char *const kargv[], int argc);
long sys_execve(uint64_t path, uint64_t argv, uint64_t envp);
void start_init(const char *path);
// exit.c
void do_exit(int code) __attribute__((noreturn));
void force_exit(int sig) __attribute__((noreturn));
long sys_exit_group(long code);
long sys_wait4(long pid, uint64_t status, long options, uint64_t rusage);
// futex.c
void futex_init(void);
long sys_futex(uint64_t uaddr, long op, long val, uint64_t timeout,
               uint64_t uaddr2, long val3);
long futex_wake(uint64_t uaddr, int n);
// sem.c: give back this task's SEM_UNDO adjustments
void sem_exit(void);
void sem_report(void);
// ktimer.c
void add_timeout(struct task_struct *p, uint64_t ticks);
void del_timeout(struct task_struct *p);
void run_timeouts(uint64_t now);
long schedule_timeout(uint64_t ticks);
uint64_t timespec_to_ticks(uint64_t sec, uint64_t nsec);
