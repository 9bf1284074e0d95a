// Traps and interrupts: the IDT, dispatch, and the return path.
//
// 2.4 honours need_resched only on the way back to user mode.  Our
// workload runs at ring 0, but its code lives in .user_text, so the same
// rule reads: an interrupt that arrived while the CPU was executing
// workload ("user") code calls schedule() before it returns.
#include "kernel.h"
#include "sched.h"
#include "smp.h"

struct trapframe {
  uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
  uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
  uint64_t vec, err;
  uint64_t rip, cs, rflags, rsp, ss;   // pushed by the CPU
};

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
user_mode(struct trapframe *tf)
{
  return tf->rip >= (uint64_t)__user_text_start &&
         tf->rip < (uint64_t)__user_text_end;
}

static void
exception(struct trapframe *tf)
{
  uint64_t cr2;
  __asm__ volatile("mov %%cr2, %0" : "=r"(cr2));
  panic("exception %lu err %lx at rip %lx rsp %lx cr2 %lx on apic %u",
        tf->vec, tf->err, tf->rip, tf->rsp, cr2, lapic_id());
}

void
trap(struct trapframe *tf)
{
  switch (tf->vec) {
  case T_TIMER:
    lapic_eoi();
    timer_interrupt(smp_processor_id());
    break;
  case T_RESCHED:
    lapic_eoi();               // the work happens on the way out, below
    break;
  case T_SPURIOUS:
    break;
  default:
    exception(tf);
  }
  // ret_from_intr: reschedule before "returning to user mode".
  while (user_mode(tf) && current->need_resched) {
    schedule();
    cli();
  }
}
