// System calls: Linux's x86_64 numbers and conventions (number in rax,
// arguments in rdi rsi rdx r10 r8 r9, result or -errno in rax), so that
// ordinary static C programs (musl) run unchanged.  Also the way back to
// user mode, where 2.4 checks need_resched and pending signals.
#include "errno.h"
#include "kernel.h"
#include "mm.h"
#include "proc.h"
#include "sched.h"
#include "user.h"

// A colorsim call, outside Linux's range: the m5 region-of-interest
// operations for user programs (workloads/include/m5roi.h).  On a real
// Linux host it is -ENOSYS, so the same programs run there unchanged.
#define SYS_colorsim_m5 0x4d35
// Another: the caller's next children are clients, on the client CPUs
// (partition.c; workloads/include/m5roi.h).
#define SYS_colorsim_client 0x4d36

long sys_read(long, uint64_t, uint64_t);
long sys_write(long, uint64_t, uint64_t);
long sys_open(uint64_t, long, long);
long sys_openat(long, uint64_t, long, long);
long sys_close(long);
long sys_stat(uint64_t, uint64_t);
long sys_fstat(long, uint64_t);
long sys_newfstatat(long, uint64_t, uint64_t, long);
long sys_lseek(long, long, long);
long sys_ioctl(long, long, uint64_t);
long sys_readv(long, uint64_t, long);
long sys_writev(long, uint64_t, long);
long sys_sched_yield(void);
long sys_nanosleep(uint64_t req, uint64_t rem);
long sys_clock_nanosleep(long clk, long flags, uint64_t req, uint64_t rem);
long sys_clock_gettime(long clk, uint64_t ts);
long sys_arch_prctl(long code, uint64_t addr);
long roi_user_op(long op);
// pipes, poll, descriptors (pipe.c, poll.c, fd.c)
long sys_pipe(uint64_t);
long sys_pipe2(uint64_t, long);
long sys_poll(uint64_t, long, long);
long sys_select(long, uint64_t, uint64_t, uint64_t, uint64_t);
long sys_dup(long);
long sys_dup2(long, long);
long sys_dup3(long, long, long);
long sys_fcntl(long, long, long);
long sys_flock(long, long);                // locks.c
// sockets (socket.c)
long sys_socket(long, long, long);
long sys_connect(long, uint64_t, long);
long sys_accept(long, uint64_t, uint64_t);
long sys_accept4(long, uint64_t, uint64_t, long);
long sys_sendto(long, uint64_t, uint64_t, long, uint64_t, long);
long sys_recvfrom(long, uint64_t, uint64_t, long, uint64_t, uint64_t);
long sys_shutdown(long, long);
long sys_bind(long, uint64_t, long);
long sys_listen(long, long);
long sys_getsockname(long, uint64_t, uint64_t);
long sys_getpeername(long, uint64_t, uint64_t);
long sys_setsockopt(long, long, long, uint64_t, long);
long sys_getsockopt(long, long, long, uint64_t, uint64_t);
// System V semaphores (sem.c)
long sys_semget(long, long, long);
long sys_semop(long, uint64_t, long);
long sys_semctl(long, long, long, uint64_t);

// Each unknown number is reported once: a missing call is visible, and a
// program that probes one in a loop does not flood the console.
static uint8_t enosys_seen[1024];

static long
enosys(long nr)
{
  uint64_t slot = (uint64_t)nr < sizeof enosys_seen ? (uint64_t)nr : sizeof enosys_seen - 1;
  if (!__atomic_exchange_n(&enosys_seen[slot], 1, __ATOMIC_SEQ_CST))
    printk("syscall: %ld is not implemented (-ENOSYS), first from pid %d (%s)\n",
           nr, current->pid, current->comm);
  return -ENOSYS;
}

