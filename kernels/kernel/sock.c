// Stream sockets over the loopback card: connection set-up, data, FIN,
// flow control, close (the part of 2.4's tcp.c and tcp_ipv4.c a local
// stream needs; README "Sockets and the loopback card").
//
// Data moves as in 2.4: the sender copies (and sums) its bytes into
// packets of at most MSS bytes, the card delivers them in its interrupt
// (loopback.c), stream_rcv queues them on the receiving socket and wakes
// its sleepers, and the reader copies them out and frees them.
//
// Flow control is the receive buffer: bytes queued or in flight to a
// socket (rmem_alloc, in packet truesize) may not exceed its rcvbuf; a
// writer sleeps on its own socket until the reader frees packets and
// wakes it (2.4's sk->write_space).
//
// References: the file holds one, each end holds one on its peer, each
// packet on its receiver (and a SYN on its sender), the accept queue on
// each child.  The last sock_put frees the socket.
#include "errno.h"
#include "kernel.h"
#include "mm.h"
#include "net.h"
#include "poll.h"
#include "sched.h"
#include "slab.h"
#include "wait_event.h"

static struct kmem_cache sock_cache =
  KMEM_CACHE_INIT("sock", (sizeof(struct sock) + SMP_CACHE_BYTES - 1) & ~(SMP_CACHE_BYTES - 1));

// Listeners by port: 2.4's tcp_listening_hash.
#define LHASH 32
static struct sock *listening_hash[LHASH];
static spinlock_t lhash_lock = SPIN_LOCK_UNLOCKED;

struct sock *
sk_alloc(void)
{
  struct sock *sk = kmem_cache_alloc(&sock_cache);
  if (!sk)
    return NULL;
  memset(sk, 0, sizeof *sk);
  sk->lock = (spinlock_t)SPIN_LOCK_UNLOCKED;
  sk->refcnt = 1;
  sk->rcvbuf = SK_RCVBUF;
  sk->client = (current->flags & PF_CLIENT) != 0;
  init_waitqueue_head(&sk->sleep);
  return sk;
}

void sock_hold(struct sock *sk) { __atomic_add_fetch(&sk->refcnt, 1, __ATOMIC_SEQ_CST); }

void
sock_put(struct sock *sk)
{
  if (__atomic_sub_fetch(&sk->refcnt, 1, __ATOMIC_SEQ_CST) == 0)
    kmem_cache_free(&sock_cache, sk);
}

// A packet leaves this socket for dst.
static void
send_packet(struct sk_buff *skb, struct sock *dst)
{
  sock_hold(dst);
  skb->sk = dst;
  __atomic_add_fetch(&dst->rmem_alloc, skb->truesize, __ATOMIC_SEQ_CST);
  dev_queue_xmit(skb);
}

// Tell dst's sleepers that something changed.  Within one partition, wake
// them here.  Across the partitions (a client's read freeing room for the
// server's writer, the server completing or refusing a client's
// connection) it is a packet on the wire, so that the wake-up runs where
// the paper's did: in dst's machine, on the CPU that takes the card's
// interrupt, never on the other side's run queue.
static void
notify(struct sock *dst)
{
  struct sk_buff *skb;
  if (cpu_is_client(smp_processor_id()) == dst->client || !(skb = alloc_skb())) {
    wake_up(&dst->sleep, 1);
    return;
  }
  skb->kind = SKB_ACK;
  skb->truesize = 0;
  send_packet(skb, dst);
}

static void
send_fin(struct sock *sk)
{
  struct sk_buff *skb = NULL;
  struct sock *peer = NULL;
  uint64_t f = spin_lock_irqsave(&sk->lock);
  if (!(sk->shutdown & SEND_SHUTDOWN) && sk->state == TCP_ESTABLISHED && sk->peer) {
    sk->shutdown |= SEND_SHUTDOWN;
    peer = sk->peer;
  }
  spin_unlock_irqrestore(&sk->lock, f);
  if (!peer)
    return;
  // A FIN without memory would leave the peer waiting forever: wait.
  while (!(skb = alloc_skb()))
    schedule();
  skb->kind = SKB_FIN;
  skb->truesize = 0;
  send_packet(skb, peer);
  wake_up(&sk->sleep, 1);
}

