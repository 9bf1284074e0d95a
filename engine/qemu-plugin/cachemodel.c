/*
 * cachemodel.c - L1D/L2 caches per CPU, MESI over one shared bus, and a
 * bus monitor that records the page offset of every bus transaction.
 *
 * The model, bottom-up:
 *
 *   - A cache level is nsets x assoc frames.  A physical address splits
 *     into lineno = paddr >> line_shift and set = lineno & set_mask; the
 *     whole lineno is kept as the tag, so a victim's address can be
 *     rebuilt for write-backs and back-invalidation.
 *   - Replacement, per level: an invalid frame if any, else by policy.
 *     LRU: each use stamps the frame with the cache's clock; the victim is
 *     the oldest stamp.  Tree pseudo-LRU: assoc - 1 bits per set form a
 *     binary tree over the ways; a use points every node on its way's path
 *     away from it, and the victim is found by following the pointers.
 *   - Coherence is kept at L2, the bus-facing level.  An L1 frame's state
 *     always equals the L2 state of the same line (a store sets both to
 *     M), so a store that hits L1 in E or M needs no bus traffic.  By
 *     default L1 is inclusive in L2.  Without inclusion an L1 copy may
 *     outlive its L2 copy; snoops then look at L1 too, and a dirty L1-only
 *     line is written back when it leaves L1.
 *   - The optional L1I is inclusive in L2 too, and never dirty: its lines
 *     are only valid (S) or invalid.  A snooped RFO or INVALIDATE, and a
 *     store by the CPU itself (self-modifying code), invalidate a copy.
 *   - Bus transactions: READ on a load miss, RFO on a store miss (or a
 *     locked RMW's load miss), INVALIDATE on a store (or locked load) to
 *     a Shared line, WRITEBACK when a Modified line leaves L2.  A snoop
 *     that hits a remote Modified line (HITM) supplies the data inside
 *     the same transaction: it is counted as `hitm`, not as another
 *     transaction.  On a READ the owner keeps a clean S copy (memory is
 *     updated by the implicit write-back), so no WRITEBACK follows.
 *   - The monitor sees what a P6 bus tracer sees: a fill starts its burst
 *     at the critical 8-byte chunk, so READ/RFO are recorded at the
 *     missing access's address rounded down to 8; WRITEBACK/INVALIDATE
 *     carry the line address.
 *   - Each CPU remembers the lines its run-queue loop has loaded and how
 *     each last left (a remote write, or replacement and by what), so a
 *     loop miss can be counted by cause as well as by where its fill came
 *     from (HITM, a clean remote copy, memory).
 */
#include "cachemodel.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cm_kind_name[CM_NKINDS] = {
	"read", "rfo", "writeback", "invalidate",
};

const char *const cm_mode_name[CM_NMODES] = { "kernel", "user" };

const char *const cm_repl_name[2] = { "LRU", "PLRU" };

const char *const cm_counter_name[CM_NCOUNTERS] = {
	"insts",
	"l1d_read_accesses", "l1d_read_misses",
	"l1d_write_accesses", "l1d_write_misses",
	"l2_accesses", "l2_misses", "l2_writebacks",
	"bus_read", "bus_rfo", "bus_writeback", "bus_invalidate",
	"hitm",
	"rqloop_l1d_read_accesses", "rqloop_l1d_read_misses",
	"rqloop_l2_read_accesses", "rqloop_l2_read_misses",
	"rqloop_l2_read_hitm", "rqloop_l2_read_shared",
	"rqloop_l2_read_first", "rqloop_l2_read_invalidated",
	"rqloop_l2_read_evicted_loop", "rqloop_l2_read_evicted_kernel",
	"rqloop_l2_read_evicted_user",
	"l1i_accesses", "l1i_misses",
	"cycles", "bus_wait_cycles", "store_stall_cycles",
	"dtlb_misses", "itlb_misses", "overlap_stall_cycles",
};

_Static_assert(CM_NCOUNTERS == 32, "cm_counter_name out of date");

