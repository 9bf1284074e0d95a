/* net.c: socket helpers (net.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net.h"

static struct sockaddr_in loopback(int port)
{
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

int tcp_listen(int port, int backlog)
{
  int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in a = loopback(port);
  if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
      bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, backlog) < 0) {
    printf("web: FAIL cannot listen on port %d: %s\n", port, strerror(errno));
    exit(1);
  }
  return s;
}

int tcp_dial(int port)
{
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = loopback(port);
  if (s < 0)
    return -1;
  if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
    int e = errno;
    close(s);
    errno = e;
    return -1;
  }
  return s;
}

long write_all(int fd, const void *buf, long n)
{
  const char *p = buf;
  for (long done = 0; done < n;) {
    long w = write(fd, p + done, n - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    done += w;
  }
  return n;
}

long read_header(int fd, char *buf, long cap, long *hdr_len)
{
  long n = 0;
  for (;;) {
    if (n >= 4) {
      buf[n] = 0;
      char *end = strstr(buf, "\r\n\r\n");
      if (end) {
        *hdr_len = end + 4 - buf;
        return n;
      }
    }
    if (n >= cap - 1)
      return -1;
    long r = read(fd, buf + n, cap - 1 - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    if (r == 0)
      return n ? -1 : 0;
    n += r;
  }
}
