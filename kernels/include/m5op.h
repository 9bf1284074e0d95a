// gem5's address-form m5 operations: an 8-byte load from
// M5OP_BASE + (func << 8).  gem5 executes it natively; on QEMU it reads BIOS
// ROM, and our bus-monitor plugin sees the load.  colorsim/m5ops.py has the
// same numbers; a test checks that they agree.
#pragma once
#include "types.h"

#define M5OP_BASE            0xFFFF0000UL
#define M5OP_EXIT            0x21
#define M5OP_FAIL            0x22
#define M5OP_RESET_STATS     0x40
#define M5OP_DUMP_STATS      0x41
#define M5OP_DUMP_RESET_STATS 0x42
#define M5OP_CHECKPOINT      0x43
#define M5OP_WORK_BEGIN      0x5a   // a unit of work (a web request) starts here
#define M5OP_WORK_END        0x5b
// Not gem5's: 8-byte *stores* that only the QEMU bus monitor sees, from the
// wire in modelled time (kernels/kernel/wire.c, engine/qemu-plugin/busmon.c):
// "move the idle machine's modelled time up to the value", "a packet
// due at the value (modelled cycles) reached its card" and "this CPU took
// such a packet from its card".
#define M5OP_WIRE_ADVANCE    0x60
#define M5OP_WIRE_DELIVERED  0x61
#define M5OP_WIRE_RECEIVED   0x62
// A network card's DMA on the server's bus (wire.c, nicdma=1): the value
// is (physical address << 12) | bytes; the card reads (transmit) or
// writes (receive) those bytes of memory.  Under modelled time DMA_AT
// comes first: when the frame's first line moves (modelled cycles).
#define M5OP_DMA_READ        0x63
#define M5OP_DMA_WRITE       0x64
#define M5OP_DMA_AT          0x65

static inline uint64_t m5_op(int func) {
  // gem5 passes arguments in rdi/rsi (delay, period): zero means "now".
  uint64_t r;
  __asm__ volatile("xor %%edi, %%edi\n\txor %%esi, %%esi\n\tmovq (%1), %0"
                   : "=r"(r)
                   : "r"(M5OP_BASE + ((uint64_t)func << 8))
                   : "rdi", "rsi", "memory");
  return r;
}
