// The network cards: the loopback card, and the server's four network
// cards with the wire to the client machines.
//
// Transmit: the sending CPU has built the packet (copied and summed the
// user's bytes, skbuff.c) and hands it to a card, which puts it on its
// receive ring.  Like a real card on the wire, it then raises its
// interrupt -- on the card's IRQ CPU -- unless an interrupt is already
// pending: the handler drains the whole ring, so a burst of packets costs
// one interrupt (2.4's eepro100 takes up to 20 frames per interrupt).
//
// Which card:
//   - card 0, the loopback card: both ends in the same partition (Chat, the
//     socket tests, web with its clients on the server's CPUs).  Its IRQ
//     CPU is `netirq=N` (default 0).
//   - cards 1-4, the server's network cards (the paper's 4 x EtherExpress
//     Pro/100 on the 4-way PPro, 4 x 1 GbE on the 8-way Xeon): a packet from
//     a client task (partition.c) to the server.  Each connection is given
//     one card when it connects, in turn (the client PCs were spread over
//     the four networks).  Their interrupts go where `nicirq=` says
//     (kernels/README.md, "Network cards"):
//       rr    (default) the next server CPU in turn, for every interrupt:
//             2.4's IO-APIC sends every device interrupt in lowest-priority
//             mode to all CPUs, and with equal task priorities the P6
//             APIC bus's arbitration rotates it among them;
//       card  card i's to server CPU (i - 1) mod the server's CPUs (as
//             with each card's smp_affinity set by hand);
//       N     all of them to CPU N.
//   - cards 5-8, the client machines' cards on the same four networks: a
//     packet from the server to a client; their interrupts go to the
//     client CPUs in turn, outside the measured machine.
//
// Receive: net_rx_interrupt runs in that CPU's interrupt handler and does
// what 2.4's netif_rx + NET_RX softirq + tcp_v4_rcv do: hand each packet
// to its socket's receive queue and wake the sleepers.  So the
// receive-side work (queueing, wake-ups, try_to_wake_up and
// reschedule_idle, and the IPIs they send) is charged to the CPU that
// takes the interrupt, whichever CPU sent the packet.
//
// What a real card adds and we do not: descriptor rings, the
// transmit-complete interrupt, and 2.4 loopback's quirk of running the
// softirq on the sending CPU (workload-facts.md 4.3): we model a card.
// Its DMA on the server's bus is the wire's (wire.c, nicdma=1).
#include "kernel.h"
#include "net.h"
#include "sched.h"
#include "smp.h"

#define NR_NICS 4                      // the server's cards: 1..NR_NICS
#define NR_CARDS (1 + 2 * NR_NICS)     // loopback, server's, clients'
#define ROUTE_RR   -1
#define ROUTE_CARD -2

struct card {
  spinlock_t lock;
  struct sk_buff_head ring;
  int irq_pending;              // an interrupt is on its way
  uint64_t irqs[NR_CPUS], packets[NR_CPUS];
} __attribute__((aligned(SMP_CACHE_BYTES)));

static struct card cards[NR_CARDS];
static int loopback_cpu, nic_route;
static uint32_t next_wire, rr_server, rr_client;

uint64_t net_rx_irqs[NR_CPUS], net_rx_packets[NR_CPUS];

void
net_init(void)
{
  for (int i = 0; i < NR_CARDS; i++)
    cards[i].lock = (spinlock_t)SPIN_LOCK_UNLOCKED;
  int cpu = cmdline_u64("netirq", 0);
  if (cpu < 0 || cpu >= nr_server_cpus || !cpus[cpu].online)
    cpu = 0;
  loopback_cpu = cpu;
  char route[16] = "rr";
  cmdline_str("nicirq", route, sizeof route);
  if (!strncmp(route, "rr", 3))
    nic_route = ROUTE_RR;
  else if (!strncmp(route, "card", 5))
    nic_route = ROUTE_CARD;
  else {
    nic_route = cmdline_u64("nicirq", 0);
    if (nic_route < 0 || nic_route >= nr_server_cpus || !cpus[nic_route].online)
      nic_route = 0;
  }
}

// The card a packet arrives on.  A connection between the partitions is
// given its network (1..NR_NICS) when its request is sent.
static int
rx_card(struct sk_buff *skb)
{
  struct sock *dst = skb->sk, *src = skb->kind == SKB_SYN ? skb->from : NULL;
  if (src && src->client != dst->client)
    src->card = 1 + __atomic_fetch_add(&next_wire, 1, __ATOMIC_SEQ_CST) % NR_NICS;
  int wire = src ? src->card : dst->card;
  if (!wire)
    return 0;
  return dst->client ? NR_NICS + wire : wire;
}

