// The wire between the client machines and the server's cards.
//
// A packet between the partitions (loopback.c, cards 1-8) does not reach
// its card at once: its frame takes bytes x 8 / bandwidth to cross its
// network, one frame after another in each direction (the wire is busy
// until the previous frame has passed), and then the latency of the link.
// Bandwidth and latency come from the machine (configs/machines.toml
// [x.network]; `wire_bps=` and `wire_ns=` on the command line).
//
// The wire is driven by its own CPU, the last client CPU (`wire_cpu`),
// which runs no tasks: senders queue each packet with its arrival time and
// kick that CPU when the packet is the next to arrive on its card; the
// wire CPU sleeps until the earliest arrival on a one-shot local-APIC timer,
// then hands every arrived packet to its card (card_deliver), which raises
// the card's interrupt on the CPU the routing chooses.  Time is the guest's
// clock (the TSC, in ns: QEMU's -icount virtual time), the same clock as
// the LAPIC timer, so the run repeats exactly.
//
// Under --timing (timing_hz=) time is modelled time instead (timer.c,
// modeled_time): a packet is stamped with its sender's modelled clock
// (a client CPU's: the machine's) and released once the machine's
// modelled time -- the slowest running server CPU -- has reached its
// arrival.  The wire's CPU looks at every round-robin turn while packets
// are on the wire.  When every other CPU is idle nothing would move that
// time, so the wire asks the bus monitor to move the idle machine up to the
// next arrival; it asks only after a look that delivered nothing and while
// no card's interrupt waits to be taken, so the CPUs its last deliveries
// woke have taken their packets first (whether the round robin ends the
// wire CPU's turn between two looks is the emulator's choice: under the
// bus monitor's time bound a PAUSE does not).  The monitor counts how
// late deliveries were (busmon stats `system.wire.*`).
//
// DMA (nicdma=1): the server's cards are bus masters (the EtherExpress
// Pro/100's 82557 and the Xeon's gigabit cards fetch and store frames
// themselves), so a frame crosses the server's memory bus as well as the
// wire.  A frame the server sends is read from its buffer when it goes on
// the wire (a dirty line in a CPU's cache answers the snoop: HITM); a
// frame the server receives is written into its buffer when it reaches
// the card, invalidating every cached copy.  Each is one line-sized bus
// transaction per line of the frame: its headers (in 2.4 they sit just
// before the payload, in the same buffer) and its payload.  The wire tells
// the bus monitor with one store per frame (M5OP_DMA_*), which books them
// under a mode of their own ("dma").  Client machines' cards are on their
// own buses, which nobody measures.
#include "kernel.h"
#include "m5op.h"
#include "net.h"
#include "sched.h"
#include "smp.h"
#include "x86.h"

#define NR_WIRE_CARDS 9         // loopback.c's NR_CARDS
#define FRAME_OVERHEAD 58       // Ethernet 14 + IP 20 + TCP 20 + FCS 4
#define FRAME_MIN 64            // the shortest Ethernet frame
#define FRAME_GAP 20            // preamble 8 + inter-frame gap 12

int wire_cpu = -1;
static uint64_t bps, lat_ns, tick_ns;
static bool dma;                        // nicdma=1: the server cards' DMA
static uint64_t hz;                     // modelled time: core clock; 0: the TSC

uint64_t modeled_time(int cpu, uint64_t advance);   // timer.c

static uint64_t
cycles_to_ns(uint64_t c)
{
  return c / hz * 1000000000ul + c % hz * 1000000000ul / hz;
}

static uint64_t
ns_to_cycles_up(uint64_t ns)
{
  return ns / 1000000000ul * hz + (ns % 1000000000ul * hz + 999999999ul) / 1000000000ul;
}

// Now, in ns: the guest clock, or under --timing this CPU's modelled time.
static uint64_t
wire_now(void)
{
  return hz ? cycles_to_ns(modeled_time(smp_processor_id(), 0)) : rdtsc();
}

static struct flight {
  spinlock_t lock;
  struct sk_buff *head, *tail;  // in arrival order
  uint64_t free_at;             // the wire is busy until then
} flights[NR_WIRE_CARDS] __attribute__((aligned(SMP_CACHE_BYTES)));