static long
dispatch(struct trapframe *tf)
{
  uint64_t a = tf->rdi, b = tf->rsi, c = tf->rdx, d = tf->r10, e = tf->r8, f = tf->r9;
  struct task_struct *me = current;
  switch (tf->rax) {
  case 0:   return sys_read(a, b, c);
  case 1:   return sys_write(a, b, c);
  case 2:   return sys_open(a, b, c);
  case 3:   return sys_close(a);
  case 4:   return sys_stat(a, b);
  case 5:   return sys_fstat(a, b);
  case 6:   return sys_stat(a, b);                   // lstat: no symlinks
  case 7:   return sys_poll(a, b, c);
  case 8:   return sys_lseek(a, b, c);
  case 9:   return do_mmap(a, b, c, d, e, f);
  case 10:  return do_mprotect(a, b, c);
  case 11:  return do_munmap(a, b);
  case 12:  return do_brk(a);
  case 13:  return 0;                                // rt_sigaction: no signals
  case 14:  return 0;                                // rt_sigprocmask
  case 16:  return sys_ioctl(a, b, c);
  case 19:  return sys_readv(a, b, c);
  case 20:  return sys_writev(a, b, c);
  case 22:  return sys_pipe(a);
  case 23:  return sys_select(a, b, c, d, e);
  case 24:  return sys_sched_yield();
  case 28:  return 0;                                // madvise: advice only
  case 32:  return sys_dup(a);
  case 33:  return sys_dup2(a, b);
  case 35:  return sys_nanosleep(a, b);
  case 39:  return me->tgid;                         // getpid
  case 41:  return sys_socket(a, b, c);
  case 42:  return sys_connect(a, b, c);
  case 43:  return sys_accept(a, b, c);
  case 44:  return sys_sendto(a, b, c, d, e, f);
  case 45:  return sys_recvfrom(a, b, c, d, e, f);
  case 48:  return sys_shutdown(a, b);
  case 49:  return sys_bind(a, b, c);
  case 50:  return sys_listen(a, b);
  case 51:  return sys_getsockname(a, b, c);
  case 52:  return sys_getpeername(a, b, c);
  case 54:  return sys_setsockopt(a, b, c, d, e);
  case 55:  return sys_getsockopt(a, b, c, d, e);
  case 56:  return do_clone(tf, a, b, c, d, e);
  case 57:                                           // fork
  case 58:  return do_clone(tf, 0, 0, 0, 0, 0);      // vfork, as fork
  case 59:  return sys_execve(a, b, c);
  case 60:  do_exit((a & 0xff) << 8);
  case 61:  return sys_wait4(a, b, c, d);
  case 64:  return sys_semget(a, b, c);
  case 65:  return sys_semop(a, b, c);
  case 66:  return sys_semctl(a, b, c, d);
  case 72:  return sys_fcntl(a, b, c);
  case 73:  return sys_flock(a, b);
  case 102: case 104: case 107: case 108: return 0;  // uid, gid: root
  case 110: return me->group_leader->p_pptr ? me->group_leader->p_pptr->tgid : 0;
  case 131: return 0;                                // sigaltstack
  case 158: return sys_arch_prctl(a, b);
  case 186: return me->pid;                          // gettid
  case 202: return sys_futex(a, b, c, d, e, f);
  case 218: me->clear_child_tid = a; return me->pid; // set_tid_address
  case 228: return sys_clock_gettime(a, b);
  case 230: return sys_clock_nanosleep(a, b, c, d);
  case 231: return sys_exit_group(a);
  case 257: return sys_openat(a, b, c, d);
  case 262: return sys_newfstatat(a, b, c, d);
  case 288: return sys_accept4(a, b, c, d);
  case 292: return sys_dup3(a, b, c);
  case 293: return sys_pipe2(a, b);
  case SYS_colorsim_m5: return roi_user_op(a);
  case SYS_colorsim_client: return sys_colorsim_client();
  default:  return enosys(tf->rax);
  }
}

// strace=1 on the command line logs every call and its result.
static int strace = -1;

void
syscall_dispatch(struct trapframe *tf)
{
  uint64_t nr = tf->rax;
  if (strace < 0)
    strace = cmdline_u64("strace", 0);
  tf->rax = dispatch(tf);
  if (strace)
    printk("[cpu%d pid %d] syscall %lu (%lx, %lx, %lx, %lx) = %ld\n", current->processor, current->pid,
           nr, tf->rdi, tf->rsi, tf->rdx, tf->r10, (long)tf->rax);
  exit_to_user_mode(tf);
}

// 2.4's ret_from_sys_call / ret_from_intr to user mode: reschedule while
// need_resched is set, die if killed (exit_group; we have no other
// signals).  Returns with interrupts off, so nothing is missed before
// iretq.
void
exit_to_user_mode(struct trapframe *tf)
{
  struct task_struct *me = current;
  // The spin-wait hint of the README's "Interleaving": a no-op on
  // hardware and gem5; on QEMU 7.2's round-robin -icount it hands the host
  // thread to the next vCPU, so user programs, which never pause
  // themselves, do not keep one vCPU running and the others waiting.
  cpu_relax();
  for (;;) {
    cli();
    if (me->sigpending) {
      sti();
      do_exit(0);                  // the group's status is in its leader
    }
    if (!me->need_resched)
      return;
    schedule();
  }
}
