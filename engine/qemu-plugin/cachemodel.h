/*
 * cachemodel.h - per-CPU L1D, optional L1I, and a private unified L2, kept
 * coherent with MESI over one shared bus, with a bus monitor that records
 * page offsets.
 *
 * Pure C, no QEMU dependency, so tests/test_cache.c can drive it directly.
 * Addresses are guest physical.  Functional only: no timing.
 *
 * Not thread safe: the plugin runs QEMU round-robin (one vCPU thread), so
 * every call is serialized.
 */
#ifndef CACHEMODEL_H
#define CACHEMODEL_H

#include <stddef.h>
#include <stdint.h>

/* MESI states.  Values order permission: I < S < E < M. */
enum cm_state { CM_I = 0, CM_S, CM_E, CM_M };

/* Bus transaction kinds, as a P6 bus tracer would classify them. */
enum cm_kind {
	CM_READ,	/* load miss: bus read line (BRL) */
	CM_RFO,		/* store miss: read for ownership */
	CM_WRITEBACK,	/* dirty victim evicted from L2 */
	CM_INVALIDATE,	/* store to a Shared line: upgrade, no data */
	CM_NKINDS
};

enum cm_mode { CM_KERNEL = 0, CM_USER = 1, CM_NMODES };

/* Access flags (the plugin computes them at translation time). */
#define CM_F_USER	0x1u	/* instruction PC is in a user range */
#define CM_F_RQLOOP	0x2u	/* instruction PC is in the run-queue loop */
#define CM_F_LOCKED	0x4u	/* locked RMW: its load already needs ownership */

#define CM_PAGE_SIZE	4096u
#define CM_CHUNK	8u	/* bus critical-chunk granularity */
#define CM_NCHUNKS	(CM_PAGE_SIZE / CM_CHUNK)	/* 512 buckets */

extern const char *const cm_kind_name[CM_NKINDS];
extern const char *const cm_mode_name[CM_NMODES];

/* Replacement policies. */
enum cm_repl {
	CM_REPL_LRU = 0,	/* true LRU: the least recently used way */
	CM_REPL_PLRU,		/* tree pseudo-LRU: assoc - 1 bits per set */
};

extern const char *const cm_repl_name[2];

/* The cache levels of one CPU. */
enum cm_level { CM_LEVEL_L1D, CM_LEVEL_L1I, CM_LEVEL_L2 };

/* Geometry of one cache level, in bytes. */
struct cm_geom {
	uint64_t size;
	uint64_t assoc;
	uint64_t line;
};

/* Counters of one CPU in one mode.  Order matches cm_counter_name[]. */
struct cm_counters {
	uint64_t insts;
	uint64_t l1d_read_accesses;
	uint64_t l1d_read_misses;
	uint64_t l1d_write_accesses;
	uint64_t l1d_write_misses;
	uint64_t l2_accesses;		/* L1 misses that reached L2 */
	uint64_t l2_misses;
	uint64_t l2_writebacks;		/* dirty L2 victims */
	uint64_t bus[CM_NKINDS];	/* transactions this CPU started */
	uint64_t hitm;			/* its READ/RFO hit a remote M line */
	/* Loads whose PC lies in the run-queue loop. */
	uint64_t rqloop_l1d_read_accesses;
	uint64_t rqloop_l1d_read_misses;
	uint64_t rqloop_l2_read_accesses;
	uint64_t rqloop_l2_read_misses;
	/* The loop's L2 read misses by where the fill came from: another
	 * CPU's Modified copy (HITM), or another CPU's clean copy; the rest
	 * came from memory. */
	uint64_t rqloop_l2_read_hitm;
	uint64_t rqloop_l2_read_shared;
	/* The same misses by why the line was missing (the five add up to
	 * rqloop_l2_read_misses): this CPU's loop never loaded it before;
	 * another CPU wrote it since this CPU last held it (a remote RFO or
	 * INVALIDATE, or a HITM fill: coherence); or it last left this CPU's
	 * L2 by replacement, to make room for a line this CPU's loop also
	 * loads, for another kernel-mode access's line, or for a user-mode
	 * access's line. */
	uint64_t rqloop_l2_read_first;
	uint64_t rqloop_l2_read_invalidated;
	uint64_t rqloop_l2_read_evicted_loop;
	uint64_t rqloop_l2_read_evicted_kernel;
	uint64_t rqloop_l2_read_evicted_user;
	/* Instruction fetches (only with an L1I, cm_enable_l1i()). */
	uint64_t l1i_accesses;		/* lines fetched, per TB execution */
	uint64_t l1i_misses;
	/* Modelled time (only with cm_enable_timing()). */
	uint64_t cycles;		/* base cost of instructions + stalls */
	uint64_t bus_wait_cycles;	/* of which: queueing for the bus */
	/* Of cycles: waiting for the store buffer (with store_buffer): a
	 * store that found it full, or a locked RMW that drained it. */
	uint64_t store_stall_cycles;
	/* TLB misses (with dtlb/itlb): each walked the page table with
	 * loads through L1D and L2. */
	uint64_t dtlb_misses;
	uint64_t itlb_misses;
	/* Of cycles: waiting for a load miss in flight (with overlap): a
	 * load miss that found `overlap` in flight, or a locked RMW. */
	uint64_t overlap_stall_cycles;
};

