/*
 * busmon.c - QEMU TCG plugin (API version 5, QEMU >= 10.1): a software
 * "GATES bus monitor".
 *
 * Feeds every guest data access, and with l1i= every TB's instruction
 * fetches, into cachemodel.c (per-CPU L1D, L1I and L2, MESI over one bus)
 * and writes, on each gem5-style m5 "dumpstats", the bus transactions per
 * page offset plus cache counters (README.md).
 *
 * Serialization: the suite always runs QEMU with
 *   -accel tcg,thread=single -icount shift=N,sleep=off
 * i.e. round-robin TCG, where every vCPU runs on one host thread and all
 * plugin callbacks are serialized.  That is why nothing here is locked.
 * Under MTTCG (thread=multi) the model would race; do not use it so.
 *
 * Hot path (vcpu_mem, vcpu_tb_exec): no allocation, no hashing, no
 * strings.  Everything per instruction is decided at translation time
 * and passed as callback userdata.
 */
#include "qemu_plugin_api.h"
#include "cachemodel.h"
#include "x86insn.h"
#include "branch.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 2.3.0: a lock wait pushed onto a CPU already spinning for its next hold
 * is booked once (before, its acquire booked it again: spin could exceed
 * the region); colorsim/run/schedshare.py reads no spin from older runs. */
/* 2.3.1: holdOverlaps checks the kept holds' order after every release
 * and counts holds a full ring lost ahead of a new request (before, it
 * compared a start with the end it was computed from). */
/* 2.4.0: a held CPU sits its round-robin turns out (skipheld=, QEMU patch
 * 0007) rather than running one TB per turn. */
#define BUSMON_VERSION "2.4.0"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* gem5's address-form m5 ops: an 8-byte load from base + (func << 8). */
#define M5_WINDOW		0x10000u
#define M5_EXIT			0x21
#define M5_RESETSTATS		0x40
#define M5_DUMPSTATS		0x41
#define M5_DUMPRESETSTATS	0x42
#define M5_WORK_BEGIN		0x5a
#define M5_WORK_END		0x5b

#define MAX_RANGES	16
#define TB_FREE		(1ull << 31)	/* in vcpu_tb_exec's userdata */
#define TB_UNIT		(1ull << 30)	/* the TB starts at unit= */
#define TB_SCHED	(1ull << 29)	/* the TB starts in a sched= range */
#define MAX_CPUS	1024

_Static_assert(sizeof(void *) == 8, "userdata packs two 32-bit counts");

struct range {
	uint64_t start, end;		/* [start, end) */
};

static struct config {
	char out[PATH_MAX];		/* absolute, so a chdir cannot hurt */
	struct cm_geom l1, l2;
	struct cm_geom l1i;		/* size 0: no L1I, no fetches */
	int l1repl, l2repl;		/* enum cm_repl (L1 = L1D and L1I) */
	int inclusive;
	unsigned ncpus;
	int smp_vcpus;
	unsigned measured;		/* measured=: vCPUs at or above are ignored */
	struct range user[MAX_RANGES];
	unsigned nuser;
	struct range rqloop[MAX_RANGES];
	unsigned nrqloop;
	struct range free[MAX_RANGES];	/* PCs that cost no modelled time */
	unsigned nfree;
	struct range sched[MAX_RANGES];	/* the scheduler's code (sched_insts) */
	unsigned nsched;
	uint64_t m5base;
	uint64_t publish;		/* guest physical address, or 0 */
	int timing;			/* timing= given */
	struct cm_timing t;
	uint64_t lock;			/* lockmeter: first lock word's vaddr, or 0 */
	uint64_t lock_stride;		/* bytes between metered lock words */
	unsigned nlocks;		/* lock words metered: lock + i * stride */
	uint64_t lock_span;		/* nlocks * stride: the hot path's test */
	unsigned lock_shift;		/* log2 of the lock word's store width:
					 * 2 (4 bytes, i386 2.4 and the testbed)
					 * or 0 (1 byte: 2.4's x86_64 port, whose
					 * spinlocks are lock decb / movb $1) */
	uint64_t unit;			/* PC whose executions are units of work */
	uint64_t quantum;		/* cycles a CPU may lead the floor; 0: off */
	int clienthold;			/* server CPUs wait while a client works */
	int noskipheld;			/* skipheld=0: held CPUs run a TB a turn */
	uint64_t branch_miss;		/* cycles a mispredicted branch costs; 0: off */
	unsigned btb_entries;		/* the BTB's entries (branch=) */
	uint64_t clientcost;		/* clients=: thousandths of a cycle per
					 * client instruction; 0: no client clocks */
	uint64_t clientskew;		/* clients=: most cycles a client and a
					 * server clock may be apart */
	uint64_t dma;			/* dma=GAP: book the cards' DMA (cm_dma),
					 * a frame's lines GAP cycles apart */
	uint64_t dmabell;		/* dmabell=VADDR: Linux 2.4's cards tell
					 * their DMA there (dmabell_op), or 0 */
	int argc;
	char **argv;			/* valid for the plugin's lifetime */
} cfg;

static struct cm_model model;
static unsigned ndumps;			/* dumps written so far */
static int m5_exit_seen;
static uint64_t insts_since_start;  /* never reset: guest MIPS for benchmarks */

/*
 * publish=ADDR: after each TB start, the CPU's own instruction count since
 * QEMU started goes to guest physical ADDR + 8 * cpu, so the guest can read
 * what the plugin knows.  This proves the write path (API version 5) that
 * modelled time will use.  The byte array points at static storage: the hot
 * path allocates nothing.
 */
static uint64_t cpu_insts[MAX_CPUS];
static uint64_t publish_buf;
static GByteArray publish_bytes = { (uint8_t *)&publish_buf, sizeof(publish_buf) };
static unsigned publish_errors;

/*
 * Lockmeter (lock=VADDR[:STRIDE:COUNT], needs timing=): a set of spinlocks
 * in the i386 2.4 style (spinlock.c: `lock subl $1` takes one when the
 * result is 0, a store of 1 releases it; spin_trylock's `xchg` of 0
 * takes it when it was free).  The store of 1 is plain, or an `xchg` where
 * the kernel fences its unlock: 2.4's i386 spinlock.h does with
 * CONFIG_X86_PPRO_FENCE, which its Pentium Pro build (M686) sets.  A
 * locked store of 1 is therefore a release, never a try: `lock subl $1`
 * never leaves 1 behind.  The words are VADDR + i * STRIDE for i <
 * COUNT: the vanilla kernel's one runqueue_lock, or the multi-queue
 * kernel's per-CPU run-queue locks.  The plugin sees every take and
 * release as a store to a lock word with its value (4 bytes; with
 * lockbytes=1 one byte, as 2.4's x86_64 port's `lock decb` and `movb $1`
 * and its trylock's `xchgb`, with the same values).  Round-robin
 * turns do not follow modelled time, so each lock is made to: an acquire
 * at modelled time t earlier than that lock's last release by another CPU
 * waits, in modelled time, until the release plus one cache-to-cache
 * transfer (the lock line moving by HITM).  That wait is spin time and
 * makes the acquisition contended, as does having found the lock held in
 * guest memory.  But if t is even before that last hold began, this CPU
 * asked first: its hold goes before the last one (after the one before
 * that), and at its release the last holder's clock is pushed back by
 * the overlap, as a wait of that holder's acquisition.  Without that,
 * whichever vCPU ran first in round-robin order got the lock, and a CPU
 * behind in modelled time waited out a hold that began after its request
 * (on mq, remote wake-ups waited out the owner's whole run-queue walk,
 * and the CPUs fell into a convoy).  See README.md, "Lockmeter".
 *
 * Two concerns, two structures: what each acquiring CPU did (struct
 * lockmeter: the per-CPU stats and whether it is waiting) and the state
 * and totals of each lock word (struct lockword).  Both keep the same five
 * counters (struct lockstats), counted and printed by the same code.  A CPU may hold several
 * locks at once (the mq kernel's load balancer holds its own queue's lock
 * and trylocks another's); each hold is timed from its own lock's acquire.
 */
#define MAX_LOCKS	64
struct lockstats {
	uint64_t acquisitions, contended, spin_cycles, hold_cycles, hold_max;
};

static void lockstats_acquire(struct lockstats *ls, int contended,
			      uint64_t spin)
{
	ls->acquisitions++;
	if (contended) {
		ls->contended++;
		ls->spin_cycles += spin;
	}
}

static void lockstats_hold(struct lockstats *ls, uint64_t hold)
{
	ls->hold_cycles += hold;
	if (hold > ls->hold_max)
		ls->hold_max = hold;
}

/* A wait added to an acquisition after the fact (lock_store's deferred
 * hold): more spin, and contended if it was not yet. */
static void lockstats_wait(struct lockstats *ls, int was_contended,
			   uint64_t spin)
{
	ls->spin_cycles += spin;
	ls->contended += !was_contended;
}

struct lockmeter {
	struct lockstats s;
	uint64_t spin_since;		/* modelled time of the first failed try */
	int spinning;			/* waiting for a metered lock */
	int held;			/* metered locks it holds (sync_check) */
	unsigned waits_for;		/* while spinning: that lock's index */
} __attribute__((aligned(64)));
static struct lockmeter lockm[MAX_CPUS];

/*
 * One hold of a lock in modelled time.  A lock keeps its last LOCK_HOLDS
 * holds in modelled order (by request, which is also by start), so that a
 * request made at an earlier modelled time than holds other CPUs already
 * ran (round-robin ran them first) goes before all of them, however many.
 */
#define LOCK_HOLDS	64
struct hold {
	uint64_t req;			/* modelled time of the request */
	uint64_t start, end;		/* acquire, release (end: open = MAX) */
	int cpu;
	int contended;			/* its acquisition waited */
};

struct lockword {
	struct hold h[LOCK_HOLDS];	/* a ring, oldest at `first` */
	unsigned first, n;
	struct hold gone;		/* the last hold dropped off the ring
					 * (cpu -1: none yet) */
	int holder;			/* CPU holding it in guest memory, or -1 */
	/* Totals over the acquiring CPUs; overlaps is the invariant check
	 * (lock_check_order: a kept hold starting before the one before it
	 * ended, or a hold lost from a full ring that a new one went
	 * before: must stay 0). */
	struct lockstats s;
	uint64_t overlaps, trylock_failures;
	uint64_t reordered;		/* holds that went before a hold taken
					 * earlier in round-robin order */
	uint64_t max_depth;		/* most holds one request went before */
	uint64_t too_old;		/* requests before the oldest hold kept:
					 * queued after it instead */
};
static struct lockword lockw[MAX_LOCKS];

/*
 * Idle catch-up.  A halted vCPU runs no TBs, so its clock stands still
 * while the others' advance.  Every `hlt` (found by opcode at translation
 * time) marks its CPU halted; the CPU's next TB (it woke up) first moves
 * its clock up to the slowest clock among the CPUs that are not halted.
 * The jump is idle time: it is not charged to `cycles`.  Halted CPUs are
 * also left out of the floor that running CPUs synchronise to.
 */
static uint8_t halted[MAX_CPUS];

/* unit=PC: executions of the TB that starts there (the workload's compute
 * burst), per CPU: the units of work for throughput. */
static uint64_t work_units[MAX_CPUS];

/*
 * sched=: instructions and modelled cycles in the scheduler's code, per
 * CPU.  A TB that starts in a sched= range counts all its instructions;
 * its cycles are the modelled time from its start to the start of the
 * CPU's next TB (its instructions' cost and its accesses' stalls, spin
 * waits included if the lock is taken inside such a TB).
 */
static uint64_t sched_insts[MAX_CPUS], sched_cycles[MAX_CPUS];
static uint64_t sched_since[MAX_CPUS];	/* modelled time at that TB's start */
static uint8_t sched_open[MAX_CPUS];	/* the CPU's last TB was one */
static unsigned long long idle_catchups;

/*
 * The slowest clock among CPUs that are not halted (other than `skip`).
 * A CPU spinning on the metered lock is left out as well: its clock
 * stands nearly still while it spins (each spin is a few instructions per
 * round-robin turn) and jumps to the release when it acquires, so it is
 * not behind, only waiting; holding the others back for it would stall
 * the very holder it waits for.
 */
static uint64_t clock_floor(unsigned skip)
{
	uint64_t floor = UINT64_MAX;

	for (unsigned c = 0; c < model.ncpus; c++)
		if (c != skip && !halted[c] && !lockm[c].spinning &&
		    model.cpu[c].now < floor)
			floor = model.cpu[c].now;
	return floor;
}

/* The bus model serves a request once every CPU that is not parked has
 * passed it: the same CPUs as clock_floor() leaves out.  floor_lb is a
 * lower bound of clock_floor(): clocks only grow, so it can only fall
 * below the floor when a CPU rejoins it (wakes, or takes the lock it
 * waited for) with a clock under it, and then it is lowered here. */
static uint64_t floor_lb;

static void park_update(unsigned cpu)
{
	model.cpu[cpu].parked = halted[cpu] || lockm[cpu].spinning;
	if (!model.cpu[cpu].parked && model.cpu[cpu].now < floor_lb)
		floor_lb = model.cpu[cpu].now;	/* it rejoins the floor */
}

/*
 * The wire in modelled time (kernels/kernel/wire.c under --timing).  The
 * kernel's wire, on a client CPU, stamps packets with modelled time and
 * releases one when the machine's time -- machine_now(): the slowest
 * running server CPU -- has reached its arrival.  While every server CPU
 * is halted no clock moves, so a packet due later would wait for ever, or
 * be handed over at a time the model never reached.  Two 8-byte stores to
 * the m5 window tell the monitor what the wire does:
 *  - WIRE_ADVANCE t: the wire's next arrival.  If every CPU but the
 *    wire's is halted (server and client CPUs: a client's work takes no
 *    modelled time, so one still running could still send earlier), the
 *    machine's time moves up to t (idle_now); else nothing changes.  The
 *    result is published at once (PUBLISH_NOW), for the load after the
 *    store.
 *  - WIRE_DELIVERED t: a packet due at t reached its card; it is late by
 *    machine_now() - t, if positive (how long the wire CPU's look took to
 *    come round after the floor passed t).
 *  - WIRE_RECEIVED t, from a server CPU's card interrupt: that CPU took a
 *    packet due at t; late by its own clock - t, which adds how far the
 *    CPU led the machine's time (the quantum, a jump at a lock).
 * From the first of them on (wire_on), a halted CPU wakes at the machine's
 * time if it is behind it: with every server CPU halted that is the latest
 * clock or idle_now (a CPU that idled behind the others has still idled
 * until the machine's time).  Runs without the wire never set wire_on and
 * keep the catch-up as it was.  All of this happens at guest instructions, so
 * runs stay repeatable.
 */
#define PUBLISH_NOW		65
static void publish_word(uint64_t addr, uint64_t v);
static inline int ignored(unsigned int vcpu);
static unsigned cpu_of(unsigned int vcpu);
#define M5_WIRE_ADVANCE		0x60
#define M5_WIRE_DELIVERED	0x61
#define M5_WIRE_RECEIVED	0x62
#define M5_DMA_READ		0x63
#define M5_DMA_WRITE		0x64
#define M5_DMA_AT		0x65
static int wire_on;
static uint64_t idle_now;
static uint8_t client_busy[MAX_CPUS];	/* ignored vCPUs not halted */
static uint8_t wire_cpu[MAX_CPUS];	/* the ignored vCPU that runs the wire */
static struct {
	uint64_t deliveries, late, late_cycles, late_max, advances;
	uint64_t received, rx_late, rx_late_cycles, rx_late_max;
} wirest;

static int servers_halted(void)
{
	for (unsigned c = 0; c < model.ncpus; c++)
		if (!halted[c])
			return 0;
	return 1;
}

/* The machine's modelled time: the slowest running server CPU (one
 * waiting for a lock if all are), not before idle_now; with every server
 * CPU halted, the latest clock (each has idled until the machine's time
 * at least) or idle_now. */
static uint64_t machine_now(void)
{
	uint64_t floor = clock_floor(UINT32_MAX), latest = idle_now;

	if (floor == UINT64_MAX)
		for (unsigned c = 0; c < model.ncpus; c++)
			if (!halted[c] && model.cpu[c].now < floor)
				floor = model.cpu[c].now;
	if (floor != UINT64_MAX)
		return floor < idle_now ? idle_now : floor;
	for (unsigned c = 0; c < model.ncpus; c++)
		if (model.cpu[c].now > latest)
			latest = model.cpu[c].now;
	return latest;
}

static void wire_op(unsigned func, unsigned vcpu, uint64_t t)
{
	if (!cfg.timing)
		return;
	wire_on = 1;
	if ((func == M5_WIRE_ADVANCE || func == M5_WIRE_DELIVERED) &&
	    ignored(vcpu) && vcpu < MAX_CPUS)
		wire_cpu[vcpu] = 1;
	if (func == M5_WIRE_ADVANCE) {
		int idle = servers_halted();
		uint64_t now = machine_now();

		for (unsigned v = cfg.ncpus; idle && v < (unsigned)cfg.smp_vcpus &&
		     v < MAX_CPUS; v++)
			if (v != vcpu && client_busy[v])
				idle = 0;
		if (idle && t > now) {
			idle_now = t;
			wirest.advances++;
		}
		if (cfg.publish != 0)
			publish_word(cfg.publish + 8 * PUBLISH_NOW, machine_now());
	} else if (func == M5_WIRE_RECEIVED && !ignored(vcpu)) {
		uint64_t now = model.cpu[cpu_of(vcpu)].now;

		wirest.received++;
		if (now > t) {
			wirest.rx_late++;
			wirest.rx_late_cycles += now - t;
			if (now - t > wirest.rx_late_max)
				wirest.rx_late_max = now - t;
		}
	} else if (func == M5_WIRE_DELIVERED) {
		uint64_t now = machine_now();

		wirest.deliveries++;
		if (now > t) {
			wirest.late++;
			wirest.late_cycles += now - t;
			if (now - t > wirest.late_max)
				wirest.late_max = now - t;
		}
	}
}

/*
 * A network card's DMA (kernels/kernel/wire.c, card_dma), with dma=GAP
 * (GAP: modelled cycles between two lines of a frame, the wire's rate):
 * the value is (physical address << 12) | bytes.  A frame the server sends is read at
 * its sending CPU's clock; one it receives is written when the wire (a
 * client-side vCPU) hands it to the card, at the machine's time.
 */
static uint64_t dma_at[MAX_CPUS];	/* the vCPU's DMA_AT + 1, or 0 */

static void dma_frame(unsigned vcpu, uint64_t paddr, unsigned bytes, int write)
{
	uint64_t t = 0;

	if (cfg.timing)
		t = dma_at[vcpu] ? dma_at[vcpu] - 1 :
		    ignored(vcpu) ? machine_now() : model.cpu[cpu_of(vcpu)].now;
	dma_at[vcpu] = 0;
	cm_dma(&model, paddr, bytes, write, t);
}

static void dma_op(unsigned func, unsigned vcpu, uint64_t v)
{
	if (!cfg.dma || vcpu >= MAX_CPUS)
		return;
	if (func == M5_DMA_AT) {	/* when the next frame's lines start */
		dma_at[vcpu] = v + 1;
		return;
	}
	dma_frame(vcpu, v >> 12, (unsigned)(v & 0xfff), func == M5_DMA_WRITE);
}

/*
 * Linux 2.4's cards (kernels/linux24/patches, card DMA) have no m5-op page
 * in the kernel's half: they tell their DMA by two 4-byte stores to a
 * kernel variable whose address is dmabell=, the frame's physical
 * address, then its bytes with bit 31 set for a write (a frame the
 * server's card receives) or clear for a read (one it sends).  4-byte
 * stores, as i386 makes them.  The lines cross at the sending CPU's clock
 * (a client CPU's: the machine's), spaced as dma=GAP says.
 */
