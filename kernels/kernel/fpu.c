// Lazy FPU/SSE context switching (2.4's i387.c: unlazy_fpu,
// math_state_restore, init_fpu); include/fpu.h has the rules.
//
// Without it every process on a CPU shared one set of xmm registers: a
// process preempted between loading a value into xmm0 and storing it (gcc
// builds structures that way) resumed with another process's value.
#include "fpu.h"
#include "kernel.h"
#include "sched.h"

#define CR0_MP 0x00000002
#define CR0_EM 0x00000004
#define CR0_TS 0x00000008
#define CR0_NE 0x00000020

// What a process sees first (FNINIT, and MXCSR's reset value): x87
// control word 0x37f, every register empty, SSE exceptions masked, xmm = 0.
static const uint8_t init_fpu_state[TASK_I387_BYTES] __attribute__((aligned(16))) = {
  [0] = 0x7f, [1] = 0x03,                // FCW
  [24] = 0x80, [25] = 0x1f,              // MXCSR 0x1f80
};

static inline uint64_t read_cr0(void) {
  uint64_t v;
  __asm__ volatile("mov %%cr0, %0" : "=r"(v));
  return v;
}
static inline void write_cr0(uint64_t v) { __asm__ volatile("mov %0, %%cr0" ::"r"(v) : "memory"); }
static inline void clts(void) { __asm__ volatile("clts" ::: "memory"); }
static inline void stts(void) { write_cr0(read_cr0() | CR0_TS); }

bool fpu_eager;

void
fpu_cpu_init(void)
{
  fpu_eager = cmdline_u64("fpu_eager", 0) != 0;
  write_cr0((read_cr0() & ~(uint64_t)CR0_EM) | CR0_MP | CR0_NE | CR0_TS);
}

// The registers are live (TS is clear): save them, and trap on the next use.
void
save_init_fpu(struct task_struct *p)
{
  __asm__ volatile("fxsaveq %0; fnclex" : "=m"(*(uint8_t(*)[TASK_I387_BYTES])p->i387));
  p->flags &= ~PF_USEDFPU;
  stts();
}

// Loads p's registers (or the initial state) and marks them live.
static void
load_fpu(struct task_struct *p)
{
  clts();
  const uint8_t *state = (p->flags & PF_USEDMATH) ? p->i387 : init_fpu_state;
  __asm__ volatile("fxrstorq %0" ::"m"(*(const uint8_t(*)[TASK_I387_BYTES])state));
  p->flags |= PF_USEDFPU | PF_USEDMATH;
}

// #NM: the current process used the FPU with TS set.  Interrupts do not
// touch these registers and nothing schedules in between, so no lock.
void
math_state_restore(void)
{
  load_fpu(current);
}

// fpu_eager: at the switch to a task with user mode (after prev's state
// was saved), its registers are loaded at once instead of at a trap.
void
fpu_switch_in(struct task_struct *next)
{
  if (fpu_eager)
    load_fpu(next);
}

// execve: drop the old program's state; the new one starts from
// init_fpu_state at its first FPU instruction.
void
clear_fpu(struct task_struct *p)
{
  if (p->flags & PF_USEDFPU) {
    p->flags &= ~PF_USEDFPU;
    stts();
  }
  p->flags &= ~PF_USEDMATH;
  fpu_switch_in(p);                    // eager: the initial state, loaded
}
