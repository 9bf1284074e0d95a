/*
 * branch.c: decoding branches and the P6's branch target buffer
 * (branch.h says what is modelled and from which sources).
 */
#include "branch.h"

static int legacy_prefix(uint8_t b)
{
	return b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e ||
	       b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 ||
	       b == 0x65 || b == 0x66 || b == 0x67;
}

static int64_t rel(const uint8_t *b, unsigned size)
{
	if (size == 1)
		return (int8_t)b[0];
	if (size == 2)
		return (int16_t)(b[0] | b[1] << 8);
	return (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 |
			 (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
}

/* One decoding (long_mode or 32-bit); returns the kind, BR_NONE if the
 * bytes are no branch or do not fit n. */
static int decode(const uint8_t *b, size_t n, uint64_t pc, int long_mode,
		  struct br_site *s)
{
	size_t i = 0;
	int opsize16 = 0;
	unsigned dsize = 0;		/* displacement bytes */
	int kind = BR_NONE;

	for (; i < n && legacy_prefix(b[i]); i++)
		opsize16 |= b[i] == 0x66;
	if (long_mode) {
		opsize16 = 0;		/* near branches are 64-bit there */
		for (; i < n && (b[i] & 0xf0) == 0x40; i++)
			;
	}
	if (i >= n)
		return BR_NONE;
	if ((b[i] >= 0x70 && b[i] <= 0x7f) || (b[i] >= 0xe0 && b[i] <= 0xe3)) {
		kind = BR_COND;		/* Jcc, LOOPcc, LOOP, JrCXZ rel8 */
		dsize = 1;
	} else if (b[i] == 0x0f && i + 1 < n && (b[i + 1] & 0xf0) == 0x80) {
		kind = BR_COND;		/* Jcc rel16/32 */
		i++;
		dsize = opsize16 ? 2 : 4;
	} else if (b[i] == 0xe8 || b[i] == 0xe9) {
		kind = BR_DIRECT;	/* CALL, JMP rel16/32 */
		dsize = opsize16 ? 2 : 4;
	} else if (b[i] == 0xeb) {
		kind = BR_DIRECT;	/* JMP rel8 */
		dsize = 1;
	} else if (b[i] == 0xc3 || b[i] == 0xc2) {
		kind = BR_RET;
		dsize = b[i] == 0xc2 ? 2 : 0;	/* RET imm16: no displacement */
	} else if (b[i] == 0xff && i + 1 < n) {
		unsigned reg = (b[i + 1] >> 3) & 7;

		if (reg != 2 && reg != 4)	/* CALL, JMP r/m: near indirect */
			return BR_NONE;
		/* Its length is the ModRM form's; n is QEMU's, so trust n. */
		s->pc = pc;
		s->next = pc + n;
		s->target = 0;
		s->kind = BR_INDIRECT;
		return BR_INDIRECT;
	} else {
		return BR_NONE;
	}
	if (i + 1 + dsize != n)
		return BR_NONE;
	s->pc = pc;
	s->next = pc + n;
	s->target = 0;
	if (kind == BR_COND || kind == BR_DIRECT) {
		s->target = s->next + (uint64_t)rel(b + i + 1, dsize);
		if (!long_mode)
			s->target &= opsize16 ? 0xffff : 0xffffffffu;
	}
	s->kind = (uint8_t)kind;
	return kind;
}

int x86_branch(const uint8_t *b, size_t n, uint64_t pc, struct br_site *s)
{
	s->kind = BR_NONE;
	if (decode(b, n, pc, 1, s) != BR_NONE)
		return s->kind;
	return decode(b, n, pc, 0, s);
}

int btb_init(struct btb *b, unsigned entries)
{
	if (entries < BTB_WAYS || entries > BTB_MAX_ENTRIES ||
	    entries % BTB_WAYS != 0 ||
	    ((entries / BTB_WAYS) & (entries / BTB_WAYS - 1)) != 0)
		return -1;
	b->sets = entries / BTB_WAYS;
	b->tick = 0;
	for (unsigned i = 0; i < BTB_MAX_ENTRIES; i++)
		b->e[i] = (struct btb_entry){ 0 };
	return 0;
}

/* The branch's entry, or NULL; with alloc, a new one in place of the
 * set's least recently used. */
static struct btb_entry *lookup(struct btb *b, uint64_t pc, int alloc)
{
	struct btb_entry *set = &b->e[(pc & (b->sets - 1)) * BTB_WAYS];
	struct btb_entry *victim = set;

	for (unsigned w = 0; w < BTB_WAYS; w++) {
		if (set[w].pc == pc) {
			set[w].used = ++b->tick;
			return &set[w];
		}
		if (set[w].used < victim->used)
			victim = &set[w];
	}
	if (!alloc)
		return NULL;
	*victim = (struct btb_entry){ .pc = pc, .used = ++b->tick };
	return victim;
}

static int cond(struct btb *b, const struct br_site *s, uint64_t to)
{
	struct btb_entry *e;
	int taken, predicted;
	unsigned ctr;

	if (s->target == s->next)
		return 0;		/* both ways lead to one place */
	if (to != s->target && to != s->next)
		return -1;		/* interrupted before the next block */
	taken = to == s->target;
	e = lookup(b, s->pc, 0);
	if (e != NULL) {
		ctr = (e->pht >> (2 * e->hist)) & 3;
		predicted = ctr >= 2;
	} else {			/* static: backward taken */
		predicted = s->target < s->pc;
		e = lookup(b, s->pc, 1);
		/* every history starts weakly toward this first outcome */
		e->pht = taken ? 0xaaaaaaaau : 0x55555555u;
		ctr = taken ? 2 : 1;
	}
	if (taken && ctr < 3)
		ctr++;
	else if (!taken && ctr > 0)
		ctr--;
	e->pht = (e->pht & ~(3u << (2 * e->hist))) | ctr << (2 * e->hist);
	e->hist = (uint8_t)(((e->hist << 1) | taken) & 15);
	e->target = s->target;
	return predicted != taken;
}

int btb_resolve(struct btb *b, const struct br_site *s, uint64_t to)
{
	struct btb_entry *e;
	int missed;

	switch (s->kind) {
	case BR_COND:
		return cond(b, s, to);
	case BR_INDIRECT:
		e = lookup(b, s->pc, 0);
		missed = e == NULL || e->target != to;
		if (e == NULL)
			e = lookup(b, s->pc, 1);
		e->target = to;
		return missed;
	default:
		return 0;
	}
}