#define CM_NCOUNTERS (sizeof(struct cm_counters) / sizeof(uint64_t))
extern const char *const cm_counter_name[CM_NCOUNTERS];

static inline uint64_t cm_counter_get(const struct cm_counters *c, size_t i)
{
	return ((const uint64_t *)c)[i];
}

/* One cache line frame.  lineno = paddr >> line_shift (the full tag). */
struct cm_line {
	uint64_t lineno;
	uint64_t stamp;		/* LRU: last-use time from cm_cache.clock */
	uint32_t state;		/* enum cm_state */
};

/* One cache level: nsets x assoc frames, set-major. */
struct cm_cache {
	struct cm_line *lines;
	uint64_t *plru;		/* [nsets] tree bits, CM_REPL_PLRU only */
	uint64_t set_mask;	/* nsets - 1 */
	uint64_t clock;		/* LRU time, bumped on every use */
	uint32_t assoc;
	uint32_t repl;
};

/*
 * Timing parameters, all in core cycles (machines.toml [x.timing] gives
 * them with their sources).  A miss stalls the CPU for its latency plus
 * its queueing on the bus.  The bus is pipelined as a P6 bus: every
 * transaction holds the address bus for bus_addr cycles (request phase);
 * a line transfer also holds the data bus for bus_line cycles (its data
 * phase), placed at the end of its latency; at most bus_depth
 * transactions are in flight (the in-order queue), and data phases
 * follow request order.  Transactions are served in modelled-time order
 * (README.md, "The bus").
 */
struct cm_timing {
	uint64_t inst;		/* base cost per instruction */
	uint64_t l2_hit;	/* L1 miss served by L2 */
	uint64_t mem;		/* L2 miss filled from memory */
	uint64_t hitm;		/* L2 miss filled by another cache (HITM) */
	uint64_t inval;		/* INVALIDATE (upgrade, no data) */
	uint64_t bus_line;	/* data-bus occupancy of a line transfer */
	uint64_t bus_addr;	/* address-bus occupancy of any transaction */
	uint64_t bus_depth;	/* transactions in flight at most (1..CM_IOQ_MAX) */
	uint64_t locked;	/* a locked RMW, beyond gaining its line */
	/* Buses: CPU c sits on bus c / bus_cpus (0: all on one bus), at
	 * most CM_MAX_BUSES.  A transaction whose line another bus holds
	 * (any copy for RFO or INVALIDATE, a Modified one for READ) also
	 * takes that bus's address phase, and a HITM fill from there its
	 * data phase, and costs cross_bus cycles more (the chipset's
	 * coherency filter and crossbar). */
	uint64_t bus_cpus;
	uint64_t cross_bus;
	/* Store buffer entries (0: off, every store stalls in full).  A
	 * store that is not part of a locked RMW takes an entry and the CPU
	 * goes on; the entry retires, in program order, when its line has
	 * been gained (its L2 hit, or its RFO or INVALIDATE with the bus
	 * queueing), so the CPU stalls only for a store that finds every
	 * entry taken, or at a locked RMW, which drains the buffer first. */
	uint64_t store_buffer;
	/* TLBs, in entries (0: no TLB, translation is free): for 4 KiB pages
	 * (4-way) and for large pages (4-way, or fully associative if fewer
	 * than 4).  A miss walks the page table: a load of each entry the
	 * caller names, through L1D and L2, stalling the CPU. */
	uint64_t dtlb, dtlb_large;
	uint64_t itlb, itlb_large;
	/* Load misses outside the run-queue loop in flight at once (0: every
	 * load miss stalls in full).  With no reorder-buffer limit, an upper
	 * bound on the P6's overlap (cachemodel.c, the store buffer). */
	uint64_t overlap;
};

