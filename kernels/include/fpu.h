// The user FPU/SSE state (x87, MMX, XMM, MXCSR) across context switches,
// as 2.4 keeps it: lazily (fpu.c).
//
// The kernel itself never touches these registers (-mgeneral-regs-only),
// and neither does the built-in workload.  A process's registers are live
// in the CPU only while it runs and PF_USEDFPU is set; CR0.TS is clear
// exactly then.  Switching away from such a task saves them into its
// task_struct (i387) and sets TS; the task's next FPU or SSE instruction,
// on whatever CPU, traps (#NM) and math_state_restore loads them back.
#pragma once
#include "sched.h"

// fpu_eager=1 on the command line (the gem5 engine passes it): gem5's X86
// CPUs do not trap SSE instructions on CR0.TS (it checks neither TS nor
// OSFXSR for them), so a lazily switched task would run on the previous
// task's xmm registers.  Eagerly, the registers are loaded for every user
// task at the switch to it, and saved at the switch away as before.
extern bool fpu_eager;

void fpu_cpu_init(void);             // each CPU: CR0.MP/NE on, EM off, TS on
void fpu_switch_in(struct task_struct *next);  // eager: load next's state
void save_init_fpu(struct task_struct *p);
void math_state_restore(void);       // #NM from user mode
void clear_fpu(struct task_struct *p);  // execve: a fresh state on first use

// 2.4's unlazy_fpu: at a context switch (prev) and before fork copies the
// parent (current), put live registers into the task's save area.
static inline void unlazy_fpu(struct task_struct *p) {
  if (p->flags & PF_USEDFPU)
    save_init_fpu(p);
}
