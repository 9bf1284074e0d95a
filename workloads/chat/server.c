/* server.c: the chat server, as chat_s does it (workload-facts.md 3).
 * Per user, a receive thread reads the user's messages (whole 100-byte
 * messages, MSG_WAITALL) and raises the user's semaphore in its room's
 * SysV set, semop(+1); the user's send thread waits on it, semop(-1), and
 * writes a message to each of the other users of the room, one send() per
 * member.  Nothing bounds how far a receive thread runs ahead of its send
 * thread but the semaphore's count, so a receive thread only ever sleeps
 * in recv().  As chat_s's, the send thread sends a buffer of its own (the
 * receive thread's goes on being overwritten); here it is the message the
 * receive thread checked, rebuilt from its number, so that every client
 * checks every byte end to end.  The server exits once every connection
 * has been closed by its client. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <unistd.h>

#include "chat.h"

struct suser {
  int fd, room, user;
  struct suser *room_members;    /* the room's first user */
  int users;
  int semid;                     /* the room's set; semaphore number = user */
  long received;                 /* messages the receive thread checked */
  int eof;                       /* the client closed: the last semop(+1) */
  int done_semid;
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
  struct chat_msg m;
  for (;;) {
    long r = recv(u->fd, &m, MSG_SIZE, MSG_WAITALL);
    if (r == 0)
      break;
    if (r != MSG_SIZE)
      fail("short message");
    if (m.room != u->room || m.user != u->user || m.seq != u->received)
      fail("message from the wrong user or out of order");
    for (unsigned i = 0; i < sizeof m.body; i++)
      if (m.body[i] != msg_byte(m.room, m.user, m.seq, i))
        fail("bad message byte");
    u->received++;
    sem_change(u->semid, u->user, +1);
  }
  __atomic_store_n(&u->eof, 1, __ATOMIC_RELEASE);
  sem_change(u->semid, u->user, +1);
  return NULL;
}

static void *sender(void *arg)
{
  struct suser *u = arg;
  struct chat_msg m;
  for (long sent = 0;; sent++) {
    sem_change(u->semid, u->user, -1);
    /* one semop(+1) per message, then one for the end */
    if (sent == __atomic_load_n(&u->received, __ATOMIC_ACQUIRE) &&
        __atomic_load_n(&u->eof, __ATOMIC_ACQUIRE))
      break;
    m.room = u->room;
    m.user = u->user;
    m.seq = sent;
    for (unsigned i = 0; i < sizeof m.body; i++)
      m.body[i] = msg_byte(u->room, u->user, sent, i);
    for (int i = 0; i < u->users; i++) {
      struct suser *v = &u->room_members[i];
      if (v != u && send(v->fd, &m, MSG_SIZE, 0) != MSG_SIZE)
        fail("send");
    }
  }
  sem_change(u->done_semid, 0, -1);
  return NULL;
}

int chat_server(const struct chat_config *cfg, int ls)
{
  int n = cfg->rooms * cfg->users;
  struct suser *us = calloc(n, sizeof *us);
  int *room_sets = calloc(cfg->rooms, sizeof *room_sets);
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
  for (int r = 0; r < cfg->rooms; r++)
    if ((room_sets[r] = sem_set(cfg->users, 0)) < 0)
      fail("semget");
  int done = sem_set(1, n);      /* counts the send threads down to zero */
  if (done < 0)
    fail("semget");
  for (int k = 0; k < n; k++) {
    struct suser *u = &us[k];
    u->room = k / cfg->users;
    u->user = k % cfg->users;
    u->room_members = &us[u->room * cfg->users];
    u->users = cfg->users;
    u->semid = room_sets[u->room];
    u->done_semid = done;
  }
  for (int k = 0; k < n; k++)
    if (start_thread(receiver, &us[k], NULL) || start_thread(sender, &us[k], NULL))
      fail("pthread_create");
  /* Every user announced, every thread started: tell the clients. */
  for (int k = 0; k < n; k++)
    if (send(us[k].fd, "go", 2, 0) != 2)
      fail("go");
  sem_change(done, 0, 0);        /* wait for zero */
  for (int r = 0; r < cfg->rooms; r++)
    semctl(room_sets[r], 0, IPC_RMID);
  semctl(done, 0, IPC_RMID);
  return 0;
}
