// Small system calls: sched_yield, nanosleep, clock_gettime, arch_prctl.
#include "errno.h"
#include "kernel.h"
#include "mm.h"
#include "proc.h"
#include "sched.h"
#include "smp.h"
#include "user.h"

#define ARCH_SET_FS 0x1002
#define ARCH_GET_FS 0x1003
#define TIMER_ABSTIME 1
// CLOCK_REALTIME starts at the date QEMU's RTC is given (2002-06-10): the
// kernel keeps no other time than jiffies, so the clocks tick in 10 ms.
#define BOOT_EPOCH 1023667200UL

// 2.4.4: yield only if some runnable task is not running yet; mark the
// caller SCHED_YIELD so goodness() puts it last once.
long
sys_sched_yield(void)
{
  if (current->flags & PF_CLIENT) {   // the client queue: round robin
    current->policy |= SCHED_YIELD;
    current->need_resched = 1;
    return 0;
  }
  int running = 0;
  for (int cpu = 0; cpu < nr_server_cpus; cpu++)
    if (cpus[cpu].online && cpu_curr(cpu) != idle_tasks[cpu])
      running++;
  if (nr_running > running) {
    current->policy |= SCHED_YIELD;
    current->need_resched = 1;
  }
  return 0;
}

static long
sleep_ticks(uint64_t ticks, uint64_t rem)
{
  long left = schedule_timeout(ticks);
  if (left && current->sigpending) {
    uint64_t ts[2] = {left / HZ, (left % HZ) * (1000000000 / HZ)};
    if (rem)
      copy_to_user(rem, ts, sizeof ts);
    return -EINTR;
  }
  return 0;
}

long
sys_nanosleep(uint64_t req, uint64_t rem)
{
  uint64_t ts[2];
  if (copy_from_user(ts, req, sizeof ts) < 0)
    return -EFAULT;
  if (ts[1] >= 1000000000)
    return -EINVAL;
  return sleep_ticks(timespec_to_ticks(ts[0], ts[1]), rem);
}

static void
now(long clk, uint64_t ts[2])
{
  uint64_t j = jiffies;
  ts[0] = j / HZ + (clk == 0 ? BOOT_EPOCH : 0);
  ts[1] = (j % HZ) * (1000000000 / HZ);
}

long
sys_clock_nanosleep(long clk, long flags, uint64_t req, uint64_t rem)
{
  uint64_t ts[2], t[2];
  if (copy_from_user(ts, req, sizeof ts) < 0)
    return -EFAULT;
  uint64_t ticks = timespec_to_ticks(ts[0], ts[1]);
  if (flags & TIMER_ABSTIME) {
    now(clk, t);
    uint64_t at = t[0] * HZ + t[1] / (1000000000 / HZ);
    ticks = ticks > at ? ticks - at : 0;
    if (!ticks)
      return 0;
  }
  return sleep_ticks(ticks, (flags & TIMER_ABSTIME) ? 0 : rem);
}

long
sys_clock_gettime(long clk, uint64_t uts)
{
  uint64_t ts[2];
  if (clk < 0 || clk > 7)
    return -EINVAL;
  now(clk, ts);
  return copy_to_user(uts, ts, sizeof ts);
}

long
sys_arch_prctl(long code, uint64_t addr)
{
  switch (code) {
  case ARCH_SET_FS:
    if (addr >= USER_END)
      return -EPERM;
    current->fsbase = addr;
    wrmsr(MSR_FS_BASE, addr);
    return 0;
  case ARCH_GET_FS:
    return copy_to_user(addr, &current->fsbase, 8);
  default:
    return -EINVAL;
  }
}