// The CPU that takes card c's next interrupt.
static int
irq_cpu(int c)
{
  int nserver = nr_server_cpus, nclient = ncpus - nr_server_cpus;
  if (c == 0)
    return loopback_cpu;
  if (c > NR_NICS) {             // the client CPUs that run clients
    nclient -= wire_cpu >= 0;
    return nserver + __atomic_fetch_add(&rr_client, 1, __ATOMIC_SEQ_CST) % nclient;
  }
  if (nic_route == ROUTE_CARD)
    return (c - 1) % nserver;
  if (nic_route == ROUTE_RR)
    return __atomic_fetch_add(&rr_server, 1, __ATOMIC_SEQ_CST) % nserver;
  return nic_route;
}

void
dev_queue_xmit(struct sk_buff *skb)
{
  int c = rx_card(skb);
  if (c && wire_cpu >= 0)
    wire_xmit(c, skb);          // arrives after its bytes crossed the wire
  else
    card_deliver(c, skb);
}

// The packet is at card c: onto its ring, and its interrupt unless one is
// pending.
void
card_deliver(int c, struct sk_buff *skb)
{
  struct card *card = &cards[c];
  uint64_t f = spin_lock_irqsave(&card->lock);
  skb_queue_tail(&card->ring, skb);
  int target = -1;
  if (!card->irq_pending)
    card->irq_pending = 1 + (target = irq_cpu(c));
  spin_unlock_irqrestore(&card->lock, f);
  if (target >= 0)
    lapic_send_ipi(cpus[target].apic_id, T_NET_RX);
}

// Whether a wire card's interrupt has been raised and its packets not yet
// taken (read without the locks: the wire only asks before moving an idle
// machine's time, and asks again at its next look).
bool
cards_pending(void)
{
  for (int c = 1; c < NR_CARDS; c++)
    if (cards[c].irq_pending)
      return true;
  return false;
}

// Drain one card whose interrupt this CPU took.
static void
drain(struct card *card, int cpu)
{
  card->irqs[cpu]++;
  for (;;) {
    spin_lock(&card->lock);
    struct sk_buff *list = card->ring.head;
    card->ring.head = card->ring.tail = NULL;
    card->ring.qlen = 0;
    if (!list)
      card->irq_pending = 0;    // the next packet raises a new interrupt
    spin_unlock(&card->lock);
    if (!list)
      return;
    while (list) {
      struct sk_buff *skb = list;
      list = skb->next;
      skb->next = NULL;
      skb->rx_cpu = cpu;
      if (card != &cards[0])
        wire_received(skb);     // how late its CPU took it (modelled time)
      card->packets[cpu]++;
      stream_rcv(skb);
    }
  }
}

// The interrupt handler (trap.c), interrupts off: every card whose
// interrupt was sent to this CPU (one vector for all; the LAPIC merges
// interrupts that arrive while one is pending).
void
net_rx_interrupt(void)
{
  int cpu = smp_processor_id();
  for (int c = 0; c < NR_CARDS; c++)
    if (READ_ONCE(cards[c].irq_pending) == 1 + cpu)
      drain(&cards[c], cpu);
  net_rx_irqs[cpu] = cards[0].irqs[cpu];
  net_rx_packets[cpu] = cards[0].packets[cpu];
}

// Console lines: which CPUs took the loopback card's interrupts and how
// many packets each delivered, then the same for each network card
// (printed when init exits and at the ROI's end):
//   net: irq cpu 0; cpu0 12 irqs 40 packets; cpu1 0 irqs 0 packets; ...
//   nic: card 1 server irq rr; cpu0 5 irqs 9 packets; ...
void
net_report(void)
{
  static const char *const routes[] = {"card", "rr"};
  for (int c = 0; c < NR_CARDS; c++) {
    uint64_t irqs = 0;
    for (int cpu = 0; cpu < ncpus; cpu++)
      irqs += cards[c].irqs[cpu];
    if (!irqs)
      continue;
    if (c == 0)
      printk("net: irq cpu %d;", loopback_cpu);
    else if (c <= NR_NICS && nic_route < 0)
      printk("nic: card %d server irq %s;", c, routes[nic_route + 2]);
    else if (c <= NR_NICS)
      printk("nic: card %d server irq cpu %d;", c, nic_route);
    else
      printk("nic: card %d client irq client-cpus;", c);
    for (int cpu = 0; cpu < ncpus; cpu++)
      printk(" cpu%d %lu irqs %lu packets;", cpu, cards[c].irqs[cpu], cards[c].packets[cpu]);
    printk("\n");
  }
  wire_report();
}
