// fork, vfork and clone for user processes and threads (2.4's do_fork
// with copy_mm, copy_files and copy_thread).
//
// The child is an ordinary task block from alloc_task_struct (so it is
// colored like every other task), linked and woken by the same code as the
// built-in workload's tasks (task.c: copy_task_struct, enter_task).  Its
// kernel stack starts with a copy of the parent's trapframe at the top and
// a switch frame below it that "returns" into ret_from_fork.
#include "errno.h"
#include "fs.h"
#include "kernel.h"
#include "mm.h"
#include "proc.h"
#include "sched.h"
#include "user.h"

static void
copy_thread(struct task_struct *p, struct trapframe *parent_tf, uint64_t newsp)
{
  struct trapframe *tf = task_pt_regs(p);
  *tf = *parent_tf;
  tf->rax = 0;                       // the child's return value
  if (newsp)
    tf->rsp = newsp;
  uint64_t *sp = (uint64_t *)tf;
  *--sp = (uint64_t)ret_from_fork;   // switch_context's ret
  for (int i = 0; i < 6; i++)        // rbp rbx r12 r13 r14 r15
    *--sp = 0;
  p->thread.rsp = (uint64_t)sp;
}

static int
copy_mm(struct task_struct *p, uint64_t flags)
{
  struct mm_struct *mm = task_mm(current);
  if (flags & CLONE_VM) {
    mmget(mm);
  } else if (!(mm = dup_mm(mm))) {
    return -ENOMEM;
  }
  p->mm = p->active_mm = P32(mm);
  return 0;
}

static int
copy_files(struct task_struct *p, uint64_t flags)
{
  if (flags & CLONE_FILES) {
    __atomic_add_fetch(&current->files->count, 1, __ATOMIC_SEQ_CST);
    return 0;
  }
  p->files = dup_files(current->files);
  return p->files ? 0 : -ENOMEM;
}

long
do_clone(struct trapframe *tf, uint64_t flags, uint64_t newsp,
         uint64_t ptid, uint64_t ctid, uint64_t tls)
{
  struct task_struct *parent = current, *p;
  if ((flags & CLONE_THREAD) && !(flags & CLONE_VM))
    return -EINVAL;
  if (!(p = copy_task_struct("")))
    return -ENOMEM;
  memcpy(p->comm, parent->comm, sizeof p->comm);
  if (copy_mm(p, flags) < 0) {
    free_task_struct(p);
    return -ENOMEM;
  }
  if (copy_files(p, flags) < 0) {
    mmput(task_mm(p));
    free_task_struct(p);
    return -ENOMEM;
  }
  if (flags & CLONE_THREAD) {
    p->tgid = parent->tgid;
    p->group_leader = parent->group_leader;
    p->p_pptr = parent->p_pptr;
  } else {
    p->tgid = p->pid;
    p->group_leader = p;
    p->p_pptr = parent;
  }
  p->fsbase = (flags & CLONE_SETTLS) ? tls : parent->fsbase;
  p->clear_child_tid = (flags & CLONE_CHILD_CLEARTID) ? ctid : 0;
  p->exit_code = p->group_exit = p->sigpending = 0;
  p->timeout = 0;
  init_waitqueue_head(&p->wait_chldexit);
  copy_thread(p, tf, newsp);
  int pid = p->pid;
  if ((flags & CLONE_PARENT_SETTID) && copy_to_user(ptid, &pid, 4) < 0)
    pid = -EFAULT;                   // the child runs anyway, as in Linux
  if (flags & CLONE_CHILD_SETTID) {  // the child's address space
    struct mm_struct *mm = task_mm(p);
    uint8_t *page = user_page(mm, ctid & ~(uint64_t)(PAGE_SIZE - 1));
    if (page && (ctid & (PAGE_SIZE - 1)) <= PAGE_SIZE - 4)
      *(int32_t *)(page + (ctid & (PAGE_SIZE - 1))) = p->pid;
  }
  enter_task(p);
  return pid;
}