// What the wire did: packets, bytes, the time frames spent being sent,
// and the shortest and longest send-to-arrival delay.
static struct {
  uint64_t packets, bytes, serial_ns, min_ns, max_ns, late_ns, late_sum;
} ws = {.min_ns = ~0ul};

void lapic_oneshot(uint64_t ns);     // lapic.c

// Called once, after the partition (clientcpus=) is known: the wire needs
// a client CPU of its own and a bandwidth.
void
wire_init(void)
{
  bps = cmdline_u64("wire_bps", 0);
  lat_ns = cmdline_u64("wire_ns", 0);
  tick_ns = cmdline_u64("wire_tick_ns", 10000);
  if (!tick_ns)
    tick_ns = 1;
  if (!bps || ncpus - nr_server_cpus < 2)
    return;                             // no wire: packets arrive at once
  hz = cmdline_u64("timing_hz", 0);
  dma = cmdline_u64("nicdma", 0) != 0;
  for (int i = 0; i < NR_WIRE_CARDS; i++)
    flights[i].lock = (spinlock_t)SPIN_LOCK_UNLOCKED;
  wire_cpu = ncpus - 1;
  printk("wire: cpu %d, %lu bit/s per network, latency %lu ns%s%s\n", wire_cpu, bps,
         lat_ns, hz ? ", modelled time" : "", dma ? ", card DMA" : "");
}

static uint64_t
frame_bytes(struct sk_buff *skb)
{
  uint64_t b = skb->kind == SKB_DATA ? skb->len + FRAME_OVERHEAD : FRAME_OVERHEAD;
  return (b < FRAME_MIN ? FRAME_MIN : b) + FRAME_GAP;
}

#define FRAME_HEADERS (FRAME_OVERHEAD - 4)  // what the card moves: no FCS

// The card's DMA of skb's frame, read (transmit) or written (receive):
// the headers before the payload, then the payload, from `at_ns` on (the
// monitor spaces the lines at the wire's rate).  The kernel is
// identity-mapped (vm.c), so the address is physical.
static void
card_dma(int func, struct sk_buff *skb, uint64_t at_ns)
{
  uint64_t start = (uint64_t)skb->data - FRAME_HEADERS;
  uint64_t bytes = FRAME_HEADERS + (skb->kind == SKB_DATA ? skb->len : 0);
  if (!dma)
    return;
  if (hz)
    *(volatile uint64_t *)(M5OP_BASE + ((uint64_t)M5OP_DMA_AT << 8)) = ns_to_cycles_up(at_ns);
  *(volatile uint64_t *)(M5OP_BASE + ((uint64_t)func << 8)) = start << 12 | bytes;
}

// Whether card c is one of the server's (1..4): the others are the client
// machines'.
static bool
server_card(int c)
{
  return c >= 1 && c <= NR_WIRE_CARDS / 2;
}

void
wire_xmit(int c, struct sk_buff *skb)
{
  struct flight *fl = &flights[c];
  uint64_t bytes = frame_bytes(skb), ns = bytes * 8 * 1000000000ul / bps;
  uint64_t now = wire_now();
  uint64_t f = spin_lock_irqsave(&fl->lock);
  uint64_t start = now > fl->free_at ? now : fl->free_at;
  fl->free_at = start + ns;
  skb->sent = now;
  skb->arrive = fl->free_at + lat_ns;
  skb->next = NULL;
  bool first = !fl->head;
  if (fl->tail)
    fl->tail->next = skb;
  else
    fl->head = skb;
  fl->tail = skb;
  ws.packets++;
  ws.bytes += bytes;
  ws.serial_ns += ns;
  spin_unlock_irqrestore(&fl->lock, f);
  if (!server_card(c))          // to a client: the server's card reads the
    card_dma(M5OP_DMA_READ, skb, start);  // frame as it goes on the wire
  if (first)                            // the wire CPU's next wake-up moves
    lapic_send_ipi(cpus[wire_cpu].apic_id, T_WIRE);
}

