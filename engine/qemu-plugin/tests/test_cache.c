/*
 * test_cache.c - unit tests of cachemodel.c with exact expected counts.
 *
 * Every check prints expected/actual on failure; the last line is always
 * "N passed, M failed" and the exit status is nonzero on any failure.
 */
#include "../cachemodel.h"
#include "../x86insn.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;
static const char *context = "";

#define EXPECT(what, expected, actual) \
	expect_u64(__LINE__, what, (uint64_t)(expected), (uint64_t)(actual))

static void expect_u64(int line, const char *what, uint64_t expected,
		       uint64_t actual)
{
	if (expected == actual) {
		passed++;
		return;
	}
	failed++;
	printf("FAIL line %d [%s] %s: expected %" PRIu64 ", actual %" PRIu64 "\n",
	       line, context, what, expected, actual);
}

#define K CM_KERNEL

static const struct cm_geom geoms[] = {
	{ 8192, 2, 32 },	/* Pentium Pro L1D */
	{ 524288, 4, 32 },	/* Pentium Pro L2 */
	{ 1024, 1, 64 },	/* direct-mapped */
	{ 32768, 8, 64 },
};

#define NGEOMS (sizeof(geoms) / sizeof(geoms[0]))

static uint64_t lines_of(const struct cm_geom *g)
{
	return g->size / g->line;
}

static void model(struct cm_model *m, unsigned ncpus,
		  const struct cm_geom *l1, const struct cm_geom *l2)
{
	char err[256];

	if (cm_init(m, ncpus, l1, l2, err, sizeof(err)) < 0) {
		printf("cm_init failed: %s\n", err);
		exit(2);
	}
}

/* Model A: geometry g as L1D, under a big L2 that holds everything. */
static void model_l1(struct cm_model *m, const struct cm_geom *g)
{
	struct cm_geom big = { 4u << 20, 16, g->line };

	model(m, 1, g, &big);
}

/* Model B: geometry g as L2, under a one-line L1D. */
static void model_l2(struct cm_model *m, const struct cm_geom *g)
{
	struct cm_geom tiny = { g->line, 1, g->line };

	model(m, 1, &tiny, g);
}

static void sweep(struct cm_model *m, unsigned cpu, uint64_t base,
		  uint64_t bytes, uint64_t stride, int store)
{
	for (uint64_t a = base; a < base + bytes; a += stride)
		cm_access(m, cpu, a, stride < 8 ? stride : 8, store, 0);
}

static struct cm_counters *ctr(struct cm_model *m, unsigned cpu)
{
	return &m->cpu[cpu].ctr[K];
}

/* (a) a region that fits is all compulsory misses, then all hits. */
static void test_fit(const struct cm_geom *g)
{
	struct cm_model m;
	const uint64_t base = 0x400000;

	model_l1(&m, g);
	sweep(&m, 0, base, g->size, 8, 0);
	EXPECT("L1 reads pass 1", g->size / 8, ctr(&m, 0)->l1d_read_accesses);
	EXPECT("L1 misses pass 1", lines_of(g), ctr(&m, 0)->l1d_read_misses);
	cm_reset_stats(&m);
	sweep(&m, 0, base, g->size, 8, 0);
	EXPECT("L1 misses pass 2", 0, ctr(&m, 0)->l1d_read_misses);
	EXPECT("bus reads pass 2", 0, ctr(&m, 0)->bus[CM_READ]);
	cm_free(&m);

	model_l2(&m, g);
	sweep(&m, 0, base, g->size, 8, 0);
	EXPECT("L2 misses pass 1", lines_of(g), ctr(&m, 0)->l2_misses);
	EXPECT("bus reads pass 1", lines_of(g), ctr(&m, 0)->bus[CM_READ]);
	cm_reset_stats(&m);
	sweep(&m, 0, base, g->size, 8, 0);
	EXPECT("L2 accesses pass 2", lines_of(g), ctr(&m, 0)->l2_accesses);
	EXPECT("L2 misses pass 2", 0, ctr(&m, 0)->l2_misses);
	cm_free(&m);
}

/* (b) twice the capacity, swept in order: LRU keeps nothing useful. */
static void test_overflow(const struct cm_geom *g)
{
	struct cm_model m;
	const uint64_t n = 2 * lines_of(g);

	model_l1(&m, g);
	sweep(&m, 0, 0, 2 * g->size, g->line, 0);
	EXPECT("L1 misses pass 1", n, ctr(&m, 0)->l1d_read_misses);
	sweep(&m, 0, 0, 2 * g->size, g->line, 0);
	EXPECT("L1 misses pass 1+2", 2 * n, ctr(&m, 0)->l1d_read_misses);
	cm_free(&m);

	model_l2(&m, g);
	sweep(&m, 0, 0, 2 * g->size, g->line, 0);
	EXPECT("L2 misses pass 1", n, ctr(&m, 0)->l2_misses);
	sweep(&m, 0, 0, 2 * g->size, g->line, 0);
	EXPECT("L2 misses pass 1+2", 2 * n, ctr(&m, 0)->l2_misses);
	EXPECT("bus reads", 2 * n, ctr(&m, 0)->bus[CM_READ]);
	EXPECT("writebacks (clean)", 0, ctr(&m, 0)->bus[CM_WRITEBACK]);
	cm_free(&m);
}

/* Cycle `nlines` lines one way-size apart, `rounds` times. */
static void cycle(struct cm_model *m, const struct cm_geom *g,
		  uint64_t nlines, unsigned rounds)
{
	uint64_t way = g->size / g->assoc;

	for (unsigned r = 0; r < rounds; r++)
		for (uint64_t i = 0; i < nlines; i++)
			cm_access(m, 0, 0x1000000 + i * way + 8, 4, 0, 0);
}

/* (c) one set: assoc lines fit, assoc+1 lines thrash under LRU. */
static void test_conflict(const struct cm_geom *g)
{
	struct cm_model m;
	const unsigned rounds = 5;

	model_l1(&m, g);
	cycle(&m, g, g->assoc + 1, rounds);
	EXPECT("L1 misses, assoc+1 lines", (g->assoc + 1) * rounds,
	       ctr(&m, 0)->l1d_read_misses);
	cm_free(&m);
	model_l1(&m, g);
	cycle(&m, g, g->assoc, rounds);
	EXPECT("L1 misses, assoc lines", g->assoc, ctr(&m, 0)->l1d_read_misses);
	cm_free(&m);

	model_l2(&m, g);
	cycle(&m, g, g->assoc + 1, rounds);
	EXPECT("L2 misses, assoc+1 lines", (g->assoc + 1) * rounds,
	       ctr(&m, 0)->l2_misses);
	cm_free(&m);
	model_l2(&m, g);
	cycle(&m, g, g->assoc, rounds);
	EXPECT("L2 misses, assoc lines", g->assoc, ctr(&m, 0)->l2_misses);
	cm_free(&m);
}

/*
 * (d) write-back: writing 2x L2 twice.  Pass 1 fills L2 with L dirty
 * lines, then each of the next L fills evicts one (L write-backs); pass 2
 * misses on every line and evicts a dirty line each time (2L).
 */
static void test_writeback(const struct cm_geom *g)
{
	struct cm_model m;
	const uint64_t L = lines_of(g);
	uint64_t view[CM_NCHUNKS], sum = 0;

	model_l2(&m, g);
	sweep(&m, 0, 0, 2 * g->size, g->line, 1);
	EXPECT("writebacks pass 1", L, ctr(&m, 0)->l2_writebacks);
	sweep(&m, 0, 0, 2 * g->size, g->line, 1);
	EXPECT("writebacks pass 1+2", 3 * L, ctr(&m, 0)->l2_writebacks);
	EXPECT("bus writebacks", 3 * L, ctr(&m, 0)->bus[CM_WRITEBACK]);
	EXPECT("bus RFOs", 4 * L, ctr(&m, 0)->bus[CM_RFO]);
	EXPECT("bus reads", 0, ctr(&m, 0)->bus[CM_READ]);
	EXPECT("L1 write misses", 4 * L, ctr(&m, 0)->l1d_write_misses);
	cm_offset_view(&m, 0, view);
	for (unsigned i = 0; i < CM_NCHUNKS; i++)
		sum += view[i];
	EXPECT("histogram total", 7 * L, sum);
	cm_free(&m);

	/* Same sweep within a big L2: nothing is ever written back. */
	model_l1(&m, g);
	sweep(&m, 0, 0, 2 * g->size, g->line, 1);
	sweep(&m, 0, 0, 2 * g->size, g->line, 1);
	EXPECT("writebacks, fits L2", 0, ctr(&m, 0)->l2_writebacks);
	EXPECT("L1 write misses, fits L2", 4 * L, ctr(&m, 0)->l1d_write_misses);
	EXPECT("bus RFOs, fits L2", 2 * L, ctr(&m, 0)->bus[CM_RFO]);
	cm_free(&m);

	/* Read then write a private region: E -> M is silent. */
	model_l1(&m, g);
	sweep(&m, 0, 0, g->size, g->line, 0);
	sweep(&m, 0, 0, g->size, g->line, 1);
	EXPECT("invalidates after E", 0, ctr(&m, 0)->bus[CM_INVALIDATE]);
	EXPECT("RFOs after E", 0, ctr(&m, 0)->bus[CM_RFO]);
	EXPECT("L1 write misses after E", 0, ctr(&m, 0)->l1d_write_misses);
	cm_free(&m);
}

static void expect_states(struct cm_model *m, uint64_t a, enum cm_state s0,
			  enum cm_state s1)
{
	EXPECT("cpu0 L1 state", s0, cm_l1_state(m, 0, a));
	EXPECT("cpu0 L2 state", s0, cm_l2_state(m, 0, a));
	EXPECT("cpu1 L1 state", s1, cm_l1_state(m, 1, a));
	EXPECT("cpu1 L2 state", s1, cm_l2_state(m, 1, a));
}

static uint64_t total(struct cm_model *m, enum cm_kind k)
{
	return ctr(m, 0)->bus[k] + ctr(m, 1)->bus[k];
}