#define DMABELL_BYTES 8u
static uint64_t dmabell_paddr[MAX_CPUS];

static void dmabell_op(unsigned vcpu, unsigned word, uint32_t v)
{
	if (!cfg.dma || vcpu >= MAX_CPUS)
		return;
	if (word == 0)
		dmabell_paddr[vcpu] = v;
	else
		dma_frame(vcpu, dmabell_paddr[vcpu], v & 0x7fffffffu, (int)(v >> 31));
}

/*
 * The client CPUs' load, with timing=: how much of the region's modelled
 * time (the machine's, machine_now()) each client CPU spent not halted,
 * and their instructions.  Their work takes no modelled time, but they get
 * their instructions from round-robin turns like every vCPU, so how much
 * client work fits in a modelled second of the server depends on how QEMU
 * slices the turns.  Client CPUs busy nearly all the region could send no
 * more requests: the server's throughput may then be theirs.
 */
static uint64_t client_since[MAX_CPUS];	/* busy since, machine's time */
static uint64_t client_cycles[MAX_CPUS];	/* busy in the region */
static uint8_t client_seen[MAX_CPUS];
static uint64_t client_insts;			/* in the region */

/* A busy client CPU's time up to now counts; it goes on from now. */
static void client_settle(unsigned vcpu, uint64_t now)
{
	if (client_busy[vcpu] && now > client_since[vcpu])
		client_cycles[vcpu] += now - client_since[vcpu];
	client_since[vcpu] = now;
}

/*
 * Clients in modelled time (clients=COST:SKEW, with timing= and measured=).
 * Each client CPU but the wire's (the last vCPU, kernels/kernel/wire.c)
 * gets a clock of its own, in the server's core cycles: every instruction
 * it runs outside the free= ranges costs COST thousandths of a cycle (the
 * client model, `[x.clients]` in configs/machines.toml: how long the
 * client PCs it stands for take for that work), and a client that wakes
 * from `hlt` starts at the machine's time (it idled until then).  The
 * kernel stamps the client's packets with this clock (modeled_time reads
 * PUBLISH_NOW, which a client's free TB sets to it), so a reply leaves when
 * the client model says, not when QEMU's round robin got round to it.  Two
 * holds keep the clocks within SKEW of each other, as the quantum does:
 *  - a server CPU more than SKEW ahead of a busy client's clock ends its
 *    turn after each TB (the client's packets could still arrive in its
 *    past), unless it is exempt as for the quantum (waiting for a metered
 *    lock, or holding one another CPU waits for);
 *  - a client CPU more than SKEW ahead of the slowest running server CPU
 *    ends its turn after each TB.
 * The slowest of all is never held, so the run always moves on.  The exits
 * are at guest-determined instructions (runs repeat); they add no guest
 * instructions.
 */
static const void *time_handle;	/* QEMU's time control: ends turns */
/* Why a vCPU was last held (turn_held, below): it stays held until the
 * clock it led has caught up with it. */
static uint8_t turn_skipped[MAX_CPUS];
#define HELD_LEAD	1	/* it led the floor (quantum; a client: skew) */
#define HELD_LAG	2	/* a busy client's clock lagged it */
static uint64_t cclk[MAX_CPUS];		/* a client CPU's clock */
static uint64_t cfrac[MAX_CPUS];	/* thousandths of a cycle still owed */
static uint64_t client_lb = UINT64_MAX;	/* lower bound: slowest busy client */
static uint64_t client_lag_turns;	/* server turns ended for a client */
static uint64_t client_lead_turns;	/* client turns ended for the servers */
static uint64_t client_lag_skips;	/* server turns skipped for a client */
static uint64_t client_lead_skips;	/* client turns skipped for the servers */

static int is_wire_vcpu(unsigned vcpu)
{
	return wire_cpu[vcpu] ||
	       (cfg.clientcost != 0 && vcpu + 1 == (unsigned)cfg.smp_vcpus);
}

/* The slowest busy client clock (UINT64_MAX: none busy). */
static uint64_t client_floor(void)
{
	uint64_t f = UINT64_MAX;

	for (unsigned v = cfg.measured; v < (unsigned)cfg.smp_vcpus &&
	     v < MAX_CPUS; v++)
		if (client_busy[v] && !is_wire_vcpu(v) && cclk[v] < f)
			f = cclk[v];
	return f;
}

/* Is a busy client's clock more than `room` behind `now`? */
static int client_lags(uint64_t now, uint64_t room)
{
	if (client_lb == UINT64_MAX || now <= client_lb + room)
		return 0;
	client_lb = client_floor();
	return client_lb != UINT64_MAX && now > client_lb + room;
}

/* Is client CPU vcpu's clock more than `room` ahead of the servers'
 * floor? */
static int client_leads(unsigned vcpu, uint64_t room)
{
	uint64_t floor = clock_floor(UINT32_MAX);

	return floor != UINT64_MAX && cclk[vcpu] > floor + room;
}

/* A clocked client's TB: wake-up catch-up, the TB's cost, the hold. */
static void client_clock_tb(unsigned vcpu, uint64_t packed, int woke)
{
	if (woke) {
		uint64_t now = machine_now();

		if (now > cclk[vcpu])
			cclk[vcpu] = now;
		if (cclk[vcpu] < client_lb)
			client_lb = cclk[vcpu];	/* it rejoins the clients */
	}
	if (!(packed & TB_FREE)) {
		cfrac[vcpu] += ((packed & (TB_SCHED - 1)) + (packed >> 32)) *
			       cfg.clientcost;
		cclk[vcpu] += cfrac[vcpu] / 1000;
		cfrac[vcpu] %= 1000;
	}
	if (client_leads(vcpu, cfg.clientskew)) {
		client_lead_turns++;
		turn_skipped[vcpu] |= HELD_LEAD; /* held until the floor is up */
		qemu_plugin_update_ns(time_handle, 0);	/* ends the turn */
	}
}

/* A TB on an ignored vCPU (a client CPU): it is not halted, and a free TB
 * (the kernel's modeled_time) gets the machine's time, or with clients=
 * the client's own clock. */
static void client_tb(unsigned vcpu, uint64_t packed)
{
	int woke = 0, clocked;

	if (vcpu >= MAX_CPUS) {
		client_insts += (packed & (TB_SCHED - 1)) + (packed >> 32);
		return;
	}
	clocked = cfg.clientcost != 0 && !is_wire_vcpu(vcpu);
	if (!wire_cpu[vcpu])
		client_insts += (packed & (TB_SCHED - 1)) + (packed >> 32);
	if (!client_busy[vcpu]) {
		woke = 1;
		if (cfg.timing)
			client_since[vcpu] = machine_now();
	}
	client_busy[vcpu] = 1;
	client_seen[vcpu] = 1;
	if (clocked)
		client_clock_tb(vcpu, packed, woke);
	if ((packed & TB_FREE) && cfg.publish != 0 && cfg.timing)
		publish_word(cfg.publish + 8 * PUBLISH_NOW,
			     clocked ? cclk[vcpu] : machine_now());
}

/*
 * An IPI wakes a halted CPU at the time it was sent (timing= only).  A
 * halted CPU is no part of the floor, and under QEMU's patch 0008 a PAUSE
 * no longer ends a turn, so the CPU that sent the IPI would run on to the
 * end of its round-robin slice before the woken CPU ran, and the woken
 * CPU would then start at the floor those turns had reached: up to a slice
 * late.  So a write to the local APIC's interrupt command register (QEMU
 * reports its page as memory) that sends a halted CPU an interrupt, an NMI
 * or a start-up IPI (not INIT: that leaves it waiting for the start-up)
 * notes the sender's clock then (wake_at) and ends the sender's turn.
 * Until the woken CPU has run a TB, the other server CPUs sit their turns
 * out (skipheld=; turn_held), at most WAKE_SKIPS of them, in case it does
 * not take the interrupt.  Its first TB starts its clock at wake_at rather
 * than at the floor; it rejoins the floor behind the sender, and the
 * quantum holds the sender until it has caught up.  Which writes these are
 * depends only on the guest, so runs stay repeatable.  Counted in
 * system.sync.ipiWakes and system.sync.ipiWakeSkips.
 */
#define LAPIC_ICR_LO 0xFEE00300ull	/* xAPIC MMIO, physical */
#define LAPIC_ICR_HI 0xFEE00310ull
#define NO_WAKE UINT64_MAX
#define WAKE_SKIPS 64
static uint32_t icr_high[MAX_CPUS];	/* each CPU's last ICR high half */
static uint64_t wake_at[MAX_CPUS];	/* a pending IPI's send time */
static unsigned wakes_pending, wake_skips_left;
static uint64_t ipi_wakes, ipi_wake_skips;
static int ipi_rule_on;		/* from the first resetstats */

static int ipi_targets(uint32_t lo, uint32_t hi, unsigned from, unsigned c)
{
	unsigned dest = hi >> 24;

	switch ((lo >> 18) & 3) {	/* destination shorthand */
	case 1: return c == from;
	case 2: return 1;
	case 3: return c != from;
	}
	if (lo & (1u << 11))		/* logical: flat model's bitmask */
		return c < 8 && (dest >> c) & 1;
	return c == dest;
}

static void ipi_sent(unsigned cpu, uint32_t lo)
{
	unsigned mode = (lo >> 8) & 7;	/* delivery mode */
	int woke = 0;

	if (!ipi_rule_on || mode == 2 || mode == 3 || mode == 5 || mode == 7)
		return;			/* SMI, INIT, reserved: no start */
	for (unsigned c = 0; c < model.ncpus; c++)
		if (c != cpu && halted[c] &&
		    ipi_targets(lo, icr_high[cpu], cpu, c)) {
			if (wake_at[c] == NO_WAKE) {
				wake_at[c] = model.cpu[cpu].now;
				wakes_pending++;
			}
			woke = 1;
		}
	if (woke) {
		wake_skips_left = WAKE_SKIPS;
		qemu_plugin_update_ns(time_handle, 0);	/* ends the turn */
	}
}

static void lapic_store(unsigned cpu, uint64_t pa, uint32_t v)
{
	if (pa - LAPIC_ICR_HI < 4)
		icr_high[cpu] = v;
	else if (pa - LAPIC_ICR_LO < 4)
		ipi_sent(cpu, v);
}

/* turn_held: does a CPU an IPI woke still wait for its first turn? */
static int awaits_woken(unsigned cpu)
{
	if (wakes_pending == 0 || wake_at[cpu] != NO_WAKE)
		return 0;
	if (wake_skips_left == 0) {	/* it does not wake: let go */
		for (unsigned c = 0; c < model.ncpus; c++)
			wake_at[c] = NO_WAKE;
		wakes_pending = 0;
		return 0;
	}
	wake_skips_left--;
	ipi_wake_skips++;
	return 1;
}

static void idle_catch_up(unsigned cpu)
{
	/* with the wire: the machine's time, this CPU still left out */
	uint64_t floor = wire_on ? machine_now() : clock_floor(cpu);

	if (wake_at[cpu] != NO_WAKE) {	/* an IPI woke it: from then */
		if (wake_at[cpu] < floor)
			floor = wake_at[cpu];
		wake_at[cpu] = NO_WAKE;
		wakes_pending--;
		ipi_wakes++;
		}
	if (floor != UINT64_MAX && floor > model.cpu[cpu].now) {
		model.cpu[cpu].now = floor;
		idle_catchups++;
	}
	halted[cpu] = 0;
	park_update(cpu);	/* rejoins the floor, perhaps below floor_lb */
}

/*
 * Guest time from modelled time (free= and publish= with timing=).  The
 * kernel's poll (kernels/kernel/timer.c, timing_check) lies in a free=
 * range: its instructions cost no modelled cycles, because the fine poll
 * is an artefact of the simulation, not work the real machine did.  At
 * every TB there the plugin writes the CPU's clock to publish + 8 * cpu
 * and the floor (slowest running CPU) to publish + 8 * PUBLISH_FLOOR, so
 * the kernel reads both exactly.  max_skew is the largest lead over the
 * floor seen there; max_skew_held the largest a CPU ran into while the
 * quantum bounds it (note_lead, below).
 */
#define PUBLISH_FLOOR	64
static uint64_t max_skew, max_skew_held;
static uint8_t lock_lead[MAX_CPUS];	/* its lead came from a metered lock */
static void note_lead(unsigned cpu, uint64_t now, uint64_t floor);
static unsigned long long sync_polls;
static unsigned long long sync_insts;	/* instructions in free= TBs */

/*
 * The region's elapsed modelled time: the clock of the CPU that issues
 * dumpstats minus the clock of the CPU that issued resetstats (the same
 * CPU for the built-in workload's tick-driven region).  Unlike the CPUs'
 * `cycles`, which are busy time only, it includes idle time, so work
 * divided by it is work per modelled second of the machine.  Exact for
 * one issuing CPU; across two, off by at most their skew.
 */
static uint64_t roi_start, roi_elapsed;
static int m5_client;			/* the m5 op being run is a client CPU's */

static void publish_word(uint64_t addr, uint64_t v)
{
	publish_buf = v;			/* x86 guest: little endian */
	if (qemu_plugin_write_memory_hwaddr(addr, &publish_bytes) !=
	    QEMU_PLUGIN_HWADDR_OPERATION_OK)
		publish_errors++;
}

/*
 * The value each published word holds (valid once written): the guest
 * only reads modeled_clock[] (kernels/kernel/timer.c), so a word that
 * already holds the value is not written again.  Most polls are the
 * kernel's hold loop, which runs free: the CPU's clock, and the floor
 * within one round-robin turn, stay the same from one poll to the next.
 */
static uint64_t published[PUBLISH_FLOOR + 1];
static unsigned long long publish_writes;	/* words written, ever */
static uint8_t published_ok[PUBLISH_FLOOR + 1];

static void publish_slot(unsigned slot, uint64_t v)
{
	unsigned long long errors = publish_errors;

	if (slot <= PUBLISH_FLOOR && published_ok[slot] && published[slot] == v)
		return;
	publish_word(cfg.publish + 8 * slot, v);
	publish_writes++;
	if (slot <= PUBLISH_FLOOR) {
		published[slot] = v;
		published_ok[slot] = publish_errors == errors;
	}
}

static void publish_clocks(unsigned cpu)
{
	uint64_t now = model.cpu[cpu].now, floor = clock_floor(UINT32_MAX);

	if (floor == UINT64_MAX)
		floor = now;
	note_lead(cpu, now, floor);
	sync_polls++;
	publish_slot(cpu, now);
	publish_slot(PUBLISH_FLOOR, floor);
}

/*
 * The quantum (quantum=N, with timing=): a CPU whose clock leads the floor
 * (the slowest CPU that is neither halted nor waiting for a metered lock)
 * by more than N cycles is held.  At each TB it starts, the plugin queues
 * an empty work item on it (qemu_plugin_update_ns to time 0: QEMU's
 * advance loop does nothing for a time in the past), and queuing work
 * exits the vCPU (cpu_exit) at the next TB boundary.  The held CPU
 * therefore runs one TB per round-robin turn while the others run whole
 * turns, until the floor is within N of it.  The exit is at a
 * guest-determined instruction, so runs stay repeatable.  Unlike the
 * kernel's poll (timer.c), this also holds a CPU that runs with
 * interrupts off, and one whose clock jumped at a lock.  It adds no guest
 * instructions.
 *
 * Not held: a CPU waiting for a metered lock (parked, as for the floor)
 * and one holding a metered lock that another CPU waits for.  Where that
 * hold goes among the lock's holds is already fixed in modelled time
 * (lock_place), and holding the holder back would only keep the lock held
 * over more round-robin turns while its waiters spin: on the vanilla
 * kernel's saturated runqueue_lock (ppro4, 1024 tasks) holding every CPU
 * took 1.8 M held turns and 16 times the host time, against some 80 000
 * turns so.  A holder nobody waits for is held like any CPU (on the
 * multi-queue kernel that is what keeps its locks' contention
 * independent of the round-robin phase).
 *
 * Per CPU: holds (times it started to be held), turns (its round-robin
 * turns ended after one TB) and cycles (how far the floor advanced while
 * it was held: modelled time it stood waiting).  max_skew (above) also
 * takes the lead found at every check here.
 */
struct synchold {
	uint64_t holds, turns, cycles, skips;
	uint64_t since;			/* the floor when this hold began */
	int held;
} __attribute__((aligned(64)));
static struct synchold synch[MAX_CPUS];

/* Does cpu hold a metered lock another CPU is waiting for? */
static int holds_awaited_lock(unsigned cpu)
{
	if (lockm[cpu].held == 0)
		return 0;
	for (unsigned c = 0; c < model.ncpus; c++)
		if (lockm[c].spinning &&
		    lockw[lockm[c].waits_for].holder == (int)cpu)
			return 1;
	return 0;
}

/* Never held: a CPU that is parked (halted, or waiting for a metered
 * lock) or holds a metered lock another CPU waits for. */
static int exempt_from_holds(unsigned cpu)
{
	return model.cpu[cpu].parked || holds_awaited_lock(cpu);
}

/*
 * A lead over the floor, seen at a poll or a check.  Two kinds make up
 * max_skew.  A lead from a metered lock (lock_lead): the holder of a lock
 * another CPU waits for is exempt and runs on to the end of its hold,
 * however far it leads, and a waiter's clock jumps to where the hold
 * before its own ended (lock_place, lock_push_later), so it starts ahead
 * as well; such a CPU is held once it is no longer exempt, until the floor
 * is within the quantum of it again (which clears the mark).  Any other
 * lead the CPU ran into itself, and the quantum bounds it
 * (max_skew_held): at most the quantum plus what the CPU's last TB cost,
 * since the check runs at TB starts.
 */
static void note_lead(unsigned cpu, uint64_t now, uint64_t floor)
{
	if (floor == UINT64_MAX || now <= floor)
		return;
	if (now - floor > max_skew)
		max_skew = now - floor;
	if (cfg.quantum == 0 || now - floor <= cfg.quantum || lock_lead[cpu])
		return;		/* no bound; within it; or a lock's lead */
	if (exempt_from_holds(cpu))
		lock_lead[cpu] = 1;
	else if (now - floor > max_skew_held)
		max_skew_held = now - floor;
}

static void sync_check(unsigned cpu)
{
	struct synchold *s = &synch[cpu];
	uint64_t now = model.cpu[cpu].now, floor;

	if (cfg.quantum == 0)
		goto clients;
	if (now <= floor_lb + cfg.quantum && !s->held) {
		lock_lead[cpu] = 0;	/* within the quantum of a lower bound */
		goto clients;
	}
	floor = clock_floor(UINT32_MAX);
	floor_lb = floor != UINT64_MAX ? floor : now;
	note_lead(cpu, now, floor);
	if (floor == UINT64_MAX || now <= floor + cfg.quantum)
		lock_lead[cpu] = 0;
	if (floor != UINT64_MAX && now > floor + cfg.quantum &&
	    !exempt_from_holds(cpu)) {
		if (!s->held) {
			s->held = 1;
			s->holds++;
			s->since = floor;
		}
		s->turns++;
		turn_skipped[cpu] |= HELD_LEAD;	/* held until the floor is up */
		qemu_plugin_update_ns(time_handle, 0);	/* ends the turn */
		return;
	}
	if (s->held) {
		s->held = 0;
		if (floor_lb > s->since)
			s->cycles += floor_lb - s->since;
	}
clients:			/* clients=: wait for a client that lags */
	if (cfg.clientcost != 0 && client_lags(now, cfg.clientskew) &&
	    !exempt_from_holds(cpu)) {
		client_lag_turns++;
		turn_skipped[cpu] |= HELD_LAG;	/* held until the client is up */
		qemu_plugin_update_ns(time_handle, 0);	/* ends the turn */
	}
}

