// The loopback network card.
//
// Transmit: the sending CPU has built the packet (copied and summed the
// user's bytes, skbuff.c) and hands it to the card, which puts it on its
// receive ring.  Like a real card on the wire, it then raises its
// interrupt -- on one CPU, the card's IRQ affinity (`netirq=N` on the
// command line, default 0) -- unless an interrupt is already pending: the
// handler drains the whole ring, so a burst of packets costs one
// interrupt (2.4's eepro100 takes up to 20 frames per interrupt).
//
// Receive: net_rx_interrupt runs in that CPU's interrupt handler and does
// what 2.4's netif_rx + NET_RX softirq + tcp_v4_rcv do: hand each packet
// to its socket's receive queue and wake the sleepers.  So the
// receive-side work (queueing, wake-ups, try_to_wake_up and
// reschedule_idle, and the IPIs they send) is charged to the CPU that
// takes the interrupt, whichever CPU sent the packet.
//
// What a real card adds and we do not: DMA, descriptor rings, the
// transmit-complete interrupt, and 2.4 loopback's quirk of running the
// softirq on the sending CPU (workload-facts.md 4.3): we model a card.
#include "kernel.h"
#include "net.h"
#include "sched.h"
#include "smp.h"

static struct {
  spinlock_t lock;
  struct sk_buff_head ring;
  int irq_pending;              // an interrupt is on its way
  int irq_cpu;
} card = {.lock = SPIN_LOCK_UNLOCKED};

uint64_t net_rx_irqs[NR_CPUS], net_rx_packets[NR_CPUS];

void
net_init(void)
{
  int cpu = cmdline_u64("netirq", 0);
  if (cpu < 0 || cpu >= ncpus || !cpus[cpu].online)
    cpu = 0;
  card.irq_cpu = cpu;
}

void
dev_queue_xmit(struct sk_buff *skb)
{
  uint64_t f = spin_lock_irqsave(&card.lock);
  skb_queue_tail(&card.ring, skb);
  bool raise = !card.irq_pending;
  card.irq_pending = 1;
  spin_unlock_irqrestore(&card.lock, f);
  if (raise)
    lapic_send_ipi(cpus[card.irq_cpu].apic_id, T_NET_RX);
}

// The interrupt handler (trap.c), interrupts off.
void
net_rx_interrupt(void)
{
  int cpu = smp_processor_id();
  net_rx_irqs[cpu]++;
  for (;;) {
    spin_lock(&card.lock);
    struct sk_buff *list = card.ring.head;
    card.ring.head = card.ring.tail = NULL;
    card.ring.qlen = 0;
    if (!list)
      card.irq_pending = 0;     // the next packet raises a new interrupt
    spin_unlock(&card.lock);
    if (!list)
      return;
    while (list) {
      struct sk_buff *skb = list;
      list = skb->next;
      skb->next = NULL;
      skb->rx_cpu = cpu;
      net_rx_packets[cpu]++;
      stream_rcv(skb);
    }
  }
}

// One console line: which CPUs took the card's interrupts, and how many
// packets each delivered (printed when init exits and at the ROI's end).
void
net_report(void)
{
  uint64_t irqs = 0;
  for (int cpu = 0; cpu < ncpus; cpu++)
    irqs += net_rx_irqs[cpu];
  if (!irqs)
    return;
  printk("net: irq cpu %d;", card.irq_cpu);
  for (int cpu = 0; cpu < ncpus; cpu++)
    printk(" cpu%d %lu irqs %lu packets;", cpu, net_rx_irqs[cpu], net_rx_packets[cpu]);
  printk("\n");
}