static void
refuse(struct sock *client)
{
  uint64_t f = spin_lock_irqsave(&client->lock);
  client->err = ECONNREFUSED;
  client->state = TCP_CLOSE;
  spin_unlock_irqrestore(&client->lock, f);
  notify(client);
}

// A connection request reached a listener (interrupt context): make the
// server's end, link the two ends, queue it for accept(), wake one
// acceptor and the connecting task.
static void
syn_rcv(struct sock *lsk, struct sock *client)
{
  struct sock *child = NULL;
  uint64_t f = spin_lock_irqsave(&lsk->lock);
  bool ok = lsk->state == TCP_LISTEN && !lsk->dead &&
            lsk->ack_backlog < lsk->max_ack_backlog;
  spin_unlock_irqrestore(&lsk->lock, f);
  if (ok)
    child = sk_alloc();                  // the accept queue's reference
  if (!child) {
    refuse(client);
    return;
  }
  child->state = TCP_ESTABLISHED;
  child->accepted = true;
  child->port = lsk->port;
  child->client = lsk->client;           // the listener's side
  child->card = client->card;            // and the connection's network
  sock_hold(client);
  child->peer = client;
  f = spin_lock_irqsave(&client->lock);
  sock_hold(child);
  client->peer = child;
  client->state = TCP_ESTABLISHED;
  spin_unlock_irqrestore(&client->lock, f);

  f = spin_lock_irqsave(&lsk->lock);
  if (lsk->state == TCP_LISTEN && !lsk->dead) {
    if (lsk->accept_tail)
      lsk->accept_tail->accept_next = child;
    else
      lsk->accept_head = child;
    lsk->accept_tail = child;
    lsk->ack_backlog++;
    child = NULL;
  }
  spin_unlock_irqrestore(&lsk->lock, f);
  if (child) {                           // closed meanwhile: the client sees EOF
    stream_close(child);
  }
  wake_up(&lsk->sleep, 1);               // one exclusive acceptor + pollers
  notify(client);                        // the connection is made
}

// The card's receive path for one packet (interrupt context).
void
stream_rcv(struct sk_buff *skb)
{
  struct sock *sk = skb->sk;
  if (skb->kind == SKB_ACK) {
    wake_up(&sk->sleep, 1);
    kfree_skb(skb);
    sock_put(sk);
    return;
  }
  if (skb->kind == SKB_SYN) {
    syn_rcv(sk, skb->from);
    sock_put(skb->from);
    sock_put(sk);
    kfree_skb(skb);
    return;
  }
  uint64_t f = spin_lock_irqsave(&sk->lock);
  if (sk->dead) {                        // closed: drop it (2.4 would RST)
    spin_unlock_irqrestore(&sk->lock, f);
    __atomic_sub_fetch(&sk->rmem_alloc, skb->truesize, __ATOMIC_SEQ_CST);
    kfree_skb(skb);
    sock_put(sk);
    return;
  }
  if (skb->kind == SKB_FIN) {
    sk->shutdown |= RCV_SHUTDOWN;
    kfree_skb(skb);
  } else {
    skb_queue_tail(&sk->receive_queue, skb);  // the queue now owns it
  }
  spin_unlock_irqrestore(&sk->lock, f);
  wake_up(&sk->sleep, 1);                // 2.4's sock_def_readable
  sock_put(sk);                          // the packet's reference
}

long
stream_bind(struct sock *sk, uint16_t port)
{
  uint64_t f = spin_lock_irqsave(&lhash_lock);
  long r = 0;
  for (struct sock *s = listening_hash[port % LHASH]; s; s = s->bind_next)
    if (s->port == port)
      r = -EADDRINUSE;
  if (!r)
    sk->port = port;
  spin_unlock_irqrestore(&lhash_lock, f);
  return r;
}

