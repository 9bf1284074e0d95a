// The network: sk_buffs, stream sockets over a loopback "network card",
// and the card's receive interrupt.  Not TCP: see kernels/README.md
// ("Sockets and the loopback card") for what is modelled and what is not.
#pragma once
#include "spinlock.h"
#include "types.h"
#include "wait.h"

#define MSS         1460       // bytes of user data per packet (Ethernet)
#define SK_RCVBUF   87380      // 2.4's tcp_rmem[1]: receive buffer bytes
#define SOMAXCONN   4096       // listen backlog cap (2.4: 128; see README)
#define T_NET_RX    0x42       // the card's receive interrupt vector
#define T_WIRE      0x43       // the wire CPU: a packet is on the wire (wire.c)

// Packet kinds.  A connection request carries the connecting socket; the
// reply is folded into its delivery (no SYN-ACK or ACK packets).
#define SKB_DATA 0
#define SKB_SYN  1
#define SKB_FIN  2
#define SKB_ACK  3             // wakes the receiver's sleepers (across partitions)

struct sock;

// One packet: header and data in one 2 KiB object (2.4 keeps a 160-byte
// head and a kmalloc'ed data block; for an Ethernet MSS the data block is
// in the 2 KiB class too).
struct sk_buff {
  struct sk_buff *next;
  struct sock *sk;             // the receiving socket (holds a reference)
  struct sock *from;           // SKB_SYN: the connecting socket (reference)
  uint32_t kind, len, off;     // off: bytes already read by the receiver
  uint32_t truesize;           // charged to the receiver's rmem_alloc
  uint32_t csum;               // computed while copying from the user
  uint32_t rx_cpu;             // the CPU whose interrupt delivered it
  uint64_t sent, arrive;       // on the wire (wire.c): guest ns
  uint8_t data[MSS];
};
#define SKB_SIZE 2048
_Static_assert(sizeof(struct sk_buff) <= SKB_SIZE, "sk_buff");

struct sk_buff_head { struct sk_buff *head, *tail; uint32_t qlen; };

enum { TCP_CLOSE = 0, TCP_LISTEN, TCP_SYN_SENT, TCP_ESTABLISHED };
#define RCV_SHUTDOWN  1        // the peer's FIN has arrived
#define SEND_SHUTDOWN 2        // we sent our FIN

// 2.4's struct sock, for stream sockets only.
struct sock {
  spinlock_t lock;
  int refcnt;                  // file, peer link, packets in flight (atomic)
  int state, shutdown, dead, err;
  bool accepted;               // made for accept(), not by connect()
  bool client;                 // a client task's socket (partition.c)
  uint8_t card;                // its network (1-4, loopback.c), 0 = loopback
  uint8_t unacked;             // packets read since the last window update
  uint16_t port;               // bound (listeners)
  struct sock *peer;           // the other end (holds a reference)
  struct sk_buff_head receive_queue;
  int rmem_alloc;              // bytes queued or in flight to us (atomic)
  int rcvbuf;
  struct sock *accept_head, *accept_tail, *accept_next;  // listeners
  int ack_backlog, max_ack_backlog;
  struct sock *bind_next;      // listener table chain
  struct wait_queue_head sleep;  // readers, writers, accept, poll
};

// skbuff.c
struct sk_buff *alloc_skb(void);
void kfree_skb(struct sk_buff *skb);
void skb_queue_tail(struct sk_buff_head *q, struct sk_buff *skb);
struct sk_buff *skb_dequeue(struct sk_buff_head *q);
uint32_t csum_and_copy_from_user(uint8_t *dst, uint64_t src, uint32_t n, int *err);
// loopback.c: the card
void dev_queue_xmit(struct sk_buff *skb);
void net_rx_interrupt(void);
void net_init(void);
void net_report(void);
void card_deliver(int c, struct sk_buff *skb);
bool cards_pending(void);
// wire.c: the wire between the client machines and the server's cards
extern int wire_cpu;
void wire_init(void);
void wire_xmit(int c, struct sk_buff *skb);
void wire_run(void);
void wire_idle(void);
void wire_report(void);
void wire_received(struct sk_buff *skb);
extern uint64_t net_rx_irqs[], net_rx_packets[];
// sock.c: the stream protocol
struct sock *sk_alloc(void);
void sock_hold(struct sock *sk);
void sock_put(struct sock *sk);
void stream_rcv(struct sk_buff *skb);
long stream_connect(struct sock *sk, uint16_t port, bool nonblock);
long stream_listen(struct sock *sk, int backlog);
long stream_bind(struct sock *sk, uint16_t port);
struct sock *stream_accept(struct sock *sk, bool nonblock, long *err);
long stream_sendmsg(struct sock *sk, uint64_t buf, uint64_t n, bool nonblock);
long stream_recvmsg(struct sock *sk, uint64_t buf, uint64_t n, bool nonblock, bool waitall);
long stream_shutdown(struct sock *sk, int how);
void stream_close(struct sock *sk);
unsigned stream_poll(struct sock *sk);