/* Large pages are tagged as the P6's 4 MiB PSE pages. */
#define CM_LARGE_SHIFT	22

#define CM_IOQ_MAX	64
#define CM_SB_MAX	64
#define CM_MAX_BUSES	2

/* One bus's state, as served so far, and its totals since the reset. */
struct cm_bus {
	uint64_t addr_free;	/* the address bus's next free cycle */
	uint64_t data_free;	/* the data bus's next free cycle */
	uint64_t ioq_end[CM_IOQ_MAX];	/* completions, by sequence % depth */
	uint64_t seq;		/* transactions started on it, ever */
	uint64_t transactions;	/* since the reset: its own and crossing */
	uint64_t crossing;	/* of which from the other bus */
	uint64_t data_cycles;
};

/*
 * One bus transaction waiting to be served in modelled-time order: asked
 * for at the CPU's clock `t`, when `charged` bus waits had been charged to
 * that CPU.  Waits charged to it later (for its earlier transactions)
 * would have delayed this request by as much, so it is served as if
 * asked for at t + (charged now - charged).
 */
struct cm_busreq {
	uint64_t t;
	uint64_t charged;
	uint32_t lat;		/* latency with no queueing */
	uint32_t occ;		/* data-bus cycles, 0 for an address-only one */
	uint64_t sbseq;		/* posted == 2: its store buffer entry */
	uint8_t mode;
	uint8_t posted;		/* 1: a write-back, the CPU does not wait;
				 * 2: a buffered store's, its entry waits;
				 * 3: a load miss in flight's, likewise */
	uint8_t cross;		/* 1: the other bus's address phase too;
				 * 2: its data phase as well (HITM there) */
};

/*
 * A network card's DMA (cm_dma): line transactions of a bus master that is
 * not a CPU, by direction, per page-offset chunk, and what they did to the
 * CPUs' caches.  Zeroed by cm_reset_stats().
 */
enum cm_dma_dir { CM_DMA_READ = 0, CM_DMA_WRITE = 1, CM_DMA_NDIRS };

struct cm_dmastats {
	uint64_t lines[CM_DMA_NDIRS];
	uint64_t hitm;		/* reads a CPU's Modified copy answered */
	uint64_t invalidated;	/* writes that removed a CPU's copy */
	uint64_t wait_cycles;	/* bus queueing the card's transactions saw */
	uint64_t hist[CM_DMA_NDIRS][CM_NCHUNKS];
};

/* A DMA line waiting for the bus (timing): asked for at t; the buses
 * whose address phase (addr) and data phase (data) it takes, as bits. */
struct cm_dmareq {
	uint64_t t;
	uint64_t seq;		/* order asked, for equal times */
	uint8_t addr, data;
};

#define CM_DMAQ_CAP	4096

extern const char *const cm_dma_dir_name[CM_DMA_NDIRS];

/* Bus totals since the last reset (busmon.json "bus", stats.txt). */
struct cm_busstats {
	uint64_t transactions;	/* served */
	uint64_t addr_cycles;	/* address-bus cycles held */
	uint64_t data_cycles;	/* data-bus cycles held */
	uint64_t wait_cycles;	/* queueing of all transactions, posted too */
	uint64_t late;		/* asked for before the latest one served */
	uint64_t forced;	/* served before every CPU's clock passed them */
	uint64_t max_pending;	/* most requests waiting in one CPU's queue */
	uint64_t max_lag;	/* longest a CPU ran on before its queueing
				 * was charged: its clock then - the request */
	uint64_t store_waits;	/* buffered stores' requests whose entry
				 * the CPU had to wait for before the bus
				 * served them (then it waits for their
				 * queueing as for a load's) */
};