long
stream_listen(struct sock *sk, int backlog)
{
  if (!sk->port || sk->state == TCP_ESTABLISHED)
    return -EINVAL;
  if (backlog <= 0 || backlog > SOMAXCONN)
    backlog = SOMAXCONN;
  uint64_t f = spin_lock_irqsave(&lhash_lock);
  long r = 0;
  for (struct sock *s = listening_hash[sk->port % LHASH]; s; s = s->bind_next)
    if (s->port == sk->port && s != sk)
      r = -EADDRINUSE;
  if (!r && sk->state != TCP_LISTEN) {
    sk->state = TCP_LISTEN;
    sock_hold(sk);                       // the table's reference
    sk->bind_next = listening_hash[sk->port % LHASH];
    listening_hash[sk->port % LHASH] = sk;
  }
  if (!r)
    sk->max_ack_backlog = backlog;
  spin_unlock_irqrestore(&lhash_lock, f);
  return r;
}

static struct sock *
lookup_listener(uint16_t port)
{
  uint64_t f = spin_lock_irqsave(&lhash_lock);
  struct sock *s = listening_hash[port % LHASH];
  while (s && s->port != port)
    s = s->bind_next;
  if (s)
    sock_hold(s);
  spin_unlock_irqrestore(&lhash_lock, f);
  return s;
}

// connect: send a connection request through the card and wait until its
// delivery has made us ESTABLISHED (or refused).
long
stream_connect(struct sock *sk, uint16_t port, bool nonblock)
{
  if (sk->state == TCP_ESTABLISHED)
    return -EISCONN;
  if (sk->state != TCP_CLOSE)
    return -EALREADY;
  struct sock *lsk = lookup_listener(port);
  if (!lsk)
    return -ECONNREFUSED;
  struct sk_buff *skb = alloc_skb();
  if (!skb) {
    sock_put(lsk);
    return -ENOMEM;
  }
  sk->state = TCP_SYN_SENT;
  sk->err = 0;
  skb->kind = SKB_SYN;
  skb->truesize = 0;
  sock_hold(sk);
  skb->from = sk;
  send_packet(skb, lsk);
  sock_put(lsk);                         // the packet holds its own
  if (nonblock)
    return -EINPROGRESS;
  long r = wait_event_interruptible(&sk->sleep, READ_ONCE(sk->state) != TCP_SYN_SENT,
                                    WCHAN_CONNECT);
  if (r)
    return r;
  return sk->state == TCP_ESTABLISHED ? 0 : -sk->err;
}

static bool
accept_ready(struct sock *sk)
{
  return READ_ONCE(sk->accept_head) || READ_ONCE(sk->state) != TCP_LISTEN;
}

// accept: sleep exclusively (one acceptor woken per connection, 2.4.0's
// wait_for_connect), then take the first child.
struct sock *
stream_accept(struct sock *sk, bool nonblock, long *err)
{
  if (sk->state != TCP_LISTEN) {
    *err = -EINVAL;
    return NULL;
  }
  for (;;) {
    if (!accept_ready(sk) && nonblock) {
      *err = -EAGAIN;
      return NULL;
    }
    long r = wait_event_interruptible_exclusive(&sk->sleep, accept_ready(sk),
                                                WCHAN_ACCEPT);
    if (r) {
      *err = r;
      return NULL;
    }
    uint64_t f = spin_lock_irqsave(&sk->lock);
    struct sock *child = sk->accept_head;
    if (child) {
      sk->accept_head = child->accept_next;
      if (!sk->accept_head)
        sk->accept_tail = NULL;
      child->accept_next = NULL;
      sk->ack_backlog--;
    }
    int state = sk->state;
    spin_unlock_irqrestore(&sk->lock, f);
    if (child)
      return child;                      // the queue's reference is the file's
    if (state != TCP_LISTEN) {
      *err = -EINVAL;
      return NULL;
    }
  }
}