/*
 * Held turns skipped (skipheld=1, the default, with QEMU's patch 0007):
 * before every round-robin turn QEMU asks turn_held() whether the vCPU is
 * held, and a held vCPU sits the turn out instead of running one TB of it
 * and ending it, as sync_check() and client_clock_tb() make it do.  The
 * tests are theirs, made on the clocks as the last TBs left them: a server
 * CPU more than the quantum ahead of the floor, or more than the client
 * skew ahead of a busy client, unless it is exempt (halted, waiting for a
 * metered lock, or holding one another CPU waits for); a busy client CPU
 * more than the skew ahead of the floor.  A vCPU held so stays held until
 * the clock it led has caught up with it (the room is 0 while it is held):
 * released at the edge of the bound, a server would run a TB or two, be
 * held again and cost a turn per TB; released at the floor it runs up to
 * the bound in one turn.  The bound itself is unchanged.  The slowest
 * clock is never held, so some vCPU always runs.  A held vCPU's clock
 * stands still while the others catch up; the one TB it ran per turn
 * before was time the model had not reached yet, and ending some 25
 * million turns so cost a web run at Figure 9's 8-CPU point a quarter of
 * its host time.  The answers depend only on the clocks, which depend
 * only on what the guest executed, so runs stay repeatable.  Counted per
 * CPU (skips) and, for the clients' holds, in client_lag_skips and
 * client_lead_skips.
 */
static int skipping_held;	/* turn_held() is QEMU's hold on turns */
static uint64_t spin_yields;	/* waiters' turns ended as they began to wait */
static uint64_t lock_wait_skips;	/* turns sat out waiting for a metered lock */

/*
 * A CPU waiting for a metered lock that another CPU still holds (skipheld=
 * only) sits its turns out until the lock is released.  Its spinning
 * would only re-read a line it already has: no bus transaction, and no
 * modelled time either, since lock_place() starts its hold where the
 * holder's ended, however long it spun.  Under QEMU's patch 0008 PAUSE no
 * longer ends a turn, so without this the waiter would spin through the
 * whole of every turn.  The holder, which a waiter awaits, is never held.
 */
static int waits_for_held_lock(unsigned cpu)
{
	return lockm[cpu].spinning &&
	       lockw[lockm[cpu].waits_for].holder >= 0 &&
	       lockw[lockm[cpu].waits_for].holder != (int)cpu;
}

static bool turn_held(unsigned int vcpu)
{
	if (ignored(vcpu)) {
		if (vcpu >= MAX_CPUS || cfg.clientcost == 0 ||
		    is_wire_vcpu(vcpu) || !client_busy[vcpu] ||
		    !client_leads(vcpu, turn_skipped[vcpu] ? 0 : cfg.clientskew))
			return (turn_skipped[vcpu] = 0);
		client_lead_skips++;
		return (turn_skipped[vcpu] = HELD_LEAD);
	}
	unsigned cpu = cpu_of(vcpu);
	uint64_t now = model.cpu[cpu].now, floor, room;
	uint8_t was = turn_skipped[cpu];

	turn_skipped[cpu] = 0;
	if (waits_for_held_lock(cpu)) {
		lock_wait_skips++;
		return true;
	}
	if (exempt_from_holds(cpu))	/* parked covers halted */
		return false;
	if (awaits_woken(cpu))
		return true;
	room = (was & HELD_LEAD) ? 0 : cfg.quantum;
	if (cfg.quantum != 0 && now > floor_lb + room) {
		floor = clock_floor(UINT32_MAX);
		if (floor != UINT64_MAX && now > floor + room)
			turn_skipped[cpu] |= HELD_LEAD;
	}
	if (cfg.clientcost != 0 &&
	    client_lags(now, (was & HELD_LAG) ? 0 : cfg.clientskew))
		turn_skipped[cpu] |= HELD_LAG;
	if (turn_skipped[cpu] & HELD_LEAD)
		synch[cpu].skips++;
	else if (turn_skipped[cpu] & HELD_LAG)
		client_lag_skips++;
	return turn_skipped[cpu] != 0;
}

/*
 * A CPU that starts to wait for a metered lock another CPU holds ends its
 * turn after this TB and sits its next ones out until the lock is released
 * (waits_for_held_lock): only the holder can release it, and the holder
 * is exempt from holds from now on (it holds an awaited lock).
 */
static void yield_to_held_holder(const struct lockword *lw)
{
	if (skipping_held && lw->holder >= 0) {
		spin_yields++;
		qemu_plugin_update_ns(time_handle, 0);	/* ends the turn */
	}
}

/*
 * clienthold=1 (with timing=): the machine's time waits for the clients.
 * The paper's clients were 28 PCs against one server, a closed loop with
 * no think time that kept the server saturated; ours are a few vCPUs whose
 * work takes no modelled time but gets its instructions from round-robin
 * turns, so how many requests they could send per modelled second of the
 * server would depend on how QEMU slices the turns.  With clienthold, a
 * server CPU whose TB starts while any client CPU (not the wire's) is not
 * halted ends its turn after that TB, as a CPU held by the quantum does:
 * the servers advance one TB per round-robin pass while the clients run
 * whole turns, so a client's reply to a response leaves soon after, in
 * modelled time, the response reached it (how soon still depends on the
 * slices: the servers' one TB a pass goes on).  The exit
 * is at a guest-determined instruction, so runs stay repeatable; it adds
 * no guest instructions.  client_holds counts the turns ended so.
 */
static uint64_t client_holds;

static void hold_for_clients(void)
{
	for (unsigned v = cfg.measured; v < (unsigned)cfg.smp_vcpus &&
	     v < MAX_CPUS; v++)
		if (client_busy[v] && !wire_cpu[v]) {
			client_holds++;
			qemu_plugin_update_ns(time_handle, 0);	/* ends the turn */
			return;
		}
}

/* measured=N: a vCPU at or above N is outside the measured machine (the
 * testbed's client CPUs): no cache model, bus, counters or clock. */
static inline int ignored(unsigned int vcpu)
{
	return cfg.measured != 0 && vcpu >= cfg.measured;
}

static void vcpu_hlt(unsigned int vcpu, void *udata)
{
	if (ignored(vcpu)) {
		if (vcpu < MAX_CPUS) {
			if (cfg.timing)
				client_settle(vcpu, machine_now());
			client_busy[vcpu] = 0;
		}
		return;
	}
	unsigned cpu = vcpu < cfg.ncpus ? vcpu : vcpu % cfg.ncpus;

	(void)udata;
	halted[cpu] = 1;
	park_update(cpu);
}

/* ---- translation time ------------------------------------------------- */

static int in_ranges(const struct range *r, unsigned n, uint64_t pc)
{
	for (unsigned i = 0; i < n; i++)
		if (pc >= r[i].start && pc < r[i].end)
			return 1;
	return 0;
}

static unsigned pc_flags(uint64_t pc)
{
	unsigned f = 0;

	if (in_ranges(cfg.user, cfg.nuser, pc))
		f |= CM_F_USER;
	if (in_ranges(cfg.rqloop, cfg.nrqloop, pc))
		f |= CM_F_RQLOOP;
	return f;
}

/* Is this instruction a hlt (0xf4 after any legacy prefixes)? */
static int insn_is_hlt(const struct qemu_plugin_insn *insn)
{
	uint8_t b[4];
	size_t n = qemu_plugin_insn_data(insn, b, sizeof(b));

	return n >= 1 && b[0] == 0xf4;
}

static int is_legacy_prefix(uint8_t b)
{
	return b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e ||
	       b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 ||
	       b == 0x65 || b == 0x66 || b == 0x67;
}

/*
 * Is this x86 instruction a locked RMW: a LOCK prefix, or XCHG with
 * memory (86/87), which locks implicitly?  Round-robin TCG reports its
 * access as a load then a store, and the load must already take the line
 * for ownership (CM_F_LOCKED).  QEMU >= 9.2 reports it as a load then a
 * store under MTTCG too, so the flag covers both modes.  0x40-0x4f is
 * skipped as REX; in 32-bit code those bytes are whole one-byte
 * instructions with no memory access.
 */
static int insn_is_locked(const struct qemu_plugin_insn *insn)
{
	uint8_t b[16];			/* an x86 instruction is <= 15 bytes */
	size_t n = qemu_plugin_insn_data(insn, b, sizeof(b)), i = 0;
	int lock = 0;

	for (; i < n && is_legacy_prefix(b[i]); i++)
		lock |= b[i] == 0xf0;
	for (; i < n && (b[i] & 0xf0) == 0x40; i++)
		;
	return lock || (i < n && (b[i] == 0x86 || b[i] == 0x87));
}

/* Serializing or I/O instructions, interrupts and exceptions that
 * drained the store buffer, since QEMU started. */
static unsigned long long drains;

/*
 * Does this instruction drain the store buffer (SDM vol. 3A 11.10)?  The
 * serializing instructions (SDM vol. 3A 8.3: CPUID, IRET, RSM; INVD,
 * WBINVD, INVLPG, LGDT, LIDT, LLDT, LTR, WRMSR, MOV to a control register
 * other than CR8, MOV to a debug register), the I/O instructions (IN,
 * OUT, INS, OUTS) and the fences (SFENCE, from the Pentium III; MFENCE).
 * Locked RMWs drain at their load (cachemodel.c).
 */
static int insn_drains(const struct qemu_plugin_insn *insn)
{
	uint8_t b[16];
	size_t n = qemu_plugin_insn_data(insn, b, sizeof(b)), i = 0;
	unsigned rexr = 0, reg, mod;

	for (; i < n && is_legacy_prefix(b[i]); i++)
		;
	for (; i < n && (b[i] & 0xf0) == 0x40; i++)
		rexr = (b[i] >> 2) & 1;
	if (i >= n)
		return 0;
	if (b[i] == 0xcf || (b[i] >= 0x6c && b[i] <= 0x6f) ||
	    (b[i] >= 0xe4 && b[i] <= 0xe7) || (b[i] >= 0xec && b[i] <= 0xef))
		return 1;		/* IRET; INS/OUTS, IN/OUT */
	if (b[i] != 0x0f || i + 1 >= n)
		return 0;
	switch (b[i + 1]) {
	case 0xa2: case 0xaa: case 0x08: case 0x09: case 0x30: case 0x23:
		return 1;	/* CPUID RSM INVD WBINVD WRMSR, MOV DRn */
	}
	if (i + 2 >= n)
		return 0;
	reg = (b[i + 2] >> 3) & 7;
	mod = b[i + 2] >> 6;
	switch (b[i + 1]) {
	case 0x22:		/* MOV CRn: all but CR8 */
		return !(rexr && reg == 0);
	case 0x01:		/* LGDT, LIDT, INVLPG (memory forms) */
		return mod != 3 && (reg == 2 || reg == 3 || reg == 7);
	case 0x00:		/* LLDT, LTR */
		return reg == 2 || reg == 3;
	case 0xae:		/* MFENCE, SFENCE */
		return b[i + 2] == 0xf0 || b[i + 2] == 0xf8;
	}
	return 0;
}

/* A draining instruction starts: the CPU waits for its store buffer. */
static void vcpu_drain(unsigned int vcpu, void *udata)
{
	if (ignored(vcpu))
		return;
	drains++;
	cm_drain(&model, vcpu < cfg.ncpus ? vcpu : vcpu % cfg.ncpus,
		 (unsigned)(uintptr_t)udata);
}

/* An interrupt or exception drains it too; the event's delivery is
 * charged in kernel mode. */
static void branch_discon(unsigned cpu);

static void vcpu_discon(qemu_plugin_id_t id, unsigned int vcpu,
			enum qemu_plugin_discon_type type, uint64_t from,
			uint64_t to)
{
	unsigned cpu = vcpu < cfg.ncpus ? vcpu : vcpu % cfg.ncpus;

	(void)id;
	(void)type;
	(void)from;
	(void)to;
	if (ignored(vcpu))
		return;
	branch_discon(cpu);
	if (cfg.t.store_buffer + cfg.t.overlap == 0)
		return;
	drains++;
	cm_drain(&model, cpu, CM_KERNEL);
}

/*
 * The TLB model's page walks need each CPU's CR3.  A `mov %reg, %cr3`
 * (0F 22 /r with reg = 3) gets an instruction callback that reads the
 * source register before the write: the new page-table root.  Returns
 * the source's number (0-15, REX.B included), or -1.
 */
static int insn_cr3_source(const struct qemu_plugin_insn *insn)
{
	uint8_t b[16];
	size_t n = qemu_plugin_insn_data(insn, b, sizeof(b)), i = 0;
	unsigned rexb = 0;

	for (; i < n && is_legacy_prefix(b[i]); i++)
		;
	for (; i < n && (b[i] & 0xf0) == 0x40; i++)
		rexb = b[i] & 1;
	if (i + 2 < n && b[i] == 0x0f && b[i + 1] == 0x22 &&
	    ((b[i + 2] >> 3) & 7) == 3)
		return (int)((b[i + 2] & 7) | rexb << 3);
	return -1;
}

/* GDB's names of the general registers, in ModRM order. */
static const char *const gpr_name[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};
static struct qemu_plugin_register *gpr[16];
/* EFER (its LMA bit: 64-bit code) and the segment bases, for INVLPG's
 * operand; QEMU's x86-64 register list names them so. */
static const char *const seg_base_name[6] = {
	"es_base", "cs_base", "ss_base", "ds_base", "fs_base", "gs_base",
};
static struct qemu_plugin_register *efer_reg, *seg_base_reg[6];
static GByteArray *regbuf, *membuf;	/* glib's, for the read calls */
static uint64_t cr3[MAX_CPUS];		/* 0 until the CPU writes CR3 */
static unsigned long long walk_errors;	/* walks that could not be read */

/* Whether a TLB is modelled (timing= with dtlb= or itlb=): then CR3
 * writes are followed and misses walk the guest's tables. */
static int tlb_on(void)
{
	return cfg.timing && (cfg.t.dtlb > 0 || cfg.t.itlb > 0);
}

static void vcpu_init(qemu_plugin_id_t id, unsigned int vcpu)
{
	GArray *regs;

	(void)id;
	(void)vcpu;
	if (gpr[0] != NULL)
		return;			/* the same handles on every vCPU */
	regs = qemu_plugin_get_registers();
	for (unsigned i = 0; regs != NULL && i < regs->len; i++) {
		const qemu_plugin_reg_descriptor *d =
			&((const qemu_plugin_reg_descriptor *)regs->data)[i];

		for (unsigned r = 0; r < 16; r++)
			if (strcmp(d->name, gpr_name[r]) == 0)
				gpr[r] = d->handle;
		for (unsigned r = 0; r < 6; r++)
			if (strcmp(d->name, seg_base_name[r]) == 0)
				seg_base_reg[r] = d->handle;
		if (strcmp(d->name, "efer") == 0)
			efer_reg = d->handle;
	}
	if (regs != NULL)
		g_array_free(regs, 1);
}

static void vcpu_mov_cr3(unsigned int vcpu, void *udata)
{
	unsigned cpu = vcpu < cfg.ncpus ? vcpu : vcpu % cfg.ncpus;
	struct qemu_plugin_register *r = gpr[(uintptr_t)udata];
	uint64_t v = 0;

	if (ignored(vcpu))		/* a client CPU: not modelled */
		return;
	g_byte_array_set_size(regbuf, 0);
	if (r == NULL || qemu_plugin_read_register(r, regbuf) < 4) {
		walk_errors++;
		return;
	}
	memcpy(&v, regbuf->data, regbuf->len < 8 ? regbuf->len : 8);
	cr3[cpu] = v & 0x000ffffffffff000ull;
	cm_tlb_flush(&model, cpu);
}

/*
 * INVLPG drops the TLB entries of one page (cm_tlb_invlpg).  Its operand
 * is decoded when it runs (x86insn.c), as 64-bit code when EFER.LMA is
 * set and as 32-bit code otherwise, so each distinct INVLPG's bytes and
 * next address are kept here at translation, its index the callback's
 * data.  Ring-0 code in compatibility mode or in a 16-bit segment, which
 * no kernel of the suite runs, would be decoded wrongly; an operand that
 * cannot be decoded or read, or an INVLPG past the table's end, drops
 * the CPU's whole TLBs instead (never a stale entry) and is counted.
 */
#define MAX_INVLPG 256
static struct {
	uint8_t b[16];
	uint8_t n;
	uint64_t next_ip;
} invlpg_site[MAX_INVLPG];
static unsigned n_invlpg_sites;
static unsigned long long invlpgs, invlpg_whole;

/* Is this instruction an INVLPG (in either mode's decoding)? */
static int insn_is_invlpg(const struct qemu_plugin_insn *insn)
{
	uint8_t b[16];
	size_t n = qemu_plugin_insn_data(insn, b, sizeof(b));
	struct x86_memop op;

	return x86_invlpg_operand(b, n, 1, &op) != 0 ||
	       x86_invlpg_operand(b, n, 0, &op) != 0;
}

/* The site's index, a new one if its bytes and address are new, or
 * MAX_INVLPG when the table is full. */
static unsigned invlpg_site_of(const struct qemu_plugin_insn *insn)
{
	uint8_t b[16] = { 0 };
	size_t n = qemu_plugin_insn_data(insn, b, sizeof(b));
	uint64_t next = qemu_plugin_insn_vaddr(insn) +
			qemu_plugin_insn_size(insn);
	unsigned i;

	for (i = 0; i < n_invlpg_sites; i++)
		if (invlpg_site[i].n == n && invlpg_site[i].next_ip == next &&
		    memcmp(invlpg_site[i].b, b, n) == 0)
			return i;
	if (i == MAX_INVLPG)
		return MAX_INVLPG;
	memcpy(invlpg_site[i].b, b, sizeof(b));
	invlpg_site[i].n = (uint8_t)n;
	invlpg_site[i].next_ip = next;
	return n_invlpg_sites++;
}

/* A register's value (its first 8 bytes), or -1 if it cannot be read. */
static int read_reg(struct qemu_plugin_register *r, uint64_t *v)
{
	*v = 0;
	if (r == NULL)
		return -1;
	g_byte_array_set_size(regbuf, 0);
	if (qemu_plugin_read_register(r, regbuf) < 4)
		return -1;
	memcpy(v, regbuf->data, regbuf->len < 8 ? regbuf->len : 8);
	return 0;
}

static void vcpu_invlpg(unsigned int vcpu, void *udata)
{
	unsigned cpu = vcpu < cfg.ncpus ? vcpu : vcpu % cfg.ncpus;
	unsigned site = (unsigned)(uintptr_t)udata;
	uint64_t efer, reg[16] = { 0 }, seg[6] = { 0 };
	struct x86_memop op;
	int lm, ok;

	if (ignored(vcpu))
		return;
	invlpgs++;
	ok = site < MAX_INVLPG && read_reg(efer_reg, &efer) == 0;
	lm = ok && (efer >> 10 & 1);	/* EFER.LMA */
	ok = ok && x86_invlpg_operand(invlpg_site[site].b, invlpg_site[site].n,
				      lm, &op) == 1;
	if (ok && op.base >= 0)
		ok = read_reg(gpr[op.base], &reg[op.base]) == 0;
	if (ok && op.index >= 0)
		ok = read_reg(gpr[op.index], &reg[op.index]) == 0;
	if (ok && (!lm || op.seg == X86_FS || op.seg == X86_GS))
		ok = read_reg(seg_base_reg[op.seg], &seg[op.seg]) == 0;
	if (!ok) {
		invlpg_whole++;
		cm_tlb_flush_all(&model, cpu);
		return;
	}
	cm_tlb_invlpg(&model, cpu, x86_memop_address(&op, lm, reg, seg,
			invlpg_site[site].next_ip));
}

