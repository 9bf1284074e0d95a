// The local APIC: identity, end-of-interrupt, the periodic tick, IPIs.
//
// Mapped uncached at 0xFEE00000 (see entry.S).  We identify CPUs by the
// LAPIC ID register, never CPUID (gem5 reports APIC ID 0 on every CPU), and
// poll the ICR's delivery-status bit before each IPI (gem5 drops ICR writes
// while it is set).  No lowest-priority delivery (gem5 panics on it).
#include "kernel.h"
#include "param.h"
#include "smp.h"
#include "x86.h"

#define LAPIC_BASE 0xFEE00000UL
#define ID       0x020
#define EOI      0x0B0
#define SVR      0x0F0
#define ICRLO    0x300
#define ICRHI    0x310
#define LVT_TIMER 0x320
#define LVT_LINT0 0x350
#define LVT_LINT1 0x360
#define TICR     0x380
#define TDCR     0x3E0
#define ICR_BUSY (1 << 12)
#define POLL_HZ  5000                   // modelled time: poll every 200 us
int timing_init(void);                  // timer.c
#define PERIODIC (1 << 17)
#define MASKED   (1 << 16)

static inline uint32_t
lapic_read(uint32_t reg)
{
  return *(volatile uint32_t *)(LAPIC_BASE + reg);
}

static inline void
lapic_write(uint32_t reg, uint32_t v)
{
  *(volatile uint32_t *)(LAPIC_BASE + reg) = v;
}

uint32_t
lapic_id(void)
{
  return lapic_read(ID) >> 24;
}

void
lapic_eoi(void)
{
  lapic_write(EOI, 0);
}

// Enable this CPU's APIC and start its HZ tick.  lapic_hz is the timer's
// input clock (QEMU: 1 GHz; gem5: CPU clock / 16), given on the command line.
static uint64_t timer_hz;

void
lapic_init(uint64_t lapic_hz)
{
  timer_hz = lapic_hz;
  lapic_write(SVR, 0x100 | T_SPURIOUS);
  if (lapic_id() != cpus[0].apic_id) {   // only the BSP keeps virtual wire
    lapic_write(LVT_LINT0, MASKED);
    lapic_write(LVT_LINT1, MASKED);
  }
  lapic_write(TDCR, 0xB);                 // divide by 1
  lapic_write(LVT_TIMER, PERIODIC | T_TIMER);
  // Under modelled time the timer is a fine poll and ticks follow the
  // modelled clock (timer.c); POLL_HZ is in the emulator's icount time.
  lapic_write(TICR, lapic_hz / (timing_init() ? POLL_HZ : HZ));
}

// The wire CPU (wire.c): one interrupt after `ns` of guest time (0: none).
void
lapic_oneshot(uint64_t ns)
{
  uint64_t ticks = ns * (timer_hz / 1000000) / 1000 + 1;
  lapic_write(LVT_TIMER, T_TIMER);        // one-shot, not periodic
  lapic_write(TICR, ns == 0 ? 0 : ticks > 0xffffffffu ? 0xffffffffu : ticks);
}

// Interrupts off: an interrupt handler that sends an IPI between our two
// ICR writes would leave ours going to its destination.
void
lapic_send_ipi(uint8_t apic_id, uint32_t icr_low)
{
  uint64_t f = local_irq_save();
  while (lapic_read(ICRLO) & ICR_BUSY)
    cpu_relax();
  lapic_write(ICRHI, (uint32_t)apic_id << 24);
  lapic_write(ICRLO, icr_low);
  while (lapic_read(ICRLO) & ICR_BUSY)
    cpu_relax();
  local_irq_restore(f);
}

void
smp_send_reschedule(int cpu)
{
  lapic_send_ipi(cpus[cpu].apic_id, T_RESCHED);  // fixed, physical, edge
}