/* (e) MESI between two CPUs. */
static void test_mesi(void)
{
	struct cm_model m;
	const uint64_t A = 0x10000, B = 0x20040, C = 0x30080;

	model(&m, 2, &geoms[0], &geoms[1]);
	context = "MESI read/read/write/read";
	cm_access(&m, 0, A, 4, 0, 0);
	expect_states(&m, A, CM_E, CM_I);
	cm_access(&m, 1, A, 4, 0, 0);
	expect_states(&m, A, CM_S, CM_S);
	EXPECT("bus reads", 2, total(&m, CM_READ));
	EXPECT("hitm", 0, ctr(&m, 0)->hitm + ctr(&m, 1)->hitm);
	cm_access(&m, 0, A, 4, 1, 0);
	expect_states(&m, A, CM_M, CM_I);
	EXPECT("cpu0 invalidates", 1, ctr(&m, 0)->bus[CM_INVALIDATE]);
	EXPECT("cpu0 L1 write misses", 0, ctr(&m, 0)->l1d_write_misses);
	cm_access(&m, 1, A, 4, 0, 0);
	expect_states(&m, A, CM_S, CM_S);
	EXPECT("bus reads", 3, total(&m, CM_READ));
	EXPECT("cpu1 hitm", 1, ctr(&m, 1)->hitm);
	EXPECT("cpu0 hitm", 0, ctr(&m, 0)->hitm);
	EXPECT("writebacks", 0, total(&m, CM_WRITEBACK));

	context = "MESI RFO";
	cm_access(&m, 1, B, 4, 1, 0);
	expect_states(&m, B, CM_I, CM_M);
	EXPECT("cpu1 RFOs", 1, ctr(&m, 1)->bus[CM_RFO]);
	cm_access(&m, 0, B, 4, 1, 0);
	expect_states(&m, B, CM_M, CM_I);
	EXPECT("cpu0 RFOs", 1, ctr(&m, 0)->bus[CM_RFO]);
	EXPECT("cpu0 hitm", 1, ctr(&m, 0)->hitm);
	cm_access(&m, 0, C, 4, 0, 0);
	cm_access(&m, 1, C, 4, 1, 0);	/* RFO on a remote E line */
	expect_states(&m, C, CM_I, CM_M);
	EXPECT("cpu1 hitm (E is no hitm)", 1, ctr(&m, 1)->hitm);
	cm_access(&m, 0, C, 4, 0, 0);
	expect_states(&m, C, CM_S, CM_S);
	EXPECT("cpu0 hitm", 2, ctr(&m, 0)->hitm);
	cm_access(&m, 0, C, 4, 1, 0);
	expect_states(&m, C, CM_M, CM_I);
	EXPECT("total invalidates", 2, total(&m, CM_INVALIDATE));
	EXPECT("total RFOs", 3, total(&m, CM_RFO));
	EXPECT("total reads", 5, total(&m, CM_READ));

	/* A locked RMW arriving as R then W: one READ, a silent E->M. */
	context = "MESI locked RMW";
	cm_reset_stats(&m);
	cm_access(&m, 0, 0x50000, 4, 0, 0);
	cm_access(&m, 0, 0x50000, 4, 1, 0);
	EXPECT("transactions R+W", 1, total(&m, CM_READ) + total(&m, CM_RFO) +
	       total(&m, CM_INVALIDATE));
	cm_access(&m, 1, 0x60000, 4, 1, 0);	/* as one store-flagged access */
	EXPECT("cpu1 RFO for RW", 1, ctr(&m, 1)->bus[CM_RFO]);
	cm_free(&m);
}

/* (f) the monitor keys a fill by its critical 8-byte chunk. */
static void test_offsets(void)
{
	struct cm_model m;
	uint64_t chunk[CM_NCHUNKS], line[CM_NCHUNKS];

	context = "critical chunk";
	model(&m, 1, &geoms[0], &geoms[1]);
	cm_access(&m, 0, 0x12334, 4, 0, 0);
	cm_offset_view(&m, 0, chunk);
	cm_offset_view(&m, 1, line);
	EXPECT("chunk view at 0x330", 1, chunk[0x330 / 8]);
	EXPECT("chunk view at 0x320", 0, chunk[0x320 / 8]);
	EXPECT("line view at 0x320", 1, line[0x320 / 8]);
	EXPECT("line view at 0x330", 0, line[0x330 / 8]);
	EXPECT("hist cpu0 kernel read 0x330", 1,
	       m.hist[0][K][CM_READ][0x330 / 8]);

	/* A store miss is an RFO keyed by its chunk; a user-mode one is
	 * filed under user. */
	cm_access(&m, 0, 0x45f9e, 2, 1, CM_F_USER);
	EXPECT("user RFO at 0xf98", 1, m.hist[0][CM_USER][CM_RFO][0xf98 / 8]);
	EXPECT("user RFO count", 1, m.cpu[0].ctr[CM_USER].bus[CM_RFO]);

	/* Evicting a dirty line writes back at the line base. */
	cm_reset_stats(&m);
	for (unsigned i = 1; i <= 4; i++)	/* 4 more lines in that L2 set */
		cm_access(&m, 0, 0x45f9e + i * (524288 / 4), 1, 0, 0);
	EXPECT("writeback at line base 0xf80", 1,
	       m.hist[0][K][CM_WRITEBACK][0xf80 / 8]);
	EXPECT("writeback is kernel (mode of the evicting access)", 1,
	       m.cpu[0].ctr[K].l2_writebacks);
	cm_free(&m);
}

/* (g) an access that straddles a line is two accesses. */
static void test_straddle(void)
{
	struct cm_model m;

	context = "straddle";
	model(&m, 1, &geoms[0], &geoms[1]);
	cm_access(&m, 0, 0x8001c, 8, 0, 0);
	EXPECT("L1 accesses", 2, ctr(&m, 0)->l1d_read_accesses);
	EXPECT("L1 misses", 2, ctr(&m, 0)->l1d_read_misses);
	EXPECT("read at 0x018", 1, m.hist[0][K][CM_READ][0x018 / 8]);
	EXPECT("read at 0x020", 1, m.hist[0][K][CM_READ][0x020 / 8]);
	cm_access(&m, 0, 0x80018, 8, 0, 0);	/* aligned: one access */
	EXPECT("L1 accesses", 3, ctr(&m, 0)->l1d_read_accesses);
	cm_free(&m);
}

/* Inclusion: evicting from L2 back-invalidates L1, even a bigger L1. */
static void test_inclusion(void)
{
	struct cm_model m;
	struct cm_geom l1 = { 8192, 2, 32 }, l2 = { 1024, 1, 32 };

	context = "inclusion";
	model(&m, 1, &l1, &l2);
	cm_access(&m, 0, 0x2000, 4, 1, 0);
	cm_access(&m, 0, 0x2400, 4, 0, 0);	/* same L2 set, other L1 set */
	EXPECT("L1 state of victim", CM_I, cm_l1_state(&m, 0, 0x2000));
	EXPECT("writeback of dirty victim", 1, ctr(&m, 0)->l2_writebacks);
	EXPECT("writeback at 0x000", 1, m.hist[0][K][CM_WRITEBACK][0]);
	cm_access(&m, 0, 0x2000, 4, 0, 0);
	EXPECT("L1 misses", 3, ctr(&m, 0)->l1d_read_misses +
	       ctr(&m, 0)->l1d_write_misses);
	cm_free(&m);
}

/* resetstats zeroes counters and histograms but keeps the caches. */
static void test_reset_and_rqloop(void)
{
	struct cm_model m;

	context = "reset/rqloop";
	model(&m, 1, &geoms[0], &geoms[1]);
	cm_access(&m, 0, 0x9000, 8, 0, CM_F_RQLOOP);
	EXPECT("rqloop L1 reads", 1, ctr(&m, 0)->rqloop_l1d_read_accesses);
	EXPECT("rqloop L1 misses", 1, ctr(&m, 0)->rqloop_l1d_read_misses);
	EXPECT("rqloop L2 reads", 1, ctr(&m, 0)->rqloop_l2_read_accesses);
	EXPECT("rqloop L2 misses", 1, ctr(&m, 0)->rqloop_l2_read_misses);
	cm_access(&m, 0, 0x9000, 8, 1, CM_F_RQLOOP);	/* stores don't count */
	EXPECT("rqloop L1 reads after store", 1,
	       ctr(&m, 0)->rqloop_l1d_read_accesses);
	cm_reset_stats(&m);
	EXPECT("reads after reset", 0, ctr(&m, 0)->l1d_read_accesses);
	EXPECT("hist after reset", 0, m.hist[0][K][CM_READ][0]);
	cm_access(&m, 0, 0x9000, 8, 0, CM_F_RQLOOP);
	EXPECT("rqloop L1 reads", 1, ctr(&m, 0)->rqloop_l1d_read_accesses);
	EXPECT("rqloop L1 misses (cache kept)", 0,
	       ctr(&m, 0)->rqloop_l1d_read_misses);
	cm_add_insts(&m, 0, CM_USER, 7);
	EXPECT("user insts", 7, m.cpu[0].ctr[CM_USER].insts);
	EXPECT("counter name", 0, strcmp(cm_counter_name[0], "insts"));
	EXPECT("counter order", 7,
	       cm_counter_get(&m.cpu[0].ctr[CM_USER], 0));
	cm_free(&m);
}

/* The bus transactions of both CPUs, all kinds, and their HITMs. */
static uint64_t all_bus(struct cm_model *m)
{
	return total(m, CM_READ) + total(m, CM_RFO) + total(m, CM_WRITEBACK) +
	       total(m, CM_INVALIDATE);
}

/*
 * A locked RMW is one read for ownership whatever form QEMU reports it
 * in.  Round-robin TCG gives R then W; only the instruction's lock flag
 * tells its load from a plain load, which would cost a READ and then an
 * INVALIDATE on a contended (remote M or S) line.
 */
static void test_locked_rmw(void)
{
	struct cm_model m;
	const uint64_t L = 0x70010;	/* a spinlock, contended */

	model(&m, 2, &geoms[0], &geoms[1]);
	context = "locked RMW, remote M, R then W";
	cm_access(&m, 1, L, 4, 1, 0);		/* CPU1 holds it M */
	cm_reset_stats(&m);
	cm_access(&m, 0, L, 4, 0, CM_F_LOCKED);
	cm_access(&m, 0, L, 4, 1, CM_F_LOCKED);
	expect_states(&m, L, CM_M, CM_I);
	EXPECT("one transaction", 1, all_bus(&m));
	EXPECT("it is an RFO", 1, ctr(&m, 0)->bus[CM_RFO]);
	EXPECT("no READ", 0, ctr(&m, 0)->bus[CM_READ]);
	EXPECT("no INVALIDATE", 0, ctr(&m, 0)->bus[CM_INVALIDATE]);
	EXPECT("hitm", 1, ctr(&m, 0)->hitm);
	EXPECT("RFO at its critical chunk", 1,
	       m.hist[0][K][CM_RFO][(L & 0xfff) / 8]);
	EXPECT("L1 reads (the R)", 1, ctr(&m, 0)->l1d_read_accesses);
	EXPECT("L1 read misses (the R)", 1, ctr(&m, 0)->l1d_read_misses);
	EXPECT("L1 writes (the W)", 1, ctr(&m, 0)->l1d_write_accesses);
	EXPECT("L1 write misses (the W hits M)", 0,
	       ctr(&m, 0)->l1d_write_misses);
	EXPECT("L2 accesses", 1, ctr(&m, 0)->l2_accesses);

	context = "locked RMW, remote M, one RW access";
	cm_reset_stats(&m);
	cm_access(&m, 1, L, 4, 1, CM_F_LOCKED);	/* MTTCG form */
	expect_states(&m, L, CM_I, CM_M);
	EXPECT("one transaction", 1, all_bus(&m));
	EXPECT("it is an RFO", 1, ctr(&m, 1)->bus[CM_RFO]);
	EXPECT("hitm", 1, ctr(&m, 1)->hitm);

	context = "locked RMW, remote S";
	cm_access(&m, 0, L, 4, 0, 0);		/* both S */
	expect_states(&m, L, CM_S, CM_S);
	cm_reset_stats(&m);
	cm_access(&m, 0, L, 4, 0, CM_F_LOCKED);	/* L1 hit in S */
	cm_access(&m, 0, L, 4, 1, CM_F_LOCKED);
	expect_states(&m, L, CM_M, CM_I);
	EXPECT("one transaction", 1, all_bus(&m));
	EXPECT("it is an INVALIDATE", 1, ctr(&m, 0)->bus[CM_INVALIDATE]);
	EXPECT("no hitm", 0, ctr(&m, 0)->hitm);

	context = "locked RMW, private E line";
	cm_access(&m, 0, 0x71000, 4, 0, 0);	/* E */
	cm_reset_stats(&m);
	cm_access(&m, 0, 0x71000, 4, 0, CM_F_LOCKED);
	cm_access(&m, 0, 0x71000, 4, 1, CM_F_LOCKED);
	EXPECT("E -> M is silent", 0, all_bus(&m));
	EXPECT("state M", CM_M, cm_l2_state(&m, 0, 0x71000));

	/* A plain (unlocked) RMW such as add %eax,(mem) is a load then a
	 * store: READ then INVALIDATE, as on a P6. */
	context = "plain RMW, remote M";
	cm_access(&m, 1, 0x72000, 4, 1, 0);
	cm_reset_stats(&m);
	cm_access(&m, 0, 0x72000, 4, 0, 0);
	cm_access(&m, 0, 0x72000, 4, 1, 0);
	EXPECT("READ", 1, ctr(&m, 0)->bus[CM_READ]);
	EXPECT("INVALIDATE", 1, ctr(&m, 0)->bus[CM_INVALIDATE]);
	EXPECT("RFO", 0, ctr(&m, 0)->bus[CM_RFO]);
	EXPECT("hitm", 1, ctr(&m, 0)->hitm);
	cm_free(&m);
}