/* One 8-byte page-table entry at physical address pa, or 0. */
static uint64_t read_entry(uint64_t pa)
{
	uint64_t e = 0;

	if (qemu_plugin_read_memory_hwaddr(pa, membuf, 8) !=
	    QEMU_PLUGIN_HWADDR_OPERATION_OK || membuf->len < 8) {
		walk_errors++;
		return 0;
	}
	memcpy(&e, membuf->data, 8);
	return e;
}

/*
 * A TLB miss at vaddr (the DTLB's, or with instr the ITLB's): walk the guest's 4-level tables from CR3 and give
 * the model the entries a P6 would read.  The P6 (32-bit paging) reads a
 * page-directory entry, and for a 4 KiB page a page-table entry; the
 * guest's PD and PT entries are those, at their real addresses, and its
 * PML4 and PDPT levels have no P6 counterpart.  A large page (the guest's
 * 2 MiB identity map, 1 GiB none) is one PDE.
 */
static void tlb_walk(unsigned cpu, uint64_t vaddr, unsigned flags, int instr)
{
	uint64_t table = cr3[cpu], walk[2], e = 0;
	unsigned n = 0;
	int large = 0;

	for (int level = 3; level >= 0; level--) {
		uint64_t ea = table + 8 * ((vaddr >> (12 + 9 * level)) & 511);

		e = read_entry(ea);
		if (!(e & 1))
			return;		/* not present: nothing to cache */
		if (level <= 1)
			walk[n++] = ea;
		if (level >= 1 && level <= 2 && (e & 0x80)) {
			large = 1;
			if (level == 2)
				walk[n++] = ea;	/* a 1 GiB page: its entry */
			break;
		}
		table = e & 0x000ffffffffff000ull;
	}
	cm_tlb_fill(&model, cpu, instr, vaddr, large, walk, n, flags);
}

/*
 * Instruction fetch translates through the ITLB (itlb=): the code bytes
 * [va, va + len) of one fetch range, looked up once per 4 KiB page they
 * touch (a range lies in at most two), before the range's lines are
 * fetched.  A miss walks the page table as the DTLB's does.
 */
static void itlb_fetch(unsigned cpu, uint64_t va, uint64_t len,
		       unsigned flags)
{
	uint64_t last = va + len - 1;

	if (!cm_tlb_hit(&model, cpu, 1, va))
		tlb_walk(cpu, va, flags, 1);
	if ((last ^ va) >> 12 && !cm_tlb_hit(&model, cpu, 1, last))
		tlb_walk(cpu, last, flags, 1);
}

/*
 * Working sets (gem5's workbegin/workend m5 ops, which the testbed's web
 * server issues around each request with --wset 1): between a CPU's
 * begin and end, the distinct lines it touches, as user data, user code,
 * kernel data and kernel code (code: with l1i=, from the TBs' fetch
 * ranges).  Each CPU has an open-addressed set of line numbers with a
 * generation per window, so opening a window clears nothing; it is
 * allocated at the CPU's first window, and a window that fills half of it
 * stops adding (wset_full_lines counts the lines left out).
 */
enum { WS_USER_DATA, WS_USER_CODE, WS_KERNEL_DATA, WS_KERNEL_CODE, WS_KINDS };
#define WSET_BITS	18
#define WSET_SLOTS	(1u << WSET_BITS)

static const char *const wset_name[WS_KINDS] = {
	"wset_user_data_lines", "wset_user_code_lines",
	"wset_kernel_data_lines", "wset_kernel_code_lines",
};

static struct wset {
	uint64_t *key;		/* (lineno << 2 | kind) + 1 */
	uint32_t *gen;		/* the window that filled the slot; 0: never */
	uint32_t window, used;
	int open;
	uint64_t windows, lines[WS_KINDS], full;
} wset[MAX_CPUS];

static void wset_begin(unsigned cpu)
{
	struct wset *w = &wset[cpu];

	if (w->key == NULL) {
		w->key = calloc(WSET_SLOTS, sizeof(*w->key));
		w->gen = calloc(WSET_SLOTS, sizeof(*w->gen));
		if (w->key == NULL || w->gen == NULL) {
			free(w->key);	/* no memory: no windows on this CPU */
			free(w->gen);
			w->key = NULL;
			w->gen = NULL;
			return;
		}
	}
	w->window++;
	w->used = 0;
	w->open = 1;
}

static void wset_end(unsigned cpu)
{
	wset[cpu].windows += wset[cpu].open;
	wset[cpu].open = 0;
}

static void wset_add(unsigned cpu, uint64_t lineno, unsigned kind)
{
	struct wset *w = &wset[cpu];
	uint64_t k = (lineno << 2 | kind) + 1;
	uint32_t i = (uint32_t)((k * 0x9e3779b97f4a7c15ull) >> (64 - WSET_BITS));

	for (;; i = (i + 1) & (WSET_SLOTS - 1)) {
		if (w->gen[i] != w->window) {	/* free in this window */
			if (w->used >= WSET_SLOTS / 2) {
				w->full++;
				return;
			}
			w->key[i] = k;
			w->gen[i] = w->window;
			w->used++;
			w->lines[kind]++;
			return;
		}
		if (w->key[i] == k)
			return;
	}
}

/* The lines of a TB's fetch ranges (packed as struct tbinfo's). */
static void wset_code(unsigned cpu, const uint64_t *fetch, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t pa = fetch[i] & ((1ull << 40) - 1);
		uint64_t len = (fetch[i] & ~(1ull << 63)) >> 40;
		unsigned kind = (fetch[i] >> 63) ? WS_USER_CODE : WS_KERNEL_CODE;

		for (uint64_t l = pa >> model.line_shift;
		     len && l <= (pa + len - 1) >> model.line_shift; l++)
			wset_add(cpu, l, kind);
	}
}

static void vcpu_tb_exec(unsigned int vcpu, void *udata);
static void vcpu_tb_exec_fetch(unsigned int vcpu, void *udata);
static void vcpu_hlt(unsigned int vcpu, void *udata);
static void vcpu_mem(unsigned int vcpu, qemu_plugin_meminfo_t info,
		     uint64_t vaddr, void *udata);

/*
 * Instruction fetches, per TB execution: every line the TB's code touches
 * is fetched once when the TB starts, right after the TB's instructions
 * are counted.  One fetch packs one physically contiguous code range:
 * physical address (bits 0-39), length (bits 40-62) and user mode (bit
 * 63).  QEMU finds TBs by physical PC, so the translation-time physical
 * address stays right for every execution of the TB.
 *
 * With l1i= the TB's one exec callback (vcpu_tb_exec_fetch) gets a struct
 * tbinfo, made here: the packed counts and the TB's fetch ranges.  One
 * callback per TB instead of one more per range: the call into the plugin
 * is a good part of a TB's cost.  The structs live in an arena that grows
 * by chunks and is freed at exit (a retranslated TB gets a new one).
 */
#define FETCH_ADDR_BITS	40
#define FETCH_LEN_MAX	((1u << 23) - 1)
#define FETCH_USER	(1ull << 63)

struct tbinfo {
	uint64_t packed;		/* as vcpu_tb_exec's userdata */
	/* The fetch shortcut (cm_fetch_again), for a TB of one fetch range
	 * whose lines lie in distinct L1I sets (`again`): the CPU that ran
	 * it last, its L1I epoch right after, and the lines per mode. */
	uint64_t epoch;
	uint32_t cpu, again;
	uint32_t lines[CM_NMODES];
	uint64_t nfetch;
	uint64_t pc;			/* its first instruction's address */
	struct br_site br;		/* the branch that ends it (branch=) */
	/* fetch[i]: packed range i, in code order; fetch[nfetch + i]: the
	 * virtual address of its first byte (for the ITLB). */
	uint64_t fetch[];
};

#define ARENA_CHUNK	(1u << 20)
struct arena_chunk {
	struct arena_chunk *next;
	size_t used;
	uint64_t mem[ARENA_CHUNK / 8] __attribute__((aligned(64)));
};
static struct arena_chunk *arena;

/* size bytes (a multiple of 8, at most ARENA_CHUNK) for the plugin's
 * lifetime, or NULL when out of memory. */
static void *arena_alloc(size_t size)
{
	void *p;

	if (arena == NULL || ARENA_CHUNK - arena->used < size) {
		struct arena_chunk *c = aligned_alloc(64, sizeof(*c));

		if (c == NULL)
			return NULL;
		c->next = arena;
		c->used = 0;
		arena = c;
	}
	p = (char *)arena->mem + arena->used;
	arena->used += size;
	return p;
}

static void arena_free(void)
{
	while (arena != NULL) {
		struct arena_chunk *next = arena->next;

		free(arena);
		arena = next;
	}
}

static int fetch_range(uint64_t *out, uint64_t pa, uint64_t len, int user)
{
	if (len == 0 || len > FETCH_LEN_MAX || pa >> FETCH_ADDR_BITS)
		return 0;
	*out = pa | len << FETCH_ADDR_BITS | (user ? FETCH_USER : 0);
	return 1;
}

/* The TB's physically contiguous runs of code (usually one; two when the
 * TB crosses into another page) into out[], at most n, and each run's
 * virtual start into va[]; returns how many. */
static unsigned tb_fetches(struct qemu_plugin_tb *tb, size_t n, uint64_t *out,
			   uint64_t *va_out)
{
	uint64_t start = 0, end = 0, vstart = 0;
	int user = 0, open = 0;
	unsigned k = 0;

	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t va = qemu_plugin_insn_vaddr(insn), pa;
		size_t len = qemu_plugin_insn_size(insn);

		if (!qemu_plugin_translate_vaddr(va, &pa))
			continue;	/* unmapped: nothing to count */
		if (open && pa == end) {
			end += len;
			continue;
		}
		if (open && fetch_range(&out[k], start, end - start, user))
			va_out[k++] = vstart;
		start = pa;
		end = pa + len;
		vstart = va;
		user = (pc_flags(va) & CM_F_USER) != 0;
		open = 1;
	}
	if (open && fetch_range(&out[k], start, end - start, user))
		va_out[k++] = vstart;
	return k;
}

/* The TB's lines per mode, and whether the fetch shortcut may apply:
 * one range, every line in its own L1I set (so that each line stays its
 * set's last fetch after the TB's fetches). */
static void tb_lines(struct tbinfo *ti, const uint64_t *ranges, unsigned k)
{
	uint64_t shift = model.line_shift, sets;
	uint64_t first, last;

	ti->lines[CM_KERNEL] = ti->lines[CM_USER] = 0;
	ti->again = 0;
	if (!model.has_l1i || k != 1)
		return;
	sets = model.cpu[0].l1i.set_mask + 1;
	first = (ranges[0] & ((1ull << FETCH_ADDR_BITS) - 1)) >> shift;
	last = ((ranges[0] & ((1ull << FETCH_ADDR_BITS) - 1)) +
		((ranges[0] & ~FETCH_USER) >> FETCH_ADDR_BITS) - 1) >> shift;
	ti->lines[(ranges[0] & FETCH_USER) ? CM_USER : CM_KERNEL] =
		(uint32_t)(last - first + 1);
	ti->again = last - first + 1 <= sets;
}

/* Whether TB starts translate and fetch their code: with l1i=, or with
 * an ITLB under timing=. */
static int tb_fetching(void)
{
	return model.has_l1i || (cfg.timing && cfg.t.itlb > 0) ||
	       (cfg.timing && cfg.branch_miss > 0);
}

/*
 * Branch prediction (branch=PENALTY:ENTRIES, with timing=): each server
 * CPU's branch target buffer (branch.h: what is modelled, and from which
 * sources).  A TB ends at a branch, so a branch's outcome is where the
 * CPU's next TB starts: the TB notes its last instruction if that is a
 * conditional or indirect branch, and the CPU's next TB resolves it
 * (branch_tb).  A misprediction stalls the CPU PENALTY cycles, in the
 * branch's mode.  Code in free= ranges is not modelled.
 */
static struct btb *btbs;		/* one per server CPU */
static const struct tbinfo *br_pending[MAX_CPUS];
struct brstat {
	uint64_t resolved, missed, unresolved;
} __attribute__((aligned(64)));
static struct brstat brstats[MAX_CPUS];

static void tb_branch(struct tbinfo *ti, struct qemu_plugin_tb *tb, size_t n)
{
	const struct qemu_plugin_insn *last;
	uint8_t b[16];
	size_t len;

	ti->br.kind = BR_NONE;
	ti->pc = n > 0 ? qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0)) : 0;
	if (cfg.branch_miss == 0 || n == 0 || (ti->packed & TB_FREE))
		return;
	last = qemu_plugin_tb_get_insn(tb, n - 1);
	len = qemu_plugin_insn_data(last, b, sizeof(b));
	if (len != qemu_plugin_insn_size(last))
		return;
	x86_branch(b, len, qemu_plugin_insn_vaddr(last), &ti->br);
	ti->br.user = (pc_flags(qemu_plugin_insn_vaddr(last)) & CM_F_USER) != 0;
}

static void branch_tb(unsigned cpu, const struct tbinfo *ti)
{
	const struct tbinfo *p = br_pending[cpu];

	if (p != NULL) {
		int m = btb_resolve(&btbs[cpu], &p->br, ti->pc);

		if (m < 0) {
			brstats[cpu].unresolved++;
		} else {
			brstats[cpu].resolved++;
			if (m) {
				brstats[cpu].missed++;
				cm_stall(&model, cpu, p->br.user ? CM_USER : CM_KERNEL,
					 cfg.branch_miss);
			}
		}
	}
	br_pending[cpu] = ti->br.kind == BR_COND || ti->br.kind == BR_INDIRECT
			  ? ti : NULL;
}

/* An interrupt or exception: the branch the last TB ended with is not
 * followed by its outcome; it is not counted. */
static void branch_discon(unsigned cpu)
{
	if (btbs != NULL && br_pending[cpu] != NULL) {
		br_pending[cpu] = NULL;
		brstats[cpu].unresolved++;
	}
}

/* Register the TB's exec callback: with fetches, one that fetches too. */
static void tb_register_exec(struct qemu_plugin_tb *tb, size_t n,
			     uint64_t packed)
{
	uint64_t ranges[n > 0 ? n : 1], va[n > 0 ? n : 1];
	struct tbinfo *ti;
	unsigned k;

	if (!tb_fetching()) {
		qemu_plugin_register_vcpu_tb_exec_cb(tb, vcpu_tb_exec,
			QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)packed);
		return;
	}
	/* branch= alone: no fetches, the TB's struct for its branch */
	k = model.has_l1i || cfg.t.itlb > 0 ? tb_fetches(tb, n, ranges, va) : 0;
	/* Whole host cache lines: a TB start then touches one or two. */
	ti = arena_alloc((sizeof(*ti) + 2 * k * sizeof(ti->fetch[0]) + 63) & ~(size_t)63);
	if (ti == NULL) {
		fprintf(stderr, "busmon: out of memory for a TB's fetches\n");
		abort();
	}
	ti->packed = packed;
	ti->nfetch = k;
	ti->cpu = UINT32_MAX;
	ti->epoch = 0;
	ti->again = 0;
	if (k > 0)
		tb_lines(ti, ranges, k);
	tb_branch(ti, tb, n);
	memcpy(ti->fetch, ranges, k * sizeof(ti->fetch[0]));
	memcpy(ti->fetch + k, va, k * sizeof(ti->fetch[0]));
	qemu_plugin_register_vcpu_tb_exec_cb(tb, vcpu_tb_exec_fetch,
		QEMU_PLUGIN_CB_NO_REGS, ti);
}

/*
 * Classify every instruction by its PC once, here, and hand the result
 * to the callbacks: the mem callback gets the access flags, the TB exec
 * callback gets (kernel insns) | (user insns << 32).
 */
static void vcpu_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	uint64_t count[CM_NMODES] = { 0, 0 };

	(void)id;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		unsigned f = pc_flags(qemu_plugin_insn_vaddr(insn));

		count[(f & CM_F_USER) ? CM_USER : CM_KERNEL]++;
		if (cfg.timing && insn_is_hlt(insn))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, vcpu_hlt,
				QEMU_PLUGIN_CB_NO_REGS, NULL);
		if (insn_is_locked(insn))
			f |= CM_F_LOCKED;
		if (cfg.timing && cfg.t.store_buffer + cfg.t.overlap > 0 &&
		    insn_drains(insn))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, vcpu_drain,
				QEMU_PLUGIN_CB_NO_REGS,
				(void *)(uintptr_t)((f & CM_F_USER) ? CM_USER
								    : CM_KERNEL));
		if (tlb_on() && insn_is_invlpg(insn))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, vcpu_invlpg,
				QEMU_PLUGIN_CB_R_REGS,
				(void *)(uintptr_t)invlpg_site_of(insn));
		if (tlb_on() && insn_cr3_source(insn) >= 0)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, vcpu_mov_cr3,
				QEMU_PLUGIN_CB_R_REGS,
				(void *)(uintptr_t)insn_cr3_source(insn));
		qemu_plugin_register_vcpu_mem_cb(insn, vcpu_mem,
						 QEMU_PLUGIN_CB_NO_REGS,
						 QEMU_PLUGIN_MEM_RW,
						 (void *)(uintptr_t)f);
	}
	/* Bit 31 marks a TB that starts in a free= range. */
	if (n > 0 && in_ranges(cfg.free, cfg.nfree,
			       qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0))))
		count[CM_KERNEL] |= TB_FREE;
	if (n > 0 && cfg.unit != 0 &&
	    qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0)) == cfg.unit)
		count[CM_KERNEL] |= TB_UNIT;
	if (n > 0 && in_ranges(cfg.sched, cfg.nsched,
			       qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0))))
		count[CM_KERNEL] |= TB_SCHED;
	tb_register_exec(tb, n, count[CM_KERNEL] | count[CM_USER] << 32);
}

/* ---- execution time ---------------------------------------------------- */

static unsigned cpu_of(unsigned int vcpu)
{
	return vcpu < cfg.ncpus ? vcpu : vcpu % cfg.ncpus;
}

/* ---- progress, for the runner ------------------------------------------
 * A long run says how far it is: every PROGRESS_TBS translation blocks the
 * host clock is read, and at most every PROGRESS_S seconds of host time
 * out/.progress is rewritten with the guest's instructions so far and the
 * furthest CPU's modelled time (colorsim/run/runner.py prints it once a
 * minute).  The guest sees nothing of it: no modelled cost, no output. */
#define PROGRESS_TBS (1u << 20)
#define PROGRESS_S 5
static unsigned progress_tbs;
static time_t progress_last;

static void fill_progress(FILE *f)
{
	uint64_t furthest = 0;

	for (unsigned c = 0; c < cfg.ncpus; c++)
		if (model.cpu[c].now > furthest)
			furthest = model.cpu[c].now;
	fprintf(f, "insts %" PRIu64 "\n", insts_since_start);
	if (cfg.timing)
		fprintf(f, "cycles %" PRIu64 "\n", furthest);
}

static void write_atomically(const char *name, int append,
			     const char *header, void (*fill)(FILE *f));

static void progress_check(void)
{
	struct timespec ts;

	progress_tbs = 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (ts.tv_sec - progress_last < PROGRESS_S)
		return;
	progress_last = ts.tv_sec;
	write_atomically(".progress", 0, NULL, fill_progress);
}