/*
 * Why a line the run-queue loop loads last left a CPU's caches.  Each CPU
 * remembers every line its loop has loaded (CM_LOOP_LINES at most; the
 * table is allocated once, in cm_init) and the cause of its last removal,
 * so that a later loop miss on it can be classified.
 */
enum cm_gone {
	CM_GONE_NEVER = 0,	/* held since the loop last loaded it */
	CM_GONE_INVALIDATED,	/* a remote RFO or INVALIDATE since */
	CM_GONE_EVICTED_LOOP,	/* replaced by a line the loop loads */
	CM_GONE_EVICTED_KERNEL,	/* replaced by another kernel-mode line */
	CM_GONE_EVICTED_USER,	/* replaced by a user-mode line */
};

#define CM_LOOP_BITS	16
#define CM_LOOP_LINES	(1u << CM_LOOP_BITS)	/* open-addressed, kept < 1/2 full */

struct cm_loop_lines {
	uint64_t *key;		/* [CM_LOOP_LINES] lineno + 1; 0 = empty */
	uint8_t *gone;		/* [CM_LOOP_LINES] enum cm_gone */
	uint32_t used;
	uint32_t full;		/* loop lines not remembered: table full */
};

/* One store buffer entry: when its own line is gained (`own`) and when it
 * completes, no earlier than the entry before it (`done`), as known so
 * far, and how many of its bus requests still wait to be served (their
 * queueing is not known yet, so the entry cannot retire). */
struct cm_sbentry {
	uint64_t own;
	uint64_t done;
	uint32_t pend;
};

/* One TLB array: sets x assoc tags (virtual page number + 1; 0 =
 * empty), true LRU. */
struct cm_tlb {
	uint64_t *tag;
	uint64_t *stamp;
	uint32_t sets, assoc;
	uint64_t clock;
	/* 4 KiB arrays only: the 4 KiB page number + 1 of the last lookup
	 * in this TLB (both page sizes) if it hit and nothing was filled or
	 * flushed since, else 0.  Its entry is then the most recently used
	 * of its array, so a lookup of the same page again would hit it and
	 * change no replacement decision: it can return at once. */
	uint64_t last;
	/* Likewise the large page number + 1 of the last hit in the
	 * large-page array: its entry is that array's most recently used. */
	uint64_t last_large;
	/* Bit (large page number % 64) set for every 4 KiB entry filled
	 * since the last flush: a clear bit means no 4 KiB entry lies in
	 * that large page, so a lookup there can skip the 4 KiB array. */
	uint64_t small_in_large;
};

/* Which TLB: data or instruction; 4 KiB or large pages. */
enum { CM_DTLB = 0, CM_ITLB = 2, CM_TLB_LARGE = 1 };

/* A ring of entries, oldest first; seq is the oldest entry's number. */
struct cm_posted {
	struct cm_sbentry *e;
	unsigned head, len;
	uint64_t seq;
};

