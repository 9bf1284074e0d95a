/* chat: the Chat workload, server and clients on one machine as in the
 * paper (workloads/README.md, "Chat"):
 *
 *   chat [--rooms R] [--users U] [--messages M] [--port P] [--skip S]
 *
 * --skip S: the region of interest is the middle of the run, from S % to
 * (100 - S) % of the received messages (default 0: all of it).
 * defaults 30 x 20 x 300 (2400 threads, 3.6 M messages).  The server runs
 * in a child process, the clients in this one.  Exit 0 only when every
 * message reached every other member of its room intact and in order. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chat.h"

static int arg(char **argv, int *i, int argc)
{
  char *end;
  long v = *i + 1 < argc ? strtol(argv[++*i], &end, 10) : -1;
  if (v < 1 || *end) {
    printf("chat: FAIL bad value for %s\n", argv[*i - 1]);
    exit(1);
  }
  return v;
}

/* A percentage below 50 (0 allowed). */
static int arg0(char **argv, int *i, int argc)
{
  char *end;
  long v = *i + 1 < argc ? strtol(argv[++*i], &end, 10) : -1;
  if (v < 0 || v >= 50 || *end) {
    printf("chat: FAIL bad value for %s (0 to 49)\n", argv[*i - 1]);
    exit(1);
  }
  return v;
}

int main(int argc, char **argv)
{
  struct chat_config cfg = {30, 20, 300, 9999, 0};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rooms")) cfg.rooms = arg(argv, &i, argc);
    else if (!strcmp(argv[i], "--users")) cfg.users = arg(argv, &i, argc);
    else if (!strcmp(argv[i], "--messages")) cfg.messages = arg(argv, &i, argc);
    else if (!strcmp(argv[i], "--port")) cfg.port = arg(argv, &i, argc);
    else if (!strcmp(argv[i], "--skip")) cfg.skip = arg0(argv, &i, argc);
    else {
      printf("chat: FAIL unknown option %s\n", argv[i]);
      return 1;
    }
  }
  if (cfg.messages > MESSAGES_MAX) {
    printf("chat: FAIL --messages %d is more than %d\n", cfg.messages, MESSAGES_MAX);
    return 1;
  }
  if (cfg.rooms > ROOMS_MAX) {
    printf("chat: FAIL --rooms %d is more than %d (a semaphore set per room)\n", cfg.rooms,
           ROOMS_MAX);
    return 1;
  }
  if (cfg.users < 2 || (long)cfg.rooms * cfg.users > 1000) {
    printf("chat: FAIL need 2 or more users and at most 1000 connections\n");
    return 1;
  }
  /* Listen before forking: the clients never find the port closed. */
  int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(cfg.port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
      bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 4096) < 0) {
    printf("chat: FAIL listen: %s\n", strerror(errno));
    return 1;
  }
  pid_t server = fork();
  if (server < 0)
    return 1;
  if (server == 0)
    _exit(chat_server(&cfg, ls));
  close(ls);
  int r = chat_clients(&cfg);
  int st;
  if (waitpid(server, &st, 0) != server || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    printf("chat: FAIL the server failed\n");
    return 1;
  }
  if (!r)
    printf("chat: ok (%d rooms x %d users x %d messages of %d bytes, every one verified)\n",
           cfg.rooms, cfg.users, cfg.messages, MSG_SIZE);
  return r;
}