/* Counts a whole TB when it starts (a TB cut short still counts). */
static inline void tb_start(unsigned cpu, uint64_t packed)
{
	uint64_t kn = packed & (TB_SCHED - 1), un = packed >> 32;
	uint64_t n = kn + un;

	if (sched_open[cpu]) {		/* the last TB's time ends here */
		sched_cycles[cpu] += model.cpu[cpu].now - sched_since[cpu];
		sched_open[cpu] = 0;
	}
	if (halted[cpu])
		idle_catch_up(cpu);
	work_units[cpu] += (packed & TB_UNIT) != 0;
	if (packed & TB_SCHED) {
		sched_insts[cpu] += kn;
		sched_open[cpu] = 1;
		sched_since[cpu] = model.cpu[cpu].now;
	}
	if (packed & TB_FREE) {
		/* Counted, but free in modelled time; then tell the guest. */
		model.cpu[cpu].ctr[CM_KERNEL].insts += kn;
		sync_insts += n;
		insts_since_start += n;
		cpu_insts[cpu] += n;
		if (cfg.publish != 0 && cfg.timing)
			publish_clocks(cpu);
		return;
	}
	cm_add_insts(&model, cpu, CM_KERNEL, kn);
	cm_add_insts(&model, cpu, CM_USER, un);
	insts_since_start += n;
	cpu_insts[cpu] += n;
	if (++progress_tbs == PROGRESS_TBS)
		progress_check();
	if (cfg.publish != 0 && !cfg.timing) {
		publish_buf = cpu_insts[cpu];	/* x86 guest: little endian */
		if (qemu_plugin_write_memory_hwaddr(cfg.publish + 8 * cpu,
						    &publish_bytes) !=
		    QEMU_PLUGIN_HWADDR_OPERATION_OK)
			publish_errors++;
	}
}

static void vcpu_tb_exec(unsigned int vcpu, void *udata)
{
	unsigned cpu = cpu_of(vcpu);

	if (ignored(vcpu)) {
		client_tb(vcpu, (uintptr_t)udata);
		return;
	}
	tb_start(cpu, (uintptr_t)udata);
	if (cfg.quantum != 0 || cfg.clientcost != 0)
		sync_check(cpu);
	if (cfg.clienthold && cfg.measured != 0)
		hold_for_clients();
}

/* The same, then the TB's instruction fetches (l1i=), each range
 * translated through the ITLB first (itlb=). */
static void vcpu_tb_exec_fetch(unsigned int vcpu, void *udata)
{
	struct tbinfo *ti = udata;
	unsigned cpu = cpu_of(vcpu);

	if (ignored(vcpu)) {
		client_tb(vcpu, ti->packed);
		return;
	}
	tb_start(cpu, ti->packed);
	if (btbs != NULL)
		branch_tb(cpu, ti);
	if (wset[cpu].open)
		wset_code(cpu, ti->fetch, ti->nfetch);
	if (ti->again && ti->cpu == cpu) {
		uint64_t f = ti->fetch[0];

		if (cr3[cpu] != 0)
			itlb_fetch(cpu, ti->fetch[1],
				   (f & ~FETCH_USER) >> FETCH_ADDR_BITS,
				   (f & FETCH_USER) ? CM_F_USER : 0);
		if (cm_fetch_again(&model, cpu, ti->epoch, ti->lines))
			goto fetched;
		cm_fetch(&model, cpu, f & ((1ull << FETCH_ADDR_BITS) - 1),
			 (unsigned)((f & ~FETCH_USER) >> FETCH_ADDR_BITS),
			 (f & FETCH_USER) ? CM_F_USER : 0);
		ti->epoch = model.cpu[cpu].l1i_epoch;
		goto fetched;
	}
	for (uint64_t i = 0; i < ti->nfetch; i++) {
		uint64_t f = ti->fetch[i];

		if (cr3[cpu] != 0)
			itlb_fetch(cpu, ti->fetch[ti->nfetch + i],
				   (f & ~FETCH_USER) >> FETCH_ADDR_BITS,
				   (f & FETCH_USER) ? CM_F_USER : 0);
		cm_fetch(&model, cpu, f & ((1ull << FETCH_ADDR_BITS) - 1),
			 (unsigned)((f & ~FETCH_USER) >> FETCH_ADDR_BITS),
			 (f & FETCH_USER) ? CM_F_USER : 0);
	}
	if (ti->again) {
		ti->cpu = cpu;
		ti->epoch = model.cpu[cpu].l1i_epoch;
	}
fetched:
	if (cfg.quantum != 0 || cfg.clientcost != 0)
		sync_check(cpu);
	if (cfg.clienthold && cfg.measured != 0)
		hold_for_clients();
}

static void m5op(unsigned func, unsigned cpu);

static struct hold *hold_at(struct lockword *lw, unsigned i)
{
	return &lw->h[(lw->first + i) % LOCK_HOLDS];
}

/* The time a hold by `cpu` can start after hold p: its release, plus the
 * lock line's transfer if another CPU held it. */
static uint64_t after_hold(const struct hold *p, int cpu)
{
	if (p->cpu < 0)
		return 0;
	return p->end + (p->cpu != cpu ? cfg.t.hitm : 0);
}

/*
 * Acquire by `cpu`, asking at modelled time `now`: its hold goes after
 * every kept hold asked for no later, and before the rest (CPUs ahead in
 * modelled time that round-robin ran first); it starts when the hold
 * before it has ended.  Returns the hold's place.
 */
static unsigned lock_place(struct lockword *lw, int cpu, uint64_t now,
			   uint64_t *start)
{
	unsigned i = lw->n;
	const struct hold *prev;

	while (i > 0 && hold_at(lw, i - 1)->req > now)
		i--;
	prev = i > 0 ? hold_at(lw, i - 1) : &lw->gone;
	if (i == 0 && lw->gone.cpu >= 0 && now < lw->gone.req)
		lw->too_old++;
	*start = after_hold(prev, cpu);
	if (*start < now)
		*start = now;
	if (i < lw->n) {
		lw->reordered++;
		if (lw->n - i > lw->max_depth)
			lw->max_depth = lw->n - i;
	}
	return i;
}

/* Insert hold x at place i, dropping the oldest if the ring is full.  If
 * x goes first, the hold dropped is one x went before: its CPU can no
 * longer be pushed after x (counted as an overlap). */
static void lock_insert(struct lockword *lw, unsigned i, const struct hold *x)
{
	if (lw->n == LOCK_HOLDS) {
		if (i == 0)
			lw->overlaps++;
		lw->gone = lw->h[lw->first];
		lw->first = (lw->first + 1) % LOCK_HOLDS;
		lw->n--;
		if (i > 0)
			i--;
	}
	for (unsigned j = lw->n; j > i; j--)
		*hold_at(lw, j) = *hold_at(lw, j - 1);
	*hold_at(lw, i) = *x;
	lw->n++;
}

/*
 * The hold at place i has ended: every later hold must start after it.
 * A later hold that started too early moves later, and its CPU waits the
 * difference (spin time; the acquisition counts as contended).  A CPU's
 * later holds were in its own past by then, so they move with it
 * uncharged, before being checked against the hold before them.
 */
static void lock_push_later(struct lockword *lw, unsigned i)
{
	static uint64_t moved[MAX_CPUS];	/* per CPU, this call */

	for (unsigned j = i + 1; j < lw->n; j++)
		moved[hold_at(lw, j)->cpu] = 0;
	for (unsigned j = i + 1; j < lw->n; j++) {
		struct hold *k = hold_at(lw, j);
		uint64_t need = after_hold(hold_at(lw, j - 1), k->cpu), wait;

		k->start += moved[k->cpu];
		k->end += moved[k->cpu];
		if (need <= k->start)
			continue;
		wait = need - k->start;
		k->start += wait;
		k->end += wait;
		moved[k->cpu] += wait;
		cm_stall(&model, (unsigned)k->cpu, CM_KERNEL, wait);
		lock_lead[k->cpu] = 1;
		/* A CPU already spinning for its next hold: its clock moved
		 * by this wait, booked here, so its spin from now on starts
		 * after it (else its acquire books the wait a second time
		 * and spin outgrows the region). */
		if (lockm[k->cpu].spinning)
			lockm[k->cpu].spin_since += wait;
		lockstats_wait(&lockm[k->cpu].s, k->contended, wait);
		lockstats_wait(&lw->s, k->contended, wait);
		k->contended = 1;
	}
}

/*
 * The invariant, checked after every release: each kept hold starts no
 * earlier than the one before it ended (plus the line's transfer).  An
 * open hold (end UINT64_MAX) is the last one: no later hold is checked
 * against it.  0 overlaps means the lock's holds follow modelled time.
 */
static void lock_check_order(struct lockword *lw)
{
	for (unsigned j = 1; j < lw->n; j++) {
		const struct hold *p = hold_at(lw, j - 1), *k = hold_at(lw, j);

		if (p->end != UINT64_MAX && k->start < after_hold(p, k->cpu))
			lw->overlaps++;
	}
}

static void lock_store(unsigned cpu, unsigned idx, qemu_plugin_meminfo_t info,
		       unsigned flags)
{
	struct lockmeter *lm = &lockm[cpu];
	struct lockword *lw = &lockw[idx];
	qemu_plugin_mem_value mv = qemu_plugin_mem_get_value(info);
	uint32_t v = cfg.lock_shift == 0 ? mv.data.u8 : mv.data.u32;
	uint64_t now = model.cpu[cpu].now;

	if ((flags & CM_F_LOCKED) && v != 1) {	/* lock subl $1 or xchg of
						 * 0: a try */
		struct hold x = { .req = now, .end = UINT64_MAX,
				  .cpu = (int)cpu };
		unsigned i;

		if (v != 0) {			/* subl found it held */
			if (!lm->spinning) {
				lm->spin_since = now;
				yield_to_held_holder(lw);
			}
			lm->spinning = 1;
			lm->waits_for = idx;
			park_update(cpu);
			return;
		}
		if (lw->holder >= 0) {		/* xchg found it held: a failed
						 * trylock, which does not wait */
			lw->trylock_failures++;
			return;
		}
		i = lock_place(lw, (int)cpu, now, &x.start);
		if (x.start > now) {		/* held then in modelled time */
			cm_stall(&model, cpu, CM_KERNEL, x.start - now);
			lock_lead[cpu] = 1;
			if (!lm->spinning)
				lm->spin_since = now;
			lm->spinning = 1;
			lm->waits_for = idx;
			now = model.cpu[cpu].now;
		}
		lockstats_acquire(&lm->s, lm->spinning, now - lm->spin_since);
		lockstats_acquire(&lw->s, lm->spinning, now - lm->spin_since);
		x.contended = lm->spinning;
		x.start = now;
		lock_insert(lw, i, &x);
		lm->spinning = 0;
		park_update(cpu);
		lw->holder = (int)cpu;
		lm->held++;
	} else if (v == 1 && lw->holder == (int)cpu) {	/* release: a plain
							 * store or xchg of 1 */
		unsigned i = lw->n;
		struct hold *h;

		while (i > 0 && hold_at(lw, i - 1)->end != UINT64_MAX)
			i--;
		if (i == 0)		/* its hold fell off the ring */
			return;
		h = hold_at(lw, i - 1);
		lockstats_hold(&lm->s, now - h->start);
		lockstats_hold(&lw->s, now - h->start);
		h->end = now;
		lw->holder = -1;
		lm->held--;
		lock_push_later(lw, i - 1);
		lock_check_order(lw);
	}
}

static void vcpu_mem(unsigned int vcpu, qemu_plugin_meminfo_t info,
		     uint64_t vaddr, void *udata)
{
	unsigned shift = qemu_plugin_mem_size_shift(info);
	int store = qemu_plugin_mem_is_store(info);
	struct qemu_plugin_hwaddr *hw;

	/* The m5-op window is judged by virtual address: the kernel
	 * identity-maps it, and QEMU's physical address for BIOS ROM is not
	 * meaningful.  Nothing in the window is a cache access. */
	if (vaddr - cfg.m5base < M5_WINDOW) {
		unsigned func = ((vaddr - cfg.m5base) >> 8) & 0xff;

		if (!store && shift == 3) {	/* an ignored vCPU's: CPU 0's clock */
			m5_client = ignored(vcpu);
			m5op(func, ignored(vcpu) ? 0 : cpu_of(vcpu));
			m5_client = 0;
		} else if (store && shift == 3 &&
			   (func == M5_DMA_READ || func == M5_DMA_WRITE ||
			    func == M5_DMA_AT))
			dma_op(func, vcpu,
			       qemu_plugin_mem_get_value(info).data.u64);
		else if (store && shift == 3)	/* the wire's (wire_op) */
			wire_op(func, vcpu,
				qemu_plugin_mem_get_value(info).data.u64);
		return;
	}
	/* Nor is the DMA doorbell: the cards, not a CPU, move those lines. */
	if (cfg.dmabell && vaddr - cfg.dmabell < DMABELL_BYTES) {
		if (store && shift == 2)
			dmabell_op(vcpu, (unsigned)(vaddr - cfg.dmabell) >> 2,
				   qemu_plugin_mem_get_value(info).data.u32);
		return;
	}
	if (ignored(vcpu))
		return;
	hw = qemu_plugin_get_hwaddr(info, vaddr);
	if (store && cfg.timing && hw != NULL &&
	    qemu_plugin_hwaddr_phys_addr(hw) - LAPIC_ICR_LO < 0x20)
		lapic_store(cpu_of(vcpu), qemu_plugin_hwaddr_phys_addr(hw),
			    qemu_plugin_mem_get_value(info).data.u32);
	if (hw == NULL || qemu_plugin_hwaddr_is_io(hw))
		return;
	/* Translation first: a DTLB miss walks the page table. */
	if (cr3[cpu_of(vcpu)] != 0 && !cm_tlb_hit(&model, cpu_of(vcpu), 0, vaddr))
		tlb_walk(cpu_of(vcpu), vaddr, (unsigned)(uintptr_t)udata, 0);
	/* Stores need ownership, and so does the load of a locked RMW,
	 * which arrives as R then W (CM_F_LOCKED, set at translation time). */
	cm_access(&model, cpu_of(vcpu), qemu_plugin_hwaddr_phys_addr(hw),
		  1u << shift, store, (unsigned)(uintptr_t)udata);
	if (wset[cpu_of(vcpu)].open) {
		uint64_t pa = qemu_plugin_hwaddr_phys_addr(hw);

		for (uint64_t l = pa >> model.line_shift;
		     l <= (pa + (1u << shift) - 1) >> model.line_shift; l++)
			wset_add(cpu_of(vcpu), l,
				 ((uintptr_t)udata & CM_F_USER) ? WS_USER_DATA
								: WS_KERNEL_DATA);
	}
	if (store && shift == cfg.lock_shift && vaddr - cfg.lock < cfg.lock_span &&
	    (vaddr - cfg.lock) % cfg.lock_stride == 0)
		lock_store(cpu_of(vcpu),
			   (unsigned)((vaddr - cfg.lock) / cfg.lock_stride),
			   info, (unsigned)(uintptr_t)udata);
}

/* ---- atomic output files ---------------------------------------------- */

static void path_in_out(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", cfg.out, name);
}

/* Copy the old contents of `path` into f; returns 0 if there were none. */
static int copy_old(FILE *f, const char *path)
{
	char buf[65536];
	FILE *old = fopen(path, "r");
	size_t n;

	if (old == NULL)
		return 0;
	while ((n = fread(buf, 1, sizeof(buf), old)) > 0)
		fwrite(buf, 1, n, f);
	fclose(old);
	return 1;
}

typedef void (*fill_fn)(FILE *f);

/*
 * Rewrite out/name as: its old contents (or `header` when it does not
 * exist yet, or when `append` is 0 the new contents alone), then what
 * fill() writes.  The new file is built beside the old one and renamed
 * over it, so a reader (or a kill) never sees a partial file.
 */