/*
 * Dirty data has one owner: a HITM READ leaves memory up to date (the
 * S copies are clean), and a HITM RFO hands the dirt to the new owner.
 * Each dirty line is written back exactly once.
 */
static void test_dirty_ownership(void)
{
	struct cm_model m;
	struct cm_geom l1 = { 64, 1, 32 }, l2 = { 128, 1, 32 };	/* 4 lines */
	const uint64_t A = 0x1000, A2 = A + 128;	/* same L1 and L2 set */

	context = "dirty: M -> S by READ";
	model(&m, 2, &l1, &l2);
	cm_access(&m, 0, A, 4, 1, 0);		/* CPU0: M */
	cm_access(&m, 1, A, 4, 0, 0);		/* HITM READ: both S */
	expect_states(&m, A, CM_S, CM_S);
	cm_access(&m, 0, A2, 4, 0, 0);		/* evicts CPU0's S copy */
	cm_access(&m, 1, A2, 4, 0, 0);		/* evicts CPU1's S copy */
	EXPECT("no write-back of S copies", 0, total(&m, CM_WRITEBACK));
	EXPECT("L2 writebacks", 0, ctr(&m, 0)->l2_writebacks +
	       ctr(&m, 1)->l2_writebacks);
	EXPECT("A gone from CPU0", CM_I, cm_l1_state(&m, 0, A));
	EXPECT("A gone from CPU1", CM_I, cm_l2_state(&m, 1, A));
	cm_free(&m);

	context = "dirty: M -> I by RFO";
	model(&m, 2, &l1, &l2);
	cm_access(&m, 0, A, 4, 1, 0);		/* CPU0: M */
	cm_access(&m, 1, A, 4, 1, 0);		/* HITM RFO: CPU1 M, CPU0 I */
	expect_states(&m, A, CM_I, CM_M);
	cm_access(&m, 0, A2, 4, 0, 0);		/* CPU0's frame was I */
	EXPECT("no write-back by the old owner", 0,
	       ctr(&m, 0)->bus[CM_WRITEBACK]);
	cm_access(&m, 1, A2, 4, 0, 0);		/* evicts CPU1's M copy */
	EXPECT("one write-back by the new owner", 1,
	       ctr(&m, 1)->bus[CM_WRITEBACK]);
	EXPECT("write-backs in all", 1, total(&m, CM_WRITEBACK));
	EXPECT("write-back at line base", 1,
	       m.hist[1][K][CM_WRITEBACK][0]);
	EXPECT("hitm", 1, ctr(&m, 1)->hitm);
	cm_free(&m);

	/* An M line dropped from L1 stays dirty in L2; back-invalidated from
	 * L1 by an L2 eviction, it is written back once and refetched E. */
	context = "dirty: L1 and L2 copies";
	model(&m, 1, &l1, &l2);
	cm_access(&m, 0, A, 4, 1, 0);
	cm_access(&m, 0, A + 64, 4, 0, 0);	/* same L1 set, other L2 set */
	EXPECT("A left L1", CM_I, cm_l1_state(&m, 0, A));
	EXPECT("A still M in L2", CM_M, cm_l2_state(&m, 0, A));
	cm_access(&m, 0, A, 4, 0, 0);		/* L2 hit: L1 gets M back */
	EXPECT("A M in L1 again", CM_M, cm_l1_state(&m, 0, A));
	EXPECT("no write-back yet", 0, ctr(&m, 0)->l2_writebacks);
	cm_access(&m, 0, A2, 4, 0, 0);		/* L2 evicts A */
	EXPECT("A back-invalidated", CM_I, cm_l1_state(&m, 0, A));
	EXPECT("one write-back", 1, ctr(&m, 0)->bus[CM_WRITEBACK]);
	cm_access(&m, 0, A, 4, 0, 0);
	EXPECT("A refetched E", CM_E, cm_l1_state(&m, 0, A));
	EXPECT("still one write-back", 1, ctr(&m, 0)->bus[CM_WRITEBACK]);
	EXPECT("reads", 3, ctr(&m, 0)->bus[CM_READ]);
	EXPECT("RFOs", 1, ctr(&m, 0)->bus[CM_RFO]);

	/* resetstats keeps dirt: a line written before it is still
	 * written back after it. */
	context = "dirty: kept across reset";
	cm_access(&m, 0, A2, 4, 1, 0);		/* A2 M (evicts clean A) */
	cm_reset_stats(&m);
	cm_access(&m, 0, A, 4, 0, 0);		/* evicts A2 */
	EXPECT("write-back after reset", 1, ctr(&m, 0)->bus[CM_WRITEBACK]);
	EXPECT("read after reset", 1, ctr(&m, 0)->bus[CM_READ]);
	cm_free(&m);
}

/* The Table 2 metric: loop loads that miss L1 are L2 reads; of those,
 * the ones that miss L2 are L2 read misses.  Nothing else counts. */
static void test_rqloop_exact(void)
{
	struct cm_model m;
	struct cm_geom l1 = { 64, 1, 32 }, l2 = { 1024, 1, 32 };
	const unsigned RQ = CM_F_RQLOOP;

	context = "rqloop exact";
	model(&m, 2, &l1, &l2);
	cm_access(&m, 0, 0x2000, 4, 0, RQ);	/* L1 miss, L2 miss */
	cm_access(&m, 0, 0x2004, 4, 0, RQ);	/* L1 hit */
	cm_access(&m, 0, 0x2040, 4, 0, 0);	/* plain load evicts L1 */
	cm_access(&m, 0, 0x2008, 4, 0, RQ);	/* L1 miss, L2 hit */
	cm_access(&m, 0, 0x2100, 4, 1, RQ);	/* a store: not counted */
	cm_access(&m, 0, 0x2200, 4, 0, RQ | CM_F_USER);	/* user mode */
	cm_access(&m, 1, 0x2000, 4, 1, 0);	/* remote RFO */
	cm_access(&m, 0, 0x2000, 4, 0, RQ);	/* miss again: coherence */
	EXPECT("L1 reads", 4, ctr(&m, 0)->rqloop_l1d_read_accesses);
	EXPECT("L1 read misses", 3, ctr(&m, 0)->rqloop_l1d_read_misses);
	EXPECT("L2 reads", 3, ctr(&m, 0)->rqloop_l2_read_accesses);
	EXPECT("L2 read misses", 2, ctr(&m, 0)->rqloop_l2_read_misses);
	EXPECT("user L2 reads", 1,
	       m.cpu[0].ctr[CM_USER].rqloop_l2_read_accesses);
	EXPECT("user L2 read misses", 1,
	       m.cpu[0].ctr[CM_USER].rqloop_l2_read_misses);
	EXPECT("cpu1 nothing", 0, ctr(&m, 1)->rqloop_l1d_read_accesses);
	cm_free(&m);
}

/* The loop's L2 read misses of CPU0 (kernel mode) by cause; they must add
 * up to rqloop_l2_read_misses. */
static void expect_causes(int line, struct cm_model *m, uint64_t first,
			  uint64_t inval, uint64_t ev_loop, uint64_t ev_kernel,
			  uint64_t ev_user)
{
	const struct cm_counters *c = ctr(m, 0);

	expect_u64(line, "first", first, c->rqloop_l2_read_first);
	expect_u64(line, "invalidated", inval, c->rqloop_l2_read_invalidated);
	expect_u64(line, "evicted by a loop line", ev_loop,
		   c->rqloop_l2_read_evicted_loop);
	expect_u64(line, "evicted by a kernel line", ev_kernel,
		   c->rqloop_l2_read_evicted_kernel);
	expect_u64(line, "evicted by a user line", ev_user,
		   c->rqloop_l2_read_evicted_user);
	expect_u64(line, "causes add up to the misses",
		   c->rqloop_l2_read_misses,
		   c->rqloop_l2_read_first + c->rqloop_l2_read_invalidated +
		   c->rqloop_l2_read_evicted_loop +
		   c->rqloop_l2_read_evicted_kernel +
		   c->rqloop_l2_read_evicted_user);
}

#define CAUSES(m, f, i, el, ek, eu) \
	expect_causes(__LINE__, m, f, i, el, ek, eu)

/*
 * Where the loop's L2 read misses come from, and why.  L1D one line per
 * set (2 sets), L2 direct-mapped, 32 sets: 0x2000, 0x2400, 0x2800 and
 * 0x2c00 share an L1 set and an L2 set.
 */