// Interrupts off: hand every packet that has arrived by `now` to its card.
// Returns how many; *next is the earliest arrival still on the wire (~0:
// none).
static int
deliver_due(uint64_t now, uint64_t *next)
{
  int n = 0;
  *next = ~0ul;
  for (int c = 0; c < NR_WIRE_CARDS; c++) {
    struct flight *fl = &flights[c];
    spin_lock(&fl->lock);
    struct sk_buff *due = NULL, **tail = &due;
    while (fl->head && fl->head->arrive <= now) {
      struct sk_buff *skb = fl->head;
      fl->head = skb->next;
      *tail = skb;
      tail = &skb->next;
    }
    *tail = NULL;
    if (!fl->head)
      fl->tail = NULL;
    else if (fl->head->arrive < *next)
      *next = fl->head->arrive;
    spin_unlock(&fl->lock);
    while (due) {
      struct sk_buff *skb = due;
      due = skb->next;
      uint64_t d = skb->arrive - skb->sent;
      ws.min_ns = d < ws.min_ns ? d : ws.min_ns;
      ws.max_ns = d > ws.max_ns ? d : ws.max_ns;
      ws.late_ns = now - skb->arrive > ws.late_ns ? now - skb->arrive : ws.late_ns;
      ws.late_sum += now - skb->arrive;
      if (hz)                           // the monitor's count of late deliveries
        *(volatile uint64_t *)(M5OP_BASE + ((uint64_t)M5OP_WIRE_DELIVERED << 8)) =
            ns_to_cycles_up(skb->arrive);
      if (server_card(c))               // the server's card has written it
        card_dma(M5OP_DMA_WRITE, skb, skb->arrive);
      card_deliver(c, skb);
      n++;
    }
  }
  return n;
}

// On the wire CPU, interrupts off (the guest clock): deliver what has
// arrived, and set the timer for the next arrival.  Under modelled time
// the wire's idle loop does the work (wire_look).
void
wire_run(void)
{
  if (hz)
    return;
  uint64_t next;
  do {
    deliver_due(rdtsc(), &next);
    // Wake at the next arrival rounded up to the wire's clock
    // (wire_tick_ns): many packets per wake-up, not one emulator timer
    // deadline each.
    if (next != ~0ul)
      next = (next + tick_ns - 1) / tick_ns * tick_ns;
    if (next != ~0ul && next > rdtsc())
      lapic_oneshot(next - rdtsc());
  } while (next != ~0ul && next <= rdtsc());
}

// Modelled time, interrupts off: deliver what has arrived by the machine's
// time; after a look that delivered nothing, with every delivered packet
// taken by its CPU, ask for the idle machine to move to the next arrival (modeled_time: refused while any other CPU
// runs).  Returns whether packets are still on the wire.
static bool
wire_look(void)
{
  static bool quiet;                    // the last look delivered nothing
  uint64_t next;
  int n = deliver_due(wire_now(), &next);
  if (!n && next != ~0ul && quiet && !cards_pending())
    n = deliver_due(cycles_to_ns(modeled_time(wire_cpu, ns_to_cycles_up(next))), &next);
  quiet = n == 0;
  return next != ~0ul;
}

// A CPU's card interrupt took a packet off the wire: under modelled time
// the monitor compares the packet's arrival with that CPU's clock, which
// may lead the machine's time (the sync quantum, a jump at a lock).
void
wire_received(struct sk_buff *skb)
{
  if (hz)
    *(volatile uint64_t *)(M5OP_BASE + ((uint64_t)M5OP_WIRE_RECEIVED << 8)) =
        ns_to_cycles_up(skb->arrive);
}

// The wire CPU's idle loop: it runs no tasks.
void
wire_idle(void)
{
  lapic_oneshot(0);                     // no periodic tick here
  for (;;) {
    cli();
    if (!hz) {
      wire_run();
      safe_halt();                      // until a kick or the timer
    } else if (wire_look()) {
      sti();
      cpu_relax();                      // look again
    } else {
      safe_halt();                      // nothing on the wire: until a kick
    }
  }
}

// One console line (at the region's end and when init exits):
//   wire: packets N bytes B serial_ns S delay_ns min A max M late_ns max L sum T
// (late: how long after its arrival time a packet reached its card; the
// wire's clock and the emulator's round robin of CPUs make it late)
void
wire_report(void)
{
  if (wire_cpu < 0 || !ws.packets)
    return;
  printk("wire: packets %lu bytes %lu serial_ns %lu delay_ns min %lu max %lu "
         "late_ns max %lu sum %lu\n", ws.packets, ws.bytes, ws.serial_ns, ws.min_ns,
         ws.max_ns, ws.late_ns, ws.late_sum);
}