static void write_atomically(const char *name, int append,
			     const char *header, fill_fn fill)
{
	char path[PATH_MAX + 64], tmp[PATH_MAX + 64];
	FILE *f;
	int fd;

	path_in_out(path, sizeof(path), name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", cfg.out, name);
	fd = mkstemp(tmp);
	if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
		fprintf(stderr, "busmon: cannot create %s: %s\n", tmp,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	if ((!append || !copy_old(f, path)) && header != NULL)
		fputs(header, f);
	fill(f);
	if (ferror(f) | (fclose(f) != 0) ||
	    chmod(tmp, 0644) != 0 || rename(tmp, path) != 0) {
		fprintf(stderr, "busmon: cannot write %s: %s\n", path,
			strerror(errno));
		unlink(tmp);
	}
}

/* ---- stats.txt, in gem5's text format ---------------------------------- */

static void stat_line(FILE *f, const char *name, const char *value,
		      const char *desc, const char *unit)
{
	fprintf(f, "%-40s %12s %10s %10s # %s (%s)\n",
		name, value, "", "", desc, unit);
}

static void stat_count(FILE *f, uint64_t v, const char *desc,
		       const char *namefmt, ...)
	__attribute__((format(printf, 4, 5)));

static void stat_count(FILE *f, uint64_t v, const char *desc,
		       const char *namefmt, ...)
{
	char name[256], value[32];
	va_list ap;

	va_start(ap, namefmt);
	vsnprintf(name, sizeof(name), namefmt, ap);
	va_end(ap);
	snprintf(value, sizeof(value), "%" PRIu64, v);
	stat_line(f, name, value, desc, "Count");
}

/* Sum of counters a (+ b, if b >= 0) of one CPU in one mode. */
static uint64_t ctr(unsigned cpu, unsigned mode, int a, int b)
{
	const struct cm_counters *c = &model.cpu[cpu].ctr[mode];

	return cm_counter_get(c, a) + (b >= 0 ? cm_counter_get(c, b) : 0);
}

#define IDX(field) ((int)(offsetof(struct cm_counters, field) / sizeof(uint64_t)))

/* name::kernel, name::user, name::total for one CPU. */
static void stat_modes(FILE *f, unsigned cpu, const char *name,
		       const char *desc, int a, int b)
{
	uint64_t k = ctr(cpu, CM_KERNEL, a, b), u = ctr(cpu, CM_USER, a, b);

	stat_count(f, k, desc, "system.cpu%u.%s::kernel", cpu, name);
	stat_count(f, u, desc, "system.cpu%u.%s::user", cpu, name);
	stat_count(f, k + u, desc, "system.cpu%u.%s::total", cpu, name);
}

/* Counter idx of one CPU, summed over both modes. */
static uint64_t ctr_all(unsigned cpu, int idx)
{
	return ctr(cpu, CM_KERNEL, idx, -1) + ctr(cpu, CM_USER, idx, -1);
}

static void stats_rqloop(FILE *f, unsigned c)
{
	uint64_t rd = ctr_all(c, IDX(rqloop_l2_read_accesses));
	uint64_t miss = ctr_all(c, IDX(rqloop_l2_read_misses));
	char name[128], value[32];

	stat_count(f, rd, "L2 reads from run-queue loop loads",
		   "system.cpu%u.rqloop.l2ReadAccesses", c);
	stat_count(f, miss, "L2 read misses from run-queue loop loads",
		   "system.cpu%u.rqloop.l2ReadMisses", c);
	stat_count(f, ctr_all(c, IDX(rqloop_l2_read_hitm)),
		   "of which filled from another CPU's Modified copy (HITM)",
		   "system.cpu%u.rqloop.l2ReadHitm", c);
	stat_count(f, ctr_all(c, IDX(rqloop_l2_read_shared)),
		   "of which filled while another CPU held a clean copy",
		   "system.cpu%u.rqloop.l2ReadShared", c);
	stat_count(f, ctr_all(c, IDX(rqloop_l2_read_first)),
		   "of which on a line this CPU's loop never loaded before",
		   "system.cpu%u.rqloop.l2ReadFirst", c);
	stat_count(f, ctr_all(c, IDX(rqloop_l2_read_invalidated)),
		   "of which on a line another CPU wrote since (coherence)",
		   "system.cpu%u.rqloop.l2ReadInvalidated", c);
	stat_count(f, ctr_all(c, IDX(rqloop_l2_read_evicted_loop)),
		   "of which on a line replaced by a line the loop loads",
		   "system.cpu%u.rqloop.l2ReadEvictedLoop", c);
	stat_count(f, ctr_all(c, IDX(rqloop_l2_read_evicted_kernel)),
		   "of which on a line replaced by another kernel line",
		   "system.cpu%u.rqloop.l2ReadEvictedKernel", c);
	stat_count(f, ctr_all(c, IDX(rqloop_l2_read_evicted_user)),
		   "of which on a line replaced by a user-mode line",
		   "system.cpu%u.rqloop.l2ReadEvictedUser", c);
	snprintf(name, sizeof(name), "system.cpu%u.rqloop.l2ReadMissRatio", c);
	if (rd == 0)
		snprintf(value, sizeof(value), "nan");
	else
		snprintf(value, sizeof(value), "%.6f", (double)miss / (double)rd);
	stat_line(f, name, value,
		  "L2 read misses / L2 reads in the run-queue loop", "Ratio");
	stat_count(f, ctr_all(c, IDX(rqloop_l1d_read_accesses)),
		   "L1D reads from run-queue loop loads",
		   "system.cpu%u.rqloop.l1dReadAccesses", c);
	stat_count(f, ctr_all(c, IDX(rqloop_l1d_read_misses)),
		   "L1D read misses from run-queue loop loads",
		   "system.cpu%u.rqloop.l1dReadMisses", c);
}

/* The five lockmeter counters, per CPU and per lock alike: prefix is
 * "system.cpuN.lock." or "system.lockN."; acq_desc describes the first. */
static void stats_lockstats(FILE *f, const struct lockstats *ls,
			    const char *prefix, const char *acq_desc)
{
	stat_count(f, ls->acquisitions, acq_desc, "%sacquisitions", prefix);
	stat_count(f, ls->contended, "Acquisitions that waited",
		   "%scontended", prefix);
	stat_count(f, ls->spin_cycles, "Modelled cycles spent waiting",
		   "%sspinCycles", prefix);
	stat_count(f, ls->hold_cycles, "Modelled cycles held",
		   "%sholdCycles", prefix);
	stat_count(f, ls->hold_max, "Longest hold, modelled cycles",
		   "%sholdMaxCycles", prefix);
}

static void stats_cpu(FILE *f, unsigned c)
{
	stat_modes(f, c, "committedInsts", "Number of instructions committed",
		   IDX(insts), -1);
	stat_modes(f, c, "l1d.accesses", "L1D accesses (reads and writes)",
		   IDX(l1d_read_accesses), IDX(l1d_write_accesses));
	stat_modes(f, c, "l1d.misses", "L1D misses (reads and writes)",
		   IDX(l1d_read_misses), IDX(l1d_write_misses));
	stat_modes(f, c, "l1d.readAccesses", "L1D read accesses",
		   IDX(l1d_read_accesses), -1);
	stat_modes(f, c, "l1d.readMisses", "L1D read misses",
		   IDX(l1d_read_misses), -1);
	stat_modes(f, c, "l1d.writeAccesses", "L1D write accesses",
		   IDX(l1d_write_accesses), -1);
	stat_modes(f, c, "l1d.writeMisses", "L1D write misses",
		   IDX(l1d_write_misses), -1);
	if (model.has_l1i) {
		stat_modes(f, c, "l1i.accesses", "L1I accesses (lines fetched)",
			   IDX(l1i_accesses), -1);
		stat_modes(f, c, "l1i.misses", "L1I misses", IDX(l1i_misses), -1);
	}
	stat_modes(f, c, "l2.accesses", "L2 accesses (L1D and L1I misses)",
		   IDX(l2_accesses), -1);
	stat_modes(f, c, "l2.misses", "L2 misses", IDX(l2_misses), -1);
	stat_modes(f, c, "l2.writebacks", "L2 dirty evictions written back",
		   IDX(l2_writebacks), -1);
	if (cfg.timing) {
		stat_modes(f, c, "numCycles", "Modelled cycles",
			   IDX(cycles), -1);
		stat_modes(f, c, "busWaitCycles",
			   "Modelled cycles queued for the bus",
			   IDX(bus_wait_cycles), -1);
		if (cfg.t.store_buffer > 0)
			stat_modes(f, c, "storeStallCycles",
				   "Modelled cycles waiting for the store buffer",
				   IDX(store_stall_cycles), -1);
	}
	if (cfg.lock != 0) {
		char prefix[32];

		snprintf(prefix, sizeof(prefix), "system.cpu%u.lock.", c);
		stats_lockstats(f, &lockm[c].s, prefix, "Lock acquisitions");
	}
	stats_rqloop(f, c);
	if (cfg.nsched != 0) {
		stat_count(f, sched_insts[c],
			   "Instructions in the scheduler's code (sched= ranges)",
			   "system.cpu%u.sched.insts", c);
		if (cfg.timing)
			stat_count(f, sched_cycles[c],
				   "Modelled cycles in the scheduler's code",
				   "system.cpu%u.sched.cycles", c);
	}
}

/* system.bus.<prefix>transactions::<kind> and ::total, over cpus [lo,hi). */
static void stats_bus_kinds(FILE *f, const char *prefix, unsigned lo,
			    unsigned hi)
{
	uint64_t total = 0, hitm = 0;

	for (unsigned k = 0; k < CM_NKINDS; k++) {
		uint64_t n = 0;

		for (unsigned c = lo; c < hi; c++)
			n += ctr_all(c, IDX(bus) + (int)k);
		total += n;
		stat_count(f, n, "Bus transactions by kind",
			   "system.bus.%stransactions::%s", prefix,
			   cm_kind_name[k]);
	}
	stat_count(f, total, "Bus transactions by kind",
		   "system.bus.%stransactions::total", prefix);
	for (unsigned c = lo; c < hi; c++)
		hitm += ctr_all(c, IDX(hitm));
	stat_count(f, hitm, "Snoops that hit a Modified line (HITM)",
		   "system.bus.%shitm", prefix);
}

static void stats_offsets(FILE *f, int line_view)
{
	uint64_t view[CM_NCHUNKS];

	cm_offset_view(&model, line_view, view);
	for (unsigned i = 0; i < CM_NCHUNKS; i++)
		if (view[i] != 0)
			stat_count(f, view[i], line_view ?
				   "Bus transactions by line page offset" :
				   "Bus transactions by critical-chunk page offset",
				   "system.bus.%s::0x%03x",
				   line_view ? "linePageOffset" : "pageOffset",
				   i * CM_CHUNK);
}

/* system.lockN.*: each metered lock word's totals over the acquiring
 * CPUs, and its invariant check. */
static void stats_locks(FILE *f)
{
	for (unsigned i = 0; i < cfg.nlocks; i++) {
		const struct lockword *lw = &lockw[i];
		char prefix[32];

		snprintf(prefix, sizeof(prefix), "system.lock%u.", i);
		stats_lockstats(f, &lw->s, prefix,
				"Acquisitions of this lock");
		stat_count(f, lw->trylock_failures, "Trylocks that found it held",
			   "system.lock%u.trylockFailures", i);
		stat_count(f, lw->overlaps,
			   "Acquisitions before its last release (must be 0)",
			   "system.lock%u.holdOverlaps", i);
	}
}

/* The bus in modelled time (cachemodel.h struct cm_busstats). */
static void stats_bus_time(FILE *f)
{
	const struct cm_busstats *b = &model.bs;

	stat_count(f, b->addr_cycles, "Address-bus cycles held (request phases)",
		   "system.bus.addrBusyCycles");
	stat_count(f, b->data_cycles, "Data-bus cycles held (data phases)",
		   "system.bus.dataBusyCycles");
	stat_count(f, b->wait_cycles, "Queueing of all transactions, posted too",
		   "system.bus.waitCycles");
	stat_count(f, b->late, "Requests from behind the bus's served time",
		   "system.bus.lateRequests");
	stat_count(f, b->forced, "Requests served before all clocks passed them",
		   "system.bus.forcedRequests");
	for (unsigned i = 0; i < model.nbuses; i++) {
		stat_count(f, model.bus[i].transactions,
			   "Transactions on this bus, crossing ones included",
			   "system.bus%u.transactions", i);
		stat_count(f, model.bus[i].crossing,
			   "Of which from the other bus (coherency filter hits)",
			   "system.bus%u.crossing", i);
		stat_count(f, model.bus[i].data_cycles,
			   "Data-bus cycles held on this bus",
			   "system.bus%u.dataBusyCycles", i);
	}
}

/* The wire in modelled time (wire_op): its deliveries in the region. */
static void stats_wire(FILE *f)
{
	stat_count(f, wirest.deliveries, "Packets the wire handed to a card",
		   "system.wire.deliveries");
	stat_count(f, wirest.late, "of which after the machine's modelled "
		   "time had passed their arrival", "system.wire.lateDeliveries");
	stat_count(f, wirest.late_cycles, "Modelled cycles late, summed over "
		   "late deliveries", "system.wire.lateCycles");
	stat_count(f, wirest.late_max, "Latest delivery, modelled cycles",
		   "system.wire.lateMaxCycles");
	stat_count(f, wirest.advances, "Times the idle machine's modelled "
		   "time moved up to the next arrival", "system.wire.idleAdvances");
	stat_count(f, wirest.received, "Packets server CPUs took from their "
		   "cards", "system.wire.received");
	stat_count(f, wirest.rx_late, "of which after the taking CPU's clock "
		   "had passed their arrival", "system.wire.lateAtReceiver");
	stat_count(f, wirest.rx_late_cycles, "Modelled cycles late at the "
		   "taking CPU, summed", "system.wire.lateAtReceiverCycles");
	stat_count(f, wirest.rx_late_max, "Latest at the taking CPU, modelled "
		   "cycles", "system.wire.lateAtReceiverMaxCycles");
}

static void stats_dma(FILE *f)
{
	for (unsigned d = 0; d < CM_DMA_NDIRS; d++)
		stat_count(f, model.dma.lines[d], "The server cards' DMA line "
			   "transactions, by direction", "system.dma.lines::%s",
			   cm_dma_dir_name[d]);
	stat_count(f, model.dma.hitm, "DMA reads a CPU's Modified copy "
		   "answered (HITM)", "system.dma.hitm");
	stat_count(f, model.dma.invalidated, "DMA writes that removed a CPU's "
		   "copy", "system.dma.invalidated");
	if (cfg.timing)
		stat_count(f, model.dma.wait_cycles, "Cycles DMA lines waited "
			   "for the bus", "system.dma.waitCycles");
}

/* How many client CPUs ran, and their busy cycles in the region summed;
 * not the wire's CPU, which is the network, not a client, and polls the
 * machine's time while packets cross. */
static void clients_load(uint64_t *n, uint64_t *cycles)
{
	*n = *cycles = 0;
	for (unsigned v = 0; v < MAX_CPUS; v++)
		if (client_seen[v] && !wire_cpu[v]) {
			(*n)++;
			*cycles += client_cycles[v];
		}
}

/* The client CPUs' load in the region (client_tb). */
static void stats_clients(FILE *f)
{
	uint64_t n, cycles;

	clients_load(&n, &cycles);
	stat_count(f, n, "Client CPUs (outside the measured machine), the "
		   "wire's not counted", "system.clients.cpus");
	stat_count(f, cycles, "Modelled cycles of the machine's time they "
		   "were not halted, summed over them", "system.clients.busyCycles");
	stat_count(f, client_insts, "Instructions they executed",
		   "system.clients.insts");
	stat_count(f, client_holds, "Server CPU turns ended after one TB "
		   "while a client CPU had work (clienthold=)",
		   "system.clients.heldServerTurns");
	if (cfg.clientcost == 0)
		return;
	stat_count(f, cfg.clientcost, "Thousandths of a cycle a client "
		   "instruction costs (clients=)", "system.clients.instCostMilli");
	stat_count(f, cfg.clientskew, "Most cycles a client and a server "
		   "clock may be apart (clients=)", "system.clients.skewCycles");
	stat_count(f, client_lag_turns, "Server CPU turns ended after one TB "
		   "because a client's clock lagged", "system.clients.lagServerTurns");
	stat_count(f, client_lead_turns, "Client CPU turns ended after one TB "
		   "because its clock led the servers'",
		   "system.clients.leadClientTurns");
	stat_count(f, client_lag_skips, "Server CPU turns skipped because a "
		   "client's clock lagged (skipheld=)",
		   "system.clients.lagServerSkips");
	stat_count(f, client_lead_skips, "Client CPU turns skipped because its "
		   "clock led the servers' (skipheld=)",
		   "system.clients.leadClientSkips");
}

/* The quantum and what holding CPUs to it cost (sync_check). */
static void stats_sync(FILE *f)
{
	stat_count(f, cfg.quantum, "Most cycles a CPU may lead the slowest "
		   "running one (0: not enforced)", "system.sync.quantumCycles");
	stat_count(f, max_skew, "Largest lead over the slowest running CPU "
		   "seen", "system.sync.maxSkewCycles");
	stat_count(f, max_skew_held, "Largest lead a CPU ran into itself "
		   "(not one from a metered lock)",
		   "system.sync.maxHeldSkewCycles");
	for (unsigned c = 0; c < model.ncpus; c++) {
		stat_count(f, synch[c].holds, "Times held for leading by more "
			   "than the quantum", "system.cpu%u.sync.holds", c);
		stat_count(f, synch[c].turns, "Round-robin turns ended after one "
			   "TB while held", "system.cpu%u.sync.heldTurns", c);
		stat_count(f, synch[c].cycles, "Modelled cycles the slowest CPU "
			   "advanced while this one was held",
			   "system.cpu%u.sync.heldCycles", c);
		stat_count(f, synch[c].skips, "Round-robin turns skipped while "
			   "held (skipheld=)", "system.cpu%u.sync.skippedTurns", c);
	}
	stat_count(f, spin_yields, "Turns a CPU ended when it began to wait "
		   "for a metered lock (skipheld=)", "system.sync.spinYields");
	stat_count(f, lock_wait_skips, "Round-robin turns sat out waiting for "
		   "a metered lock another CPU held (skipheld=)",
		   "system.sync.lockWaitSkips");
	stat_count(f, ipi_wakes, "Halted CPUs an IPI woke, started at the "
		   "IPI's send time (timing=)", "system.sync.ipiWakes");
	stat_count(f, ipi_wake_skips, "Turns sat out for a CPU an IPI woke to "
		   "run first (skipheld=)", "system.sync.ipiWakeSkips");
}

/* Branch prediction (branch=). */
static void stats_branch(FILE *f)
{
	stat_count(f, cfg.branch_miss, "Cycles a mispredicted branch costs",
		   "system.branch.missCycles");
	stat_count(f, cfg.btb_entries, "Branch target buffer entries per CPU",
		   "system.branch.btbEntries");
	for (unsigned c = 0; c < model.ncpus; c++) {
		stat_count(f, brstats[c].resolved, "Conditional and indirect "
			   "branches resolved", "system.cpu%u.branch.resolved", c);
		stat_count(f, brstats[c].missed, "Of them mispredicted",
			   "system.cpu%u.branch.mispredicted", c);
		stat_count(f, brstats[c].unresolved, "Conditional branches an "
			   "interrupt or exception followed (not counted)",
			   "system.cpu%u.branch.unresolved", c);
	}
}

static void fill_stats(FILE *f)
{
	uint64_t insts = 0;
	char prefix[32];

	for (unsigned c = 0; c < model.ncpus; c++)
		insts += ctr_all(c, IDX(insts));
	fprintf(f, "\n---------- Begin Simulation Statistics ----------\n");
	stat_count(f, insts, "Number of instructions simulated", "sim_insts");
	if (cfg.timing)
		stat_count(f, roi_elapsed,
			   "Elapsed modelled cycles of the region, idle included",
			   "system.elapsedCycles");
	for (unsigned c = 0; c < model.ncpus; c++)
		stats_cpu(f, c);
	stats_locks(f);
	stats_bus_kinds(f, "", 0, model.ncpus);
	for (unsigned c = 0; c < model.ncpus; c++) {
		snprintf(prefix, sizeof(prefix), "cpu%u.", c);
		stats_bus_kinds(f, prefix, c, c + 1);
	}
	if (cfg.timing) {
		stats_bus_time(f);
		stats_sync(f);
		if (btbs != NULL)
			stats_branch(f);
	}
	if (wire_on)
		stats_wire(f);
	if (cfg.dma)
		stats_dma(f);
	if (wire_on && cfg.timing)
		stats_clients(f);
	stats_offsets(f, 0);
	stats_offsets(f, 1);
	fprintf(f, "\n---------- End Simulation Statistics   ----------\n");
}

/* ---- the CSV files ----------------------------------------------------- */

static void fill_bus_csv(FILE *f)
{
	for (unsigned c = 0; c < model.ncpus; c++)
		for (unsigned md = 0; md < CM_NMODES; md++)
			for (unsigned k = 0; k < CM_NKINDS; k++)
				for (unsigned i = 0; i < CM_NCHUNKS; i++) {
					uint64_t n = model.hist[c][md][k][i];

					if (n != 0)
						fprintf(f, "%u,%u,%s,%s,%u,%" PRIu64 "\n",
							ndumps, c, cm_mode_name[md],
							cm_kind_name[k], i * CM_CHUNK, n);
				}
	/* The cards' DMA: no CPU's (-1), a mode of its own. */
	for (unsigned d = 0; d < CM_DMA_NDIRS; d++)
		for (unsigned i = 0; i < CM_NCHUNKS; i++)
			if (model.dma.hist[d][i] != 0)
				fprintf(f, "%u,-1,dma,%s,%u,%" PRIu64 "\n", ndumps,
					cm_dma_dir_name[d], i * CM_CHUNK,
					model.dma.hist[d][i]);
}

/* Whether counter i is written: the L1I and timing counters only when
 * those models are on, so counting-only files stay as they were. */
static int counter_shown(unsigned i)
{
	if (i == (unsigned)IDX(l1i_accesses) || i == (unsigned)IDX(l1i_misses))
		return model.has_l1i;
	if (i == (unsigned)IDX(cycles) || i == (unsigned)IDX(bus_wait_cycles))
		return cfg.timing;
	if (i == (unsigned)IDX(store_stall_cycles))
		return cfg.timing && cfg.t.store_buffer > 0;
	if (i == (unsigned)IDX(dtlb_misses))
		return cfg.timing && cfg.t.dtlb > 0;
	if (i == (unsigned)IDX(itlb_misses))
		return cfg.timing && cfg.t.itlb > 0;
	if (i == (unsigned)IDX(overlap_stall_cycles))
		return cfg.timing && cfg.t.overlap > 0;
	return 1;
}

/* One "DUMP,-1,all,NAME,VALUE" line per machine-wide counter of the timing
 * mode, in a fixed order; the wire's only when the wire is on. */
static void machine_counters(FILE *f)
{
	uint64_t clients, client_busy_cycles;

	clients_load(&clients, &client_busy_cycles);
	const struct { const char *name; uint64_t v; bool wire; } rows[] = {
		{ "elapsed_cycles", roi_elapsed, false },
		{ "max_skew_cycles", max_skew, false },
		{ "wire_deliveries", wirest.deliveries, true },
		{ "wire_late_deliveries", wirest.late, true },
		{ "wire_late_cycles", wirest.late_cycles, true },
		{ "wire_late_max_cycles", wirest.late_max, true },
		{ "wire_idle_advances", wirest.advances, true },
		{ "wire_received", wirest.received, true },
		{ "wire_rx_late", wirest.rx_late, true },
		{ "wire_rx_late_cycles", wirest.rx_late_cycles, true },
		{ "wire_rx_late_max_cycles", wirest.rx_late_max, true },
		{ "client_cpus", clients, true },
		{ "client_busy_cycles", client_busy_cycles, true },
		{ "client_insts", client_insts, true },
		{ "client_held_server_turns", client_holds, true },
		{ "client_lag_server_turns", client_lag_turns, true },
		{ "client_lead_client_turns", client_lead_turns, true },
		{ "client_lag_server_skips", client_lag_skips, true },
		{ "client_lead_client_skips", client_lead_skips, true },
		{ "bus_max_lag_cycles", model.bs.max_lag, false },
	};

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		if (!rows[i].wire || wire_on)
			fprintf(f, "%u,-1,all,%s,%" PRIu64 "\n", ndumps,
				rows[i].name, rows[i].v);

}

/* A CPU's working-set windows: how many, and their distinct lines
 * summed, by kind (code only with l1i=); wset_full_lines: left out. */
static void wset_counters(FILE *f, unsigned c)
{
	fprintf(f, "%u,%u,all,wset_windows,%" PRIu64 "\n", ndumps, c,
		wset[c].windows);
	for (unsigned k = 0; k < WS_KINDS; k++)
		if (model.has_l1i || k == WS_USER_DATA || k == WS_KERNEL_DATA)
			fprintf(f, "%u,%u,%s,%s,%" PRIu64 "\n", ndumps, c,
				k < WS_KERNEL_DATA ? "user" : "kernel",
				wset_name[k], wset[c].lines[k]);
	fprintf(f, "%u,%u,all,wset_full_lines,%" PRIu64 "\n", ndumps, c,
		wset[c].full);
}

/* The cards' DMA, machine-wide (cpu -1), with dma=1. */
static void dma_counters(FILE *f)
{
	const struct { const char *name; uint64_t v; } dma[] = {
		{ "dma_read_lines", model.dma.lines[CM_DMA_READ] },
		{ "dma_write_lines", model.dma.lines[CM_DMA_WRITE] },
		{ "dma_hitm", model.dma.hitm },
		{ "dma_invalidated", model.dma.invalidated },
		{ "dma_wait_cycles", model.dma.wait_cycles },
	};

	for (size_t i = 0; i < sizeof dma / sizeof dma[0]; i++)
		if (cfg.timing || i < 4)
			fprintf(f, "%u,-1,dma,%s,%" PRIu64 "\n", ndumps,
				dma[i].name, dma[i].v);
}

static void fill_counters_csv(FILE *f)
{
	static const char *const lock_names[] = {
		"lock_acquisitions", "lock_contended", "lock_spin_cycles",
		"lock_hold_cycles", "lock_hold_max_cycles",
	};

	for (unsigned c = 0; c < model.ncpus; c++) {
		for (unsigned md = 0; md < CM_NMODES; md++)
			for (unsigned i = 0; i < CM_NCOUNTERS; i++)
				if (counter_shown(i))
					fprintf(f, "%u,%u,%s,%s,%" PRIu64 "\n", ndumps, c,
						cm_mode_name[md], cm_counter_name[i],
						cm_counter_get(&model.cpu[c].ctr[md], i));
		if (cfg.unit != 0)
			fprintf(f, "%u,%u,user,work_units,%" PRIu64 "\n", ndumps,
				c, work_units[c]);
		if (wset[c].key != NULL)	/* the CPU had windows (--wset) */
			wset_counters(f, c);
		if (cfg.nsched != 0)
			fprintf(f, "%u,%u,kernel,sched_insts,%" PRIu64 "\n", ndumps,
				c, sched_insts[c]);
		if (cfg.nsched != 0 && cfg.timing)
			fprintf(f, "%u,%u,kernel,sched_cycles,%" PRIu64 "\n", ndumps,
				c, sched_cycles[c]);
		if (cfg.lock != 0) {
			const struct lockstats *ls = &lockm[c].s;
			const uint64_t v[] = { ls->acquisitions, ls->contended,
					       ls->spin_cycles, ls->hold_cycles,
					       ls->hold_max };

			for (unsigned i = 0; i < 5; i++)
				fprintf(f, "%u,%u,kernel,%s,%" PRIu64 "\n", ndumps,
					c, lock_names[i], v[i]);
		}
	}
	if (cfg.timing)		/* machine-wide: cpu -1, as the kernel's numbers */
		machine_counters(f);
	if (cfg.dma)
		dma_counters(f);
}

/* ---- busmon.json: the effective configuration ------------------------- */

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_geom(FILE *f, const char *name, const struct cm_geom *g)
{
	fprintf(f, "  \"%s\": {\"size\": %" PRIu64 ", \"assoc\": %" PRIu64
		", \"line\": %" PRIu64 ", \"sets\": %" PRIu64 "},\n", name,
		g->size, g->assoc, g->line, g->size / (g->assoc * g->line));
}

/* Ranges as hex strings: 64-bit kernel addresses exceed JSON doubles. */
static void json_ranges(FILE *f, const char *name, const struct range *r,
			unsigned n)
{
	fprintf(f, "  \"%s\": [", name);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "%s[\"0x%" PRIx64 "\", \"0x%" PRIx64 "\"]",
			i ? ", " : "", r[i].start, r[i].end);
	fprintf(f, "],\n");
}

/* One per-CPU field of struct synchold as ", \"name\": [...]". */
static void json_sync(FILE *f, const char *name, size_t off)
{
	fprintf(f, ", \"%s\": [", name);
	for (unsigned c = 0; c < model.ncpus; c++)
		fprintf(f, "%s%" PRIu64, c ? ", " : "",
			*(const uint64_t *)((const char *)&synch[c] + off));
	fprintf(f, "]");
}

static void fill_json(FILE *f)
{
	fprintf(f, "{\n  \"plugin\": \"busmon\",\n");
	fprintf(f, "  \"version\": \"%s\",\n", BUSMON_VERSION);
	fprintf(f, "  \"qemu_plugin_api\": %d,\n", QEMU_PLUGIN_VERSION);
	fprintf(f, "  \"out\": ");
	json_string(f, cfg.out);
	fprintf(f, ",\n  \"cpus\": %u,\n  \"smp_vcpus\": %d,\n",
		cfg.ncpus, cfg.smp_vcpus);
	if (cfg.measured != 0)
		fprintf(f, "  \"measured\": %u,\n", cfg.measured);
	fprintf(f, "  \"skip_held_turns\": %s,\n",
		skipping_held ? "true" : "false");
	json_geom(f, "l1d", &cfg.l1);
	json_geom(f, "l2", &cfg.l2);
	if (cfg.l1i.size != 0)
		json_geom(f, "l1i", &cfg.l1i);
	else
		fprintf(f, "  \"l1i\": null,\n");
	fprintf(f, "  \"coherence\": \"MESI\",\n");
	fprintf(f, "  \"replacement\": {\"l1\": \"%s\", \"l2\": \"%s\"},\n",
		cm_repl_name[cfg.l1repl], cm_repl_name[cfg.l2repl]);
	fprintf(f, "  \"inclusive\": %s,\n", cfg.inclusive ? "true" : "false");
	json_ranges(f, "user", cfg.user, cfg.nuser);
	json_ranges(f, "rqloop", cfg.rqloop, cfg.nrqloop);
	if (cfg.nsched != 0)
		json_ranges(f, "sched", cfg.sched, cfg.nsched);
	/* Lines each CPU's loop has loaded, and loads of lines the table had
	 * no room for (their misses count as first loads). */
	fprintf(f, "  \"rqloop_lines\": [");
	for (unsigned c = 0; c < model.ncpus; c++)
		fprintf(f, "%s%u", c ? ", " : "", model.cpu[c].loop.used);
	fprintf(f, "],\n  \"rqloop_lines_full\": [");
	for (unsigned c = 0; c < model.ncpus; c++)
		fprintf(f, "%s%u", c ? ", " : "", model.cpu[c].loop.full);
	fprintf(f, "],\n");
	if (cfg.nfree > 0)
		json_ranges(f, "free", cfg.free, cfg.nfree);
	fprintf(f, "  \"m5base\": \"0x%" PRIx64 "\",\n", cfg.m5base);
	fprintf(f, "  \"m5window\": %u,\n", M5_WINDOW);
	if (cfg.dmabell != 0)
		fprintf(f, "  \"dmabell\": \"0x%" PRIx64 "\",\n", cfg.dmabell);
	if (cfg.publish != 0)
		fprintf(f, "  \"publish\": \"0x%" PRIx64 "\",\n"
			"  \"publish_errors\": %u,\n", cfg.publish,
			publish_errors);
	if (cfg.timing) {
		const struct cm_busstats *b = &model.bs;

		fprintf(f, "  \"timing\": {\"inst\": %" PRIu64 ", \"l2_hit\": %" PRIu64
			", \"mem\": %" PRIu64 ", \"hitm\": %" PRIu64 ", \"inval\": %"
			PRIu64 ", \"bus_line\": %" PRIu64 ", \"bus_addr\": %" PRIu64
			"},\n", cfg.t.inst, cfg.t.l2_hit, cfg.t.mem, cfg.t.hitm,
			cfg.t.inval, cfg.t.bus_line, cfg.t.bus_addr);
		fprintf(f, "  \"locked\": %" PRIu64 ",\n", cfg.t.locked);
		fprintf(f, "  \"store_buffer\": {\"entries\": %" PRIu64
			", \"waited_before_served\": %" PRIu64
			", \"drains\": %llu},\n",
			cfg.t.store_buffer, b->store_waits, drains);
		fprintf(f, "  \"overlap\": %" PRIu64 ",\n", cfg.t.overlap);
		fprintf(f, "  \"tlb\": {\"dtlb\": %" PRIu64 ", \"dtlb_large\": %"
			PRIu64 ", \"itlb\": %" PRIu64 ", \"itlb_large\": %" PRIu64
			", \"walk_errors\": %llu, \"invlpg\": %llu"
			", \"invlpg_whole_flushes\": %llu},\n", cfg.t.dtlb,
			cfg.t.dtlb_large, cfg.t.itlb, cfg.t.itlb_large,
			walk_errors, invlpgs, invlpg_whole);
		fprintf(f, "  \"bus\": {\"depth\": %" PRIu64 ", \"transactions\": %"
			PRIu64 ", \"addr_busy_cycles\": %" PRIu64
			", \"data_busy_cycles\": %" PRIu64 ", \"wait_cycles\": %"
			PRIu64 ", \"late\": %" PRIu64 ", \"forced\": %" PRIu64
			", \"max_pending\": %" PRIu64 ", \"max_lag_cycles\": %" PRIu64
			"},\n", cfg.t.bus_depth,
			b->transactions, b->addr_cycles, b->data_cycles,
			b->wait_cycles, b->late, b->forced, b->max_pending,
			b->max_lag);
		fprintf(f, "  \"buses\": [");
		for (unsigned i = 0; i < model.nbuses; i++)
			fprintf(f, "%s{\"cpus_from\": %u, \"transactions\": %" PRIu64
				", \"crossing\": %" PRIu64 ", \"data_busy_cycles\": %"
				PRIu64 "}", i ? ", " : "",
				i * (unsigned)(model.nbuses > 1 ? cfg.t.bus_cpus : 0),
				model.bus[i].transactions, model.bus[i].crossing,
				model.bus[i].data_cycles);
		fprintf(f, "],\n  \"cross_bus\": %" PRIu64 ",\n", cfg.t.cross_bus);
	}
	if (cfg.lock != 0) {
		if (cfg.lock_shift == 0)	/* absent: 4-byte words, as before */
			fprintf(f, "  \"lock_bytes\": 1,\n");
		fprintf(f, "  \"lock\": \"0x%" PRIx64 "\",\n  \"locks\": [",
			cfg.lock);
		for (unsigned i = 0; i < cfg.nlocks; i++) {
			const struct lockword *lw = &lockw[i];

			fprintf(f, "%s\n    {\"addr\": \"0x%" PRIx64 "\", "
				"\"acquisitions\": %" PRIu64 ", \"contended\": %"
				PRIu64 ", \"spin_cycles\": %" PRIu64
				", \"hold_cycles\": %" PRIu64 ", \"hold_max_cycles\": %"
				PRIu64 ", \"trylock_failures\": %" PRIu64
				", \"hold_overlaps\": %" PRIu64
				", \"reordered\": %" PRIu64 ", \"max_depth\": %" PRIu64
				", \"too_old\": %" PRIu64 "}", i ? "," : "",
				cfg.lock + i * cfg.lock_stride, lw->s.acquisitions,
				lw->s.contended, lw->s.spin_cycles, lw->s.hold_cycles,
				lw->s.hold_max, lw->trylock_failures, lw->overlaps,
				lw->reordered, lw->max_depth, lw->too_old);
		}
		fprintf(f, "],\n");
	}
	if (cfg.unit != 0)
		fprintf(f, "  \"unit\": \"0x%" PRIx64 "\",\n", cfg.unit);
	if (cfg.timing) {
		fprintf(f, "  \"idle_catchups\": %llu,\n  \"sync_polls\": %llu,\n"
			"  \"publish_writes\": %llu,\n  \"sync_insts\": %llu,\n"
			"  \"max_skew_cycles\": %" PRIu64 ",\n"
			"  \"max_held_skew_cycles\": %" PRIu64 ",\n  \"clocks\": [",
			idle_catchups, sync_polls, publish_writes, sync_insts,
			max_skew, max_skew_held);
		for (unsigned c = 0; c < model.ncpus; c++)
			fprintf(f, "%s%" PRIu64, c ? ", " : "", model.cpu[c].now);
		fprintf(f, "],\n  \"sync\": {\"quantum_cycles\": %" PRIu64,
			cfg.quantum);
		json_sync(f, "holds", offsetof(struct synchold, holds));
		json_sync(f, "held_turns", offsetof(struct synchold, turns));
		json_sync(f, "held_cycles", offsetof(struct synchold, cycles));
		json_sync(f, "skipped_turns", offsetof(struct synchold, skips));
		fprintf(f, ", \"spin_yields\": %" PRIu64, spin_yields);
		fprintf(f, ", \"lock_wait_skips\": %" PRIu64, lock_wait_skips);
		fprintf(f, "},\n");
	}
	if (cfg.clientcost != 0) {
		fprintf(f, "  \"clients\": {\"inst_cost_milli\": %" PRIu64
			", \"skew_cycles\": %" PRIu64 ", \"clocks\": [",
			cfg.clientcost, cfg.clientskew);
		for (unsigned v = cfg.measured; v < (unsigned)cfg.smp_vcpus &&
		     v < MAX_CPUS; v++)
			fprintf(f, "%s%" PRIu64, v > cfg.measured ? ", " : "",
				cclk[v]);
		fprintf(f, "]},\n");
	}
	fprintf(f, "  \"offset_bucket_bytes\": %u,\n", CM_CHUNK);
	fprintf(f, "  \"args\": [");
	for (int i = 0; i < cfg.argc; i++) {
		fprintf(f, "%s", i ? ", " : "");
		json_string(f, cfg.argv[i]);
	}
	fprintf(f, "],\n");
	fprintf(f, "  \"insts_since_start\": %llu,\n",
		(unsigned long long)insts_since_start);
	fprintf(f, "  \"dumps\": %u,\n  \"m5_exit_seen\": %s\n}\n",
		ndumps, m5_exit_seen ? "true" : "false");
}

static void write_json(void)
{
	write_atomically("busmon.json", 0, NULL, fill_json);
}

/* ---- m5 ops and dumps ------------------------------------------------- */

/* A hold still in progress counts up to now, and on from here. */
static void sync_settle(void)
{
	uint64_t floor = clock_floor(UINT32_MAX);

	for (unsigned c = 0; c < model.ncpus && floor != UINT64_MAX; c++)
		if (synch[c].held && floor > synch[c].since) {
			synch[c].cycles += floor - synch[c].since;
			synch[c].since = floor;
		}
}

/* The clock of the CPU that issued an m5 op: a client CPU has none; it
 * used CPU 0's, and with the wire in modelled time the machine's. */
static uint64_t op_clock(unsigned cpu)
{
	return m5_client && wire_on ? machine_now() : model.cpu[cpu].now;
}

static void dump(unsigned cpu)
{
	cm_bus_flush(&model);		/* every queueing charged, then counted */
	sync_settle();
	if (cfg.timing) {
		uint64_t now = machine_now();

		for (unsigned v = 0; v < MAX_CPUS; v++)
			client_settle(v, now);
	}
	roi_elapsed = op_clock(cpu) - roi_start;
	write_atomically("stats.txt", 1, NULL, fill_stats);
	write_atomically("bus_offsets.csv", 1,
			 "dump,cpu,mode,kind,offset,count\n", fill_bus_csv);
	write_atomically("counters.csv", 1,
			 "dump,cpu,mode,stat,value\n", fill_counters_csv);
	ndumps++;
	write_json();
}

/* Counters only: cache contents, clocks and the lock's state stay. */
static void reset_stats(unsigned cpu)
{
	cm_reset_stats(&model);
	roi_start = op_clock(cpu);
	ipi_rule_on = 1;
	max_skew = max_skew_held = 0;	/* the region's own skew */
	memset(lock_lead, 0, sizeof(lock_lead));
	memset(&wirest, 0, sizeof(wirest));
	memset(client_cycles, 0, sizeof(client_cycles));
	client_insts = 0;
	client_holds = 0;
	client_lag_turns = client_lead_turns = 0;
	client_lag_skips = client_lead_skips = 0;
	spin_yields = lock_wait_skips = ipi_wakes = ipi_wake_skips = 0;
	memset(brstats, 0, sizeof(brstats));
	if (cfg.timing) {		/* a busy client counts from here */
		uint64_t now = machine_now();

		for (unsigned v = 0; v < MAX_CPUS; v++)
			client_since[v] = now;
	}
	for (unsigned c = 0; c < model.ncpus; c++) {
		synch[c].holds = synch[c].turns = synch[c].cycles = 0;
		synch[c].skips = 0;
		/* a hold in progress counts from here */
		synch[c].since = clock_floor(UINT32_MAX);
	}
	for (unsigned c = 0; c < MAX_CPUS; c++) {
		wset[c].windows = wset[c].full = 0;
		memset(wset[c].lines, 0, sizeof(wset[c].lines));
	}
	memset(work_units, 0, sizeof(work_units));
	memset(sched_insts, 0, sizeof(sched_insts));
	memset(sched_cycles, 0, sizeof(sched_cycles));
	for (unsigned c = 0; c < model.ncpus; c++)
		sched_since[c] = model.cpu[c].now;	/* a TB in progress counts
							 * from here */
	for (unsigned c = 0; c < model.ncpus; c++) {
		struct lockmeter *lm = &lockm[c];

		memset(&lm->s, 0, sizeof(lm->s));
		lm->spin_since = model.cpu[c].now;	/* a wait in progress
							 * counts from here */
	}
	for (unsigned i = 0; i < cfg.nlocks; i++) {
		struct lockword *lw = &lockw[i];

		memset(&lw->s, 0, sizeof(lw->s));
		lw->overlaps = lw->trylock_failures = lw->reordered = 0;
		lw->max_depth = lw->too_old = 0;
		/* A hold taken before the reset that is pushed back after it
		 * adds spin time but no contended acquisition: that
		 * acquisition is not the region's. */
		for (unsigned j = 0; j < lw->n; j++)
			hold_at(lw, j)->contended = 1;
	}
}

static void m5op(unsigned func, unsigned cpu)
{
	switch (func) {
	case M5_RESETSTATS:
		reset_stats(cpu);
		break;
	case M5_DUMPSTATS:
		dump(cpu);
		break;
	case M5_DUMPRESETSTATS:
		dump(cpu);
		reset_stats(cpu);
		break;
	case M5_WORK_BEGIN:
		wset_begin(cpu);
		break;
	case M5_WORK_END:
		wset_end(cpu);
		break;
	case M5_EXIT:
		/* The guest exits next through isa-debug-exit; we only note
		 * it, so the run tool can tell a clean end from a kill. */
		m5_exit_seen = 1;
		write_json();
		break;
	default:
		break;
	}
}

static void plugin_exit(qemu_plugin_id_t id, void *udata)
{
	char path[PATH_MAX + 64];

	(void)id;
	(void)udata;
	path_in_out(path, sizeof(path), ".progress");	/* not a result */
	unlink(path);
	cm_free(&model);
	arena_free();
}

/* ---- options ----------------------------------------------------------- */

/* A whole unsigned number (decimal, or 0x hex); no sign, no junk. */
static int parse_u64(const char *s, uint64_t *v, char **end, int want_end)
{
	char *e;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &e, 0);
	if (errno != 0 || e == s)
		return -1;
	if (end != NULL)
		*end = e;
	return (want_end && *e != '\0') ? -1 : 0;
}