static void test_rqloop_causes(void)
{
	struct cm_model m;
	struct cm_geom l1 = { 64, 1, 32 }, l2 = { 1024, 1, 32 };
	const unsigned RQ = CM_F_RQLOOP;
	const uint64_t A = 0x2000, B = 0x2400, C = 0x2800, D = 0x2c00;

	context = "rqloop ping-pong";
	model(&m, 2, &l1, &l2);
	/* CPU1 writes the line, CPU0's loop reads it: every refill is a
	 * HITM, a coherence miss. */
	for (int i = 0; i < 10; i++) {
		cm_access(&m, 1, A + 4, 4, 1, 0);
		cm_access(&m, 0, A, 4, 0, RQ);
		cm_access(&m, 0, A + 8, 4, 0, RQ);	/* L1 hit */
	}
	EXPECT("L2 reads", 10, ctr(&m, 0)->rqloop_l2_read_accesses);
	EXPECT("L2 read misses", 10, ctr(&m, 0)->rqloop_l2_read_misses);
	EXPECT("all HITM", 10, ctr(&m, 0)->rqloop_l2_read_hitm);
	EXPECT("HITM is not counted as shared", 0,
	       ctr(&m, 0)->rqloop_l2_read_shared);
	EXPECT("all HITMs", 10, ctr(&m, 0)->hitm);
	CAUSES(&m, 0, 10, 0, 0, 0);
	EXPECT("CPU1 counts no loop misses", 0,
	       ctr(&m, 1)->rqloop_l2_read_misses);
	cm_free(&m);

	context = "rqloop clean copy";
	model(&m, 2, &l1, &l2);
	cm_access(&m, 1, A, 4, 0, 0);		/* CPU1 holds A, E */
	cm_access(&m, 0, A, 4, 0, RQ);		/* from memory, filled S */
	EXPECT("shared", 1, ctr(&m, 0)->rqloop_l2_read_shared);
	EXPECT("no HITM", 0, ctr(&m, 0)->rqloop_l2_read_hitm);
	CAUSES(&m, 1, 0, 0, 0, 0);
	cm_access(&m, 0, B, 4, 0, 0);		/* a plain load: not counted */
	EXPECT("only loop loads", 1, ctr(&m, 0)->rqloop_l2_read_misses);
	cm_free(&m);

	context = "rqloop replacement";
	model(&m, 2, &l1, &l2);
	cm_access(&m, 0, A, 4, 0, RQ);		/* first */
	cm_access(&m, 0, B, 4, 0, RQ);		/* first; evicts A */
	cm_access(&m, 0, A, 4, 0, RQ);		/* by a loop line; evicts B */
	CAUSES(&m, 2, 0, 1, 0, 0);
	cm_access(&m, 0, C, 4, 0, 0);		/* a kernel line evicts A */
	cm_access(&m, 0, A, 4, 0, RQ);
	CAUSES(&m, 2, 0, 1, 1, 0);
	cm_access(&m, 0, D, 4, 1, CM_F_USER);	/* a user store evicts A */
	cm_access(&m, 0, A, 4, 0, RQ);
	CAUSES(&m, 2, 0, 1, 1, 1);
	EXPECT("no HITM", 0, ctr(&m, 0)->rqloop_l2_read_hitm);

	/* A remote write after the line left is still a coherence miss,
	 * even when the data comes from memory... */
	context = "rqloop written after it left";
	cm_access(&m, 0, C, 4, 0, 0);		/* a kernel line evicts A */
	cm_access(&m, 1, A, 4, 1, 0);		/* CPU1: RFO, no copy here */
	cm_access(&m, 1, C, 4, 0, 0);		/* CPU1 writes A back */
	cm_access(&m, 0, A, 4, 0, RQ);
	EXPECT("from memory", 0, ctr(&m, 0)->rqloop_l2_read_hitm);
	CAUSES(&m, 2, 1, 1, 1, 1);
	/* ... and so is a HITM on a line the other CPU took E and wrote
	 * silently (no bus transaction to see). */
	cm_access(&m, 0, D, 4, 0, CM_F_USER);	/* a user line evicts A */
	cm_access(&m, 1, A, 4, 0, 0);		/* CPU1: E */
	cm_access(&m, 1, A, 4, 1, 0);		/* E -> M, silent */
	cm_access(&m, 0, A, 4, 0, RQ);
	EXPECT("HITM", 1, ctr(&m, 0)->rqloop_l2_read_hitm);
	CAUSES(&m, 2, 2, 1, 1, 1);
	EXPECT("misses", 7, ctr(&m, 0)->rqloop_l2_read_misses);
	/* resetstats keeps what the CPU remembers of its loop lines. */
	cm_reset_stats(&m);
	cm_access(&m, 0, C, 4, 0, 0);		/* a kernel line evicts A */
	cm_access(&m, 0, A, 4, 0, RQ);
	CAUSES(&m, 0, 0, 0, 1, 0);
	/* A line the loop loads wins over the mode of the access. */
	cm_access(&m, 0, B, 4, 0, CM_F_USER);	/* B, a loop line, evicts A */
	cm_access(&m, 0, A, 4, 0, RQ);
	CAUSES(&m, 0, 0, 1, 1, 0);
	cm_free(&m);
}

/* An access bigger than a line is one access per line it touches. */
static void test_big_access(void)
{
	struct cm_model m;

	context = "big access";
	model(&m, 1, &geoms[0], &geoms[1]);
	cm_access(&m, 0, 0x9010, 64, 1, 0);	/* 0x9010..0x904f: 3 lines */
	EXPECT("L1 writes", 3, ctr(&m, 0)->l1d_write_accesses);
	EXPECT("RFOs", 3, ctr(&m, 0)->bus[CM_RFO]);
	EXPECT("RFO at 0x010", 1, m.hist[0][K][CM_RFO][0x010 / 8]);
	EXPECT("RFO at 0x020", 1, m.hist[0][K][CM_RFO][0x020 / 8]);
	EXPECT("RFO at 0x040", 1, m.hist[0][K][CM_RFO][0x040 / 8]);
	cm_access(&m, 0, 0x9ffc, 8, 0, 0);	/* crosses a page */
	EXPECT("READ at 0xff8", 1, m.hist[0][K][CM_READ][0xff8 / 8]);
	EXPECT("READ at 0x000", 1, m.hist[0][K][CM_READ][0]);
	cm_free(&m);
}

/* The L1I: fetches per line, unified-L2 competition, coherence. */
static void test_l1i(void)
{
	struct cm_model m;
	char err[256];
	/* L1I 1 KiB 2-way (16 sets), L2 4 KiB direct-mapped (128 sets). */
	struct cm_geom l1i = { 1024, 2, 32 }, l1d = { 1024, 2, 32 },
		l2 = { 4096, 1, 32 };

	context = "L1I fetches";
	model(&m, 2, &l1d, &l2);
	EXPECT("fetch without L1I is ignored", 0,
	       (cm_fetch(&m, 0, 0x1000, 4, 0), ctr(&m, 0)->l1i_accesses));
	EXPECT("enable", 0, cm_enable_l1i(&m, &l1i, err, sizeof(err)));
	cm_fetch(&m, 0, 0x1010, 40, 0);		/* 0x1010..0x1037: 2 lines */
	EXPECT("accesses", 2, ctr(&m, 0)->l1i_accesses);
	EXPECT("misses", 2, ctr(&m, 0)->l1i_misses);
	EXPECT("L2 accesses (unified)", 2, ctr(&m, 0)->l2_accesses);
	EXPECT("bus reads", 2, ctr(&m, 0)->bus[CM_READ]);
	EXPECT("first READ at the fetch chunk 0x010", 1,
	       m.hist[0][K][CM_READ][0x010 / 8]);
	EXPECT("second READ at its line 0x020", 1,
	       m.hist[0][K][CM_READ][0x020 / 8]);
	EXPECT("no L1D traffic", 0, ctr(&m, 0)->l1d_read_accesses);
	cm_fetch(&m, 0, 0x1000, 64, CM_F_USER);	/* the same 2 lines, user */
	EXPECT("user accesses", 2, m.cpu[0].ctr[CM_USER].l1i_accesses);
	EXPECT("user misses", 0, m.cpu[0].ctr[CM_USER].l1i_misses);
	EXPECT("L1D holds no code", CM_I, cm_l1_state(&m, 0, 0x1000));
	EXPECT("L2 holds code E", CM_E, cm_l2_state(&m, 0, 0x1000));

	/* Unified L2: a load 4 KiB away takes the code line's only L2 way,
	 * and inclusion takes it out of the L1I too. */
	context = "L1I unified L2";
	cm_access(&m, 0, 0x2000, 4, 0, 0);
	EXPECT("code line left L2", CM_I, cm_l2_state(&m, 0, 0x1000));
	EXPECT("and the L1I", 0, cm_l1i_holds(&m, 0, 0x1000));
	EXPECT("other code line stays", 1, cm_l1i_holds(&m, 0, 0x1020));
	cm_fetch(&m, 0, 0x1000, 4, 0);
	EXPECT("refetch misses", 3, ctr(&m, 0)->l1i_misses);
	EXPECT("and evicts the data line", CM_I, cm_l2_state(&m, 0, 0x2000));

	/* L1I replacement is LRU within its 2 ways (set 0: 0x1000, 0x1200,
	 * 0x1400 all map there with 16 sets of 32 bytes). */
	context = "L1I LRU";
	cm_reset_stats(&m);
	cm_fetch(&m, 0, 0x1200, 4, 0);		/* set 0 now: 0x1000, 0x1200 */
	cm_fetch(&m, 0, 0x1000, 4, 0);		/* hit; 0x1200 is LRU */
	cm_fetch(&m, 0, 0x1400, 4, 0);		/* evicts 0x1200 */
	EXPECT("misses", 2, ctr(&m, 0)->l1i_misses);
	EXPECT("0x1000 kept", 1, cm_l1i_holds(&m, 0, 0x1000));
	EXPECT("0x1200 evicted", 0, cm_l1i_holds(&m, 0, 0x1200));

	/* Coherence: another CPU's READ leaves the copy, its store (RFO)
	 * invalidates it; this CPU's own store does too (SMC). */
	context = "L1I coherence";
	cm_access(&m, 1, 0x1000, 4, 0, 0);
	EXPECT("remote read keeps the L1I copy", 1, cm_l1i_holds(&m, 0, 0x1000));
	EXPECT("L2 copy now S", CM_S, cm_l2_state(&m, 0, 0x1000));
	cm_access(&m, 1, 0x1000, 4, 1, 0);
	EXPECT("remote store drops it", 0, cm_l1i_holds(&m, 0, 0x1000));
	cm_fetch(&m, 0, 0x1400, 4, 0);
	EXPECT("still held", 1, cm_l1i_holds(&m, 0, 0x1400));
	cm_access(&m, 0, 0x1404, 4, 1, 0);
	EXPECT("own store drops it", 0, cm_l1i_holds(&m, 0, 0x1400));
	cm_free(&m);

	context = "L1I geometry";
	model(&m, 1, &l1d, &l2);
	l1i.line = 64;
	EXPECT("L1I line must equal L2 line", -1,
	       cm_enable_l1i(&m, &l1i, err, sizeof(err)));
	EXPECT("says so", 1, strstr(err, "L1I line size (64)") != NULL);
	cm_free(&m);
}

/*
 * Fetches mixed with loads and stores on two CPUs, pseudo-random but
 * fixed: half the fetches repeat the CPU's previous one (a loop, or the
 * next TB in the same line), and stores hit code lines (self-modifying
 * code, and remote stores that invalidate the other CPU's L1I copy).
 * The L1I is 4-way, so LRU and tree pseudo-LRU differ.  The expected
 * counts are what the model gave before a fetch of a set's most recently
 * fetched line skipped the L1I lookup; that shortcut must change none.
 */
static uint64_t xorshift(uint64_t *s);	/* with the bus test, below */