/* Everything one CPU owns.  Padded so CPUs never share a host line. */
struct cm_cpu {
	struct cm_cache l1;
	struct cm_cache l2;
	struct cm_cache l1i;	/* lines == NULL without an L1I */
	/* Per L1I set, the frame of the last fetch there (or NULL): that
	 * set's most recently used line, if still valid (fetch_line). */
	struct cm_line **l1i_mru;
	/* Bumped whenever this CPU's L1I changes other than by a fetch that
	 * hits its set's most recently used frame: a fill, a touch of
	 * another frame, a line dropped.  While it stays the same, fetching
	 * lines that were each their set's last fetch hits them all again
	 * and changes nothing (cm_fetch_again()). */
	uint64_t l1i_epoch;
	struct cm_loop_lines loop;
	struct cm_counters ctr[CM_NMODES];
	uint64_t now;		/* modelled time in cycles; never reset */
	unsigned wb_pending;	/* write-backs to put on the bus after the fill */
	/* Bus requests not yet served, oldest first (a ring of qcap), and
	 * the bus waits charged to this CPU so far. */
	struct cm_busreq *q;
	unsigned qhead, qlen;
	uint64_t bus_charged;	/* queueing and crossing costs charged */
	/* Halted or waiting for a lock: its clock does not hold the bus
	 * back (the caller sets it; see bus_floor()). */
	int parked;
	/* The store buffer (buf[0], store_buffer entries) and the load
	 * misses in flight (buf[1], overlap entries).  While a buffered
	 * access is modelled (sb_defer: its buffer + 1), its costs add up
	 * in sb_cost instead of stalling the CPU, and sb_pend counts its
	 * requests the bus has not served yet. */
	struct cm_posted buf[2];
	int sb_defer;
	uint64_t sb_cost;
	unsigned sb_pend;
	struct cm_tlb tlb[4];	/* CM_DTLB/CM_ITLB (+ CM_TLB_LARGE) */
} __attribute__((aligned(64)));

/* hist[cpu][mode][kind][chunk] */
typedef uint64_t cm_hist_t[CM_NMODES][CM_NKINDS][CM_NCHUNKS];

struct cm_model {
	unsigned ncpus;
	unsigned line_shift;
	struct cm_geom l1g, l2g, l1ig;
	int has_l1i;
	int inclusive;		/* L2 evictions back-invalidate L1D and L1I */
	struct cm_cpu *cpu;	/* [ncpus] */
	cm_hist_t *hist;	/* [ncpus] */
	int timing;		/* cm_enable_timing() was called */
	struct cm_timing t;
	/* The bus, as served so far in modelled-time order. */
	unsigned qcap;		/* per-CPU request ring, a power of two */
	uint64_t served_t;	/* arrival time of the latest one served */
	unsigned nbuses;
	struct cm_bus bus[CM_MAX_BUSES];
	unsigned snoop_cross;	/* the last snoop's answer from the other bus */
	struct cm_busstats bs;
	struct cm_dmastats dma;
	/* The cards' lines waiting for the bus, earliest first, and the
	 * cycles between two lines of one frame (cm_dma_gap). */
	struct cm_dmareq *dq;	/* a min-heap by (t, seq) */
	unsigned dqlen;
	uint64_t dqseq;
	uint64_t dma_gap;
};

/*
 * Check one geometry.  On error writes a full sentence naming `what`
 * ("L1D", "L2") into err and returns -1.
 */
int cm_geom_check(const char *what, const struct cm_geom *g,
		  char *err, size_t errlen);

/* Build a model; on error writes a sentence into err and returns -1.
 * The model starts inclusive; see cm_set_inclusive(). */
int cm_init(struct cm_model *m, unsigned ncpus, const struct cm_geom *l1,
	    const struct cm_geom *l2, char *err, size_t errlen);
void cm_free(struct cm_model *m);

/*
 * Inclusive (1, the default): a line leaving L2 leaves L1D and L1I too.
 * Not inclusive (0): the L1 copies stay; a dirty line that leaves L2 while
 * L1D holds it is written back when it leaves L1D instead, and snoops look
 * at every level.
 */
void cm_set_inclusive(struct cm_model *m, int inclusive);

/*
 * Replacement policy of one level in every CPU (LRU unless set).  Call
 * before the first access (for the L1I, after cm_enable_l1i()).  On error
 * writes a sentence into err and returns -1.
 */
int cm_set_repl(struct cm_model *m, enum cm_level level, enum cm_repl repl,
		char *err, size_t errlen);

/*
 * Give every CPU an L1I of geometry g (same line size as L2).  Fetches then
 * compete with data in the unified L2.  Call once, after cm_init(); on
 * error writes a sentence into err and returns -1.
 */
int cm_enable_l1i(struct cm_model *m, const struct cm_geom *g,
		  char *err, size_t errlen);