static int is_pow2(uint64_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

static unsigned log2u(uint64_t x)
{
	unsigned n = 0;

	while ((1ull << n) < x)
		n++;
	return n;
}

/* ---- geometry ---------------------------------------------------------- */

int cm_geom_check(const char *what, const struct cm_geom *g,
		  char *err, size_t errlen)
{
	uint64_t setsize;

	if (g->size == 0 || g->assoc == 0 || g->line == 0) {
		snprintf(err, errlen, "The %s size, associativity and line size "
			 "must all be nonzero.", what);
		return -1;
	}
	if (!is_pow2(g->line)) {
		snprintf(err, errlen, "The %s line size (%llu) must be a power "
			 "of two.", what, (unsigned long long)g->line);
		return -1;
	}
	if (g->line < CM_CHUNK || g->line > CM_PAGE_SIZE) {
		snprintf(err, errlen, "The %s line size (%llu) must be between "
			 "%u and %u bytes.", what, (unsigned long long)g->line,
			 CM_CHUNK, CM_PAGE_SIZE);
		return -1;
	}
	if (!is_pow2(g->size)) {
		snprintf(err, errlen, "The %s size (%llu) must be a power of "
			 "two.", what, (unsigned long long)g->size);
		return -1;
	}
	if (!is_pow2(g->assoc)) {
		snprintf(err, errlen, "The %s associativity (%llu) must be a "
			 "power of two.", what, (unsigned long long)g->assoc);
		return -1;
	}
	setsize = g->assoc * g->line;
	if (g->size % setsize != 0) {
		snprintf(err, errlen, "The %s size (%llu) must be divisible by "
			 "assoc x line (%llu x %llu = %llu).", what,
			 (unsigned long long)g->size,
			 (unsigned long long)g->assoc,
			 (unsigned long long)g->line,
			 (unsigned long long)setsize);
		return -1;
	}
	return 0;
}

/* ---- one cache level --------------------------------------------------- */

static int cache_init(struct cm_cache *c, const struct cm_geom *g)
{
	uint64_t nsets = g->size / (g->assoc * g->line);

	c->lines = calloc(nsets * g->assoc, sizeof(*c->lines));
	if (c->lines == NULL)
		return -1;
	c->plru = NULL;
	c->set_mask = nsets - 1;
	c->assoc = (uint32_t)g->assoc;
	c->repl = CM_REPL_LRU;
	c->clock = 0;
	return 0;
}

static void cache_free(struct cm_cache *c)
{
	free(c->lines);
	free(c->plru);
	c->lines = NULL;
	c->plru = NULL;
}

static struct cm_line *cache_set(const struct cm_cache *c, uint64_t lineno)
{
	return c->lines + (lineno & c->set_mask) * c->assoc;
}

/* The valid frame holding lineno, or NULL. */
static struct cm_line *cache_find(const struct cm_cache *c, uint64_t lineno)
{
	struct cm_line *set = cache_set(c, lineno);

	for (uint32_t i = 0; i < c->assoc; i++)
		if (set[i].state != CM_I && set[i].lineno == lineno)
			return &set[i];
	return NULL;
}

/*
 * Tree pseudo-LRU.  Node n (1 .. assoc-1, heap order: children 2n, 2n+1)
 * is bit n of the set's word; 0 sends the victim search left, 1 right.
 * The leaves, assoc .. 2*assoc-1, are the ways.
 */
static void plru_use(uint64_t *bits, uint32_t assoc, uint32_t way)
{
	for (uint32_t node = assoc + way; node > 1; node >>= 1) {
		uint32_t parent = node >> 1;

		if (node & 1)		/* used the right child: go left */
			*bits &= ~(1ull << parent);
		else
			*bits |= 1ull << parent;
	}
}

static uint32_t plru_victim(uint64_t bits, uint32_t assoc)
{
	uint32_t node = 1;

	while (node < assoc)
		node = 2 * node + ((bits >> node) & 1);
	return node - assoc;
}

static void cache_touch(struct cm_cache *c, struct cm_line *l)
{
	uint64_t idx = (uint64_t)(l - c->lines);

	if (c->repl == CM_REPL_PLRU)
		plru_use(&c->plru[idx / c->assoc], c->assoc,
			 (uint32_t)(idx % c->assoc));
	else
		l->stamp = ++c->clock;
}

/* The frame to refill for lineno: an invalid one first, else by policy. */
static struct cm_line *cache_victim(const struct cm_cache *c, uint64_t lineno)
{
	struct cm_line *set = cache_set(c, lineno);
	struct cm_line *v = &set[0];

	for (uint32_t i = 0; i < c->assoc; i++)
		if (set[i].state == CM_I)
			return &set[i];
	if (c->repl == CM_REPL_PLRU)
		return &set[plru_victim(c->plru[lineno & c->set_mask], c->assoc)];
	for (uint32_t i = 1; i < c->assoc; i++)
		if (set[i].stamp < v->stamp)
			v = &set[i];
	return v;
}

/* ---- the lines the run-queue loop loads ------------------------------- */

/* The slot of lineno in t: its own, or the empty one where it would go. */
static uint32_t loop_slot(const struct cm_loop_lines *t, uint64_t lineno)
{
	uint32_t i = (uint32_t)((lineno * 0x9e3779b97f4a7c15ull) >>
			       (64 - CM_LOOP_BITS));

	while (t->key[i] != 0 && t->key[i] != lineno + 1)
		i = (i + 1) & (CM_LOOP_LINES - 1);
	return i;
}

/* How lineno last left this CPU, or -1 if its loop never loaded it. */
static int loop_gone(const struct cm_loop_lines *t, uint64_t lineno)
{
	uint32_t i = loop_slot(t, lineno);

	return t->key[i] != 0 ? t->gone[i] : -1;
}

/*
 * A loop load of lineno: remember the line (if there is room) and return
 * how it last left, or -1 if this is the loop's first load of it.  The
 * caller then holds the line, so the cause is cleared.
 */
static int loop_load(struct cm_loop_lines *t, uint64_t lineno)
{
	uint32_t i = loop_slot(t, lineno);
	int g = -1;

	if (t->key[i] != 0)
		g = t->gone[i];
	else if (t->used < CM_LOOP_LINES / 2) {
		t->key[i] = lineno + 1;
		t->used++;
	} else {
		t->full++;
		return -1;
	}
	t->gone[i] = CM_GONE_NEVER;
	return g;
}

/* Where t keeps how lineno last left, or NULL if the loop never loaded
 * it. */
static uint8_t *loop_entry(struct cm_loop_lines *t, uint64_t lineno)
{
	uint32_t i = loop_slot(t, lineno);

	return t->key[i] != 0 ? &t->gone[i] : NULL;
}

/* lineno left this CPU's cache for reason `why`: note it if the loop
 * loads that line. */
static void loop_left(struct cm_loop_lines *t, uint64_t lineno,
		      enum cm_gone why)
{
	uint8_t *gone = loop_entry(t, lineno);

	if (gone != NULL)
		*gone = (uint8_t)why;
}

/* ---- the store buffer ------------------------------------------------- */

/*
 * A P6 posts stores: a store retires into the store buffer and the CPU
 * goes on while its line is gained (p6-timing-facts.md; machines.toml
 * gives the size and its source).  Each entry completes at the later of
 * its own cost after the store (its L2 hit, or its RFO or INVALIDATE:
 * the request goes to the bus when the store executes) and the entry
 * before it (stores complete in program order).  The CPU waits only for
 * a store that finds every entry taken, or, at a locked RMW, for all of
 * them.
 */

/*
 * Load misses outside the run-queue loop (with `overlap`) use the same
 * machinery: up to `overlap` of them are in flight while the CPU goes
 * on, each completing at its own cost after it was made (loads need not
 * complete in order), and the CPU waits for the oldest when a further
 * one finds them all in flight.  Nothing bounds how far the CPU runs
 * past a miss (a P6's 40-entry reorder buffer would), so this is an
 * upper bound on the overlap, not an estimate.
 */

/* The posted buffers of a CPU: stores, load misses. */
enum { CM_BUF_STORE = 0, CM_BUF_LOAD = 1 };

static uint64_t buf_cap(const struct cm_model *m, int k)
{
	return k == CM_BUF_STORE ? m->t.store_buffer : m->t.overlap;
}

/* Charge `cycles` to cpu: to its clock, or to the buffered access being
 * modelled. */
static void charge(struct cm_model *m, unsigned cpu, unsigned mode,
		   uint64_t cycles)
{
	struct cm_cpu *p = &m->cpu[cpu];

	if (p->sb_defer)
		p->sb_cost += cycles;
	else
		cm_stall(m, cpu, mode, cycles);
}

static struct cm_sbentry *sb_at(struct cm_model *m, struct cm_cpu *p, int k,
				unsigned i)
{
	struct cm_posted *b = &p->buf[k];
	unsigned j = b->head + i;	/* head < cap and i <= cap: no division */

	if (j >= buf_cap(m, k))
		j -= (unsigned)buf_cap(m, k);
	return &b->e[j];
}

static void sb_pop(struct cm_model *m, struct cm_cpu *p, int k)
{
	struct cm_posted *b = &p->buf[k];

	if (++b->head == buf_cap(m, k))
		b->head = 0;
	b->len--;
	b->seq++;
}

/* Drop the entries that have completed by the CPU's clock, in order; an
 * entry whose request the bus has not served yet stays. */
static void sb_retire(struct cm_model *m, struct cm_cpu *p, int k)
{
	while (p->buf[k].len > 0 && sb_at(m, p, k, 0)->pend == 0 &&
	       sb_at(m, p, k, 0)->done <= p->now)
		sb_pop(m, p, k);
}

/*
 * The CPU waits for its oldest entry: until its completion as known, and
 * if the bus has not served its request yet, for that request's queueing
 * too, charged when it is served as for a load (so it is no longer the
 * entry's).
 */
static void sb_wait_oldest(struct cm_model *m, unsigned cpu, unsigned mode,
			   int k)
{
	struct cm_cpu *p = &m->cpu[cpu];
	struct cm_sbentry *e = sb_at(m, p, k, 0);

	if (e->done > p->now) {
		if (k == CM_BUF_STORE)
			p->ctr[mode].store_stall_cycles += e->done - p->now;
		else
			p->ctr[mode].overlap_stall_cycles += e->done - p->now;
		cm_stall(m, cpu, mode, e->done - p->now);
	}
	for (unsigned i = 0; e->pend > 0 && i < p->qlen; i++) {
		struct cm_busreq *r = &p->q[(p->qhead + i) & (m->qcap - 1)];

		if (r->posted == 2 + k && r->sbseq == p->buf[k].seq) {
			r->posted = 0;
			e->pend--;
			m->bs.store_waits += k == CM_BUF_STORE;
		}
	}
	sb_pop(m, p, k);
}

/* A locked RMW waits for every earlier load and store (SDM vol. 3A
 * 7.1.2). */
static void sb_drain(struct cm_model *m, unsigned cpu, unsigned mode)
{
	struct cm_cpu *p = &m->cpu[cpu];

	for (int k = CM_BUF_STORE; k <= CM_BUF_LOAD; k++)
		while (p->buf[k].e != NULL && p->buf[k].len > 0)
			sb_wait_oldest(m, cpu, mode, k);
}

/* Intel SDM vol. 3A section 11.10 (253668-032US): the store buffer is
 * drained at an exception or interrupt, at a serializing instruction
 * (P6 and later), at an I/O instruction and at a LOCK operation; the
 * CPU goes on when its posted stores have gained their lines. */
void cm_drain(struct cm_model *m, unsigned cpu, unsigned mode)
{
	if (m->timing)
		sb_drain(m, cpu, mode);
}

/* An access made at cycle `at`, whose line costs `cost` (its request went
 * to the bus then), takes an entry of buffer k, waiting for the oldest if
 * none is free.  Stores complete in order: no earlier than the entry
 * before. */
static void sb_push(struct cm_model *m, unsigned cpu, unsigned mode, int k,
		    uint64_t at, uint64_t cost)
{
	struct cm_cpu *p = &m->cpu[cpu];
	struct cm_posted *b = &p->buf[k];
	struct cm_sbentry *e;
	uint64_t done = at + cost;

	sb_retire(m, p, k);
	if (b->len == buf_cap(m, k)) {
		sb_wait_oldest(m, cpu, mode, k);
		sb_retire(m, p, k);
	}
	if (k == CM_BUF_STORE && b->len > 0 &&
	    done < sb_at(m, p, k, b->len - 1)->done)
		done = sb_at(m, p, k, b->len - 1)->done;
	e = sb_at(m, p, k, b->len);
	e->own = at + cost;
	e->done = done;
	e->pend = p->sb_pend;
	b->len++;
}

/* Entry `seq` of buffer k had its request served after queueing `d`
 * cycles: the entry completes that much later (a store's later entries
 * no earlier than it). */
static void sb_delay(struct cm_model *m, struct cm_cpu *p, int k,
		     uint64_t seq, uint64_t d)
{
	struct cm_posted *b = &p->buf[k];
	unsigned i = (unsigned)(seq - b->seq);
	struct cm_sbentry *e;

	if (seq >= b->seq + b->len) {	/* the access being modelled */
		p->sb_cost += d;
		p->sb_pend--;
		return;
	}
	e = sb_at(m, p, k, i);
	e->own += d;
	e->pend--;
	if (e->done < e->own)
		e->done = e->own;
	for (i++; k == CM_BUF_STORE && i < b->len; i++) {
		struct cm_sbentry *prev = e;

		e = sb_at(m, p, k, i);
		e->done = e->own > prev->done ? e->own : prev->done;
	}
}

/* ---- the bus ----------------------------------------------------------- */

/* Record one transaction at page offset of `addr` (8-byte bucket). */
static void bus_record(struct cm_model *m, unsigned cpu, unsigned mode,
		       enum cm_kind kind, uint64_t addr)
{
	m->cpu[cpu].ctr[mode].bus[kind]++;
	m->cpu[cpu].wb_pending += kind == CM_WRITEBACK;
	m->hist[cpu][mode][kind][(addr & (CM_PAGE_SIZE - 1)) / CM_CHUNK]++;
}

/*
 * The bus in modelled time.  Round-robin runs the CPUs in slices of
 * instructions, not of modelled time, so a CPU may ask for the bus at a
 * modelled time earlier than requests other CPUs made before it in host
 * order.  Serving requests as they come would give the bus to whichever
 * CPU ran first (a CPU behind in modelled time would queue behind the
 * others' future).  So each CPU's requests wait in its own queue, and the
 * bus serves them in modelled-time order, the earliest head first, once
 * every CPU that is not parked has passed it: no request can come before
 * it any more.  The CPU is charged the unloaded latency at once and its
 * queueing when the request is served, at most a skew later.
 *
 * Serving one (P6 bus, p6-timing-facts.md section 2): the request phase
 * takes the address bus for bus_addr cycles, as soon as it is free and
 * fewer than bus_depth transactions are in flight (the in-order queue);
 * a line's data phase takes the data bus for bus_line cycles, at the end
 * of the latency or when the previous data phase ends (data phases follow
 * request order).  The transaction completes at the end of its data
 * phase, or latency after its request phase if it moves no data.
 */

/* The earliest time a request can still come from: the slowest clock of
 * the CPUs that are not parked. */
static uint64_t bus_floor(const struct cm_model *m)
{
	uint64_t f = UINT64_MAX;

	for (unsigned c = 0; c < m->ncpus; c++)
		if (!m->cpu[c].parked && m->cpu[c].now < f)
			f = m->cpu[c].now;
	return f;
}

/* When CPU p's oldest request counts as asked for (struct cm_busreq). */
static uint64_t bus_arrival(const struct cm_cpu *p, const struct cm_busreq *r)
{
	return r->t + (p->bus_charged - r->charged);
}

/* The CPU whose oldest waiting request came first (ties: lower CPU; a
 * card's line, "CPU" ncpus, after them), or -1 if none waits; *t gets its
 * arrival. */
static int bus_head(const struct cm_model *m, uint64_t *t)
{
	int best = -1;

	*t = 0;		/* set when a CPU waits (GCC cannot tell after inlining) */
	if (m->dqlen != 0) {
		best = (int)m->ncpus;
		*t = m->dq[0].t;
	}

	for (unsigned c = 0; c < m->ncpus; c++) {
		const struct cm_cpu *p = &m->cpu[c];
		uint64_t a;

		if (p->qlen == 0)
			continue;
		a = bus_arrival(p, &p->q[p->qhead]);
		if (best < 0 || a < *t || (a == *t && best == (int)m->ncpus)) {
			best = (int)c;
			*t = a;
		}
	}
	return best;
}

static unsigned bus_of(const struct cm_model *m, unsigned cpu)
{
	return m->nbuses > 1 ? cpu / (unsigned)m->t.bus_cpus : 0;
}

static void dma_serve(struct cm_model *m, uint64_t t);

/* Serve CPU c's oldest request, arrived at t (c == ncpus: a card's). */
static void bus_serve(struct cm_model *m, unsigned c, uint64_t t)
{
	if (c == m->ncpus) {
		dma_serve(m, t);
		return;
	}
	{
	struct cm_cpu *p = &m->cpu[c];
	struct cm_busreq *r = &p->q[p->qhead];
	struct cm_bus *b = &m->bus[bus_of(m, c)];
	struct cm_bus *x = r->cross ? &m->bus[1 - bus_of(m, c)] : NULL;
	uint64_t *slot = &b->ioq_end[b->seq % m->t.bus_depth];
	uint64_t a, end, wait, lat = r->lat + (x ? m->t.cross_bus : 0);

	if (t < m->served_t) {
		/* A CPU that was parked came back behind the bus: it is
		 * served now, but not charged for the gap. */
		t = m->served_t;
		m->bs.late++;
	}
	m->served_t = t;
	a = t > b->addr_free ? t : b->addr_free;
	if (a < *slot)
		a = *slot;		/* the in-order queue is full */
	if (x != NULL && a < x->addr_free)
		a = x->addr_free;	/* snooped on the other bus too */
	b->addr_free = a + m->t.bus_addr;
	if (x != NULL) {
		x->addr_free = a + m->t.bus_addr;
		x->transactions++;
		x->crossing++;
	}
	if (r->occ != 0) {
		uint64_t d = a + (lat > r->occ ? lat - r->occ : 0);

		if (d < b->data_free)
			d = b->data_free;
		if (r->cross == 2 && d < x->data_free)
			d = x->data_free;
		b->data_free = d + r->occ;
		b->data_cycles += r->occ;
		if (r->cross == 2) {
			x->data_free = d + r->occ;
			x->data_cycles += r->occ;
		}
		end = d + r->occ;
	} else {
		end = a + lat;
	}
	*slot = end;
	b->seq++;
	b->transactions++;
	wait = end - (t + lat);
	m->bs.transactions++;
	m->bs.addr_cycles += m->t.bus_addr;
	m->bs.data_cycles += r->occ;
	m->bs.wait_cycles += wait;
	if (!r->posted && p->now - r->t > m->bs.max_lag)
		m->bs.max_lag = p->now - r->t;
	if (r->posted >= 2)		/* a buffered access's entry waits */
		sb_delay(m, p, r->posted - 2, r->sbseq, wait + (lat - r->lat));
	if (!r->posted && wait + (lat - r->lat) != 0) {
		/* The queueing, and the crossing's cost (latency, not
		 * queueing), both delay the CPU's later requests. */
		p->now += wait + (lat - r->lat);
		p->ctr[r->mode].cycles += wait + (lat - r->lat);
		p->ctr[r->mode].bus_wait_cycles += wait;
		p->bus_charged += wait + (lat - r->lat);
	}
	p->qhead = (p->qhead + 1) & (m->qcap - 1);
	p->qlen--;
	}
}

/* Serve, in arrival order, every request no CPU can come before or tie
 * with (all clocks that are not parked are past it). */
static void bus_settle(struct cm_model *m)
{
	uint64_t floor = bus_floor(m), t;
	int c;

	while ((c = bus_head(m, &t)) >= 0 && t < floor)
		bus_serve(m, (unsigned)c, t);
}

void cm_bus_flush(struct cm_model *m)
{
	uint64_t t;
	int c;

	if (!m->timing)
		return;
	while ((c = bus_head(m, &t)) >= 0)
		bus_serve(m, (unsigned)c, t);
}

/* Queue one transaction asked for at cpu's clock; unless posted, the CPU
 * stalls `lat` cycles now and its queueing when it is served. */
static void bus_request(struct cm_model *m, unsigned cpu, unsigned mode,
			uint64_t occ, uint64_t lat, int posted)
{
	struct cm_cpu *p = &m->cpu[cpu];
	struct cm_busreq *r;
	uint64_t t;
	int c;

	if (!m->timing)
		return;
	while (p->qlen == m->qcap) {	/* full: serve the earliest anyway */
		c = bus_head(m, &t);
		bus_serve(m, (unsigned)c, t);
		m->bs.forced++;
	}
	r = &p->q[(p->qhead + p->qlen) & (m->qcap - 1)];
	r->t = p->now;
	r->charged = p->bus_charged;
	r->lat = (uint32_t)lat;
	r->occ = (uint32_t)occ;
	r->mode = (uint8_t)mode;
	if (!posted && p->sb_defer) {	/* a buffered access's line */
		int k = p->sb_defer - 1;

		posted = 2 + k;
		r->sbseq = p->buf[k].seq + p->buf[k].len;
		p->sb_pend++;
	}
	r->posted = (uint8_t)posted;
	r->cross = posted == 1 ? 0 : (uint8_t)m->snoop_cross;
	m->snoop_cross = 0;
	if (++p->qlen > m->bs.max_pending)
		m->bs.max_pending = p->qlen;
	if (posted != 1)
		charge(m, cpu, mode, lat);
	bus_settle(m);
}

/* The CPU stalls `lat` cycles plus its queueing for a bus transaction that
 * holds the data bus `occ` cycles (0: address only). */
static void bus_time(struct cm_model *m, unsigned cpu, unsigned mode,
		     uint64_t occ, uint64_t lat)
{
	bus_request(m, cpu, mode, occ, lat, 0);
}

/*
 * Write-backs are posted (the P6 has write-back buffers): they go on the
 * bus after the fill that caused them, their data right after their
 * request, and the CPU does not wait for them.
 */
static void wb_flush(struct cm_model *m, unsigned cpu)
{
	struct cm_cpu *p = &m->cpu[cpu];

	for (; p->wb_pending > 0; p->wb_pending--)
		bus_request(m, cpu, CM_KERNEL, m->t.bus_line,
			    m->t.bus_addr + m->t.bus_line, 1);
}

/* Drop lineno from a CPU's L1I, if it has one and holds the line. */
static void l1i_drop(struct cm_cpu *p, uint64_t lineno)
{
	struct cm_line *l;

	if (p->l1i.lines != NULL && (l = cache_find(&p->l1i, lineno)) != NULL) {
		l->state = CM_I;
		p->l1i_epoch++;
	}
}

/* Set other CPUs' copies of lineno to `to` (CM_S or CM_I) in L1 and L2. */
static void snoop_set(struct cm_cpu *o, uint64_t lineno, struct cm_line *l2,
		      enum cm_state to)
{
	struct cm_line *l1 = cache_find(&o->l1, lineno);

	l2->state = to;
	if (l1 != NULL)
		l1->state = to;
	if (to == CM_I)
		l1i_drop(o, lineno);	/* a READ leaves the clean copy */
}

/*
 * Snoop every other CPU for a transaction on lineno.  A READ downgrades
 * E/M copies to S; RFO and INVALIDATE invalidate all copies.  Returns
 * whether any other CPU held the line; *hitm says whether one held it M.
 */
static int snoop(struct cm_model *m, unsigned self, uint64_t lineno,
		 enum cm_kind kind, int *hitm)
{
	int shared = 0;

	*hitm = 0;
	m->snoop_cross = 0;
	for (unsigned c = 0; c < m->ncpus; c++) {
		struct cm_cpu *o = &m->cpu[c];
		struct cm_line *l2, *l1 = NULL;
		int far = bus_of(m, c) != bus_of(m, self);
		enum cm_state was = CM_I;

		if (c == self)
			continue;
		/* Looked up once: nothing below changes the caches before
		 * they are used. */
		if ((l2 = cache_find(&o->l2, lineno)) != NULL)
			was = (enum cm_state)l2->state;
		else if (!m->inclusive && (l1 = cache_find(&o->l1, lineno)) != NULL)
			was = (enum cm_state)l1->state;
		/* Another bus's coherency filter answers for its CPUs: it
		 * forwards the snoop only for a copy that must change (any,
		 * for a write; E or M, for a read). */
		if (far && was == CM_M && m->snoop_cross < 2)
			m->snoop_cross = 2;	/* the data come from there */
		else if (far && (kind != CM_READ ? was != CM_I : was == CM_E) &&
			 m->snoop_cross < 1)
			m->snoop_cross = 1;
		/* A remote write makes any copy of a loop line stale, held or
		 * not: the next loop miss on it is a coherence miss. */
		if (kind != CM_READ)
			loop_left(&o->loop, lineno, CM_GONE_INVALIDATED);
		if (l2 != NULL) {
			shared = 1;
			if (l2->state == CM_M)
				*hitm = 1;
			snoop_set(o, lineno, l2, kind == CM_READ ? CM_S : CM_I);
			continue;
		}
		if (m->inclusive)
			continue;	/* no L2 copy: no L1 copy either */
		/* Not inclusive: L1-only copies answer the snoop too. */
		if (l1 != NULL) {
			shared = 1;
			if (l1->state == CM_M)
				*hitm = 1;
			l1->state = kind == CM_READ ? CM_S : CM_I;
		}
		if (kind != CM_READ)
			l1i_drop(o, lineno);
		else if (cm_l1i_holds(m, c, lineno << m->line_shift))
			shared = 1;	/* a clean code copy makes the fill S */
	}
	return shared;
}

/* Start a READ, or an RFO if `own`, for the access at paddr; returns the
 * fill state.  *hitm says whether the data came from a remote M copy. */
static enum cm_state bus_fill(struct cm_model *m, unsigned cpu, unsigned mode,
			      uint64_t paddr, int own, int *hitm_out)
{
	enum cm_kind kind = own ? CM_RFO : CM_READ;
	int hitm, shared;

	shared = snoop(m, cpu, paddr >> m->line_shift, kind, &hitm);
	bus_record(m, cpu, mode, kind, paddr & ~(uint64_t)(CM_CHUNK - 1));
	m->cpu[cpu].ctr[mode].hitm += hitm;
	*hitm_out = hitm;
	/* A HITM line comes from the owner's cache in the same transaction
	 * (implicit write-back), so it costs the cache-to-cache latency. */
	bus_time(m, cpu, mode, m->t.bus_line, hitm ? m->t.hitm : m->t.mem);
	if (own)
		return CM_M;
	return shared ? CM_S : CM_E;
}

/* Store to a line this CPU holds Shared: invalidate the other copies. */
static void bus_upgrade(struct cm_model *m, unsigned cpu, unsigned mode,
			uint64_t lineno)
{
	int hitm;

	snoop(m, cpu, lineno, CM_INVALIDATE, &hitm);
	bus_record(m, cpu, mode, CM_INVALIDATE, lineno << m->line_shift);
	bus_time(m, cpu, mode, 0, m->t.inval);
}

/* ---- a network card's DMA ---------------------------------------------- */

const char *const cm_dma_dir_name[CM_DMA_NDIRS] = { "read", "write" };

/* Which buses hold a copy of lineno (bit b: bus b), and which a Modified
 * one, before the snoop changes them. */
static unsigned dma_holders(const struct cm_model *m, uint64_t lineno,
			    unsigned *modified)
{
	unsigned any = 0;

	*modified = 0;
	for (unsigned c = 0; c < m->ncpus; c++) {
		const struct cm_line *l = cache_find(&m->cpu[c].l2, lineno);

		if (l == NULL && !m->inclusive)
			l = cache_find(&m->cpu[c].l1, lineno);
		if (l == NULL || l->state == CM_I)
			continue;
		any |= 1u << bus_of(m, c);
		if (l->state == CM_M)
			*modified |= 1u << bus_of(m, c);
	}
	return any;
}

/* One DMA line transaction on bus b at time t: its address phase, and a
 * data phase if `data`.  Returns its queueing. */
static uint64_t dma_bus(struct cm_model *m, unsigned b, uint64_t t, int data)
{
	struct cm_bus *bus = &m->bus[b];
	uint64_t *slot = &bus->ioq_end[bus->seq % m->t.bus_depth];
	uint64_t a = t > bus->addr_free ? t : bus->addr_free, end;

	if (a < *slot)
		a = *slot;		/* the in-order queue is full */
	bus->addr_free = a + m->t.bus_addr;
	end = a + m->t.bus_addr;
	if (data) {
		uint64_t d = end > bus->data_free ? end : bus->data_free;

		bus->data_free = d + m->t.bus_line;
		bus->data_cycles += m->t.bus_line;
		m->bs.data_cycles += m->t.bus_line;
		end = d + m->t.bus_line;
	}
	*slot = end;
	bus->seq++;
	bus->transactions++;
	m->bs.addr_cycles += m->t.bus_addr;
	return a - t;
}

/* The cards' lines wait in a binary min-heap by (time, sequence): frames
 * are asked for out of time order (a frame sent now may start on its
 * wire later than one received now). */
static int dq_before(const struct cm_dmareq *a, const struct cm_dmareq *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void dq_swap(struct cm_dmareq *a, struct cm_dmareq *b)
{
	struct cm_dmareq x = *a;

	*a = *b;
	*b = x;
}

static void dq_push(struct cm_model *m, const struct cm_dmareq *r)
{
	unsigned i = m->dqlen++;

	m->dq[i] = *r;
	while (i > 0 && dq_before(&m->dq[i], &m->dq[(i - 1) / 2])) {
		dq_swap(&m->dq[i], &m->dq[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
}

static void dq_pop(struct cm_model *m)
{
	unsigned i = 0;

	m->dq[0] = m->dq[--m->dqlen];
	for (;;) {
		unsigned l = 2 * i + 1, r = l + 1, min = i;

		if (l < m->dqlen && dq_before(&m->dq[l], &m->dq[min]))
			min = l;
		if (r < m->dqlen && dq_before(&m->dq[r], &m->dq[min]))
			min = r;
		if (min == i)
			return;
		dq_swap(&m->dq[i], &m->dq[min]);
		i = min;
	}
}

/* Serve the cards' earliest line, asked for at t. */
static void dma_serve(struct cm_model *m, uint64_t t)
{
	const struct cm_dmareq r = m->dq[0];

	dq_pop(m);
	if (t < m->served_t)
		t = m->served_t;
	m->served_t = t;
	for (unsigned b = 0; b < m->nbuses; b++)
		if (r.addr >> b & 1)
			m->dma.wait_cycles += dma_bus(m, b, t, r.data >> b & 1);
}

int cm_dma_gap(struct cm_model *m, uint64_t cycles)
{
	m->dma_gap = cycles ? cycles : 1;
	if (m->dq == NULL)
		m->dq = calloc(CM_DMAQ_CAP, sizeof(*m->dq));
	return m->dq != NULL ? 0 : -1;
}

/* Queue one DMA line for the bus at t. */
static void dma_request(struct cm_model *m, uint64_t t, unsigned addr,
			unsigned data)
{
	struct cm_dmareq r;
	uint64_t ht;
	int c;

	if (m->dq == NULL && cm_dma_gap(m, m->dma_gap) < 0)
		return;			/* no memory: the line goes untimed */
	while (m->dqlen == CM_DMAQ_CAP) {	/* full: serve the earliest */
		c = bus_head(m, &ht);
		bus_serve(m, (unsigned)c, ht);
		m->bs.forced++;
	}
	r.t = t;
	r.seq = m->dqseq++;
	r.addr = (uint8_t)addr;
	r.data = (uint8_t)data;
	dq_push(m, &r);
	bus_settle(m);
}

void cm_dma(struct cm_model *m, uint64_t paddr, unsigned size, int write,
	    uint64_t t)
{
	uint64_t first = paddr >> m->line_shift;
	uint64_t last = (paddr + (size ? size : 1) - 1) >> m->line_shift;

	for (uint64_t ln = first; ln <= last; ln++) {
		uint64_t addr = ln << m->line_shift;
		unsigned modified = 0, held = 0;
		int hitm, shared;

		/* Which bus holds it matters only to two buses' timing; looked
		 * up before the snoop changes the copies. */
		if (m->timing && m->nbuses > 1)
			held = dma_holders(m, ln, &modified);
		/* m->ncpus is no CPU: every CPU is snooped. */
		shared = snoop(m, m->ncpus, ln, write ? CM_RFO : CM_READ, &hitm);
		m->snoop_cross = 0;
		m->dma.lines[write]++;
		m->dma.hist[write][(addr & (CM_PAGE_SIZE - 1)) / CM_CHUNK]++;
		m->dma.hitm += !write && hitm;
		m->dma.invalidated += write && shared;
		if (!m->timing)
			continue;
		if (m->nbuses == 1)
			dma_request(m, t, 1, 1);
		else if (held != 0)
			dma_request(m, t, held, write ? 0 : modified);
		t += m->dma_gap ? m->dma_gap : 1;
	}
}

/* ---- the hierarchy of one CPU ------------------------------------------ */

/*
 * Count a loop load's L2 miss: by where the fill came from (`fill`, the
 * fill state, and `hitm`), and by why the line was missing (`gone`, from
 * loop_load()).  A HITM fill is a coherence miss whatever `gone` says: the
 * remote copy may have gone from E to M silently.
 */
static void loop_miss(struct cm_counters *c, enum cm_state fill, int hitm,
		      int gone)
{
	c->rqloop_l2_read_misses++;
	c->rqloop_l2_read_hitm += hitm;
	c->rqloop_l2_read_shared += !hitm && fill == CM_S;
	if (hitm)
		gone = CM_GONE_INVALIDATED;
	switch (gone) {
	case CM_GONE_INVALIDATED:
		c->rqloop_l2_read_invalidated++;
		break;
	case CM_GONE_EVICTED_LOOP:
		c->rqloop_l2_read_evicted_loop++;
		break;
	case CM_GONE_EVICTED_KERNEL:
		c->rqloop_l2_read_evicted_kernel++;
		break;
	case CM_GONE_EVICTED_USER:
		c->rqloop_l2_read_evicted_user++;
		break;
	default:	/* never loaded by the loop, or the table is full */
		c->rqloop_l2_read_first++;
		break;
	}
}

/* Make room in L2 for lineno: back-invalidate the victim from L1 and
 * write it back if dirty.  Returns the frame to fill. */
static struct cm_line *l2_evict(struct cm_model *m, unsigned cpu,
				unsigned mode, uint64_t lineno)
{
	struct cm_cpu *p = &m->cpu[cpu];
	struct cm_line *v = cache_victim(&p->l2, lineno);
	struct cm_line *l1;
	uint8_t *left;

	if (v->state == CM_I)
		return v;
	left = loop_entry(&p->loop, v->lineno);
	if (left != NULL)		/* a loop line leaves: say for what */
		*left = loop_gone(&p->loop, lineno) >= 0 ? CM_GONE_EVICTED_LOOP :
			mode == CM_USER ? CM_GONE_EVICTED_USER :
			CM_GONE_EVICTED_KERNEL;
	l1 = cache_find(&p->l1, v->lineno);
	if (m->inclusive) {
		if (l1 != NULL)
			l1->state = CM_I;	/* back-invalidation */
		l1i_drop(p, v->lineno);
	} else if (l1 != NULL && l1->state == CM_M) {
		v->state = CM_I;	/* L1D keeps the dirty data: no write-back yet */
		return v;
	}
	if (v->state == CM_M) {
		p->ctr[mode].l2_writebacks++;
		bus_record(m, cpu, mode, CM_WRITEBACK, v->lineno << m->line_shift);
	}
	v->state = CM_I;
	return v;
}

/*
 * An access that missed L1: look it up in L2, go to the bus if needed,
 * and return the L2 frame now holding the line with enough permission.
 * `own` asks for ownership (M); `rq` says it is a run-queue-loop load,
 * and `gone` how its line last left this CPU (loop_load()).
 */
static struct cm_line *l2_access(struct cm_model *m, unsigned cpu,
				 unsigned mode, uint64_t paddr, int own,
				 int rq, int gone)
{
	struct cm_cpu *p = &m->cpu[cpu];
	uint64_t lineno = paddr >> m->line_shift;
	struct cm_line *l2 = cache_find(&p->l2, lineno);
	int hitm;

	p->ctr[mode].l2_accesses++;
	p->ctr[mode].rqloop_l2_read_accesses += rq;
	if (l2 != NULL) {
		cache_touch(&p->l2, l2);
		charge(m, cpu, mode, m->t.l2_hit);
		if (own && l2->state == CM_S)
			bus_upgrade(m, cpu, mode, lineno);
		if (own)
			l2->state = CM_M;
		return l2;
	}
	p->ctr[mode].l2_misses++;
	l2 = l2_evict(m, cpu, mode, lineno);
	l2->state = bus_fill(m, cpu, mode, paddr, own, &hitm);
	if (rq)
		loop_miss(&p->ctr[mode], l2->state, hitm, gone);
	l2->lineno = lineno;
	cache_touch(&p->l2, l2);
	return l2;
}

/* An access that needs ownership hit L1: gain it if needed. */
static void l1_own_hit(struct cm_model *m, unsigned cpu, unsigned mode,
		       struct cm_line *l1)
{
	struct cm_line *l2;

	if (l1->state == CM_M)
		return;			/* the common case: already dirty */
	l2 = cache_find(&m->cpu[cpu].l2, l1->lineno);
	if (l1->state == CM_S)
		bus_upgrade(m, cpu, mode, l1->lineno);
	l1->state = CM_M;		/* E -> M is silent */
	if (l2 != NULL)			/* always, by inclusion */
		l2->state = CM_M;
}

/*
 * One access that lies within a single line.  `store` is the direction,
 * which the counters follow.  Ownership is wanted by a store and also by
 * the load of a locked RMW: round-robin TCG reports `lock add` as a load
 * then a store, yet a P6 takes the line with one read for ownership, so
 * the load must not fetch it Shared first (READ, then INVALIDATE).
 */
static void access_line_now(struct cm_model *m, unsigned cpu, uint64_t paddr,
			    int store, unsigned flags)
{
	struct cm_cpu *p = &m->cpu[cpu];
	unsigned mode = (flags & CM_F_USER) ? CM_USER : CM_KERNEL;
	struct cm_counters *ctr = &p->ctr[mode];
	uint64_t lineno = paddr >> m->line_shift;
	struct cm_line *l1 = cache_find(&p->l1, lineno);
	struct cm_line *l2;
	int own = store || (flags & CM_F_LOCKED);
	int rq = !store && (flags & CM_F_RQLOOP);
	int gone = rq ? loop_load(&p->loop, lineno) : -1;

	if (own)
		l1i_drop(p, lineno);	/* the P6 snoops its own L1I on stores */
	/* A locked RMW waits for the CPU's earlier loads and stores to
	 * complete (SDM vol. 3A 7.1.2): `locked` cycles on top of gaining
	 * the line, charged once, at its load half. */
	if ((flags & CM_F_LOCKED) && !store) {
		sb_drain(m, cpu, mode);
		cm_stall(m, cpu, mode, m->t.locked);
	}
	if (store)
		ctr->l1d_write_accesses++;
	else
		ctr->l1d_read_accesses++;
	ctr->rqloop_l1d_read_accesses += rq;
	if (l1 != NULL) {
		cache_touch(&p->l1, l1);
		if (own)
			l1_own_hit(m, cpu, mode, l1);
		return;
	}
	if (store)
		ctr->l1d_write_misses++;
	else
		ctr->l1d_read_misses++;
	ctr->rqloop_l1d_read_misses += rq;
	l2 = l2_access(m, cpu, mode, paddr, own, rq, gone);
	/* The L1 victim needs no work while L2 mirrors it; without inclusion
	 * a dirty victim that L2 no longer holds is written back now. */
	l1 = cache_victim(&p->l1, lineno);
	if (!m->inclusive && l1->state == CM_M &&
	    cache_find(&p->l2, l1->lineno) == NULL) {
		ctr->l2_writebacks++;
		bus_record(m, cpu, mode, CM_WRITEBACK, l1->lineno << m->line_shift);
	}
	l1->lineno = lineno;
	l1->state = l2->state;
	cache_touch(&p->l1, l1);
	wb_flush(m, cpu);
}

/* One access within a line; a store (not part of a locked RMW) goes
 * through the store buffer when there is one, and a load outside the
 * run-queue loop (not a locked RMW's) that misses L1 through the load
 * buffer (`overlap`) when there is one. */
static void access_line(struct cm_model *m, unsigned cpu, uint64_t paddr,
			int store, unsigned flags)
{
	struct cm_cpu *p = &m->cpu[cpu];
	uint64_t at = p->now;
	int k = store ? CM_BUF_STORE : CM_BUF_LOAD;

	if (p->buf[k].e == NULL || (flags & CM_F_LOCKED) ||
	    (!store && (flags & CM_F_RQLOOP))) {
		access_line_now(m, cpu, paddr, store, flags);
		return;
	}
	p->sb_defer = k + 1;
	p->sb_cost = 0;
	p->sb_pend = 0;
	access_line_now(m, cpu, paddr, store, flags);
	p->sb_defer = 0;
	if (k == CM_BUF_STORE || p->sb_cost > 0 || p->sb_pend > 0)
		sb_push(m, cpu, (flags & CM_F_USER) ? CM_USER : CM_KERNEL, k,
			at, p->sb_cost);
}

void cm_access(struct cm_model *m, unsigned cpu, uint64_t paddr,
	       unsigned size, int store, unsigned flags)
{
	uint64_t line = 1ull << m->line_shift;
	uint64_t end = paddr + (size ? size : 1);

	/* Split at line boundaries; each piece starts at its own address,
	 * which is also its critical chunk. */
	while (paddr < end) {
		uint64_t next = (paddr | (line - 1)) + 1;

		access_line(m, cpu, paddr, store, flags);
		if (next <= paddr)	/* wrapped at the top of the space */
			break;
		paddr = next;
	}
}

/* One fetch within a single line. */
static void fetch_line(struct cm_model *m, unsigned cpu, uint64_t paddr,
		       unsigned flags)
{
	struct cm_cpu *p = &m->cpu[cpu];
	unsigned mode = (flags & CM_F_USER) ? CM_USER : CM_KERNEL;
	uint64_t lineno = paddr >> m->line_shift;
	struct cm_line **mru = &p->l1i_mru[lineno & p->l1i.set_mask];
	struct cm_line *l = *mru;

	p->ctr[mode].l1i_accesses++;
	/* The line this CPU fetched last in this set, still there: a hit.
	 * Only fetches touch or fill the L1I, so that frame is the most
	 * recently used of its set (LRU: highest stamp in the set; PLRU: the
	 * tree points away from it), and touching it again would change no
	 * replacement decision. */
	if (l != NULL && l->lineno == lineno && l->state != CM_I)
		return;
	p->l1i_epoch++;
	l = cache_find(&p->l1i, lineno);
	if (l != NULL) {
		cache_touch(&p->l1i, l);
		*mru = l;
		return;
	}
	p->ctr[mode].l1i_misses++;
	l2_access(m, cpu, mode, paddr, 0, 0, -1);
	l = cache_victim(&p->l1i, lineno);
	l->lineno = lineno;
	l->state = CM_S;
	cache_touch(&p->l1i, l);
	*mru = l;
	wb_flush(m, cpu);
}

void cm_fetch(struct cm_model *m, unsigned cpu, uint64_t paddr,
	      unsigned size, unsigned flags)
{
	uint64_t line = 1ull << m->line_shift;
	uint64_t end = paddr + (size ? size : 1);

	if (!m->has_l1i)
		return;
	while (paddr < end) {
		uint64_t next = (paddr | (line - 1)) + 1;

		fetch_line(m, cpu, paddr, flags);
		if (next <= paddr)
			break;
		paddr = next;
	}
}

/* ---- TLBs ------------------------------------------------------------- */

static uint64_t tlb_vpn(int large, uint64_t vaddr)
{
	return vaddr >> (large ? CM_LARGE_SHIFT : 12);
}

/* The first frame of vpn's set in t (no division when the sets are a
 * power of two, as in every P6 TLB). */
static uint64_t *tlb_set(const struct cm_tlb *t, uint64_t vpn)
{
	uint64_t set = (t->sets & (t->sets - 1)) == 0 ? vpn & (t->sets - 1)
						       : vpn % t->sets;

	return t->tag + set * t->assoc;
}

/* The frame of vpn in t, or NULL. */
static uint64_t *tlb_find(struct cm_tlb *t, uint64_t vpn)
{
	uint64_t *set = tlb_set(t, vpn);

	for (uint32_t i = 0; i < t->assoc; i++)
		if (set[i] == vpn + 1)
			return &set[i];
	return NULL;
}

int cm_tlb_lookup(struct cm_model *m, unsigned cpu, int instr, uint64_t vaddr)
{
	struct cm_tlb *t = &m->cpu[cpu].tlb[instr ? CM_ITLB : CM_DTLB];
	struct cm_tlb *small = t;
	uint64_t key = tlb_vpn(0, vaddr) + 1;

	uint64_t *f;

	if (t->tag == NULL || small->last == key)
		return 1;
	small->last = 0;
	if ((f = tlb_find(t, key - 1)) != NULL) {
		t->stamp[f - t->tag] = ++t->clock;
		small->last = key;
		return 1;
	}
	if ((++t)->tag == NULL)
		return 0;
	if (small->last_large == tlb_vpn(1, vaddr) + 1) {
		small->last = key;	/* its array's most recently used */
		return 1;
	}
	if ((f = tlb_find(t, tlb_vpn(1, vaddr))) != NULL) {
		t->stamp[f - t->tag] = ++t->clock;
		small->last_large = tlb_vpn(1, vaddr) + 1;
		small->last = key;
		return 1;
	}
	return 0;
}

void cm_tlb_fill(struct cm_model *m, unsigned cpu, int instr, uint64_t vaddr,
		 int large, const uint64_t *walk, unsigned nwalk,
		 unsigned flags)
{
	struct cm_cpu *p = &m->cpu[cpu];
	struct cm_tlb *t = &p->tlb[(instr ? CM_ITLB : CM_DTLB) + (large != 0)];
	unsigned mode = (flags & CM_F_USER) ? CM_USER : CM_KERNEL;
	uint64_t vpn = tlb_vpn(large, vaddr);
	uint64_t *set, *v;

	if (t->tag == NULL)
		return;
	p->tlb[instr ? CM_ITLB : CM_DTLB].last = 0;
	p->tlb[instr ? CM_ITLB : CM_DTLB].last_large = 0;
	if (!large)
		p->tlb[instr ? CM_ITLB : CM_DTLB].small_in_large |=
			1ull << (tlb_vpn(1, vaddr) & 63);
	if (instr)
		p->ctr[mode].itlb_misses++;
	else
		p->ctr[mode].dtlb_misses++;
	/* The walk's loads: not the access's own, so no run-queue flag. */
	for (unsigned i = 0; i < nwalk; i++)
		access_line_now(m, cpu, walk[i], 0, flags & CM_F_USER);
	set = tlb_set(t, vpn);
	v = &set[0];
	for (uint32_t i = 0; i < t->assoc; i++) {
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

void cm_tlb_flush(struct cm_model *m, unsigned cpu)
{
	for (int k = CM_DTLB; k <= CM_ITLB; k += 2) {
		struct cm_tlb *t = &m->cpu[cpu].tlb[k];

		t->last = t->last_large = t->small_in_large = 0;
		if (t->tag != NULL)
			memset(t->tag, 0, sizeof(*t->tag) * t->sets * t->assoc);
	}
}

void cm_tlb_flush_all(struct cm_model *m, unsigned cpu)
{
	cm_tlb_flush(m, cpu);
	for (int k = CM_DTLB; k <= CM_ITLB; k += 2) {
		struct cm_tlb *t = &m->cpu[cpu].tlb[k + CM_TLB_LARGE];

		m->cpu[cpu].tlb[k].last_large = 0;
		if (t->tag != NULL)
			memset(t->tag, 0, sizeof(*t->tag) * t->sets * t->assoc);
	}
}

void cm_tlb_invlpg(struct cm_model *m, unsigned cpu, uint64_t vaddr)
{
	for (int k = CM_DTLB; k <= CM_ITLB; k += 2) {
		struct cm_tlb *t = &m->cpu[cpu].tlb[k];
		uint64_t *f;

		if (t->tag == NULL)
			continue;
		/* The shortcuts may name the dropped page: forget them.
		 * small_in_large stays: a set bit only means "maybe". */
		t->last = t->last_large = 0;
		if ((f = tlb_find(t, tlb_vpn(0, vaddr))) != NULL)
			*f = 0;
		if (t[1].tag != NULL &&
		    (f = tlb_find(&t[1], tlb_vpn(1, vaddr))) != NULL)
			*f = 0;
	}
}

/* Allocate one TLB array of `entries` (0: none). */
static int tlb_init(struct cm_tlb *t, uint64_t entries)
{
	t->assoc = entries < 4 ? (uint32_t)entries : 4;
	t->sets = t->assoc ? (uint32_t)(entries / t->assoc) : 0;
	if (entries == 0)
		return 0;
	t->tag = calloc(entries, sizeof(*t->tag));
	t->stamp = calloc(entries, sizeof(*t->stamp));
	return t->tag != NULL && t->stamp != NULL ? 0 : -1;
}

/* ---- setup, reset, queries -------------------------------------------- */

int cm_init(struct cm_model *m, unsigned ncpus, const struct cm_geom *l1,
	    const struct cm_geom *l2, char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	if (cm_geom_check("L1D", l1, err, errlen) < 0 ||
	    cm_geom_check("L2", l2, err, errlen) < 0)
		return -1;
	if (l1->line != l2->line) {
		snprintf(err, errlen, "The L1D line size (%llu) and the L2 line "
			 "size (%llu) must be equal.",
			 (unsigned long long)l1->line,
			 (unsigned long long)l2->line);
		return -1;
	}
	if (ncpus == 0) {
		snprintf(err, errlen, "The number of CPUs must be at least 1.");
		return -1;
	}
	m->ncpus = ncpus;
	m->inclusive = 1;
	m->line_shift = log2u(l1->line);
	m->l1g = *l1;
	m->l2g = *l2;
	m->cpu = aligned_alloc(64, sizeof(*m->cpu) * ncpus);
	if (m->cpu == NULL)
		goto oom;
	/* Zeroed at once: cm_free() reads the line pointers on failure. */
	memset(m->cpu, 0, sizeof(*m->cpu) * ncpus);
	m->hist = calloc(ncpus, sizeof(*m->hist));
	if (m->hist == NULL)
		goto oom;
	for (unsigned c = 0; c < ncpus; c++) {
		struct cm_loop_lines *t = &m->cpu[c].loop;

		if (cache_init(&m->cpu[c].l1, l1) < 0 ||
		    cache_init(&m->cpu[c].l2, l2) < 0)
			goto oom;
		t->key = calloc(CM_LOOP_LINES, sizeof(*t->key));
		t->gone = calloc(CM_LOOP_LINES, sizeof(*t->gone));
		if (t->key == NULL || t->gone == NULL)
			goto oom;
	}
	return 0;
oom:
	cm_free(m);
	snprintf(err, errlen, "Out of memory allocating the caches.");
	return -1;
}

int cm_enable_timing(struct cm_model *m, const struct cm_timing *t,
		     char *err, size_t errlen)
{
	/* Room for the requests of a lead of some million cycles per CPU
	 * (a web run on piii8 filled 4096), within 64 MiB over all CPUs; a
	 * full queue is served early. */
	unsigned cap = 32768;

	if (t->bus_depth < 1 || t->bus_depth > CM_IOQ_MAX) {
		snprintf(err, errlen, "The bus depth (%" PRIu64 ") must be "
			 "1 to %d transactions.", t->bus_depth, CM_IOQ_MAX);
		return -1;
	}
	if (t->store_buffer > CM_SB_MAX || t->overlap > CM_SB_MAX) {
		snprintf(err, errlen, "The store buffer (%" PRIu64 ") and the "
			 "misses in flight (%" PRIu64 ") must be 0 to %d.",
			 t->store_buffer, t->overlap, CM_SB_MAX);
		return -1;
	}
	if (t->dtlb > 1024 || t->dtlb_large > 1024 || t->itlb > 1024 ||
	    t->itlb_large > 1024 || (t->dtlb >= 4 && t->dtlb % 4) ||
	    (t->itlb >= 4 && t->itlb % 4) ||
	    (t->dtlb_large >= 4 && t->dtlb_large % 4) ||
	    (t->itlb_large >= 4 && t->itlb_large % 4)) {
		snprintf(err, errlen, "A TLB must have 0 to 1024 entries, a "
			 "multiple of 4 from 4 on.");
		return -1;
	}
	while (cap > 64 && (uint64_t)cap * m->ncpus > 2097152)
		cap /= 2;
	m->nbuses = t->bus_cpus > 0 && t->bus_cpus < m->ncpus ? 2 : 1;
	if (m->nbuses > 1 && t->bus_cpus * CM_MAX_BUSES < m->ncpus) {
		snprintf(err, errlen, "%u CPUs at %" PRIu64 " per bus need more "
			 "than %d buses.", m->ncpus, t->bus_cpus, CM_MAX_BUSES);
		return -1;
	}
	for (unsigned c = 0; c < m->ncpus; c++) {
		m->cpu[c].q = calloc(cap, sizeof(struct cm_busreq));
		if (t->store_buffer > 0)
			m->cpu[c].buf[CM_BUF_STORE].e =
				calloc(t->store_buffer, sizeof(struct cm_sbentry));
		if (t->overlap > 0)
			m->cpu[c].buf[CM_BUF_LOAD].e =
				calloc(t->overlap, sizeof(struct cm_sbentry));
		if (m->cpu[c].q == NULL ||
		    (t->store_buffer > 0 && m->cpu[c].buf[0].e == NULL) ||
		    (t->overlap > 0 && m->cpu[c].buf[1].e == NULL) ||
		    tlb_init(&m->cpu[c].tlb[CM_DTLB], t->dtlb) < 0 ||
		    tlb_init(&m->cpu[c].tlb[CM_DTLB + 1],
			     t->dtlb ? t->dtlb_large : 0) < 0 ||
		    tlb_init(&m->cpu[c].tlb[CM_ITLB], t->itlb) < 0 ||
		    tlb_init(&m->cpu[c].tlb[CM_ITLB + 1],
			     t->itlb ? t->itlb_large : 0) < 0) {
			snprintf(err, errlen, "Out of memory allocating the "
				 "bus queues.");
			return -1;
		}
	}
	m->qcap = cap;
	m->timing = 1;
	m->t = *t;
	return 0;
}

void cm_set_inclusive(struct cm_model *m, int inclusive)
{
	m->inclusive = inclusive != 0;
}

int cm_set_repl(struct cm_model *m, enum cm_level level, enum cm_repl repl,
		char *err, size_t errlen)
{
	static const char *const name[] = { "L1D", "L1I", "L2" };

	if (repl != CM_REPL_LRU && repl != CM_REPL_PLRU) {
		snprintf(err, errlen, "The %s replacement policy (%d) is unknown.",
			 name[level], (int)repl);
		return -1;
	}
	for (unsigned c = 0; c < m->ncpus; c++) {
		struct cm_cpu *p = &m->cpu[c];
		struct cm_cache *k = level == CM_LEVEL_L1D ? &p->l1 :
				     level == CM_LEVEL_L1I ? &p->l1i : &p->l2;

		if (k->lines == NULL) {
			snprintf(err, errlen, "The %s does not exist.", name[level]);
			return -1;
		}
		if (repl == CM_REPL_PLRU && k->assoc > 64) {
			snprintf(err, errlen, "The %s associativity (%u) is too "
				 "high for pseudo-LRU (at most 64).", name[level],
				 k->assoc);
			return -1;
		}
		free(k->plru);
		k->plru = NULL;
		if (repl == CM_REPL_PLRU &&
		    (k->plru = calloc(k->set_mask + 1, sizeof(*k->plru))) == NULL) {
			snprintf(err, errlen, "Out of memory allocating the caches.");
			return -1;
		}
		k->repl = repl;
	}
	return 0;
}

int cm_enable_l1i(struct cm_model *m, const struct cm_geom *g,
		  char *err, size_t errlen)
{
	if (cm_geom_check("L1I", g, err, errlen) < 0)
		return -1;
	if (g->line != m->l2g.line) {
		snprintf(err, errlen, "The L1I line size (%llu) and the L2 line "
			 "size (%llu) must be equal.",
			 (unsigned long long)g->line,
			 (unsigned long long)m->l2g.line);
		return -1;
	}
	for (unsigned c = 0; c < m->ncpus; c++) {
		struct cm_cpu *p = &m->cpu[c];

		if (cache_init(&p->l1i, g) < 0 ||
		    (p->l1i_mru = calloc(p->l1i.set_mask + 1,
					 sizeof(*p->l1i_mru))) == NULL) {
			snprintf(err, errlen, "Out of memory allocating the caches.");
			return -1;
		}
	}
	m->l1ig = *g;
	m->has_l1i = 1;
	return 0;
}

void cm_free(struct cm_model *m)
{
	if (m->cpu != NULL)
		for (unsigned c = 0; c < m->ncpus; c++) {
			cache_free(&m->cpu[c].l1);
			cache_free(&m->cpu[c].l2);
			cache_free(&m->cpu[c].l1i);
			free(m->cpu[c].l1i_mru);
			free(m->cpu[c].loop.key);
			free(m->cpu[c].loop.gone);
			free(m->cpu[c].q);
			free(m->cpu[c].buf[0].e);
			free(m->cpu[c].buf[1].e);
			for (int k = 0; k < 4; k++) {
				free(m->cpu[c].tlb[k].tag);
				free(m->cpu[c].tlb[k].stamp);
			}
		}
	free(m->cpu);
	free(m->hist);
	free(m->dq);
	m->cpu = NULL;
	m->hist = NULL;
}

void cm_reset_stats(struct cm_model *m)
{
	for (unsigned c = 0; c < m->ncpus; c++)
		memset(m->cpu[c].ctr, 0, sizeof(m->cpu[c].ctr));
	memset(m->hist, 0, sizeof(*m->hist) * m->ncpus);
	memset(&m->bs, 0, sizeof(m->bs));
	memset(&m->dma, 0, sizeof(m->dma));
	for (unsigned b = 0; b < CM_MAX_BUSES; b++)
		m->bus[b].transactions = m->bus[b].crossing =
			m->bus[b].data_cycles = 0;
}

void cm_offset_view(const struct cm_model *m, int line_view,
		    uint64_t out[CM_NCHUNKS])
{
	unsigned fold = line_view ? (1u << m->line_shift) / CM_CHUNK : 1;

	memset(out, 0, CM_NCHUNKS * sizeof(out[0]));
	for (unsigned c = 0; c < m->ncpus; c++)
		for (unsigned md = 0; md < CM_NMODES; md++)
			for (unsigned k = 0; k < CM_NKINDS; k++)
				for (unsigned i = 0; i < CM_NCHUNKS; i++)
					out[i - i % fold] += m->hist[c][md][k][i];
	for (unsigned d = 0; d < CM_DMA_NDIRS; d++)
		for (unsigned i = 0; i < CM_NCHUNKS; i++)
			out[i - i % fold] += m->dma.hist[d][i];
}

enum cm_state cm_l1_state(const struct cm_model *m, unsigned cpu,
			  uint64_t paddr)
{
	struct cm_line *l = cache_find(&m->cpu[cpu].l1, paddr >> m->line_shift);

	return l ? (enum cm_state)l->state : CM_I;
}

enum cm_state cm_l2_state(const struct cm_model *m, unsigned cpu,
			  uint64_t paddr)
{
	struct cm_line *l = cache_find(&m->cpu[cpu].l2, paddr >> m->line_shift);

	return l ? (enum cm_state)l->state : CM_I;
}

int cm_l1i_holds(const struct cm_model *m, unsigned cpu, uint64_t paddr)
{
	const struct cm_cpu *p = &m->cpu[cpu];

	return p->l1i.lines != NULL &&
	       cache_find(&p->l1i, paddr >> m->line_shift) != NULL;
}