/* SIZE[K|M]:ASSOC:LINE */
static int parse_geom(const char *s, struct cm_geom *g)
{
	char *e;

	if (parse_u64(s, &g->size, &e, 0) < 0)
		return -1;
	if (*e == 'K' || *e == 'k')
		g->size <<= 10, e++;
	else if (*e == 'M' || *e == 'm')
		g->size <<= 20, e++;
	if (*e != ':' || parse_u64(e + 1, &g->assoc, &e, 0) < 0 ||
	    *e != ':' || parse_u64(e + 1, &g->line, &e, 1) < 0)
		return -1;
	return 0;
}

/* 0xSTART-0xEND, end exclusive. */
static int parse_range(const char *s, struct range *r)
{
	char *e;

	if (parse_u64(s, &r->start, &e, 0) < 0 || *e != '-' ||
	    parse_u64(e + 1, &r->end, NULL, 1) < 0 || r->end <= r->start)
		return -1;
	return 0;
}

static int add_range(struct range *r, unsigned *n, const char *val)
{
	if (*n >= MAX_RANGES || parse_range(val, &r[*n]) < 0)
		return -1;
	(*n)++;
	return 0;
}

/* One key=value.  Returns 0, or -1 after printing what was wrong. */
static int parse_option(const char *arg)
{
	const char *eq = strchr(arg, '=');
	size_t klen = eq ? (size_t)(eq - arg) : strlen(arg);
	const char *val = eq ? eq + 1 : "";
	uint64_t v;

#define KEY(k) (klen == strlen(k) && strncmp(arg, k, klen) == 0)
	if (KEY("out")) {
		if (*val == '\0' || strlen(val) >= sizeof(cfg.out))
			goto bad;
		strcpy(cfg.out, val);
	} else if (KEY("l1d")) {
		if (parse_geom(val, &cfg.l1) < 0)
			goto bad_geom;
	} else if (KEY("l2")) {
		if (parse_geom(val, &cfg.l2) < 0)
			goto bad_geom;
	} else if (KEY("l1i")) {
		if (parse_geom(val, &cfg.l1i) < 0 || cfg.l1i.size == 0)
			goto bad_geom;
	} else if (KEY("cpus")) {
		if (parse_u64(val, &v, NULL, 1) < 0 || v < 1 || v > MAX_CPUS)
			goto bad;
		cfg.ncpus = (unsigned)v;
	} else if (KEY("measured")) {
		if (parse_u64(val, &v, NULL, 1) < 0 || v < 1 || v > MAX_CPUS)
			goto bad;
		cfg.measured = (unsigned)v;
	} else if (KEY("user")) {
		if (add_range(cfg.user, &cfg.nuser, val) < 0)
			goto bad_range;
	} else if (KEY("free")) {
		if (add_range(cfg.free, &cfg.nfree, val) < 0)
			goto bad_range;
	} else if (KEY("rqloop")) {
		if (add_range(cfg.rqloop, &cfg.nrqloop, val) < 0)
			goto bad_range;
	} else if (KEY("sched")) {
		if (add_range(cfg.sched, &cfg.nsched, val) < 0)
			goto bad_range;
	} else if (KEY("dmabell")) {
		if (parse_u64(val, &cfg.dmabell, NULL, 1) < 0 || !cfg.dmabell ||
		    cfg.dmabell > UINT64_MAX - DMABELL_BYTES)
			goto bad;
	} else if (KEY("m5base")) {
		if (parse_u64(val, &cfg.m5base, NULL, 1) < 0 ||
		    cfg.m5base > UINT64_MAX - M5_WINDOW)
			goto bad;
	} else if (KEY("l1repl") || KEY("l2repl")) {
		int r = strcmp(val, "lru") == 0 ? CM_REPL_LRU :
			strcmp(val, "plru") == 0 ? CM_REPL_PLRU : -1;

		if (r < 0) {
			fprintf(stderr, "busmon: bad value in '%s': expected lru "
				"or plru\n", arg);
			return -1;
		}
		*(arg[1] == '1' ? &cfg.l1repl : &cfg.l2repl) = r;
	} else if (KEY("inclusive")) {
		if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
			goto bad;
		cfg.inclusive = val[0] == '1';
	} else if (KEY("timing")) {
		/* INST:L2:MEM:HITM:INVAL:BUSLINE:BUSADDR, core cycles */
		uint64_t *dst[] = { &cfg.t.inst, &cfg.t.l2_hit, &cfg.t.mem,
				    &cfg.t.hitm, &cfg.t.inval, &cfg.t.bus_line,
				    &cfg.t.bus_addr };
		const char *p = val;
		char *e;

		for (unsigned i = 0; i < 7; i++) {
			if (parse_u64(p, dst[i], &e, i == 6) < 0 ||
			    *dst[i] > 1000000 || (i < 6 && *e != ':'))
				goto bad_timing;
			p = e + 1;
		}
		cfg.timing = 1;
	} else if (KEY("branch")) {
		/* PENALTY:ENTRIES; 0 switches it off */
		char *e;
		uint64_t n;

		if (parse_u64(val, &v, &e, 0) < 0 || v > 1000000 || *e != ':' ||
		    parse_u64(e + 1, &n, NULL, 1) < 0 || n > BTB_MAX_ENTRIES)
			goto bad;
		cfg.branch_miss = v;
		cfg.btb_entries = (unsigned)n;
	} else if (KEY("locked")) {
		if (parse_u64(val, &v, NULL, 1) < 0 || v > 1000000)
			goto bad;
		cfg.t.locked = v;
	} else if (KEY("storebuf") || KEY("overlap")) {
		if (parse_u64(val, &v, NULL, 1) < 0 || v > CM_SB_MAX)
			goto bad;
		*(KEY("storebuf") ? &cfg.t.store_buffer : &cfg.t.overlap) = v;
	} else if (KEY("dtlb") || KEY("dtlblarge") || KEY("itlb") ||
		   KEY("itlblarge")) {
		if (parse_u64(val, &v, NULL, 1) < 0 || v > 1024 ||
		    (v >= 4 && v % 4 != 0))
			goto bad;
		*(KEY("dtlb") ? &cfg.t.dtlb : KEY("dtlblarge") ? &cfg.t.dtlb_large :
		  KEY("itlb") ? &cfg.t.itlb : &cfg.t.itlb_large) = v;
	} else if (KEY("buscpus")) {
		if (parse_u64(val, &v, NULL, 1) < 0 || v > MAX_CPUS)
			goto bad;
		cfg.t.bus_cpus = v;
	} else if (KEY("crossbus")) {
		if (parse_u64(val, &v, NULL, 1) < 0 || v > 1000000)
			goto bad;
		cfg.t.cross_bus = v;
	} else if (KEY("clients")) {
		char *end;

		if (parse_u64(val, &v, &end, 0) < 0 || *end != ':' ||
		    v == 0 || v > 1000000)
			goto bad;
		cfg.clientcost = v;
		if (parse_u64(end + 1, &v, NULL, 1) < 0 || v > 1000000000)
			goto bad;
		cfg.clientskew = v;
	} else if (KEY("skipheld")) {
		if (parse_u64(val, &v, NULL, 1) < 0 || v > 1)
			goto bad;
		cfg.noskipheld = v == 0;
	} else if (KEY("clienthold")) {
		if (parse_u64(val, &v, NULL, 1) < 0 || v > 1)
			goto bad;
		cfg.clienthold = (int)v;
	} else if (KEY("dma")) {
		if (parse_u64(val, &v, NULL, 1) < 0 || v > 100000000)
			goto bad;
		cfg.dma = v;
	} else if (KEY("quantum")) {
		if (parse_u64(val, &v, NULL, 1) < 0 || v > 1000000000)
			goto bad;
		cfg.quantum = v;
	} else if (KEY("busdepth")) {
		if (parse_u64(val, &v, NULL, 1) < 0 || v < 1 || v > CM_IOQ_MAX)
			goto bad;
		cfg.t.bus_depth = v;
	} else if (KEY("unit")) {
		if (parse_u64(val, &cfg.unit, NULL, 1) < 0 || cfg.unit == 0)
			goto bad;
	} else if (KEY("lock")) {
		/* VADDR, or VADDR:STRIDE:COUNT (COUNT words STRIDE apart) */
		uint64_t stride = 4, count = 1;
		char *e;

		if (parse_u64(val, &cfg.lock, &e, 0) < 0 || cfg.lock == 0 ||
		    cfg.lock % 4 != 0)
			goto bad;
		if (*e != '\0' &&
		    (*e != ':' || parse_u64(e + 1, &stride, &e, 0) < 0 ||
		     *e != ':' || parse_u64(e + 1, &count, NULL, 1) < 0 ||
		     stride == 0 || stride % 4 != 0 || stride > 1u << 20 ||
		     count == 0 || count > MAX_LOCKS ||
		     cfg.lock > UINT64_MAX - stride * count))
			goto bad_lock;
		cfg.lock_stride = stride;
		cfg.nlocks = (unsigned)count;
		cfg.lock_span = stride * count;
	} else if (KEY("lockbytes")) {
		if (parse_u64(val, &v, NULL, 1) < 0 || (v != 1 && v != 4))
			goto bad;
		cfg.lock_shift = v == 1 ? 0 : 2;
	} else if (KEY("publish")) {
		if (parse_u64(val, &cfg.publish, NULL, 1) < 0 ||
		    cfg.publish == 0 || cfg.publish % 8 != 0 ||
		    cfg.publish > UINT64_MAX - 8 * MAX_CPUS)
			goto bad;
	} else {
		fprintf(stderr, "busmon: unknown option '%s' (known: out, l1d, "
			"l2, l1i, l1repl, l2repl, inclusive, cpus, measured, user, rqloop, sched, m5base, "
			"publish, timing, busdepth, buscpus, crossbus, locked, storebuf, "
			"dtlb, dtlblarge, itlb, itlblarge, overlap, quantum, clients, clienthold, skipheld, dma, dmabell, lock, "
			"lockbytes, "
			"free, unit)\n", arg);
		return -1;
	}
	return 0;
#undef KEY
bad:
	fprintf(stderr, "busmon: bad value in '%s'\n", arg);
	return -1;
bad_lock:
	fprintf(stderr, "busmon: bad value in '%s': expected VADDR or "
		"VADDR:STRIDE:COUNT, STRIDE a nonzero multiple of 4 up to "
		"1048576, COUNT 1..%d\n", arg, MAX_LOCKS);
	return -1;
bad_timing:
	fprintf(stderr, "busmon: bad value in '%s': expected INST:L2:MEM:HITM:"
		"INVAL:BUSLINE:BUSADDR in core cycles, each at most 1000000\n",
		arg);
	return -1;
bad_geom:
	fprintf(stderr, "busmon: bad value in '%s': expected SIZE:ASSOC:LINE "
		"in bytes, e.g. l1d=8192:2:32\n", arg);
	return -1;
bad_range:
	fprintf(stderr, "busmon: bad value in '%s': expected 0xSTART-0xEND "
		"with START < END (at most %d ranges per key)\n", arg,
		MAX_RANGES);
	return -1;
}

