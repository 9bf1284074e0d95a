/*
 * x86insn.c: the memory operand of an INVLPG (x86insn.h).  The ModRM and
 * SIB rules are the SDM's (vol. 2A, 2.1.5 and 2.2.1).
 */
#include "x86insn.h"

/* A segment-override prefix's segment, or -1. */
static int prefix_segment(uint8_t p)
{
	switch (p) {
	case 0x26: return X86_ES;
	case 0x2e: return X86_CS;
	case 0x36: return X86_SS;
	case 0x3e: return X86_DS;
	case 0x64: return X86_FS;
	case 0x65: return X86_GS;
	}
	return -1;
}

static int is_prefix(uint8_t p)
{
	return prefix_segment(p) >= 0 || p == 0xf0 || p == 0xf2 ||
	       p == 0xf3 || p == 0x66 || p == 0x67;
}

/* Sign-extend the little-endian bytes b[0..len). */
static int64_t disp_at(const uint8_t *b, unsigned len)
{
	if (len == 1)
		return (int8_t)b[0];
	return (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 |
			 (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
}

int x86_invlpg_operand(const uint8_t *b, size_t n, int long_mode,
		       struct x86_memop *op)
{
	size_t i = 0;
	unsigned rex = 0, mod, rm, dlen;
	int seg = -1, addr_prefix = 0;

	/* REX only in 64-bit code (in 32-bit code 40-4F are INC/DEC), and
	 * only right before the opcode: a legacy prefix after it voids it. */
	for (; i < n; i++) {
		if (is_prefix(b[i])) {
			if (prefix_segment(b[i]) >= 0)
				seg = prefix_segment(b[i]);
			addr_prefix |= b[i] == 0x67;
			rex = 0;
		} else if (long_mode && (b[i] & 0xf0) == 0x40) {
			rex = b[i];
		} else {
			break;
		}
	}
	if (i + 2 >= n || b[i] != 0x0f || b[i + 1] != 0x01)
		return 0;
	mod = b[i + 2] >> 6;
	rm = b[i + 2] & 7;
	if (mod == 3 || ((b[i + 2] >> 3) & 7) != 7)
		return 0;		/* not INVLPG (SWAPGS, RDTSCP, ...) */
	if (addr_prefix && !long_mode)
		return -1;		/* 16-bit addressing */
	i += 3;
	op->base = -1;
	op->index = -1;
	op->scale = 1;
	op->disp = 0;
	op->rip_rel = 0;
	op->addr32 = !long_mode || addr_prefix;
	dlen = mod == 1 ? 1 : mod == 2 ? 4 : 0;
	if (rm == 4) {			/* a SIB byte follows */
		unsigned sib;

		if (i >= n)
			return 0;
		sib = b[i++];
		op->scale = 1u << (sib >> 6);
		if ((((sib >> 3) & 7) | (rex & 2) << 2) != 4)
			op->index = (int)(((sib >> 3) & 7) | (rex & 2) << 2);
		if ((sib & 7) == 5 && mod == 0)
			dlen = 4;	/* no base: disp32 */
		else
			op->base = (int)((sib & 7) | (rex & 1) << 3);
	} else if (rm == 5 && mod == 0) {
		dlen = 4;		/* disp32, or RIP + disp32 */
		op->rip_rel = long_mode;
	} else {
		op->base = (int)(rm | (rex & 1) << 3);
	}
	if (i + dlen > n)
		return 0;
	op->disp = dlen ? disp_at(b + i, dlen) : 0;
	/* The default segment: SS for a base of (E/R)SP or (E/R)BP. */
	if (seg < 0)
		seg = (op->base == 4 || op->base == 5) ? X86_SS : X86_DS;
	op->seg = seg;
	return 1;
}

uint64_t x86_memop_address(const struct x86_memop *op, int long_mode,
			   const uint64_t reg[16], const uint64_t seg_base[6],
			   uint64_t next_ip)
{
	uint64_t ea = (uint64_t)op->disp, base = 0;

	if (op->rip_rel)
		ea += next_ip;
	if (op->base >= 0)
		ea += reg[op->base];
	if (op->index >= 0)
		ea += reg[op->index] * op->scale;
	if (op->addr32)
		ea &= 0xffffffffu;
	if (!long_mode || op->seg == X86_FS || op->seg == X86_GS)
		base = seg_base[op->seg];
	ea += base;
	return long_mode ? ea : ea & 0xffffffffu;
}
