// The first workload: many "processes" that compute, sleep and wake.
//
// Each task has its own mm (so it is a process, not a kernel thread) and a
// small private data buffer, and loops: compute a burst over its buffer,
// then pass the baton -- wake one sleeper, go to sleep itself.  Only a
// handful of tasks sleep at any moment, so the run queue stays about as
// long as the number of tasks, and every burst ends in a schedule() that
// walks all of it: the paper's many-httpd situation in miniature.
//
// The compute loop runs in .user_text: it stands for user-mode code.  The
// tick preempts it (trap.c), and the bus monitor counts its accesses as
// user mode.  Web-server and Chat workloads as real processes come later.
#include "kernel.h"
#include "mm.h"
#include "param.h"
#include "sched.h"
#include "wait.h"

#define USER __attribute__((section(".user_text"), noinline))

struct wl_proc {
  struct mm_struct mm;
  volatile uint8_t *buf;     // the task's private data
  uint32_t len;
  uint32_t burst;
};

static struct wl_proc procs[NR_WORKLOAD_MAX];
static struct wait_queue_head baton;

// "System call": wake the next sleeper, then sleep until woken.
static void
sys_pass_baton(void)
{
  wake_up(&baton, 1);
  sleep_on_exclusive(&baton);
}

// A spin-wait hint every YIELD_EVERY iterations.  On hardware and gem5 it
// is a no-op; on QEMU 7.2's round-robin TCG with -icount it is what hands
// the host thread to the next vCPU.  There, a vCPU's turn otherwise lasts
// until the next timer deadline, and the timers run only between rounds, so
// the first vCPU of each round would take nearly all the time and later
// ones none.  This gives every CPU a turn about every 500 instructions.
#define YIELD_EVERY 64

USER static void
compute(volatile uint8_t *buf, uint32_t len, uint32_t iters)
{
  uint32_t off = 0;
  for (uint32_t k = 0; k < iters; k++) {
    buf[off] += (uint8_t)k;
    off += CONFIG_LINE_SIZE;
    if (off >= len)
      off = 0;
    if (k % YIELD_EVERY == YIELD_EVERY - 1)
      __asm__ volatile("pause");
  }
}

USER static void
workload_main(void *arg)
{
  struct wl_proc *w = arg;
  for (;;) {
    compute(w->buf, w->len, w->burst);
    sys_pass_baton();
  }
}

// Fork `n` workload processes.  Each gets a page for its data, allocated
// between task blocks as a real fork would, with the buffer at a per-task
// offset inside the page so user data does not all alias one page offset.
void
workload_start(int n, uint32_t burst, uint32_t len)
{
  init_waitqueue_head(&baton);
  if (n < 1 || n > NR_WORKLOAD_MAX)
    panic("workload: %d tasks is outside the kernel's 1..%d", n, NR_WORKLOAD_MAX);
  if (len > PAGE_SIZE)
    len = PAGE_SIZE;
  for (int i = 0; i < n; i++) {
    struct wl_proc *w = &procs[i];
    uint8_t *page = alloc_pages(0);
    if (!page)
      panic("workload: out of memory at task %d", i);
    uint32_t slots = PAGE_SIZE / len;
    w->buf = page + (i * 7 % slots) * len;
    w->len = len;
    w->burst = burst;
    w->mm.id = i + 1;
    create_task(workload_main, w, "wl", &w->mm);
  }
}