/*
 * Turn on modelled time with these costs.  Every CPU's clock starts at 0;
 * cm_reset_stats() zeroes the cycle counters, never the clocks.  On error
 * (no memory, bus_depth out of range) writes a sentence into err and
 * returns -1.
 */
int cm_enable_timing(struct cm_model *m, const struct cm_timing *t,
		     char *err, size_t errlen);

/*
 * Serve every bus request still waiting, in modelled-time order, and
 * charge its CPU the queueing.  Requests are otherwise served once every
 * CPU that is not parked has passed them; call this before reading the
 * counters (the plugin does at each dump).
 */
void cm_bus_flush(struct cm_model *m);

/*
 * Advance cpu's clock by `cycles` of stall in `mode` (the lock model uses
 * it for modelled spin waits).  No-op without timing.
 */
static inline void cm_stall(struct cm_model *m, unsigned cpu, unsigned mode,
			    uint64_t cycles)
{
	if (!m->timing)
		return;
	m->cpu[cpu].now += cycles;
	m->cpu[cpu].ctr[mode].cycles += cycles;
}

/*
 * TLBs (cm_timing dtlb, itlb).  cm_tlb_hit() looks vaddr up in the data
 * (instr = 0) or instruction TLB, both page sizes; it returns 1 on a hit,
 * or if that TLB is off.  On a miss the caller walks the guest's tables
 * and calls cm_tlb_fill() with the page size and the physical addresses
 * of the entries a P6 reads (the page-directory entry, and for a 4 KiB
 * page the page-table entry): each is loaded through L1D and L2 in the
 * mode of `flags`.  cm_tlb_flush() drops the 4 KiB entries (a CR3 write;
 * the large pages are the kernel's, global as Linux 2.4 maps them).
 */
int cm_tlb_lookup(struct cm_model *m, unsigned cpu, int instr, uint64_t vaddr);

/* The common cases inline: no TLB, or the page looked up last (struct
 * cm_tlb, `last`); the rest in cm_tlb_lookup(). */
static inline int cm_tlb_hit(struct cm_model *m, unsigned cpu, int instr,
			     uint64_t vaddr)
{
	const struct cm_tlb *t = &m->cpu[cpu].tlb[instr ? CM_ITLB : CM_DTLB];

	if (t->tag == NULL || t->last == (vaddr >> 12) + 1)
		return 1;
	/* The last large page hit again, with no 4 KiB entry in it: that
	 * entry, its array's most recently used, hits. */
	if (t->last_large == (vaddr >> CM_LARGE_SHIFT) + 1 &&
	    !(t->small_in_large >> ((vaddr >> CM_LARGE_SHIFT) & 63) & 1))
		return 1;
	return cm_tlb_lookup(m, cpu, instr, vaddr);
}
void cm_tlb_fill(struct cm_model *m, unsigned cpu, int instr, uint64_t vaddr,
		 int large, const uint64_t *walk, unsigned nwalk,
		 unsigned flags);
void cm_tlb_flush(struct cm_model *m, unsigned cpu);
/* INVLPG: drop the entries, of either size, of the page that holds
 * vaddr, in both TLBs (SDM vol. 3A 4.10.4.1); the rest stay. */
void cm_tlb_invlpg(struct cm_model *m, unsigned cpu, uint64_t vaddr);
/* Drop every entry of both TLBs, large pages too (an INVLPG whose page
 * is not known). */
void cm_tlb_flush_all(struct cm_model *m, unsigned cpu);

/*
 * A serializing or I/O instruction, an interrupt or an exception: the CPU
 * waits until its store buffer has drained (and its load misses in
 * flight have completed), as before a locked RMW.  No-op without timing.
 */
void cm_drain(struct cm_model *m, unsigned cpu, unsigned mode);

/* Zero all counters and histograms; cache contents are kept. */
void cm_reset_stats(struct cm_model *m);

/*
 * One data access by `cpu` of `size` bytes at physical `paddr`.  An access
 * that straddles line boundaries is split, one access per line.  `store`
 * is the direction (a locked RMW reported as one RW access is a store).
 * Stores and CM_F_LOCKED loads need ownership: they miss with an RFO.
 */
