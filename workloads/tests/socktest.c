/* socktest: stream sockets.
 *   - connect to a port nobody listens on: ECONNREFUSED;
 *   - a listener and 2 acceptor processes (both block in accept: each
 *     connection wakes one), 6 client processes; each client sends
 *     100 KB in odd-sized writes, then shutdown(SHUT_WR); the acceptor
 *     echoes every byte until end of file and closes; the client checks
 *     the echo byte for byte, then sees end of file;
 *   - poll: a listener is readable when a connection waits; a connected
 *     socket is writable, and readable only once data arrives;
 *   - after the peer closed: read is end of file, write is EPIPE;
 *   - a non-blocking accept with nothing queued: EAGAIN;
 *   - getsockname, setsockopt (TCP_NODELAY), recv with MSG_WAITALL.
 * Runs on the testbed and on a Linux host (TCP on 127.0.0.1). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define T "socktest"
#define CLIENTS 6
#define BYTES (100 * 1024)

static int port;

static struct sockaddr_in addr(int p)
{
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(p);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

static int listener(int p)
{
  int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  CHECK(T, s >= 0);
  CHECK(T, setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0);
  struct sockaddr_in a = addr(p);
  CHECK(T, bind(s, (struct sockaddr *)&a, sizeof a) == 0);
  CHECK(T, listen(s, 64) == 0);
  return s;
}

static int dial(int p)
{
  int s = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(T, s >= 0);
  struct sockaddr_in a = addr(p);
  if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
    int e = errno;
    close(s);
    errno = e;
    return -1;
  }
  return s;
}

static unsigned char pat(int c, long i) { return (unsigned char)(c * 31 + i * 7 + (i >> 11)); }

static void acceptor(int ls, int conns)
{
  char buf[2000];
  for (int k = 0; k < conns; k++) {
    int c = accept(ls, NULL, NULL);
    CHECK(T, c >= 0);
    int one = 1;
    CHECK(T, setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0);
    long r;
    while ((r = read(c, buf, sizeof buf)) > 0)
      for (long off = 0; off < r;) {
        long w = write(c, buf + off, r - off);
        CHECK(T, w > 0);
        off += w;
      }
    CHECK(T, r == 0);
    close(c);
  }
  _exit(0);
}

static void client(int id)
{
  int s = dial(port);
  CHECK(T, s >= 0);
  /* the writer is a child, so the echo never deadlocks on full buffers */
  pid_t w = fork();
  if (w == 0) {
    unsigned char buf[1777];
    for (long off = 0; off < BYTES;) {
      long n = BYTES - off < (long)sizeof buf ? BYTES - off : (long)sizeof buf;
      for (long i = 0; i < n; i++)
        buf[i] = pat(id, off + i);
      long r = send(s, buf, n, 0);
      CHECK(T, r > 0);
      off += r;
    }
    CHECK(T, shutdown(s, SHUT_WR) == 0);
    _exit(0);
  }
  unsigned char buf[1000];
  long got = 0, r;
  while ((r = recv(s, buf, sizeof buf, 0)) > 0) {
    for (long i = 0; i < r; i++)
      CHECK(T, buf[i] == pat(id, got + i));
    got += r;
  }
  CHECK(T, r == 0 && got == BYTES);
  int st;
  CHECK(T, waitpid(w, &st, 0) == w && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  close(s);
  _exit(0);
}

static void echo_many(void)
{
  int ls = listener(port);
  pid_t acc[2];
  for (int i = 0; i < 2; i++) {
    acc[i] = fork();
    if (acc[i] == 0)
      acceptor(ls, CLIENTS / 2);
  }
  pid_t cl[CLIENTS];
  for (int i = 0; i < CLIENTS; i++) {
    cl[i] = fork();
    if (cl[i] == 0)
      client(i);
  }
  for (int i = 0; i < CLIENTS; i++) {
    int st;
    CHECK(T, waitpid(cl[i], &st, 0) == cl[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  for (int i = 0; i < 2; i++) {
    int st;
    CHECK(T, waitpid(acc[i], &st, 0) == acc[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  close(ls);
}

static void edges(void)
{
  errno = 0;
  CHECK(T, dial(port + 1) == -1 && errno == ECONNREFUSED);
  int ls = listener(port + 2);
  CHECK(T, fcntl(ls, F_SETFL, O_NONBLOCK) == 0);
  errno = 0;
  CHECK(T, accept(ls, NULL, NULL) == -1 && (errno == EAGAIN || errno == EWOULDBLOCK));
  struct pollfd pl = {ls, POLLIN, 0};
  CHECK(T, poll(&pl, 1, 0) == 0);
  int c = dial(port + 2);
  CHECK(T, c >= 0);
  CHECK(T, poll(&pl, 1, 1000) == 1 && (pl.revents & POLLIN));
  struct sockaddr_in a;
  socklen_t alen = sizeof a;
  int s = accept(ls, (struct sockaddr *)&a, &alen);
  CHECK(T, s >= 0 && a.sin_family == AF_INET);
  CHECK(T, fcntl(s, F_SETFL, 0) == 0);
  alen = sizeof a;
  CHECK(T, getsockname(ls, (struct sockaddr *)&a, &alen) == 0 && ntohs(a.sin_port) == port + 2);
  struct pollfd pc = {c, POLLIN | POLLOUT, 0};
  CHECK(T, poll(&pc, 1, 0) == 1 && pc.revents == POLLOUT);
  /* two writes, one MSG_WAITALL read of both */
  CHECK(T, write(s, "hello ", 6) == 6 && write(s, "world", 5) == 5);
  char buf[16] = {0};
  CHECK(T, recv(c, buf, 11, MSG_WAITALL) == 11 && memcmp(buf, "hello world", 11) == 0);
  pc.revents = 0;
  CHECK(T, write(s, "!", 1) == 1);
  CHECK(T, poll(&pc, 1, 1000) >= 1 && (pc.revents & POLLIN));
  CHECK(T, read(c, buf, sizeof buf) == 1 && buf[0] == '!');
  /* the peer closes: end of file, then EPIPE */
  close(s);
  CHECK(T, read(c, buf, sizeof buf) == 0);
  long r = 0;
  errno = 0;
  for (int i = 0; i < 10 && r >= 0; i++)   /* Linux: the first write may pass (RST) */
    r = write(c, "x", 1);
  CHECK(T, r == -1 && (errno == EPIPE || errno == ECONNRESET));
  close(c);
  close(ls);
}

int main(void)
{
  signal(SIGPIPE, SIG_IGN);
  port = 20000 + getpid() % 20000;      /* distinct per host run */
  edges();
  echo_many();
  printf(T ": ok (%d clients x %d bytes echoed)\n", CLIENTS, BYTES);
  return 0;
}
