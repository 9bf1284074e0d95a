/* client.c: a closed-loop client.  Each request is picked from the static
 * mix (fileset.h) by the client's own generator, seeded from the run's
 * seed and the client's number, so a seed gives the same requests.  The
 * client connects, sends the request, reads the whole response through a
 * 4 KiB buffer (as WebBench does), checks the status line, the length and
 * every byte of the body, reports the request on the progress pipe, and
 * goes again with no think time.  Any mismatch fails the run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "fileset.h"
#include "net.h"

static char buf[4096];

static void fail(const struct client_config *c, const char *what)
{
  printf("web: FAIL client %d: %s (%s)\n", c->id, what, strerror(errno));
  fflush(stdout);
  _exit(1);
}

static long one_request(const struct client_config *c, int s, int file, int keep)
{
  char req[128], name[64];
  fileset_name(file, name, sizeof name);
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nUser-Agent: colorsim\r\n%s\r\n",
                   name, keep ? "Connection: keep-alive\r\n" : "");
  if (write_all(s, req, n) < 0)
    fail(c, "sending a request");
  long hdr, got = read_header(s, buf, sizeof buf, &hdr);
  if (got <= 0)
    fail(c, "reading a response header");
  long len = -1;
  char *cl = strstr(buf, "Content-Length: ");
  if (strncmp(buf, "HTTP/1.0 200 ", 13) || !cl || (len = atol(cl + 16)) != fileset_size(file))
    fail(c, "bad response header");
  long off = 0;
  for (long i = hdr; i < got; i++, off++)
    if ((unsigned char)buf[i] != fileset_byte(file, off))
      fail(c, "bad body byte");
  while (off < len) {
    long want = len - off < (long)sizeof buf ? len - off : (long)sizeof buf;
    long r = read(s, buf, want);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      fail(c, "short body");
    for (long i = 0; i < r; i++, off++)
      if ((unsigned char)buf[i] != fileset_byte(file, off))
        fail(c, "bad body byte");
  }
  if (off != len)
    fail(c, "body longer than Content-Length");
  return len;
}

/* Start together: every client holds the start pipe's write end from the
 * fork until it runs, so its end of file comes once every client exists
 * and has run -- then all of them begin at once, a closed loop of N from
 * the first request (as WebBench's clients start together). */
static void wait_for_start(const struct client_config *c)
{
  char b;
  close(c->start_wr);
  while (read(c->start_rd, &b, 1) < 0)
    if (errno != EINTR)
      fail(c, "start pipe");
  close(c->start_rd);
}

void client_main(const struct client_config *c)
{
  wait_for_start(c);
  uint64_t rng = c->seed * 0x9E3779B97F4A7C15ULL + (uint64_t)c->id * 7919 + 1;
  struct client_result res = {c->id, 0, 0};
  while (res.requests < c->requests) {
    int s = tcp_dial(c->port);
    if (s < 0)
      fail(c, "connect");
    for (int k = 0; k < c->keepalive && res.requests < c->requests; k++) {
      int keep = k + 1 < c->keepalive && res.requests + 1 < c->requests;
      res.bytes += one_request(c, s, fileset_pick(&rng), keep);
      res.requests++;
      if (write(c->progress_fd, "r", 1) != 1)
        fail(c, "progress pipe");
    }
    close(s);
  }
  if (write(c->result_fd, &res, sizeof res) != sizeof res)
    fail(c, "result pipe");
  _exit(0);
}