static bool
peer_gone(struct sock *sk)
{
  struct sock *peer = sk->peer;
  return !peer || READ_ONCE(peer->dead) || (sk->shutdown & SEND_SHUTDOWN);
}

static bool
send_room(struct sock *sk)
{
  return peer_gone(sk) ||
         READ_ONCE(sk->peer->rmem_alloc) + SKB_SIZE <= sk->peer->rcvbuf;
}

long
stream_sendmsg(struct sock *sk, uint64_t buf, uint64_t n, bool nonblock)
{
  uint64_t done = 0;
  if (sk->state != TCP_ESTABLISHED)
    return sk->state == TCP_SYN_SENT ? -EAGAIN : -ENOTCONN;
  while (done < n) {
    if (!send_room(sk)) {
      if (nonblock)
        return done ? (long)done : -EAGAIN;
      long r = wait_event_interruptible(&sk->sleep, send_room(sk),
                                        sk->accepted ? WCHAN_SEND_ACCEPTED
                                                     : WCHAN_SEND_CONNECTED);
      if (r)
        return done ? (long)done : r;
    }
    if (peer_gone(sk))
      return done ? (long)done : -EPIPE;  // no SIGPIPE: no signals
    struct sk_buff *skb = alloc_skb();
    if (!skb)
      return done ? (long)done : -ENOMEM;
    uint32_t len = n - done < MSS ? n - done : MSS;
    int err;
    skb->csum = csum_and_copy_from_user(skb->data, buf + done, len, &err);
    if (err) {
      kfree_skb(skb);
      return done ? (long)done : -EFAULT;
    }
    skb->len = len;
    send_packet(skb, sk->peer);
    done += len;
  }
  return done;
}

static bool
recv_ready(struct sock *sk)
{
  return READ_ONCE(sk->receive_queue.head) || (READ_ONCE(sk->shutdown) & RCV_SHUTDOWN) ||
         READ_ONCE(sk->state) != TCP_ESTABLISHED;
}

// recv: copy out whole or partial packets; free each emptied packet and
// give its room back to the sender (wake it).  Without waitall, return
// once something was read and the queue is empty (2.4's tcp_recvmsg with
// a low-water mark of one byte).
long
stream_recvmsg(struct sock *sk, uint64_t buf, uint64_t n, bool nonblock, bool waitall)
{
  uint64_t done = 0;
  if (sk->state != TCP_ESTABLISHED)
    return -ENOTCONN;
  while (done < n) {
    if (!recv_ready(sk)) {
      if (done && !waitall)
        break;
      if (nonblock)
        return done ? (long)done : -EAGAIN;
      long r = wait_event_interruptible(&sk->sleep, recv_ready(sk),
                                        sk->accepted ? WCHAN_RECV_ACCEPTED
                                                     : WCHAN_RECV_CONNECTED);
      if (r)
        return done ? (long)done : r;
    }
    uint64_t f = spin_lock_irqsave(&sk->lock);
    struct sk_buff *skb = sk->receive_queue.head;
    spin_unlock_irqrestore(&sk->lock, f);
    if (!skb)
      break;                             // end of stream
    // Only this reader removes packets (one reader per socket in our
    // workloads; 2.4 serialises readers with the socket lock), so skb
    // stays valid while we copy without the spinlock.
    uint32_t chunk = skb->len - skb->off;
    if (chunk > n - done)
      chunk = n - done;
    if (copy_to_user(buf + done, skb->data + skb->off, chunk) < 0)
      return done ? (long)done : -EFAULT;
    done += chunk;
    skb->off += chunk;
    if (skb->off == skb->len) {
      f = spin_lock_irqsave(&sk->lock);
      skb_dequeue(&sk->receive_queue);
      spin_unlock_irqrestore(&sk->lock, f);
      __atomic_sub_fetch(&sk->rmem_alloc, skb->truesize, __ATOMIC_SEQ_CST);
      kfree_skb(skb);
      // write space for the sender: across the partitions a window
      // update every second packet and when the queue is empty (2.4's
      // delayed ACK), else a wake-up at once
      struct sock *peer = sk->peer;
      if (peer && (peer->client == sk->client || ++sk->unacked >= 2 ||
                   !READ_ONCE(sk->receive_queue.head))) {
        sk->unacked = 0;
        notify(peer);
      }
    }
  }
  return done;
}

