/* client.c: the chat clients.  Per user, one connection and two threads:
 * the send thread sends M messages with no pause; the receive thread
 * reads (users - 1) x M messages and checks each: a member of its room,
 * never itself, each sender's messages in order, every byte.  All threads
 * start together (chat_c's start semaphore); the region of interest is
 * from that start until the last receive thread is done. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "chat.h"
#include "fixed.h"
#include "m5roi.h"

/* Throughput per window: the region's received messages in WINDOWS equal
 * parts, each part's end stamped by the receive thread that completes it.
 * Printed after the region, so that a short run shows whether its rate
 * settled (steady state) or is all start and tail. */
#define WINDOWS 10
static long got, per_window;
static double stamp[WINDOWS + 1];

/* A steady-state region (--skip P): the received messages from P % of all
 * to (100 - P) %, so that the start of every thread and the tail, when
 * the last receivers finish alone, are outside it.  The receive thread
 * whose message crosses each bound marks it.  0: the whole run. */
static long roi_from, roi_to;
static double roi_t0, roi_t1;

static double now(void);

struct cuser {
  int fd, room, user;
  const struct chat_config *cfg;
  int *next_seq;                 /* per sender of the room */
  int sems;                      /* the start (0) and end (1) semaphores */
  long received;
};

static void fail(const struct cuser *u, const char *what)
{
  printf("chat: FAIL client room %d user %d: %s (%s)\n", u->room, u->user, what,
         strerror(errno));
  fflush(stdout);
  _exit(1);
}

static void *sender(void *arg)
{
  struct cuser *u = arg;
  struct chat_msg m;
  sem_change(u->sems, 0, -1);
  for (int s = 0; s < u->cfg->messages; s++) {
    m.room = u->room;
    m.user = u->user;
    m.seq = s;
    for (unsigned i = 0; i < sizeof m.body; i++)
      m.body[i] = msg_byte(u->room, u->user, s, i);
    if (send(u->fd, &m, MSG_SIZE, 0) != MSG_SIZE)
      fail(u, "send");
  }
  sem_change(u->sems, 1, -1);
  return NULL;
}

static void *receiver(void *arg)
{
  struct cuser *u = arg;
  struct chat_msg m;
  long want = (long)(u->cfg->users - 1) * u->cfg->messages;
  sem_change(u->sems, 0, -1);
  for (; u->received < want; u->received++) {
    if (recv(u->fd, &m, MSG_SIZE, MSG_WAITALL) != MSG_SIZE)
      fail(u, "short message");
    if (m.room != u->room || m.user < 0 || m.user >= u->cfg->users || m.user == u->user)
      fail(u, "message from the wrong sender");
    if (m.seq != u->next_seq[m.user]++)
      fail(u, "message out of order");
    for (unsigned i = 0; i < sizeof m.body; i++)
      if (m.body[i] != msg_byte(m.room, m.user, m.seq, i))
        fail(u, "bad message byte");
    long n = __atomic_add_fetch(&got, 1, __ATOMIC_RELAXED);
    if (per_window && n % per_window == 0 && n / per_window <= WINDOWS)
      stamp[n / per_window] = now();
    if (roi_from && n == roi_from) {
      m5_reset_stats();
      roi_t0 = now();
    }
    if (roi_from && n == roi_to) {
      m5_dump_stats();
      roi_t1 = now();
    }
  }
  sem_change(u->sems, 1, -1);
  return NULL;
}

static int dial(int port)
{
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  for (int tries = 0; s >= 0 && tries < 200; tries++) {
    if (connect(s, (struct sockaddr *)&a, sizeof a) == 0)
      return s;
    if (errno != ECONNREFUSED)
      break;
    usleep(10000);                   /* the server is still starting */
    close(s);
    s = socket(AF_INET, SOCK_STREAM, 0);
  }
  return -1;
}

static double now(void)
{
#if defined(CHAT_LINUX24)
  /* 2.4 has no clock_gettime: the time of day, as web falls back to */
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return tv.tv_sec + tv.tv_usec / 1e6;
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
#endif
}