static void test_fetch_mix(int inclusive, int plru)
{
	struct cm_model m;
	char err[256];
	struct cm_geom l1i = { 1024, 4, 32 }, l1d = { 1024, 2, 32 },
		l2 = { 4096, 2, 32 };
	uint64_t seed = 0x9e3779b97f4a7c15ull, last[2] = { 0x1000, 0x1000 };
	/* [plru][inclusive][cpu]: L1I accesses and misses, L2 accesses and
	 * misses, bus READs */
	static const uint64_t want[2][2][2][5] = { {
		{ { 86613, 40415, 82543, 39841, 29804 },
		  { 86442, 40176, 82395, 39782, 29636 } },
		{ { 86613, 40522, 82836, 40325, 30156 },
		  { 86442, 40331, 82752, 40369, 30103 } },
	}, {
		{ { 86613, 40381, 82509, 39809, 29776 },
		  { 86442, 40168, 82387, 39759, 29615 } },
		{ { 86613, 40508, 82826, 40323, 30152 },
		  { 86442, 40345, 82766, 40376, 30105 } },
	} };

	context = inclusive ? "fetch mix, inclusive" : "fetch mix, non-inclusive";
	if (plru)
		context = inclusive ? "fetch mix, inclusive, PLRU L1I" :
			"fetch mix, non-inclusive, PLRU L1I";
	model(&m, 2, &l1d, &l2);
	cm_set_inclusive(&m, inclusive);
	EXPECT("enable", 0, cm_enable_l1i(&m, &l1i, err, sizeof(err)));
	if (plru)
		EXPECT("PLRU", 0, cm_set_repl(&m, CM_LEVEL_L1I, CM_REPL_PLRU,
					      err, sizeof(err)));
	for (unsigned i = 0; i < 200000; i++) {
		uint64_t r = xorshift(&seed);
		unsigned c = r & 1, op = (r >> 1) & 3;
		uint64_t a = 0x1000 + ((r >> 8) % 192) * 32 + ((r >> 20) & 31);

		if (op <= 1) {
			if ((r >> 3) & 1)
				a = last[c];
			last[c] = a;
			cm_fetch(&m, c, a, 1 + (unsigned)((r >> 32) % 48), 0);
		} else {
			cm_access(&m, c, a & ~3ull, 4, op == 3, 0);
		}
	}
	for (unsigned c = 0; c < 2; c++) {
		const struct cm_counters *k = ctr(&m, c);
		const uint64_t got[5] = { k->l1i_accesses, k->l1i_misses,
					  k->l2_accesses, k->l2_misses,
					  k->bus[CM_READ] };

		EXPECT("L1I accesses", want[plru][inclusive][c][0], got[0]);
		EXPECT("L1I misses", want[plru][inclusive][c][1], got[1]);
		EXPECT("L2 accesses", want[plru][inclusive][c][2], got[2]);
		EXPECT("L2 misses", want[plru][inclusive][c][3], got[3]);
		EXPECT("bus READs", want[plru][inclusive][c][4], got[4]);
	}
	cm_free(&m);
}

/* Tree pseudo-LRU against true LRU in one 4-way set: fill A B C D, use
 * C then A.  LRU evicts B (least recently used); the tree's pointers lead
 * to D (root -> right half, since A was used last; right node -> D, since
 * C was used last there). */
static void test_plru(void)
{
	static const char *const name[] = { "LRU", "PLRU" };
	struct cm_geom l1 = { 32, 1, 32 }, l2 = { 128, 4, 32 };
	const uint64_t A = 0x0, B = 0x20, C = 0x40, D = 0x60, E = 0x80;
	struct cm_model m;
	char err[256];

	for (int r = CM_REPL_LRU; r <= CM_REPL_PLRU; r++) {
		context = name[r];
		model(&m, 1, &l1, &l2);
		EXPECT("set policy", 0, cm_set_repl(&m, CM_LEVEL_L2, r, err,
						     sizeof(err)));
		cm_access(&m, 0, A, 4, 0, 0);
		cm_access(&m, 0, B, 4, 0, 0);
		cm_access(&m, 0, C, 4, 0, 0);
		cm_access(&m, 0, D, 4, 0, 0);
		cm_access(&m, 0, C, 4, 0, 0);
		cm_access(&m, 0, A, 4, 0, 0);
		EXPECT("L2 misses so far", 4, ctr(&m, 0)->l2_misses);
		cm_access(&m, 0, E, 4, 0, 0);
		EXPECT("B evicted", r == CM_REPL_LRU, cm_l2_state(&m, 0, B) == CM_I);
		EXPECT("D evicted", r == CM_REPL_PLRU, cm_l2_state(&m, 0, D) == CM_I);
		EXPECT("A kept (MRU)", CM_E, cm_l2_state(&m, 0, A));
		EXPECT("C kept", CM_E, cm_l2_state(&m, 0, C));
		/* An invalid way is always filled first: after a snoop-free
		 * refill the set is full again and 5 lines missed once. */
		EXPECT("L2 misses", 5, ctr(&m, 0)->l2_misses);
		cm_free(&m);
	}
	context = "PLRU refusals";
	model(&m, 1, &l1, &l2);
	EXPECT("no L1I to set", -1, cm_set_repl(&m, CM_LEVEL_L1I, CM_REPL_PLRU,
						  err, sizeof(err)));
	EXPECT("unknown policy", -1, cm_set_repl(&m, CM_LEVEL_L2, 7, err,
						   sizeof(err)));
	EXPECT("says unknown", 1, strstr(err, "unknown") != NULL);
	cm_free(&m);
}

/* Without inclusion a line that leaves L2 stays in L1: it still hits,
 * answers snoops, and is written back only when it leaves L1. */
static void test_non_inclusive(void)
{
	struct cm_model m;
	/* L1D 8 KiB 2-way (128 sets), L2 1 KiB direct-mapped (32 sets). */
	struct cm_geom l1 = { 8192, 2, 32 }, l2 = { 1024, 1, 32 };
	const uint64_t A = 0x2000, B = 0x2400, C = 0x4000, D = 0x6000;

	for (int incl = 1; incl >= 0; incl--) {
		context = incl ? "inclusive" : "non-inclusive";
		model(&m, 2, &l1, &l2);
		cm_set_inclusive(&m, incl);
		cm_access(&m, 0, A, 4, 1, 0);	/* A: M in L1 and L2 */
		cm_access(&m, 0, B, 4, 0, 0);	/* B takes A's L2 frame */
		EXPECT("A left L2", CM_I, cm_l2_state(&m, 0, A));
		EXPECT("A in L1", incl ? CM_I : CM_M, cm_l1_state(&m, 0, A));
		EXPECT("write-backs when A leaves L2", incl, ctr(&m, 0)->l2_writebacks);
		cm_access(&m, 0, A, 4, 0, 0);
		EXPECT("L1 misses", incl ? 3 : 2, ctr(&m, 0)->l1d_read_misses +
		       ctr(&m, 0)->l1d_write_misses);
		cm_free(&m);
	}

	context = "non-inclusive snoop";
	model(&m, 2, &l1, &l2);
	cm_set_inclusive(&m, 0);
	cm_access(&m, 0, A, 4, 1, 0);
	cm_access(&m, 0, B, 4, 0, 0);		/* A now only in CPU0's L1, M */
	cm_access(&m, 1, A, 4, 0, 0);
	EXPECT("CPU1 hitm from an L1-only line", 1, ctr(&m, 1)->hitm);
	EXPECT("CPU0 L1 copy now S", CM_S, cm_l1_state(&m, 0, A));
	EXPECT("CPU1 fills S", CM_S, cm_l2_state(&m, 1, A));
	cm_access(&m, 1, A, 4, 1, 0);		/* upgrade: invalidates it */
	EXPECT("CPU1 invalidate", 1, ctr(&m, 1)->bus[CM_INVALIDATE]);
	EXPECT("CPU0 L1 copy gone", CM_I, cm_l1_state(&m, 0, A));
	cm_free(&m);

	context = "non-inclusive write-back from L1";
	model(&m, 1, &l1, &l2);
	cm_set_inclusive(&m, 0);
	cm_access(&m, 0, A, 4, 1, 0);		/* L1 set 0, L2 set 0 */
	cm_access(&m, 0, B, 4, 0, 0);		/* A leaves L2, stays in L1 (M) */
	cm_access(&m, 0, C, 4, 0, 0);		/* L1 set 0, second way */
	EXPECT("no write-back yet", 0, ctr(&m, 0)->l2_writebacks);
	cm_access(&m, 0, D, 4, 0, 0);		/* L1 set 0: A is the LRU way */
	EXPECT("A written back when it leaves L1", 1, ctr(&m, 0)->l2_writebacks);
	EXPECT("WRITEBACK on the bus at 0x000", 1, m.hist[0][K][CM_WRITEBACK][0]);
	EXPECT("A gone", CM_I, cm_l1_state(&m, 0, A));
	cm_free(&m);
}

/* Bad geometries are refused with a sentence. */
static void test_geometry_errors(void)
{
	struct cm_model m;
	char err[256];
	struct cm_geom ok = { 8192, 2, 32 }, l2_64 = { 524288, 4, 64 };
	struct cm_geom bad[] = {
		{ 1000, 4, 32 }, { 8192, 3, 32 }, { 8192, 2, 24 },
		{ 64, 4, 32 }, { 8192, 2, 4 }, { 0, 2, 32 },
	};

	context = "geometry";
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		EXPECT("bad geometry refused", -1,
		       cm_geom_check("L2", &bad[i], err, sizeof(err)));
		EXPECT("error is a sentence", 1,
		       strlen(err) > 10 && err[strlen(err) - 1] == '.');
	}
	EXPECT("line mismatch refused", -1,
	       cm_init(&m, 1, &ok, &l2_64, err, sizeof(err)));
	EXPECT("line mismatch says equal", 1, strstr(err, "equal") != NULL);
}

/*
 * The bus in modelled time.  Two CPUs stream misses: each thinks for an
 * exponential time (mean Z cycles, its own random sequence), then misses
 * in L2 and waits for the line, whose data phase holds the bus D cycles
 * (mem = bus_line = D, bus_addr = 0: the bus is one FCFS server).  That
 * is the finite-source queue M/D/1//2: each service starts with the other
 * CPU thinking, which arrives during it with probability 1 - e^(-D/Z) and
 * then waits out the rest, so the mean wait per miss is
 * W = D - Z (1 - e^(-D/Z)).  The CPUs run as round-robin runs them, one
 * slice of Q cycles each in turn, so CPU 1 asks for the bus at modelled
 * times CPU 0 has already run past; the bus must still serve in modelled
 * time order.  The same streams run in lockstep (always the CPU behind
 * first) must give exactly the same waits.
 */
static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t exp_cycles(uint64_t *s, double mean)
{
	double u = ((double)(xorshift(s) >> 11) + 0.5) / 9007199254740992.0;

	return (uint64_t)llround(-mean * log(u));
}

static void stream_miss(struct cm_model *m, unsigned cpu, uint64_t *rng,
			uint64_t *next, double z)
{
	cm_stall(m, cpu, K, exp_cycles(rng, z));
	cm_access(m, cpu, ((uint64_t)(cpu + 1) << 28) + 32 * (*next)++, 8, 0, 0);
}

