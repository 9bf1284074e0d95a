/*
 * x86insn.h: the memory operand of an INVLPG, decoded from its bytes.
 *
 * INVLPG m (0F 01 /7, a memory ModRM) drops the TLB entries of the page
 * that holds the operand's linear address; the instruction reads no
 * memory, so QEMU's memory callbacks never see that address.  busmon
 * decodes the operand here and computes the address from the registers
 * at the instruction.  Kept apart from busmon.c so the unit test can
 * check the decoding without QEMU.
 */
#ifndef X86INSN_H
#define X86INSN_H

#include <stddef.h>
#include <stdint.h>

/* A ModRM memory operand: seg_base(seg) + base + index * scale + disp,
 * or next_ip + disp when rip_rel, truncated to 32 bits when addr32. */
struct x86_memop {
	int base;		/* 0-15, or -1: none */
	int index;		/* 0-15, or -1: none */
	unsigned scale;		/* 1, 2, 4 or 8 */
	int64_t disp;
	int rip_rel;		/* 64-bit code: relative to the next instruction */
	int seg;		/* X86_ES .. X86_GS: the segment whose base applies */
	int addr32;		/* the address is computed in 32 bits */
};

/* Segment numbers, in the order of the segment-override prefixes'
 * architectural numbering (ES CS SS DS FS GS). */
enum { X86_ES, X86_CS, X86_SS, X86_DS, X86_FS, X86_GS };

/*
 * Decode b[0..n) as an INVLPG with a memory operand.  long_mode: the code
 * is 64-bit (REX prefixes, RIP-relative addressing, 64-bit addresses);
 * else 32-bit protected-mode code.  Returns 1 and fills *op for an
 * INVLPG, 0 for any other instruction, and -1 for an INVLPG whose operand
 * this decoder does not take (16-bit addressing: an address-size prefix
 * in 32-bit code).
 */
int x86_invlpg_operand(const uint8_t *b, size_t n, int long_mode,
		       struct x86_memop *op);

/*
 * The operand's linear address, given the registers' values (reg[0..15]
 * in ModRM order: rax rcx rdx rbx rsp rbp rsi rdi r8..r15), the segment
 * bases (seg_base[X86_ES..X86_GS]) and the next instruction's address.
 * In 64-bit code only FS and GS have a base (SDM vol. 3A 3.4.4).
 */
uint64_t x86_memop_address(const struct x86_memop *op, int long_mode,
			   const uint64_t reg[16], const uint64_t seg_base[6],
			   uint64_t next_ip);

#endif
