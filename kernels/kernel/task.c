// Task blocks: allocation, placement (coloring), and thread creation.
//
// A task lives in an order-1 (8 KiB, 8 KiB-aligned) buddy block, the
// union task_union of 2.4: the task_struct at task_color_offset(block) from
// the base, the kernel stack growing down from the top.
#include "fpu.h"
#include "kernel.h"
#include "net.h"
#include "sched.h"
#include "user.h"

extern char init_task_union[];
struct task_struct *init_task;
static int next_pid = 1;

struct task_struct *
alloc_task_struct(void)
{
  void *block = alloc_pages(1);
  return block ? task_of_block((uint64_t)block) : NULL;
}

void
free_task_struct(struct task_struct *p)
{
  free_pages(PTR(block_of_task(p)), 1);     // mask back to the block base
}

// Invariants every task block must keep (facts sheet §3.3 checklist).
void
task_selfcheck(struct task_struct *p)
{
  uint64_t block = block_of_task(p);
  BUG_ON(block & (THREAD_SIZE - 1));
  BUG_ON(task_of_block(block) != p);
  BUG_ON((uint64_t)p->i387 & 15);     // FXSAVE needs 16-byte alignment
  BUG_ON(block + THREAD_SIZE - ((uint64_t)p + sizeof *p) < KERNEL_STACK_MIN);
}

static void
init_idle_fields(struct task_struct *p, uint64_t block, int cpu)
{
  memset(p, 0, sizeof *p);
  p->state = TASK_RUNNING;
  p->lock_depth = -1;
  p->counter = DEF_COUNTER;
  p->cpus_allowed = ~0u;
  p->has_cpu = 1;
  p->processor = cpu;
  p->pid = 0;
  p->block = block;
  strlcpy(p->comm, "swapper", sizeof p->comm);
  idle_tasks[cpu] = p;
  cpu_curr(cpu) = p;
}

// The boot context becomes init_task, CPU 0's idle task (pid 0), in the
// static block the boot stack already runs in.
void
task_init_boot(void)
{
  uint64_t block = (uint64_t)init_task_union;
  struct task_struct *p = task_of_block(block);
  init_idle_fields(p, block, 0);
  p->next_task = p->prev_task = P32(p);
  init_task = p;
  task_selfcheck(p);
  BUG_ON(current != init_task);   // `current` agrees with the placement
}

// A secondary CPU's idle task: a normal block, not on the task list.
struct task_struct *
make_idle_task(int cpu)
{
  struct task_struct *p = alloc_task_struct();
  if (!p)
    panic("no memory for cpu%d's idle task", cpu);
  init_idle_fields(p, block_of_task(p), cpu);
  p->counter = -100;
  p->nice = 20;
  task_selfcheck(p);
  return p;
}

// Lay out a new task's kernel stack below `top` so that the first
// switch_context to it "returns" into task_start with r12 = fn and r13 = arg.
static void
prepare_stack(struct task_struct *p, uint64_t top)
{
  uint64_t *sp = PTR(top);
  *--sp = 0;                          // keeps task_start's calls 16-aligned
  *--sp = 0;
  *--sp = (uint64_t)task_start;       // return address
  *--sp = 0;                          // rbp
  *--sp = 0;                          // rbx
  *--sp = (uint64_t)p->fn;            // r12
  *--sp = (uint64_t)p->arg;           // r13
  *--sp = 0;                          // r14
  *--sp = 0;                          // r15
  p->thread.rsp = (uint64_t)sp;
}

// The first half of 2.4's do_fork: a new block with a copy of the parent's
// task_struct, not yet runnable, with its own pid and half the parent's
// time slice.  NULL when memory is out.
struct task_struct *
copy_task_struct(const char *name)
{
  struct task_struct *parent = current, *p = alloc_task_struct();
  if (!p)
    return NULL;
  unlazy_fpu(parent);                 // the copy gets the live FPU state
  memcpy(p, parent, sizeof *p);
  p->state = TASK_UNINTERRUPTIBLE;
  p->run_list.next = p->run_list.prev = 0;
  p->has_cpu = 0;
  p->need_resched = 0;
  p->lock_depth = -1;
  p->policy = SCHED_OTHER;
  p->cpus_allowed = ~0u;
  p->pid = __atomic_fetch_add(&next_pid, 1, __ATOMIC_SEQ_CST);
  p->block = block_of_task(p);
  p->nvcsw = 0;
  p->wchan = p->wchan_counted = 0;
  p->semundo = NULL;                  // 2.4: fork does not inherit undo
  partition_fork(parent, p);          // a client task? (partition.c)
  if (*name)
    strlcpy(p->comm, name, sizeof p->comm);
  p->counter = (parent->counter + 1) >> 1;    // the slice is split
  parent->counter >>= 1;
  if (!parent->counter)
    parent->need_resched = 1;
  return p;
}

// The second half: link the task into the task list and wake it.
void
enter_task(struct task_struct *p)
{
  task_selfcheck(p);
  // insert at the tail of its list: the server's (before init_task) or
  // the client partition's, which recalculate() does not walk
  struct task_struct *head = p->flags & PF_CLIENT ? client_list_head() : init_task;
  spin_lock_irq(&tasklist_lock);
  struct task_struct *last = PTR(head->prev_task);
  p->next_task = P32(head);
  p->prev_task = P32(last);
  last->next_task = P32(p);
  head->prev_task = P32(p);
  if (p->flags & PF_CLIENT)
    nr_client_threads++;
  else
    nr_threads++;
  spin_unlock_irq(&tasklist_lock);

  wake_up_process(p);
}

// 2.4's do_fork for a thread that starts in fn(arg): copy, link, wake.
// mm != NULL makes it a "process" with an address space.  user_frame
// leaves room for a trapframe at the top of the stack, for a kernel
// thread that will enter user mode (init).
static struct task_struct *
spawn(void (*fn)(void *), void *arg, const char *name, struct mm_struct *mm,
      bool user_frame)
{
  struct task_struct *p = copy_task_struct(name);
  if (!p)
    panic("out of memory creating task %d", next_pid);
  p->fn = fn;
  p->arg = arg;
  p->mm = p->active_mm = P32(mm);
  prepare_stack(p, user_frame ? (uint64_t)task_pt_regs(p) : p->block + THREAD_SIZE);
  enter_task(p);
  return p;
}

struct task_struct *
create_task(void (*fn)(void *), void *arg, const char *name, struct mm_struct *mm)
{
  return spawn(fn, arg, name, mm, false);
}

struct task_struct *
kernel_thread(void (*fn)(void *), void *arg, const char *name)
{
  return spawn(fn, arg, name, NULL, false);
}

struct task_struct *
kernel_thread_for_user(void (*fn)(void *), void *arg, const char *name)
{
  return spawn(fn, arg, name, NULL, true);
}

void
cpu_idle(void)
{
  struct task_struct *me = current;
  if (me->processor == wire_cpu)      // the wire's CPU runs no tasks
    wire_idle();
  me->nice = 20;                      // no priority at all
  me->counter = -100;
  for (;;) {
    while (!READ_ONCE(me->need_resched)) {
      cli();
      if (!me->need_resched)
        safe_halt();                  // woken by the tick or an IPI
      else
        sti();
    }
    schedule();
  }
}