static double stream_wait(unsigned slice, uint64_t d, double z, uint64_t n)
{
	struct cm_model m;
	struct cm_geom l1 = { 8192, 2, 32 }, l2 = { 524288, 4, 32 };
	struct cm_timing t = { .inst = 1, .l2_hit = 6, .mem = d, .hitm = d,
			       .inval = 18, .bus_line = d, .bus_addr = 0,
			       .bus_depth = 8 };
	uint64_t rng[2] = { 0x9e3779b97f4a7c15ull, 0xd1b54a32d192ed03ull };
	uint64_t next[2] = { 0, 0 }, wait = 0, misses = 0;
	char err[128];

	model(&m, 2, &l1, &l2);
	if (cm_enable_timing(&m, &t, err, sizeof(err)) < 0) {
		printf("cm_enable_timing: %s\n", err);
		exit(2);
	}
	if (slice == 0) {		/* lockstep: the CPU behind goes next */
		while (next[0] < n || next[1] < n) {
			unsigned c = next[0] == n ||
				(next[1] < n && m.cpu[1].now < m.cpu[0].now);

			stream_miss(&m, c, &rng[c], &next[c], z);
		}
	} else {			/* n misses each, in slices */
		for (uint64_t end = slice; next[0] < n || next[1] < n;
		     end += slice)
			for (unsigned c = 0; c < 2; c++)
				while (m.cpu[c].now < end && next[c] < n)
					stream_miss(&m, c, &rng[c], &next[c], z);
	}
	cm_bus_flush(&m);
	for (unsigned c = 0; c < 2; c++) {
		wait += ctr(&m, c)->bus_wait_cycles;
		misses += ctr(&m, c)->bus[CM_READ];
	}
	EXPECT("no write-backs", 0, ctr(&m, 0)->bus[CM_WRITEBACK]);
	EXPECT("nothing late", 0, m.bs.late);
	cm_free(&m);
	return (double)wait / (double)misses;
}

static void test_bus_queueing(void)
{
	const uint64_t d = 100, n = 12000;
	const double z = 200;
	double theory = d - z * (1 - exp(-(double)d / z));
	double lockstep = stream_wait(0, d, z, n);
	double sliced = stream_wait(20000, d, z, n);

	context = "bus queueing";
	printf("bus: M/D/1//2 wait %.3f, lockstep %.3f, 20000-cycle slices "
	       "%.3f cycles per miss\n", theory, lockstep, sliced);
	EXPECT("slices wait as lockstep", 1, lockstep == sliced);
	EXPECT("within 10 % of M/D/1//2", 1,
	       fabs(sliced - theory) <= 0.1 * theory);
}

/*
 * A locked RMW costs `locked` cycles beyond gaining its line: on a line
 * the CPU already holds M exactly that much more than a plain load and
 * store; on a line another CPU holds M, the HITM fill (with its bus
 * phases) plus that.  Without the cost (locked = 0) they are the same.
 */
static uint64_t locked_rmw_cycles(uint64_t locked, unsigned flags, int remote)
{
	struct cm_model m;
	struct cm_timing t = { .inst = 1, .l2_hit = 6, .mem = 39, .hitm = 30,
			       .inval = 18, .bus_line = 12, .bus_addr = 6,
			       .bus_depth = 8, .locked = locked };
	const uint64_t L = 0x70010;
	char err[128];
	uint64_t before, cyc;

	model(&m, 2, &geoms[0], &geoms[1]);
	if (cm_enable_timing(&m, &t, err, sizeof(err)) < 0)
		exit(2);
	cm_access(&m, remote, L, 4, 1, 0);	/* someone holds it M */
	cm_bus_flush(&m);
	m.cpu[0].now = m.cpu[1].now = 1000;	/* both past every request */
	before = m.cpu[0].now;
	cm_access(&m, 0, L, 4, 0, flags);
	cm_access(&m, 0, L, 4, 1, flags);
	cm_bus_flush(&m);
	cyc = m.cpu[0].now - before;
	cm_free(&m);
	return cyc;
}

static void test_locked_cost(void)
{
	context = "locked RMW cost";
	EXPECT("owned line: plain RMW costs nothing", 0,
	       locked_rmw_cycles(12, 0, 0));
	EXPECT("owned line: locked RMW costs locked", 12,
	       locked_rmw_cycles(12, CM_F_LOCKED, 0));
	EXPECT("switched off", 0, locked_rmw_cycles(0, CM_F_LOCKED, 0));
	EXPECT("remote M line: HITM fill + locked", 30 + 12,
	       locked_rmw_cycles(12, CM_F_LOCKED, 1));
}

/*
 * Two buses (bus_cpus = 4 of 8 CPUs, as a Profusion 8-way).  CPUs 0 and 4
 * miss at the same modelled time: on separate buses neither waits; on
 * one bus the second's request phase waits bus_addr and its data phase
 * the first's, 12 cycles in all.  A HITM fill from a CPU on the other bus
 * costs cross_bus more than from one on the same bus, and is counted on
 * both buses.
 */
static struct cm_model two_bus_model(uint64_t bus_cpus)
{
	struct cm_model m;
	struct cm_geom l1 = { 8192, 2, 32 }, l2 = { 524288, 4, 32 };
	struct cm_timing t = { .inst = 1, .l2_hit = 6, .mem = 39, .hitm = 30,
			       .inval = 18, .bus_line = 12, .bus_addr = 6,
			       .bus_depth = 8, .bus_cpus = bus_cpus,
			       .cross_bus = 11 };
	char err[128];

	model(&m, 8, &l1, &l2);
	if (cm_enable_timing(&m, &t, err, sizeof(err)) < 0) {
		printf("cm_enable_timing: %s\n", err);
		exit(2);
	}
	return m;
}

static void at(struct cm_model *m, uint64_t t)
{
	cm_bus_flush(m);
	for (unsigned c = 0; c < m->ncpus; c++)
		m->cpu[c].now = t;
}

static void test_two_buses(void)
{
	uint64_t waits[2];

	context = "two buses";
	for (unsigned one = 0; one < 2; one++) {
		struct cm_model m = two_bus_model(one ? 0 : 4);

		EXPECT("buses", one ? 1 : 2, m.nbuses);
		at(&m, 1000);
		cm_access(&m, 0, 0x100000, 8, 0, 0);
		cm_access(&m, 4, 0x200000, 8, 0, 0);
		cm_bus_flush(&m);
		waits[one] = ctr(&m, 0)->bus_wait_cycles +
			     ctr(&m, 4)->bus_wait_cycles;
		cm_free(&m);
	}
	EXPECT("separate buses: no queueing", 0, waits[0]);
	EXPECT("one bus: request + data phase", 12, waits[1]);

	for (unsigned owner = 1; owner <= 4; owner += 3) {
		struct cm_model m = two_bus_model(4);

		cm_access(&m, owner, 0x300000, 8, 1, 0);	/* owner: M */
		at(&m, 1000);
		cm_access(&m, 0, 0x300000, 8, 0, 0);
		cm_bus_flush(&m);
		EXPECT("HITM", 1, ctr(&m, 0)->hitm);
		EXPECT(owner == 4 ? "HITM from the other bus" :
		       "HITM on the same bus", owner == 4 ? 30 + 11 : 30,
		       m.cpu[0].now - 1000);
		EXPECT("crossing counted on bus 1", owner == 4,
		       m.bus[1].crossing);
		cm_free(&m);
	}
}

/*
 * The store buffer (store_buffer = 12, the PPro's).  One CPU at cycle 1000
 * stores to 13 lines no cache holds.  Without the buffer each store stalls
 * for its RFO in full, one after another: 13 x mem.  With it the first 12
 * cost the CPU nothing; the 13th finds the buffer full and waits for the
 * oldest entry (mem).  All 13 RFOs went to the bus at cycle 1000, so they
 * queue: the i-th completes at 1039 + 12 i (request phases 6 apart, data
 * phases back to back, the in-order queue never binding).  A locked RMW
 * then drains the buffer: it waits for the last entry, 1183, before its
 * own `locked` cycles; without the buffer it costs only those.
 */
static void store_buffer_run(uint64_t entries, uint64_t *now,
			     uint64_t *stall, uint64_t *after_locked)
{
	struct cm_model m;
	struct cm_timing t = { .inst = 1, .l2_hit = 6, .mem = 39, .hitm = 30,
			       .inval = 18, .bus_line = 12, .bus_addr = 6,
			       .bus_depth = 8, .locked = 12,
			       .store_buffer = entries };
	char err[128];

	model(&m, 1, &geoms[0], &geoms[1]);
	if (cm_enable_timing(&m, &t, err, sizeof(err)) < 0) {
		printf("cm_enable_timing: %s\n", err);
		exit(2);
	}
	m.cpu[0].now = 1000;
	for (unsigned i = 0; i < 13; i++)
		cm_access(&m, 0, 0x100000 + 32 * i, 4, 1, 0);
	*now = m.cpu[0].now;
	cm_bus_flush(&m);
	cm_access(&m, 0, 0x100000, 4, 0, CM_F_LOCKED);
	cm_access(&m, 0, 0x100000, 4, 1, CM_F_LOCKED);
	cm_bus_flush(&m);
	*after_locked = m.cpu[0].now;
	*stall = ctr(&m, 0)->store_stall_cycles;
	EXPECT("13 RFOs", 13, ctr(&m, 0)->bus[CM_RFO]);
	EXPECT("the stalled-for entry waited no queueing", 0,
	       ctr(&m, 0)->bus_wait_cycles);
	cm_free(&m);
}

static void test_store_buffer(void)
{
	uint64_t now, stall, locked;
	char err[128];
	struct cm_model m;
	struct cm_timing t = { .inst = 1, .bus_depth = 8, .store_buffer = 65 };

	context = "store buffer";
	store_buffer_run(0, &now, &stall, &locked);
	EXPECT("off: every RFO stalls", 1000 + 13 * 39, now);
	EXPECT("off: the locked RMW costs locked", 1000 + 13 * 39 + 12, locked);
	EXPECT("off: no store stalls", 0, stall);
	store_buffer_run(12, &now, &stall, &locked);
	EXPECT("12 entries: only the 13th store waits", 1000 + 39, now);
	EXPECT("the locked RMW drains the buffer", 1039 + 12 * 12 + 12, locked);
	EXPECT("store stalls: full, then the drain", 39 + 12 * 12, stall);

	model(&m, 1, &geoms[0], &geoms[1]);
	EXPECT("more than 64 entries refused", -1,
	       cm_enable_timing(&m, &t, err, sizeof(err)));
	cm_free(&m);
}

/*
 * TLBs (dtlb = 64 4-way for 4 KiB pages, 8 4-way for large ones, as the
 * PPro's).  A miss walks two entries (PDE, PTE) for a 4 KiB page, one for
 * a large page: loads through L1D and L2 that stall the CPU as loads do
 * (here both miss to memory: 2 x mem).  Five 4 KiB pages in one set evict
 * the least recently used; a large entry covers 4 MiB; a CR3 write drops
 * the 4 KiB entries and keeps the large ones.  Off (0), every lookup hits.
 */