static void print_windows(void)
{
  if (!per_window)
    return;
  printf("chat: windows of %ld received, messages received per second:", per_window);
  for (int w = 1; w <= WINDOWS; w++)
  {
    char rate[32];
    printf(" %s", fixed(rate, stamp[w] > stamp[w - 1] ? per_window / (stamp[w] - stamp[w - 1])
                                                     : 0.0, 0));
  }
  printf("\n");
}

int chat_clients(const struct chat_config *cfg)
{
  int n = cfg->rooms * cfg->users;
  struct cuser *us = calloc(n, sizeof *us);
  int *seqs = calloc((long)n * cfg->users, sizeof *seqs);
  /* chat_c's: one semaphore starts every thread at once, one counts
   * them down to zero as they finish */
  int sems = sem_set(2, 0);
  union { int val; } threads = {.val = 2 * n};
  if (sems < 0 || semctl(sems, 1, SETVAL, threads) < 0) {
    printf("chat: FAIL semget\n");
    return 1;
  }
  stack_pool(2L * n);
  for (int k = 0; k < n; k++) {
    struct cuser *u = &us[k];
    u->room = k / cfg->users;
    u->user = k % cfg->users;
    u->cfg = cfg;
    u->next_seq = &seqs[(long)k * cfg->users];
    u->sems = sems;
    struct chat_msg hello = {.room = u->room, .user = u->user, .seq = -1};
    if ((u->fd = dial(cfg->port)) < 0 || send(u->fd, &hello, MSG_SIZE, 0) != MSG_SIZE)
      fail(u, "connect");
  }
  for (int k = 0; k < n; k++) {
    char go[2];
    if (recv(us[k].fd, go, 2, MSG_WAITALL) != 2 || memcmp(go, "go", 2))
      fail(&us[k], "the server did not start");
  }
  for (int k = 0; k < n; k++)
    if (start_thread(sender, &us[k], NULL) || start_thread(receiver, &us[k], NULL))
      fail(&us[k], "pthread_create");
  /* Warm-up is the set-up: connections, hellos, 4 x users threads. */
  printf("chat: %d rooms x %d users x %d messages, %d threads; start\n", cfg->rooms,
         cfg->users, cfg->messages, 4 * n);
  fflush(stdout);
  long all = (long)n * (cfg->users - 1) * cfg->messages;
  per_window = all / WINDOWS;
  /* whole rounds of users - 1, so that sent = received / (users - 1) */
  roi_from = all / (cfg->users - 1) * cfg->skip / 100 * (cfg->users - 1);
  roi_to = all - roi_from;
  if (!roi_from)
    m5_reset_stats();
  double t0 = now();
  stamp[0] = t0;
  sem_change(sems, 0, 2 * n);
  sem_change(sems, 1, 0);        /* wait for zero */
  semctl(sems, 0, IPC_RMID);
  if (!roi_from)
    m5_dump_stats();
  double t1 = now();
  long received = 0;
  for (int k = 0; k < n; k++) {
    received += us[k].received;
    for (int s = 0; s < cfg->users; s++)
      if (s != us[k].user && us[k].next_seq[s] != cfg->messages)
        fail(&us[k], "messages missing");
    close(us[k].fd);
  }
  long sent = (long)n * cfg->messages;
  char secs[32];
  if (received != sent * (cfg->users - 1)) {
    printf("chat: FAIL %ld messages received, %ld expected\n", received,
           sent * (cfg->users - 1));
    return 1;
  }
  if (roi_from) {
    /* the middle: received counted, sent as chat_c's ratio gives it */
    long r = roi_to - roi_from, s = r / (cfg->users - 1);
    printf("chat: roi %ld messages (%ld sent, %ld received) in %s s, the middle "
           "%d %% to %d %% of %ld received\n", s + r, s, r, fixed(secs, roi_t1 - roi_t0, 2),
           cfg->skip, 100 - cfg->skip, received);
  } else {
    printf("chat: roi %ld messages (%ld sent, %ld received) in %s s\n", sent + received,
           sent, received, fixed(secs, t1 - t0, 2));
  }
  print_windows();
  return 0;
}
