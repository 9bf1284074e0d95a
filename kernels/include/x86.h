// Thin wrappers around x86 instructions the kernel needs.
#pragma once
#include "types.h"

static inline void outb(uint16_t port, uint8_t v) {
  __asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port));
}
static inline uint8_t inb(uint16_t port) {
  uint8_t v;
  __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
  return v;
}
static inline void outl(uint16_t port, uint32_t v) {
  __asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port));
}
static inline void cli(void) { __asm__ volatile("cli" ::: "memory"); }
static inline void sti(void) { __asm__ volatile("sti" ::: "memory"); }
// sti's one-instruction shadow makes "check, then sti; hlt" race-free.
static inline void safe_halt(void) { __asm__ volatile("sti; hlt" ::: "memory"); }
static inline void cpu_relax(void) { __asm__ volatile("pause" ::: "memory"); }
static inline void hlt(void) { __asm__ volatile("hlt"); }

static inline uint64_t read_flags(void) {
  uint64_t f;
  __asm__ volatile("pushfq; popq %0" : "=r"(f)::"memory");
  return f;
}
static inline uint64_t local_irq_save(void) {
  uint64_t f = read_flags();
  cli();
  return f;
}
static inline void local_irq_restore(uint64_t f) {
  if (f & (1 << 9))
    sti();
}
static inline uint64_t rdtsc(void) {
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t read_rsp(void) {
  uint64_t sp;
  __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
  return sp;
}
