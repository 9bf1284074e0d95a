/*
 * test_branch.c: the branch decoder and the BTB (branch.h), without QEMU.
 * Prints one line per failed check and exits 1 if any failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include "../branch.h"

static int failed;

#define CHECK(cond, ...) do { if (!(cond)) { failed = 1; \
	printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); \
	printf("\n"); } } while (0)

static struct br_site dec(const uint8_t *b, size_t n, uint64_t pc)
{
	struct br_site s;

	x86_branch(b, n, pc, &s);
	return s;
}

static void test_decode(void)
{
	static const uint8_t je8[] = { 0x74, 0x05 };
	static const uint8_t jne32[] = { 0x0f, 0x85, 0x10, 0x00, 0x00, 0x00 };
	static const uint8_t jl_back[] = { 0x7c, 0xf0 };
	static const uint8_t loop[] = { 0xe2, 0xfe };
	static const uint8_t jmp_rax[] = { 0xff, 0xe0 };
	static const uint8_t call_rip[] = { 0xff, 0x15, 0x00, 0x01, 0x00, 0x00 };
	static const uint8_t call_r11[] = { 0x41, 0xff, 0xd3 };
	static const uint8_t ret[] = { 0xc3 };
	static const uint8_t call[] = { 0xe8, 0x00, 0x10, 0x00, 0x00 };
	static const uint8_t nop[] = { 0x90 };
	static const uint8_t inc_eax[] = { 0x40 };	/* 32-bit: INC */
	static const uint8_t push_ind[] = { 0xff, 0x30 };	/* PUSH m */
	static const uint8_t je16[] = { 0x66, 0x0f, 0x84, 0x04, 0x00 };
	struct br_site s;

	s = dec(je8, sizeof je8, 0x1000);
	CHECK(s.kind == BR_COND && s.target == 0x1007 && s.next == 0x1002,
	      "je rel8: kind %d target %#llx", s.kind, (unsigned long long)s.target);
	s = dec(jne32, sizeof jne32, 0xffffffff80001000ull);
	CHECK(s.kind == BR_COND && s.target == 0xffffffff80001016ull,
	      "jne rel32: target %#llx", (unsigned long long)s.target);
	s = dec(jl_back, sizeof jl_back, 0x2000);
	CHECK(s.kind == BR_COND && s.target == 0x1ff2, "jl back: %#llx",
	      (unsigned long long)s.target);
	s = dec(loop, sizeof loop, 0x3000);
	CHECK(s.kind == BR_COND && s.target == 0x3000, "loop: %d", s.kind);
	CHECK(dec(jmp_rax, sizeof jmp_rax, 0).kind == BR_INDIRECT, "jmp rax");
	CHECK(dec(call_rip, sizeof call_rip, 0).kind == BR_INDIRECT, "call [rip]");
	CHECK(dec(call_r11, sizeof call_r11, 0).kind == BR_INDIRECT, "call r11");
	CHECK(dec(ret, sizeof ret, 0).kind == BR_RET, "ret");
	CHECK(dec(call, sizeof call, 0).kind == BR_DIRECT, "call rel32");
	CHECK(dec(nop, sizeof nop, 0).kind == BR_NONE, "nop");
	CHECK(dec(inc_eax, sizeof inc_eax, 0).kind == BR_NONE, "inc eax");
	CHECK(dec(push_ind, sizeof push_ind, 0).kind == BR_NONE, "push m");
	CHECK(dec(je8, 1, 0).kind == BR_NONE, "cut short");
	CHECK(dec(jne32, 4, 0).kind == BR_NONE, "rel32 cut short");
	/* 32-bit code with an operand-size prefix: rel16, 16-bit target */
	s = dec(je16, sizeof je16, 0x1fff0);
	CHECK(s.kind == BR_COND && s.target == 0xfff9, "je rel16: %d %#llx",
	      s.kind, (unsigned long long)s.target);
}

/* Runs `trips`-iteration loops `loops` times through one backward
 * branch; returns the mispredictions of the last half. */
