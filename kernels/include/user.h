// User mode: segments, the per-CPU TSS, the trap frame, system calls.
#pragma once
#include "types.h"

#define KERNEL_CS 0x08
#define KERNEL_DS 0x10
#define USER_DS   0x1b    // GDT slot 3, RPL 3
#define USER_CS   0x23    // GDT slot 4, RPL 3
#define T_SYSCALL 0x100   // trapframe vec of a `syscall` entry (no IDT vector)

#define MSR_EFER   0xC0000080
#define MSR_STAR   0xC0000081
#define MSR_LSTAR  0xC0000082
#define MSR_FMASK  0xC0000084
#define MSR_FS_BASE 0xC0000100
#define MSR_GS_BASE 0xC0000101
#define MSR_KERNEL_GS_BASE 0xC0000102

// What alltraps and syscall_entry push, lowest address first.  A task in
// user mode has exactly this at the top of its 8 KiB block.
struct trapframe {
  uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
  uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
  uint64_t vec, err;
  uint64_t rip, cs, rflags, rsp, ss;   // pushed by the CPU (or syscall_entry)
};

struct task_struct;

static inline void wrmsr(uint32_t msr, uint64_t v) {
  __asm__ volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}
static inline uint64_t rdmsr(uint32_t msr) {
  uint32_t lo, hi;
  __asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
  return ((uint64_t)hi << 32) | lo;
}

// gdt.c
void cpu_init_user(int cpu);
void set_kernel_stack(int cpu, uint64_t top);
struct trapframe *task_pt_regs(struct task_struct *p);
// syscall.S / vectors.S
void syscall_entry(void);
void ret_from_fork(void);
void enter_user(struct trapframe *tf) __attribute__((noreturn));
// syscall.c
void syscall_dispatch(struct trapframe *tf);
void exit_to_user_mode(struct trapframe *tf);
// trap.c
bool user_mode(struct trapframe *tf);
