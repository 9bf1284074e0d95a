// Doubly linked lists.
//
// list32 is the run-queue link of the task structure: two 32-bit
// pointers, as on i386, so that run_list.next lands at 0x3c and the whole
// per-task scheduler block fits one 32-byte line (see sched.h).  The kernel
// lives and allocates below 4 GiB with virtual == physical, so a 32-bit
// value is a complete pointer.  list64 is an ordinary list for the rest.
#pragma once
#include "types.h"

struct list32 { uint32_t next, prev; };
struct list64 { struct list64 *next, *prev; };


static inline void list32_init(struct list32 *h) { h->next = h->prev = P32(h); }

static inline void __list32_add(struct list32 *n, struct list32 *prev,
                                struct list32 *next) {
  next->prev = P32(n);
  n->next = P32(next);
  n->prev = P32(prev);
  prev->next = P32(n);
}
static inline void list32_add(struct list32 *n, struct list32 *head) {
  __list32_add(n, head, PTR(head->next));
}
static inline void list32_del(struct list32 *e) {
  struct list32 *prev = PTR(e->prev), *next = PTR(e->next);
  prev->next = P32(next);
  next->prev = P32(prev);
}

static inline void list64_init(struct list64 *h) { h->next = h->prev = h; }
static inline void list64_add(struct list64 *n, struct list64 *h) {
  n->next = h->next;
  n->prev = h;
  h->next->prev = n;
  h->next = n;
}
static inline void list64_add_tail(struct list64 *n, struct list64 *h) {
  n->prev = h->prev;
  n->next = h;
  h->prev->next = n;
  h->prev = n;
}
static inline void list64_del(struct list64 *e) {
  e->prev->next = e->next;
  e->next->prev = e->prev;
  e->next = e->prev = e;
}