void cm_access(struct cm_model *m, unsigned cpu, uint64_t paddr,
	       unsigned size, int store, unsigned flags);

/*
 * An instruction fetch by `cpu` of the `size` code bytes at physical
 * `paddr`: one L1I access per line they touch.  A miss looks up L2 and
 * goes to the bus as a READ (recorded at the fetch address's chunk) like a
 * load miss.  Only CM_F_USER is looked at in flags.  Needs an L1I.
 */
void cm_fetch(struct cm_model *m, unsigned cpu, uint64_t paddr,
	      unsigned size, unsigned flags);

/*
 * A shortcut for the fetches of a code block run again by `cpu`: if its
 * L1I has the epoch `epoch` (cm_cpu.l1i_epoch) that it had right after
 * the block's last fetches, and the block's lines lie in distinct L1I
 * sets, fetching them again would hit every one in its set's most
 * recently used frame and change nothing but the access counts.  Then
 * this counts them (`lines[mode]`) and returns 1; otherwise it returns 0
 * and the caller fetches as usual.
 */
static inline int cm_fetch_again(struct cm_model *m, unsigned cpu,
				 uint64_t epoch, const uint32_t lines[CM_NMODES])
{
	struct cm_cpu *p = &m->cpu[cpu];

	if (!m->has_l1i || p->l1i_epoch != epoch)
		return 0;
	p->ctr[CM_KERNEL].l1i_accesses += lines[CM_KERNEL];
	p->ctr[CM_USER].l1i_accesses += lines[CM_USER];
	return 1;
}

static inline void cm_add_insts(struct cm_model *m, unsigned cpu,
				unsigned mode, uint64_t n)
{
	m->cpu[cpu].ctr[mode].insts += n;
	cm_stall(m, cpu, mode, n * m->t.inst);
}

/*
 * The cycles between two lines of one DMA frame: the card moves a frame's
 * lines as its bytes cross the wire, so at the wire's rate (1 if unset).
 * Call after cm_enable_timing(); returns -1 if out of memory.
 */
int cm_dma_gap(struct cm_model *m, uint64_t cycles);

/*
 * A network card's DMA of `size` bytes at physical `paddr`, from modelled
 * time `t` (ignored without timing): one line transaction per line, the
 * k-th asked for at t + k x the gap (cm_dma_gap).  A
 * read (write = 0) is snooped like a CPU's READ: a Modified copy answers
 * (HITM) and every copy is left Shared.  A write invalidates every copy
 * (a full-line write needs no data from a cache; a Modified copy is
 * dropped, its data overwritten).  With timing, each transaction takes
 * the address bus and, for its line's data, the data bus of bus 0 (the
 * 450GX's PCI bridge is an agent on the processor bus); with two buses
 * (a chipset that reaches memory directly) it takes only the address
 * phase of each bus holding a copy, and the data phase where a Modified
 * copy answers.  The lines wait for the bus with the CPUs' requests and
 * are served in modelled-time order with them; no CPU is charged for a
 * card's queueing (dma.wait_cycles counts it).  The cache effects happen
 * at once.
 */
void cm_dma(struct cm_model *m, uint64_t paddr, unsigned size, int write,
	    uint64_t t);

/*
 * Page-offset view of the bus histograms, summed over all CPUs, modes and
 * kinds, and the cards' DMA: out[i] counts transactions at page offset 8*i.  With line_view
 * nonzero, every chunk is folded onto its line base instead, which is
 * what a line-granular monitor would see.
 */
void cm_offset_view(const struct cm_model *m, int line_view,
		    uint64_t out[CM_NCHUNKS]);

/* MESI state of paddr's line in a cache (for tests and debugging). */
enum cm_state cm_l1_state(const struct cm_model *m, unsigned cpu,
			  uint64_t paddr);
enum cm_state cm_l2_state(const struct cm_model *m, unsigned cpu,
			  uint64_t paddr);
/* Whether paddr's line is in the CPU's L1I (0 without an L1I). */
int cm_l1i_holds(const struct cm_model *m, unsigned cpu, uint64_t paddr);

#endif /* CACHEMODEL_H */