static void test_tlb(void)
{
	struct cm_model m;
	struct cm_timing t = { .inst = 1, .l2_hit = 6, .mem = 39, .hitm = 30,
			       .inval = 18, .bus_line = 12, .bus_addr = 6,
			       .bus_depth = 8, .dtlb = 64, .dtlb_large = 8 };
	const uint64_t walk[2] = { 0x9000, 0xa008 }, pde = 0xb010;
	char err[128];
	uint64_t before;

	context = "TLB";
	model(&m, 1, &geoms[0], &geoms[1]);
	if (cm_enable_timing(&m, &t, err, sizeof(err)) < 0) {
		printf("cm_enable_timing: %s\n", err);
		exit(2);
	}
	EXPECT("cold: miss", 0, cm_tlb_hit(&m, 0, 0, 0x400123));
	before = m.cpu[0].now;
	cm_tlb_fill(&m, 0, 0, 0x400123, 0, walk, 2, 0);
	cm_bus_flush(&m);
	EXPECT("walk: two loads to memory", 2 * 39, m.cpu[0].now - before);
	EXPECT("walk loads are L1D reads", 2, ctr(&m, 0)->l1d_read_accesses);
	EXPECT("one DTLB miss", 1, ctr(&m, 0)->dtlb_misses);
	EXPECT("same page: hit", 1, cm_tlb_hit(&m, 0, 0, 0x400ff8));
	EXPECT("next page: miss", 0, cm_tlb_hit(&m, 0, 0, 0x401000));
	EXPECT("no ITLB: hit", 1, cm_tlb_hit(&m, 0, 1, 0x401000));
	for (uint64_t i = 1; i <= 4; i++)	/* 16 sets: same set as 0x400 */
		cm_tlb_fill(&m, 0, 0, 0x400000 + i * 16 * 4096, 0, walk, 2, 0);
	EXPECT("fifth page in a set evicts the oldest", 0,
	       cm_tlb_hit(&m, 0, 0, 0x400000));
	EXPECT("the newest stays", 1, cm_tlb_hit(&m, 0, 0, 0x440000));
	cm_tlb_fill(&m, 0, 0, 0x1000000, 1, &pde, 1, 0);
	EXPECT("a large entry covers 4 MiB", 1,
	       cm_tlb_hit(&m, 0, 0, 0x1000000 + (3u << 20)));
	EXPECT("but not the next 4 MiB", 0, cm_tlb_hit(&m, 0, 0, 0x1400000));
	cm_tlb_flush(&m, 0);
	EXPECT("CR3 write: 4 KiB entries gone", 0,
	       cm_tlb_hit(&m, 0, 0, 0x440000));
	EXPECT("CR3 write: large entries kept", 1,
	       cm_tlb_hit(&m, 0, 0, 0x1000000));
	cm_free(&m);

	t.dtlb = 6;
	model(&m, 1, &geoms[0], &geoms[1]);
	EXPECT("6 entries refused", -1,
	       cm_enable_timing(&m, &t, err, sizeof(err)));
	cm_free(&m);
}

/*
 * INVLPG drops the entries of its page only, in both TLBs and both page
 * sizes; a CR3 write drops the 4 KiB ones.  The lookups of the dropped
 * page before the drop make sure the shortcuts (struct cm_tlb, `last`)
 * named it.
 */
static void test_invlpg(void)
{
	struct cm_model m;
	struct cm_timing t = { .inst = 1, .l2_hit = 6, .mem = 39, .hitm = 30,
			       .inval = 18, .bus_line = 12, .bus_addr = 6,
			       .bus_depth = 8, .dtlb = 64, .dtlb_large = 8,
			       .itlb = 32, .itlb_large = 2 };
	const uint64_t walk[2] = { 0x9000, 0xa008 }, pde = 0xb010;
	char err[128];

	context = "INVLPG";
	model(&m, 2, &geoms[0], &geoms[1]);
	if (cm_enable_timing(&m, &t, err, sizeof(err)) < 0) {
		printf("cm_enable_timing: %s\n", err);
		exit(2);
	}
	for (unsigned c = 0; c < 2; c++)
		for (int instr = 0; instr < 2; instr++) {
			cm_tlb_fill(&m, c, instr, 0x400000, 0, walk, 2, 0);
			cm_tlb_fill(&m, c, instr, 0x401000, 0, walk, 2, 0);
			cm_tlb_fill(&m, c, instr, 0x1000000, 1, &pde, 1, 0);
		}
	EXPECT("filled: hit", 1, cm_tlb_hit(&m, 0, 0, 0x400010));
	cm_tlb_invlpg(&m, 0, 0x400ff0);
	EXPECT("its page's DTLB entry is gone", 0,
	       cm_tlb_hit(&m, 0, 0, 0x400010));
	EXPECT("its page's ITLB entry is gone", 0,
	       cm_tlb_hit(&m, 0, 1, 0x400010));
	EXPECT("the next page stays", 1, cm_tlb_hit(&m, 0, 0, 0x401000));
	EXPECT("the large page stays", 1, cm_tlb_hit(&m, 0, 0, 0x1000000));
	EXPECT("the other CPU's entry stays", 1,
	       cm_tlb_hit(&m, 1, 0, 0x400010));
	EXPECT("shortcut: large hit", 1, cm_tlb_hit(&m, 0, 1, 0x1234567));
	cm_tlb_invlpg(&m, 0, 0x1234567);
	EXPECT("a large page's entry is gone too", 0,
	       cm_tlb_hit(&m, 0, 1, 0x1000000));
	EXPECT("and the DTLB's", 0, cm_tlb_hit(&m, 0, 0, 0x13ff000));
	cm_tlb_flush_all(&m, 1);
	EXPECT("a whole flush: 4 KiB gone", 0, cm_tlb_hit(&m, 1, 0, 0x401000));
	EXPECT("a whole flush: large gone", 0, cm_tlb_hit(&m, 1, 1, 0x1000000));
	cm_free(&m);
}

/* One INVLPG's bytes, decoded in one mode, and the address it names with
 * rax = 0x1000 + i * 0x111 ... (register i), the segment bases
 * 0x10000 * (seg + 1), next_ip 0x7000. */
static uint64_t invlpg_at(const char *what, const uint8_t *b, size_t n,
			  int lm)
{
	struct x86_memop op;
	uint64_t reg[16], seg[6];

	for (unsigned i = 0; i < 16; i++)
		reg[i] = 0x1000 + i * 0x111;
	reg[3] = 0xffffffff80001000ull;		/* rbx: a kernel address */
	for (unsigned i = 0; i < 6; i++)
		seg[i] = 0x10000ull * (i + 1);
	if (x86_invlpg_operand(b, n, lm, &op) != 1) {
		printf("FAIL %s: not decoded as INVLPG\n", what);
		failed++;
		return 0;
	}
	return x86_memop_address(&op, lm, reg, seg, 0x7000);
}

static void test_invlpg_decode(void)
{
	static const uint8_t rax[] = { 0x0f, 0x01, 0x38 },
		rbx_d8[] = { 0x0f, 0x01, 0x7b, 0xf0 },
		sib[] = { 0x0f, 0x01, 0x3c, 0x8e },	/* (rsi,rcx,4) */
		rex[] = { 0x41, 0x0f, 0x01, 0x78, 0x10 },	/* 0x10(r8) */
		rexx[] = { 0x42, 0x0f, 0x01, 0x3c, 0x08 },	/* (rax,r9) */
		rip[] = { 0x0f, 0x01, 0x3d, 0x00, 0x01, 0x00, 0x00 },
		nobase[] = { 0x0f, 0x01, 0x3c, 0x25, 0x00, 0x20, 0x00, 0x00 },
		gs[] = { 0x65, 0x0f, 0x01, 0x38 },
		ebp[] = { 0x0f, 0x01, 0x7d, 0x04 },	/* 4(ebp): SS */
		a16[] = { 0x67, 0x0f, 0x01, 0x38 },
		swapgs[] = { 0x0f, 0x01, 0xf8 },
		lidt[] = { 0x0f, 0x01, 0x18 };
	struct x86_memop op;

	context = "INVLPG decoding";
	EXPECT("(rax)", 0x1000, invlpg_at("(rax)", rax, sizeof(rax), 1));
	EXPECT("-16(rbx), 64-bit", 0xffffffff80000ff0ull,
	       invlpg_at("rbx", rbx_d8, sizeof(rbx_d8), 1));
	EXPECT("-16(ebx), 32-bit: DS base, 32 bits", 0x80000ff0 + 0x40000,
	       invlpg_at("ebx", rbx_d8, sizeof(rbx_d8), 0));
	EXPECT("(rsi,rcx,4)", 0x1666 + 4 * 0x1111,
	       invlpg_at("sib", sib, sizeof(sib), 1));
	EXPECT("0x10(r8)", 0x1888 + 0x10, invlpg_at("r8", rex, sizeof(rex), 1));
	EXPECT("(rax,r9)", 0x1000 + 0x1999,
	       invlpg_at("r9", rexx, sizeof(rexx), 1));
	EXPECT("RIP-relative", 0x7000 + 0x100,
	       invlpg_at("rip", rip, sizeof(rip), 1));
	EXPECT("disp32 in 32-bit code: absolute, DS", 0x100 + 0x40000,
	       invlpg_at("abs", rip, sizeof(rip), 0));
	EXPECT("SIB, no base: disp32", 0x2000,
	       invlpg_at("nobase", nobase, sizeof(nobase), 1));
	EXPECT("gs: its base", 0x1000 + 0x60000,
	       invlpg_at("gs", gs, sizeof(gs), 1));
	EXPECT("4(ebp): SS's base", 0x1555 + 4 + 0x30000,
	       invlpg_at("ebp", ebp, sizeof(ebp), 0));
	EXPECT("a REX byte in 32-bit code is not a prefix", 0,
	       x86_invlpg_operand(rex, sizeof(rex), 0, &op));
	EXPECT("16-bit addressing: refused", -1,
	       x86_invlpg_operand(a16, sizeof(a16), 0, &op));
	EXPECT("SWAPGS is not INVLPG", 0,
	       x86_invlpg_operand(swapgs, sizeof(swapgs), 1, &op));
	EXPECT("LIDT is not INVLPG", 0,
	       x86_invlpg_operand(lidt, sizeof(lidt), 1, &op));
	EXPECT("cut short", 0, x86_invlpg_operand(rbx_d8, 3, 1, &op));
}

/*
 * The TLB lookup's shortcuts (the last page looked up, the last large
 * page hit, with no 4 KiB entry in it) must give exactly what a plain
 * true-LRU TLB gives: random
 * lookups over 48 4 KiB pages (more than the 64-entry array's sets take)
 * and 12 large pages (more than its 8 entries), filling on each miss and
 * sometimes flushing, checked against a reference written here.
 */
struct ref_tlb {
	uint64_t tag[64], stamp[64], clock;
	unsigned sets, assoc;
};

static int ref_find(struct ref_tlb *t, uint64_t vpn, int touch)
{
	uint64_t *set = t->tag + (vpn % t->sets) * t->assoc;

	for (unsigned i = 0; i < t->assoc; i++)
		if (set[i] == vpn + 1) {
			if (touch)
				t->stamp[&set[i] - t->tag] = ++t->clock;
			return 1;
		}
	return 0;
}

static void ref_fill(struct ref_tlb *t, uint64_t vpn)
{
	uint64_t *set = t->tag + (vpn % t->sets) * t->assoc, *v = set;

	for (unsigned i = 0; i < t->assoc; i++) {
		if (set[i] == 0) {
			v = &set[i];
			break;
		}
		if (t->stamp[&set[i] - t->tag] < t->stamp[v - t->tag])
			v = &set[i];
	}
	*v = vpn + 1;
	t->stamp[v - t->tag] = ++t->clock;
}