/* out= must name an existing, writable directory; keep it absolute. */
static int check_out(void)
{
	char abs[PATH_MAX];
	struct stat st;

	if (cfg.out[0] == '\0') {
		fprintf(stderr, "busmon: the out=DIR option is required\n");
		return -1;
	}
	if (stat(cfg.out, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "busmon: out=%s: directory does not exist\n",
			cfg.out);
		return -1;
	}
	if (access(cfg.out, W_OK) != 0 || realpath(cfg.out, abs) == NULL) {
		fprintf(stderr, "busmon: out=%s: directory is not writable\n",
			cfg.out);
		return -1;
	}
	strcpy(cfg.out, abs);
	return 0;
}

/* Drop outputs of an earlier run in the same directory: dumps append. */
static void remove_old_outputs(void)
{
	static const char *const names[] = {
		"stats.txt", "bus_offsets.csv", "counters.csv",
	};
	char path[PATH_MAX + 64];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		path_in_out(path, sizeof(path), names[i]);
		unlink(path);
	}
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	char err[256];

	/* Defaults: the Pentium Pro's caches and gem5's m5-op base. */
	memset(&cfg, 0, sizeof(cfg));
	cfg.l1 = (struct cm_geom){ 8192, 2, 32 };
	cfg.l2 = (struct cm_geom){ 524288, 4, 32 };
	cfg.m5base = 0xffff0000u;
	cfg.l1repl = cfg.l2repl = CM_REPL_LRU;
	cfg.inclusive = 1;
	cfg.t.bus_depth = 8;		/* the P6 in-order queue (facts section 2) */
	cfg.lock_shift = 2;		/* 4-byte lock words */
	cfg.smp_vcpus = info->system_emulation ? info->system.smp_vcpus : 1;
	cfg.ncpus = cfg.smp_vcpus > 0 ? (unsigned)cfg.smp_vcpus : 1;
	cfg.argc = argc;
	cfg.argv = argv;

	for (int i = 0; i < argc; i++)
		if (parse_option(argv[i]) < 0)
			return -1;
	if (cfg.measured != 0) {
		if (cfg.measured > (unsigned)cfg.smp_vcpus) {
			fprintf(stderr, "busmon: measured=%u is more than the "
				"%d vCPUs\n", cfg.measured, cfg.smp_vcpus);
			return -1;
		}
		cfg.ncpus = cfg.measured;
	}
	if (!info->system_emulation) {
		fprintf(stderr, "busmon: needs system emulation "
			"(qemu-system-*), not user mode\n");
		return -1;
	}
	if (check_out() < 0)
		return -1;
	if (cm_init(&model, cfg.ncpus, &cfg.l1, &cfg.l2, err, sizeof(err)) < 0) {
		fprintf(stderr, "busmon: l1d=%" PRIu64 ":%" PRIu64 ":%" PRIu64
			" l2=%" PRIu64 ":%" PRIu64 ":%" PRIu64 ": %s\n",
			cfg.l1.size, cfg.l1.assoc, cfg.l1.line,
			cfg.l2.size, cfg.l2.assoc, cfg.l2.line, err);
		return -1;
	}
	if (cfg.l1i.size != 0 &&
	    cm_enable_l1i(&model, &cfg.l1i, err, sizeof(err)) < 0) {
		fprintf(stderr, "busmon: l1i=%" PRIu64 ":%" PRIu64 ":%" PRIu64
			": %s\n", cfg.l1i.size, cfg.l1i.assoc, cfg.l1i.line, err);
		cm_free(&model);
		return -1;
	}
	if (cfg.lock != 0 && !cfg.timing) {
		fprintf(stderr, "busmon: lock= needs timing= (the lockmeter "
			"measures modelled time)\n");
		cm_free(&model);
		return -1;
	}
	if (cfg.quantum != 0 && !cfg.timing) {
		fprintf(stderr, "busmon: quantum= needs timing= (it bounds the "
			"skew of the modelled clocks)\n");
		cm_free(&model);
		return -1;
	}
	if (cfg.clienthold && !cfg.timing) {
		fprintf(stderr, "busmon: clienthold= needs timing= (it holds "
			"the modelled clocks)\n");
		cm_free(&model);
		return -1;
	}
	if (cfg.clientcost != 0 && (!cfg.timing || cfg.measured == 0 ||
				    cfg.clienthold)) {
		fprintf(stderr, "busmon: clients= needs timing= and measured= "
			"(it gives the client CPUs modelled clocks), and not "
			"clienthold=\n");
		cm_free(&model);
		return -1;
	}
	if (cfg.branch_miss != 0 && !cfg.timing) {
		fprintf(stderr, "busmon: branch= needs timing= (a misprediction "
			"costs modelled time)\n");
		cm_free(&model);
		return -1;
	}
	if (cfg.branch_miss != 0) {
		btbs = calloc(model.ncpus, sizeof(*btbs));
		for (unsigned c = 0; btbs != NULL && c < model.ncpus; c++)
			if (btb_init(&btbs[c], cfg.btb_entries) < 0) {
				fprintf(stderr, "busmon: branch=: the BTB's entries "
					"must be a power of two, 4 to %u, got %u\n",
					BTB_MAX_ENTRIES, cfg.btb_entries);
				cm_free(&model);
				return -1;
			}
		if (btbs == NULL) {
			fprintf(stderr, "busmon: out of memory for the BTBs\n");
			cm_free(&model);
			return -1;
		}
	}
	if ((cfg.quantum != 0 || cfg.clienthold || cfg.clientcost != 0) &&
	    (time_handle = qemu_plugin_request_time_control()) == NULL) {
		fprintf(stderr, "busmon: quantum=, clients= and clienthold= need QEMU's "
			"time control, which another plugin holds\n");
		cm_free(&model);
		return -1;
	}
	/* held turns skipped rather than cut to a TB (QEMU patch 0007) */
	if ((cfg.quantum != 0 || cfg.clientcost != 0) && !cfg.noskipheld &&
	    qemu_plugin_rr_hold_turns != NULL) {
		qemu_plugin_rr_hold_turns(time_handle, turn_held);
		skipping_held = 1;
	}
	for (unsigned i = 0; i < MAX_LOCKS; i++)
		lockw[i].holder = lockw[i].gone.cpu = -1;
	if (cfg.timing && cm_enable_timing(&model, &cfg.t, err, sizeof(err)) < 0) {
		fprintf(stderr, "busmon: %s\n", err);
		cm_free(&model);
		return -1;
	}
	if (cfg.timing && cfg.dma && cm_dma_gap(&model, cfg.dma) < 0) {
		fprintf(stderr, "busmon: out of memory for the DMA queue\n");
		cm_free(&model);
		return -1;
	}
	/* Every CPU is parked until it first runs (a halted CPU's first TB
	 * wakes it), so CPUs not yet started do not hold the bus back. */
	for (unsigned c = 0; c < MAX_CPUS; c++)
		wake_at[c] = NO_WAKE;
	for (unsigned c = 0; cfg.timing && c < model.ncpus; c++) {
		halted[c] = 1;
		park_update(c);
	}
	cm_set_inclusive(&model, cfg.inclusive);
	if (cm_set_repl(&model, CM_LEVEL_L1D, cfg.l1repl, err, sizeof(err)) < 0 ||
	    (model.has_l1i && cm_set_repl(&model, CM_LEVEL_L1I, cfg.l1repl, err,
					  sizeof(err)) < 0) ||
	    cm_set_repl(&model, CM_LEVEL_L2, cfg.l2repl, err, sizeof(err)) < 0) {
		fprintf(stderr, "busmon: %s\n", err);
		cm_free(&model);
		return -1;
	}
	remove_old_outputs();
	write_json();
	if (tlb_on()) {		/* page walks: CR3, memory */
		regbuf = g_byte_array_new();
		membuf = g_byte_array_new();
		qemu_plugin_register_vcpu_init_cb(id, vcpu_init);
	}
	if (cfg.timing && (cfg.t.store_buffer + cfg.t.overlap > 0 || btbs != NULL))
		qemu_plugin_register_vcpu_discon_cb(id,
			QEMU_PLUGIN_DISCON_INTERRUPT | QEMU_PLUGIN_DISCON_EXCEPTION,
			vcpu_discon);
	qemu_plugin_register_vcpu_tb_trans_cb(id, vcpu_tb_trans);
	qemu_plugin_register_atexit_cb(id, plugin_exit, NULL);
	return 0;
}