long
stream_shutdown(struct sock *sk, int how)
{
  if (how < 0 || how > 2)
    return -EINVAL;
  if (sk->state != TCP_ESTABLISHED)
    return -ENOTCONN;
  if (how != 0)                          // SHUT_WR, SHUT_RDWR
    send_fin(sk);
  if (how != 1) {                        // SHUT_RD
    uint64_t f = spin_lock_irqsave(&sk->lock);
    sk->shutdown |= RCV_SHUTDOWN;
    spin_unlock_irqrestore(&sk->lock, f);
    wake_up(&sk->sleep, 1);
  }
  return 0;
}

static void
purge(struct sock *sk)
{
  struct sk_buff *skb;
  for (;;) {
    uint64_t f = spin_lock_irqsave(&sk->lock);
    skb = skb_dequeue(&sk->receive_queue);
    spin_unlock_irqrestore(&sk->lock, f);
    if (!skb)
      break;
    __atomic_sub_fetch(&sk->rmem_alloc, skb->truesize, __ATOMIC_SEQ_CST);
    kfree_skb(skb);
  }
}

// The owner's last reference goes: FIN to the peer, drop what was queued,
// refuse what waits in the accept queue, let go of the peer.
void
stream_close(struct sock *sk)
{
  send_fin(sk);
  uint64_t f = spin_lock_irqsave(&sk->lock);
  sk->dead = 1;
  int was_listening = sk->state == TCP_LISTEN;
  sk->state = TCP_CLOSE;
  struct sock *children = sk->accept_head, *peer = sk->peer;
  sk->accept_head = sk->accept_tail = NULL;
  sk->peer = NULL;
  spin_unlock_irqrestore(&sk->lock, f);
  purge(sk);
  if (was_listening) {
    f = spin_lock_irqsave(&lhash_lock);
    for (struct sock **pp = &listening_hash[sk->port % LHASH]; *pp; pp = &(*pp)->bind_next)
      if (*pp == sk) {
        *pp = sk->bind_next;
        break;
      }
    spin_unlock_irqrestore(&lhash_lock, f);
    sock_put(sk);                        // the table's reference
  }
  while (children) {
    struct sock *c = children;
    children = c->accept_next;
    stream_close(c);                     // its client reads end of stream
  }
  wake_up(&sk->sleep, 1);
  if (peer) {
    notify(peer);                        // a blocked writer sees EPIPE
    sock_put(peer);
  }
  sock_put(sk);                          // the owner's reference
}

unsigned
stream_poll(struct sock *sk)
{
  unsigned mask = 0;
  if (sk->state == TCP_LISTEN)
    return READ_ONCE(sk->accept_head) ? POLLIN | POLLRDNORM : 0;
  if (sk->err)
    mask |= POLLERR;
  if (READ_ONCE(sk->receive_queue.head) || (READ_ONCE(sk->shutdown) & RCV_SHUTDOWN))
    mask |= POLLIN | POLLRDNORM;
  if (sk->state == TCP_ESTABLISHED) {
    if (peer_gone(sk))
      mask |= POLLOUT | POLLERR;
    else if (send_room(sk))
      mask |= POLLOUT | POLLWRNORM;
  } else if (sk->state == TCP_CLOSE && sk->peer == NULL && !sk->dead && sk->err) {
    mask |= POLLHUP;
  }
  if ((READ_ONCE(sk->shutdown) & (RCV_SHUTDOWN | SEND_SHUTDOWN)) == (RCV_SHUTDOWN | SEND_SHUTDOWN))
    mask |= POLLHUP;
  return mask;
}
