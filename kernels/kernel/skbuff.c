// sk_buffs: allocation from their own cache, queues, and the copy of user
// data into a packet.
//
// 2.4 copies and checksums in one pass (csum_and_copy_from_user), so the
// sender's CPU reads the user buffer and writes the packet once.  We do
// the same: a 16-bit ones'-complement sum, folded, over the bytes as they
// are copied.  The loopback card marks packets "checksum unnecessary",
// so the receiver does not check it (as 2.4 loopback does).
#include "kernel.h"
#include "mm.h"
#include "net.h"
#include "slab.h"

static struct kmem_cache skbuff_cache = KMEM_CACHE_INIT("skbuff", SKB_SIZE);

struct sk_buff *
alloc_skb(void)
{
  struct sk_buff *skb = kmem_cache_alloc(&skbuff_cache);
  if (skb) {
    skb->next = NULL;
    skb->sk = skb->from = NULL;
    skb->kind = SKB_DATA;
    skb->len = skb->off = skb->csum = 0;
    skb->truesize = SKB_SIZE;
  }
  return skb;
}

void
kfree_skb(struct sk_buff *skb)
{
  kmem_cache_free(&skbuff_cache, skb);
}

// Callers hold the lock that guards q.
void
skb_queue_tail(struct sk_buff_head *q, struct sk_buff *skb)
{
  skb->next = NULL;
  if (q->tail)
    q->tail->next = skb;
  else
    q->head = skb;
  q->tail = skb;
  q->qlen++;
}

struct sk_buff *
skb_dequeue(struct sk_buff_head *q)
{
  struct sk_buff *skb = q->head;
  if (skb) {
    q->head = skb->next;
    if (!q->head)
      q->tail = NULL;
    q->qlen--;
    skb->next = NULL;
  }
  return skb;
}

// Copy n bytes (n <= MSS) from user memory into dst, summing as we go.
// The copy goes through copy_from_user (page by page, faulting pages in)
// into the packet, and the sum reads the packet's bytes while they are in
// the L1: one pass over the user data, one over the packet.
uint32_t
csum_and_copy_from_user(uint8_t *dst, uint64_t src, uint32_t n, int *err)
{
  *err = copy_from_user(dst, src, n);
  if (*err)
    return 0;
  uint64_t sum = 0;
  uint32_t i = 0;
  for (; i + 1 < n; i += 2)
    sum += (uint32_t)dst[i] << 8 | dst[i + 1];
  if (i < n)
    sum += (uint32_t)dst[i] << 8;
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return (uint32_t)sum;
}