static void test_tlb_shortcuts(void)
{
	struct cm_model m;
	struct cm_timing t = { .inst = 1, .l2_hit = 6, .mem = 39, .hitm = 30,
			       .inval = 18, .bus_line = 12, .bus_addr = 6,
			       .bus_depth = 8, .dtlb = 64, .dtlb_large = 8 };
	struct ref_tlb small = { .sets = 16, .assoc = 4 },
		large = { .sets = 2, .assoc = 4 };
	const uint64_t walk[2] = { 0x9000, 0xa008 };
	uint64_t seed = 12345, wrong = 0, misses = 0;
	char err[128];

	context = "TLB shortcuts";
	model(&m, 1, &geoms[0], &geoms[1]);
	if (cm_enable_timing(&m, &t, err, sizeof(err)) < 0) {
		printf("cm_enable_timing: %s\n", err);
		exit(2);
	}
	for (int i = 0; i < 200000; i++) {
		uint64_t r = xorshift(&seed), va;
		int is_large = (r & 3) == 0, hit, ref;

		/* Large pages from 1 GiB up; 4 KiB pages below 4 MiB, then
		 * runs of the same page (the common case). */
		va = is_large ? (1ull << 30) + ((r >> 8) % 12) * (4ull << 20) +
				((r >> 20) & 0x3fffff)
			      : ((r >> 8) % 48) * 4096 + ((r >> 20) & 0xfff);
		/* Some 4 KiB pages inside a large page that is mapped large
		 * too (as after a CR3 write that keeps the large entries):
		 * the 4 KiB entry must win. */
		if (!is_large && (r >> 60) == 0)
			va += (1ull << 30) + (5ull << 22);
		if ((r >> 40) % 1000 == 0) {
			cm_tlb_flush(&m, 0);
			memset(small.tag, 0, sizeof(small.tag));
		}
		for (int rep = 0; rep < 1 + (int)((r >> 50) & 3); rep++) {
			uint64_t v = va + rep * 8;

			hit = cm_tlb_hit(&m, 0, 0, v);
			ref = ref_find(&small, v >> 12, 1) ||
			      ref_find(&large, v >> 22, 1);
			wrong += hit != ref;
			if (!ref) {
				misses++;
				cm_tlb_fill(&m, 0, 0, v, is_large, walk,
					    is_large ? 1 : 2, 0);
				ref_fill(is_large ? &large : &small,
					 is_large ? v >> 22 : v >> 12);
			}
		}
	}
	EXPECT("lookups that differ from a plain LRU TLB", 0, wrong);
	EXPECT("and there were misses of both kinds", 1, misses > 10000);
	cm_free(&m);
}

/*
 * The fetch shortcut (cm_fetch_again): while a CPU's L1I epoch stays
 * the same, a block whose lines were each their set's last fetch hits
 * them all again; a fill, a touch of another frame in a set, or a drop
 * (a store to a code line) changes the epoch.
 */
static void test_fetch_again(void)
{
	struct cm_model m;
	char err[256];
	struct cm_geom l1i = { 1024, 2, 32 }, l1d = { 1024, 2, 32 },
		l2 = { 4096, 1, 32 };
	const uint32_t two[CM_NMODES] = { 2, 0 };
	uint64_t e;

	context = "fetch shortcut";
	model(&m, 1, &l1d, &l2);
	EXPECT("enable", 0, cm_enable_l1i(&m, &l1i, err, sizeof(err)));
	cm_fetch(&m, 0, 0x1010, 40, 0);		/* 2 lines, sets 0 and 1 */
	e = m.cpu[0].l1i_epoch;
	EXPECT("unchanged: shortcut", 1, cm_fetch_again(&m, 0, e, two));
	EXPECT("which counts the lines", 4, ctr(&m, 0)->l1i_accesses);
	EXPECT("and no misses", 2, ctr(&m, 0)->l1i_misses);
	cm_fetch(&m, 0, 0x1040, 4, 0);		/* set 2: a fill */
	EXPECT("a fill elsewhere changes the epoch", 0,
	       cm_fetch_again(&m, 0, e, two));
	e = m.cpu[0].l1i_epoch;
	cm_fetch(&m, 0, 0x1000, 4, 0);		/* its set's last: no change */
	EXPECT("an MRU hit keeps it", 1, cm_fetch_again(&m, 0, e, two));
	cm_access(&m, 0, 0x1020, 4, 1, 0);	/* a store to a code line */
	EXPECT("a drop changes it", 0, cm_fetch_again(&m, 0, e, two));
	cm_free(&m);
}

/*
 * Load misses in flight (overlap = 4).  One CPU at cycle 1000 loads 5
 * lines no cache holds: with overlap the first 4 cost it nothing and the
 * 5th waits for the oldest (mem); without, each stalls in full.  A load
 * of the run-queue loop (a pointer chase) stalls in full either way.
 */
static void test_overlap(void)
{
	for (uint64_t ov = 0; ov <= 4; ov += 4) {
		struct cm_model m;
		struct cm_timing t = { .inst = 1, .l2_hit = 6, .mem = 39,
				       .hitm = 30, .inval = 18, .bus_line = 12,
				       .bus_addr = 6, .bus_depth = 8,
				       .overlap = ov };
		char err[128];

		context = ov ? "overlap 4" : "overlap off";
		model(&m, 1, &geoms[0], &geoms[1]);
		if (cm_enable_timing(&m, &t, err, sizeof(err)) < 0) {
			printf("cm_enable_timing: %s\n", err);
			exit(2);
		}
		m.cpu[0].now = 1000;
		for (unsigned i = 0; i < 5; i++)
			cm_access(&m, 0, 0x200000 + 32 * i, 4, 0, 0);
		EXPECT("five load misses", ov ? 1000 + 39 : 1000 + 5 * 39,
		       m.cpu[0].now);
		EXPECT("stall counted", ov ? 39 : 0,
		       ctr(&m, 0)->overlap_stall_cycles);
		cm_bus_flush(&m);
		m.cpu[0].now = 5000;
		cm_access(&m, 0, 0x300000, 4, 0, CM_F_RQLOOP);
		cm_bus_flush(&m);
		EXPECT("a loop load stalls in full", 5000 + 39, m.cpu[0].now);
		cm_access(&m, 0, 0x300000, 4, 0, 0);
		EXPECT("an L1 hit costs nothing", 5000 + 39, m.cpu[0].now);
		cm_free(&m);
	}
}

/*
 * A card's DMA: a write invalidates every cached copy (the next load
 * misses) and a read of a Modified line is answered by HITM and leaves it
 * Shared; one transaction per line, booked per page offset by direction,
 * and, with timing, the bus is busy for them.
 */
static void test_dma(void)
{
	struct cm_model m;
	struct cm_timing t = { .inst = 1, .l2_hit = 6, .mem = 39, .hitm = 30,
			       .inval = 18, .bus_line = 12, .bus_addr = 6,
			       .bus_depth = 8 };
	char err[128];
	uint64_t base = 0x200040;	/* page offset 0x40 */
	uint64_t view[CM_NCHUNKS];

	context = "dma";
	model(&m, 2, &geoms[0], &geoms[1]);
	cm_access(&m, 0, base, 4, 0, 0);		/* CPU 0: E */
	cm_access(&m, 1, base + 32, 4, 1, 0);		/* CPU 1: M */
	cm_reset_stats(&m);
	cm_dma(&m, base + 8, 40, 1, 0);			/* both lines */
	EXPECT("write lines", 2, m.dma.lines[CM_DMA_WRITE]);
	EXPECT("lines a CPU held", 2, m.dma.invalidated);
	EXPECT("CPU 0's copy gone", CM_I, cm_l2_state(&m, 0, base));
	EXPECT("CPU 1's Modified copy gone", CM_I, cm_l2_state(&m, 1, base + 32));
	EXPECT("booked at its offset", 1,
	       m.dma.hist[CM_DMA_WRITE][0x40 / CM_CHUNK]);
	EXPECT("and the next line's", 1,
	       m.dma.hist[CM_DMA_WRITE][0x60 / CM_CHUNK]);
	cm_access(&m, 0, base, 4, 0, 0);
	EXPECT("the CPU misses after it", 1, ctr(&m, 0)->l2_misses);

	cm_access(&m, 1, base + 64, 4, 1, 0);		/* CPU 1: M */
	cm_dma(&m, base + 64, 32, 0, 0);
	EXPECT("read lines", 1, m.dma.lines[CM_DMA_READ]);
	EXPECT("HITM", 1, m.dma.hitm);
	EXPECT("left Shared", CM_S, cm_l2_state(&m, 1, base + 64));
	cm_dma(&m, base + 96, 32, 0, 0);
	EXPECT("a line nobody holds: no HITM", 1, m.dma.hitm);
	cm_offset_view(&m, 0, view);
	EXPECT("the offset view counts DMA beside the CPU's RFO", 2,
	       view[0x80 / CM_CHUNK]);
	EXPECT("and alone", 1, view[0xa0 / CM_CHUNK]);
	cm_reset_stats(&m);
	EXPECT("reset", 0, m.dma.lines[CM_DMA_READ] + m.dma.hist[CM_DMA_WRITE][2]);
	cm_free(&m);

	/* Timing: a card's lines take the address and data bus in time
	 * order with the CPUs' requests, so a CPU's miss right after four of
	 * them queues behind their data phases (12 cycles each). */
	model(&m, 1, &geoms[0], &geoms[1]);
	if (cm_enable_timing(&m, &t, err, sizeof(err)) < 0 ||
	    cm_dma_gap(&m, 1) < 0) {
		printf("cm_enable_timing: %s\n", err);
		exit(2);
	}
	m.cpu[0].now = 1000;
	cm_dma(&m, 0x400000, 128, 1, 990);	/* lines asked at 990..993 */
	EXPECT("the data bus busy", 996 + 4 * 12, m.bus[0].data_free);
	EXPECT("the card's own queueing", 5 + 10 + 15, m.dma.wait_cycles);
	cm_access(&m, 0, 0x500000, 4, 0, 0);
	cm_bus_flush(&m);
	EXPECT("the miss queued behind the card", 1000 + 39 + 17, m.cpu[0].now);
	cm_free(&m);
}

int main(void)
{
	char name[64];

	for (unsigned i = 0; i < NGEOMS; i++) {
		const struct cm_geom *g = &geoms[i];

		snprintf(name, sizeof(name), "%llu:%llu:%llu",
			 (unsigned long long)g->size,
			 (unsigned long long)g->assoc,
			 (unsigned long long)g->line);
		context = name;
		test_fit(g);
		test_overflow(g);
		test_conflict(g);
		test_writeback(g);
	}
	test_mesi();
	test_offsets();
	test_straddle();
	test_inclusion();
	test_reset_and_rqloop();
	test_locked_rmw();
	test_dirty_ownership();
	test_rqloop_exact();
	test_rqloop_causes();
	test_big_access();
	test_l1i();
	for (int plru = 0; plru < 2; plru++) {
		test_fetch_mix(0, plru);
		test_fetch_mix(1, plru);
	}
	test_plru();
	test_non_inclusive();
	test_geometry_errors();
	test_bus_queueing();
	test_locked_cost();
	test_two_buses();
	test_store_buffer();
	test_tlb();
	test_tlb_shortcuts();
	test_invlpg();
	test_invlpg_decode();
	test_fetch_again();
	test_dma();
	test_overlap();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
