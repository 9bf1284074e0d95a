/*
 * branch.h: the P6's branch prediction, as a cost of modelled time.
 *
 * A P6 fetches past a branch on the branch target buffer's prediction and
 * throws the work away when the branch resolves the other way: "typically
 * 15, possibly as many as 26" core clocks (GCC's ppro.md, from Intel's
 * optimization manual 245127).  The BTB has 512 entries, each predicting
 * direction and target from a 4-bit history of its branch; a branch the
 * BTB does not hold is predicted statically, backward taken and forward
 * not taken; returns come from a return stack (Shen & Lipasti, Modern
 * Processor Design, ch. 7; course notes on the Pentium III).
 *
 * Modelled here: conditional branches and indirect jumps and calls.
 * The BTB is ENTRIES entries, 4-way set associative with LRU replacement
 * (assumption: the organisation is widely quoted but no source reached
 * gives it), tagged by the branch's address.  An entry holds the target
 * it last went to and, for a conditional branch, its last 4 outcomes and
 * a 2-bit counter for each of the 16 histories (the two-level adaptive
 * scheme of Yeh and Patt, which the P6 uses; the counters per entry are
 * an assumption).  Every executed branch gets an entry (assumption).
 * Returns and direct jumps and calls cost nothing: the return stack and
 * the decoder get them right (assumption: a return stack overflow and the
 * decoder's late redirect on a BTB miss are not modelled).
 *
 * Kept apart from busmon.c, with no QEMU in it, so the unit test can
 * check the decoding and the predictor.
 */
#ifndef BRANCH_H
#define BRANCH_H

#include <stddef.h>
#include <stdint.h>

enum br_kind { BR_NONE, BR_COND, BR_INDIRECT, BR_RET, BR_DIRECT };

/* A branch that ends a block of code: where it is, where it goes when
 * taken (conditional: the target; indirect: unknown until it runs) and
 * the next instruction's address (not taken). */
struct br_site {
	uint64_t pc, target, next;
	uint8_t kind;		/* enum br_kind */
	uint8_t user;		/* in user mode: whose cycles a miss costs */
};

/*
 * Decode b[0..n), the whole instruction at pc, as a branch.  Tries 64-bit
 * decoding, then 32-bit; a decoding that does not use exactly n bytes is
 * not taken.  Fills *s and returns its kind (BR_NONE: not a branch).
 */
int x86_branch(const uint8_t *b, size_t n, uint64_t pc, struct br_site *s);

#define BTB_WAYS 4
#define BTB_MAX_ENTRIES 4096

struct btb_entry {
	uint64_t pc;		/* 0: empty */
	uint64_t target;	/* where it went last */
	uint32_t pht;		/* 16 two-bit counters, one per history */
	uint8_t hist;		/* its last 4 outcomes, newest in bit 0 */
	uint64_t used;		/* LRU: the lookup that last touched it */
};

struct btb {
	unsigned sets;		/* a power of two */
	uint64_t tick;
	struct btb_entry e[BTB_MAX_ENTRIES];	/* set s: e[s * BTB_WAYS ...] */
};

/* entries: a power of two, a multiple of BTB_WAYS, <= BTB_MAX_ENTRIES.
 * Returns 0, or -1 for another number. */
int btb_init(struct btb *b, unsigned entries);

/*
 * The branch at s went to `to`: was it mispredicted?  The BTB learns the
 * outcome.  A conditional branch that went neither to its target nor to
 * the next instruction (an interrupt or exception came between it and
 * the next block) is not counted: returns -1 and learns nothing.
 */
int btb_resolve(struct btb *b, const struct br_site *s, uint64_t to);

#endif
