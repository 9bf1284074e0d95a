// Traps and interrupts: the IDT, dispatch, and the return path.
//
// 2.4 honours need_resched only on the way back to user mode.  Two kinds
// of "user mode" exist: real ring-3 processes (CS & 3), whose way out is
// exit_to_user_mode() (syscall.c), and the built-in workload, which runs at
// ring 0 with its code in .user_text: an interrupt that arrived while the
// CPU was executing that code calls schedule() before it returns.
#include "fpu.h"
#include "kernel.h"
#include "mm.h"
#include "net.h"
#include "sched.h"
#include "smp.h"
#include "user.h"

void force_exit(int sig) __attribute__((noreturn));   // exit.c

struct idt_gate {
  uint16_t off_lo, sel;
  uint8_t ist, type;
  uint16_t off_mid;
  uint32_t off_hi, zero;
} __attribute__((packed));

static struct idt_gate idt[256];
extern uint64_t vector_table[];

void
idt_init(void)
{
  for (uint64_t *v = vector_table; v[1]; v += 2) {
    struct idt_gate *g = &idt[v[0]];
    g->off_lo = v[1] & 0xffff;
    g->sel = 0x08;
    g->type = 0x8e;            // present, ring 0, 64-bit interrupt gate
    g->off_mid = (v[1] >> 16) & 0xffff;
    g->off_hi = v[1] >> 32;
  }
  idt_load();
}

void
idt_load(void)
{
  struct { uint16_t limit; uint64_t base; } __attribute__((packed)) d = {
    sizeof idt - 1, (uint64_t)idt};
  __asm__ volatile("lidt %0" ::"m"(d));
}

static bool
ring3(struct trapframe *tf)
{
  return (tf->cs & 3) == 3;
}

static bool
builtin_user_text(struct trapframe *tf)
{
  return tf->rip >= (uint64_t)__user_text_start &&
         tf->rip < (uint64_t)__user_text_end;
}

bool
user_mode(struct trapframe *tf)
{
  return ring3(tf) || builtin_user_text(tf);
}

// A page fault at a user address: demand-zero and brk/mmap/stack pages
// (mmap.c).  The kernel faults here too, when it copies to or from a user
// page not yet touched.
static bool
user_page_fault(struct trapframe *tf, uint64_t cr2)
{
  struct mm_struct *mm = task_mm(current);
  if (tf->vec != 14 || !mm_has_user(mm) || cr2 < USER_BASE || cr2 >= USER_END)
    return false;
  return handle_mm_fault(mm, cr2, tf->err & 2) == 0;
}

// 2.4 would send SIGSEGV (or SIGILL, SIGFPE); we have no signals, so the
// process dies as if by that signal, with a one-line note.
static void
user_exception(struct trapframe *tf, uint64_t cr2)
{
  int sig = tf->vec == 14 || tf->vec == 13 ? 11 : tf->vec == 6 ? 4 :
            tf->vec == 0 ? 8 : 5;
  printk("pid %d (%s): exception %lu err %lx at rip %lx addr %lx: killed "
         "(signal %d)\n", current->pid, current->comm, tf->vec, tf->err,
         tf->rip, cr2, sig);
  sti();
  force_exit(sig);
}

static void
exception(struct trapframe *tf)
{
  uint64_t cr2;
  __asm__ volatile("mov %%cr2, %0" : "=r"(cr2));
  if (tf->vec == 7 && ring3(tf)) {     // #NM: first FPU/SSE use since the
    math_state_restore();              // switch (fpu.h)
    return;
  }
  if (user_page_fault(tf, cr2))
    return;
  if (ring3(tf))
    user_exception(tf, cr2);
  panic("exception %lu err %lx at rip %lx rsp %lx cr2 %lx on apic %u",
        tf->vec, tf->err, tf->rip, tf->rsp, cr2, lapic_id());
}

void
trap(struct trapframe *tf)
{
  switch (tf->vec) {
  case T_TIMER:
    lapic_eoi();
    if (smp_processor_id() == wire_cpu)
      wire_run();              // the wire's next arrival (wire.c)
    else
      timer_interrupt(smp_processor_id());
    break;
  case T_RESCHED:
    lapic_eoi();               // the work happens on the way out, below
    break;
  case T_NET_RX:               // the network cards (loopback.c)
    lapic_eoi();
    net_rx_interrupt();
    break;
  case T_WIRE:                 // a packet on the wire (wire.c)
    lapic_eoi();
    wire_run();
    break;
  case T_SPURIOUS:
    break;
  default:
    exception(tf);
  }
  // ret_from_intr: reschedule before "returning to user mode".
  if (ring3(tf)) {
    exit_to_user_mode(tf);
    return;
  }
  while (builtin_user_text(tf) && current->need_resched) {
    schedule();
    cli();
  }
}