static unsigned run_loop(struct btb *b, unsigned trips, unsigned loops)
{
	struct br_site s = { .pc = 0x5010, .target = 0x5000, .next = 0x5012,
			     .kind = BR_COND };
	unsigned missed = 0;

	for (unsigned l = 0; l < loops; l++)
		for (unsigned t = 0; t < trips; t++) {
			int m = btb_resolve(b, &s, t + 1 < trips ? s.target : s.next);

			if (l >= loops / 2)
				missed += m;
		}
	return missed;
}

static void test_predictor(void)
{
	static struct btb b;
	struct br_site s = { .pc = 0x100, .target = 0x180, .next = 0x102,
			     .kind = BR_COND };
	unsigned missed;

	CHECK(btb_init(&b, 512) == 0 && b.sets == 128, "512 entries");
	CHECK(btb_init(&b, 500) == -1, "500 entries refused");
	CHECK(btb_init(&b, 0) == -1, "0 entries refused");
	/* static prediction: a new forward branch is predicted not taken */
	btb_init(&b, 512);
	CHECK(btb_resolve(&b, &s, s.next) == 0, "forward, not taken, new");
	s.pc = 0x200, s.target = 0x280, s.next = 0x202;
	CHECK(btb_resolve(&b, &s, s.target) == 1, "forward, taken, new");
	CHECK(btb_resolve(&b, &s, s.target) == 0, "forward, taken, learnt");
	CHECK(btb_resolve(&b, &s, 0x9999) == -1, "interrupted");
	/* 4-bit history: a 4-trip loop is learnt whole, a 10-trip loop's
	 * exit is missed every time (four takens say nothing of the count) */
	btb_init(&b, 512);
	missed = run_loop(&b, 4, 100);
	CHECK(missed == 0, "4-trip loop: %u misses", missed);
	btb_init(&b, 512);
	missed = run_loop(&b, 10, 100);
	CHECK(missed == 50, "10-trip loop: %u misses in 50 loops", missed);
	/* alternating outcomes are learnt */
	btb_init(&b, 512);
	s.pc = 0x300, s.target = 0x380, s.next = 0x302;
	missed = 0;
	for (unsigned i = 0; i < 200; i++) {
		int m = btb_resolve(&b, &s, i & 1 ? s.target : s.next);

		missed += i >= 100 && m;
	}
	CHECK(missed == 0, "alternating: %u misses", missed);
	/* capacity: 5 always-taken forward branches in one set of 4 ways,
	 * round robin, thrash under LRU (each falls back to static, not
	 * taken); 4 fit */
	for (unsigned n = 4; n <= 5; n++) {
		btb_init(&b, 512);
		missed = 0;
		for (unsigned r = 0; r < 20; r++)
			for (unsigned k = 0; k < n; k++) {
				struct br_site f = { .pc = 0x1000 + k * 128,
						     .target = 0x1000 + k * 128 + 64,
						     .next = 0x1000 + k * 128 + 2,
						     .kind = BR_COND };
				int m = btb_resolve(&b, &f, f.target);

				missed += r >= 10 && m;
			}
		CHECK(missed == (n == 4 ? 0 : 50), "%u branches in a set: %u misses",
		      n, missed);
	}
	/* indirect: the last target is predicted */
	btb_init(&b, 512);
	s.kind = BR_INDIRECT, s.pc = 0x400;
	CHECK(btb_resolve(&b, &s, 0x7000) == 1, "indirect, new");
	CHECK(btb_resolve(&b, &s, 0x7000) == 0, "indirect, same target");
	CHECK(btb_resolve(&b, &s, 0x8000) == 1, "indirect, another target");
	s.kind = BR_RET;
	CHECK(btb_resolve(&b, &s, 0x1234) == 0, "returns cost nothing");
}

int main(void)
{
	test_decode();
	test_predictor();
	if (!failed)
		printf("test_branch: all passed\n");
	return failed;
}
