/* chat.h: the Chat workload (IBM's chat benchmark, workload-facts.md 3):
 * rooms x users, one connection per user, 100-byte messages, four threads
 * per user (client send, client receive, server receive, server send), every
 * message delivered to every other member of its room. */
#ifndef CHAT_H
#define CHAT_H

#include <stdint.h>

#define MSG_SIZE 100
#define STACK_SIZE (16 * 1024)   /* chat's thread stacks */
#define MESSAGES_MAX 1000000     /* --messages at most: every count fits a
                                    long at the largest room (colorsim's
                                    describe/programs.py reads this line) */

struct chat_config {
  int rooms, users, messages, port;
  int skip;                      /* % of received messages outside the region at each end */
};

/* A message: who sent it, its number, then bytes that depend on both, so
 * a receiver checks sender, order and content. */
struct chat_msg {
  int32_t room, user, seq;
  unsigned char body[MSG_SIZE - 12];
};
_Static_assert(sizeof(struct chat_msg) == MSG_SIZE, "message size");

static inline unsigned char msg_byte(int room, int user, int seq, int i)
{
  return (unsigned char)(room * 131 + user * 31 + seq * 7 + i);
}

/* Threads on stacks carved from one mapping: the kernel keeps 96 areas
 * per address space, and musl would map each stack (and its guard).  Each
 * thread is a task of its own, as chat's clone() threads were on 2.4. */
void *stack_pool(long n);
int start_thread(void *(*fn)(void *), void *arg, void *stack);

/* chat_s and chat_c block on SysV semaphores, never on futexes: a set of
 * n, each set to value (-1 when semget fails), and one semop (0: wait for
 * zero) that exits the process when it fails.  chat_s keeps one set per
 * room (a semaphore per user), so the rooms are at most 2.4's SEMMNI (128
 * sets) less the sets for start and end (colorsim's describe/programs.py
 * reads this line). */
#define ROOMS_MAX 120
int sem_set(int n, int value);
void sem_change(int semid, int num, int op);

/* server.c: accept rooms x users connections, serve, exit 0 when every
 * connection has closed (1 on any error).  Runs in its own process. */
int chat_server(const struct chat_config *cfg, int listen_fd);
/* client.c: the clients and the measurement; 0 when every message arrived
 * intact at every member of its room. */
int chat_clients(const struct chat_config *cfg);

#endif
