/* server.c: the chat server.  Per user, a receive thread reads the user's
 * messages (whole 100-byte messages, MSG_WAITALL) and hands each to the
 * user's send thread through a small ring and a semaphore (chat_s uses a
 * SysV semaphore per user); the send thread writes it to each of the other
 * users of the room, one send() per member.  The server exits once every
 * connection has been closed by its client. */
#include <errno.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "chat.h"

#define RING 16

struct suser {
  int fd, room;
  struct suser *room_members;    /* the room's first user */
  int users;
  sem_t full, empty;
  struct chat_msg ring[RING];
  int head, tail;
  sem_t *done;
};

static void fail(const char *what)
{
  printf("chat: FAIL server: %s (%s)\n", what, strerror(errno));
  fflush(stdout);
  _exit(1);
}

static void *receiver(void *arg)
{
  struct suser *u = arg;
  for (;;) {
    sem_wait(&u->empty);
    struct chat_msg *m = &u->ring[u->tail];
    long r = recv(u->fd, m, MSG_SIZE, MSG_WAITALL);
    if (r == 0)
      break;
    if (r != MSG_SIZE)
      fail("short message");
    u->tail = (u->tail + 1) % RING;
    sem_post(&u->full);
  }
  u->ring[u->tail].seq = -1;        /* end: tell the sender */
  sem_post(&u->full);
  return NULL;
}

static void *sender(void *arg)
{
  struct suser *u = arg;
  for (;;) {
    sem_wait(&u->full);
    struct chat_msg *m = &u->ring[u->head];
    if (m->seq < 0)
      break;
    for (int i = 0; i < u->users; i++) {
      struct suser *v = &u->room_members[i];
      if (v != u && send(v->fd, m, MSG_SIZE, 0) != MSG_SIZE)
        fail("send");
    }
    u->head = (u->head + 1) % RING;
    sem_post(&u->empty);
  }
  sem_post(u->done);
  return NULL;
}

int chat_server(const struct chat_config *cfg, int ls)
{
  int n = cfg->rooms * cfg->users;
  struct suser *us = calloc(n, sizeof *us);
  sem_t done;
  sem_init(&done, 0, 0);
  stack_pool(2L * n);
  /* A user's first message says who it is (room, user); connections
   * arrive in any order. */
  for (int k = 0; k < n; k++) {
    int fd = accept(ls, NULL, NULL);
    struct chat_msg hello;
    if (fd < 0 || recv(fd, &hello, MSG_SIZE, MSG_WAITALL) != MSG_SIZE)
      fail("accept");
    if (hello.room < 0 || hello.room >= cfg->rooms || hello.user < 0 ||
        hello.user >= cfg->users || us[hello.room * cfg->users + hello.user].fd)
      fail("bad hello");
    us[hello.room * cfg->users + hello.user].fd = fd;
  }
  close(ls);
  for (int k = 0; k < n; k++) {
    struct suser *u = &us[k];
    u->room = k / cfg->users;
    u->room_members = &us[u->room * cfg->users];
    u->users = cfg->users;
    u->done = &done;
    sem_init(&u->full, 0, 0);
    sem_init(&u->empty, 0, RING);
  }
  for (int k = 0; k < n; k++)
    if (start_thread(receiver, &us[k], NULL) || start_thread(sender, &us[k], NULL))
      fail("pthread_create");
  /* Every user announced, every thread started: tell the clients. */
  for (int k = 0; k < n; k++)
    if (send(us[k].fd, "go", 2, 0) != 2)
      fail("go");
  for (int k = 0; k < n; k++)
    sem_wait(&done);
  return 0;
}
