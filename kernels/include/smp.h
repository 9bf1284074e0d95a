// CPU discovery, local APIC, and bringing the other CPUs online.
#pragma once
#include "param.h"
#include "types.h"

#define T_TIMER    0x40   // local APIC timer
#define T_RESCHED  0x41   // reschedule IPI
#define T_SPURIOUS 0xff

struct cpu_info {
  uint8_t apic_id;
  volatile int online;
};

extern struct cpu_info cpus[NR_CPUS];
extern int ncpus;
extern const char *cpu_source;

// cpus.c
void cpus_discover(void);
// lapic.c
void lapic_init(uint64_t lapic_hz);
void lapic_eoi(void);
uint32_t lapic_id(void);
void lapic_send_ipi(uint8_t apic_id, uint32_t icr_low);
void smp_send_reschedule(int cpu);
// smpboot.c
void smp_boot_aps(void);
void ap_main(void);
// trap.c
void idt_init(void);
void idt_load(void);
