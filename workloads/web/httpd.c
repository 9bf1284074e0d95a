/* httpd.c: one server process.  Like an Apache 1.3 child, it serves one
 * connection at a time, all of its keep-alive requests, then goes back to
 * accept (workload-facts.md 1.4-1.5): take the accept lock if one is
 * used, accept, release it, read the request, stat and open the file,
 * write the header with the first piece of the file, the rest in 32 KiB
 * writes, close the file, and close the connection the lingering way
 * (shutdown, read to end of file, close).  With WORK_APACHE (the default)
 * each step also does what 1.3's core does around it (apache.c): the
 * child's scoreboard slot and timeouts, the request in a pool, its
 * headers in tables, the response header from a table, the access log
 * line.  1.3 mmaps the file; our kernel maps no files, so the file is
 * read() into a buffer: one more copy. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include "apache.h"
#include "fileset.h"
#include "httpd.h"
#include "m5roi.h"
#include "net.h"

#define SEGMENT (32 * 1024)     /* Apache 1.3's MMAP_SEGMENT_SIZE */

static char request[4096];
static char segment[SEGMENT];

static void fail(const char *what)
{
  printf("web: FAIL httpd %d: %s: %s\n", (int)getpid(), what, strerror(errno));
  fflush(stdout);
  _exit(1);
}

/* One semop on the accept semaphore, retried if interrupted, as 1.3's
 * accept_mutex_on/off do. */
static void sem_accept_op(const struct httpd_config *c, int delta, const char *what)
{
  struct sembuf op = {.sem_num = 0, .sem_op = delta, .sem_flg = SEM_UNDO};
  while (semop(c->semid, &op, 1) < 0)
    if (errno != EINTR)
      fail(what);
}

/* fcntl(F_SETLKW) or F_UNLCK on the whole lock file, retried if
 * interrupted (1.3's accept_mutex_on/off for fcntl). */
static void fcntl_accept_op(const struct httpd_config *c, short type, const char *what)
{
  struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  while (fcntl(c->lock_fd, F_SETLKW, &fl) < 0)
    if (errno != EINTR)
      fail(what);
}

static void flock_accept_op(const struct httpd_config *c, int op, const char *what)
{
  while (flock(c->lock_fd, op) < 0)
    if (errno != EINTR)
      fail(what);
}

static void lock_accept(const struct httpd_config *c)
{
  char t;
  if (c->accept == ACCEPT_FCNTL)
    fcntl_accept_op(c, F_WRLCK, "accept fcntl lock");
  if (c->accept == ACCEPT_FLOCK)
    flock_accept_op(c, LOCK_EX, "accept flock");
  if (c->accept == ACCEPT_PIPE)
    while (read(c->lock_rd, &t, 1) != 1)
      if (errno != EINTR)
        fail("accept lock");
  if (c->accept == ACCEPT_SYSVSEM)
    sem_accept_op(c, -1, "accept semaphore");
}

static void unlock_accept(const struct httpd_config *c)
{
  if (c->accept == ACCEPT_PIPE && write(c->lock_wr, "L", 1) != 1)
    fail("accept unlock");
  if (c->accept == ACCEPT_SYSVSEM)
    sem_accept_op(c, 1, "accept semaphore release");
  if (c->accept == ACCEPT_FCNTL)
    fcntl_accept_op(c, F_UNLCK, "accept fcntl unlock");
  if (c->accept == ACCEPT_FLOCK)
    flock_accept_op(c, LOCK_UN, "accept flock release");
}

/* The header and the first segment of the file in one writev, as 1.3
 * does, then the rest in SEGMENT writes; each further segment resets the
 * send timeout in the scoreboard slot if there is one (1.3's
 * ap_reset_timeout).  The file's bytes sent. */
static long send_file(int c, int fd, const char *head, int hl, struct score_slot *slot)
{
  long got = read(fd, segment, SEGMENT), sent;
  if (got < 0)
    fail("reading the file");
  struct iovec iov[2] = {{(void *)head, hl}, {segment, got}};
  long w = writev(c, iov, 2);
  if (w < hl)
    fail("writev");
  sent = w - hl;
  if (sent < got && write_all(c, segment + sent, got - sent) < 0)
    fail("write");
  long total = got;
  while ((got = read(fd, segment, SEGMENT)) > 0) {
    if (slot)
      score_timeout(slot, 300);
    if (write_all(c, segment, got) < 0)
      fail("write");
    total += got;
  }
  return total;
}

/* The next request's header into request[]: 1, or 0 at end of file, or
 * -1 for the controller's QUIT. */
static int read_request(int c)
{
  long hdr, n = read_header(c, request, sizeof request, &hdr);
  if (n == 0)
    return 0;
  if (n < 0)
    fail("reading a request");
  return strncmp(request, "QUIT", 4) ? 1 : -1;
}

/* One request: 1 = served and the client wants the connection kept,
 * 0 = served (or end of file), -1 = quit. */
static int serve(const struct httpd_config *cfg, int c)
{
  int got = read_request(c);
  if (got <= 0)
    return got;
  char path[128], full[256];
  if (sscanf(request, "GET %127s HTTP/1.", path) != 1 || fileset_lookup(path) < 0) {
    errno = EINVAL;
    fail(request);
  }
  int keep = strstr(request, "Connection: keep-alive") != NULL;
  snprintf(full, sizeof full, "%s%s", cfg->root, path);
  struct stat st;
  int fd;
  if (stat(full, &st) < 0 || (fd = open(full, O_RDONLY)) < 0)
    fail(full);
  char head[256];
  int hl = snprintf(head, sizeof head,
                    "HTTP/1.0 200 OK\r\nServer: colorsim-httpd\r\n"
                    "Content-Length: %ld\r\nContent-Type: text/html\r\n%s\r\n",
                    (long)st.st_size, keep ? "Connection: keep-alive\r\n" : "");
  send_file(c, fd, head, hl, NULL);
  close(fd);
  return keep;
}

/* The same request the way 1.3's core serves it (apache.c), with the
 * scoreboard's status and timeouts where 1.3 sets them. */
static struct pool request_pool;

static int serve_apache(const struct httpd_config *cfg, int c, const char *host)
{
  struct score_slot *slot = &cfg->scoreboard[cfg->child];
  score_timeout(slot, 300);                  /* ap_hard_timeout("read request") */
  int got = read_request(c);
  score_timeout(slot, 0);                    /* ap_kill_timeout */
  if (got <= 0)
    return got;
  score_status(slot, SERVER_BUSY_WRITE);
  pool_clear(&request_pool);
  struct request r;
  if (request_parse(&r, &request_pool, request, cfg->root) < 0 ||
      fileset_lookup(r.uri) < 0) {
    errno = EINVAL;
    fail(request);
  }
  int fd;
  if (stat(r.filename, &r.finfo) < 0 || (fd = open(r.filename, O_RDONLY)) < 0)
    fail(r.filename);
  char head[1024];
  int hl = response_header(&r, head, sizeof head);
  score_timeout(slot, 300);                  /* ap_hard_timeout("send") */
  r.bytes_sent = send_file(c, fd, head, hl, slot);
  score_timeout(slot, 0);                    /* ap_kill_timeout */
  close(fd);
  score_status(slot, SERVER_BUSY_LOG);
  access_log(cfg->log_fd, &r, host);
  slot->access_count++;                      /* 1.3's count of this child's requests */
  slot->my_access_count++;
  slot->bytes_served += r.bytes_sent;
  slot->my_bytes_served += r.bytes_sent;
  return r.keepalive;
}

/* The peer's address as 1.3 keeps it (conn->remote_ip). */
static void peer_name(const struct sockaddr_in *sa, char *host, size_t cap)
{
  unsigned long a = ntohl(sa->sin_addr.s_addr);
  snprintf(host, cap, "%lu.%lu.%lu.%lu", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

static void lingering_close(int c)
{
  char junk[512];
  shutdown(c, SHUT_WR);
  while (read(c, junk, sizeof junk) > 0)
    ;
  close(c);
}

/* The lock file, opened for writing where the file system allows it (a
 * host: fcntl's write lock needs it), else for reading (the testbed's
 * image is read-only, and takes the lock either way). */
int open_accept_lock(const char *root)
{
  char path[512];
  snprintf(path, sizeof path, "%s%s", root, ACCEPT_LOCK_FILE);
  int fd = open(path, O_RDWR | O_CREAT, 0644);
  if (fd < 0)
    fd = open(path, O_RDONLY);
  return fd;
}

void httpd_child(const struct httpd_config *cfg_in)
{
  struct httpd_config own = *cfg_in;
  const struct httpd_config *cfg = &own;
  if (own.accept == ACCEPT_FLOCK && (own.lock_fd = open_accept_lock(own.root)) < 0)
    fail("opening the accept lock file");   /* each child its own open file */
  /* Tell the controller this server is in place: clients start only
   * when every server is, so the measured load is Apache's steady state
   * (all N children), not the start-up while they are still forked. */
  if (cfg->ready_fd >= 0) {
    if (write(cfg->ready_fd, "R", 1) != 1)
      fail("ready");
    close(cfg->ready_fd);
  }
  int apache = cfg->work == WORK_APACHE;
  struct score_slot *slot = apache ? &cfg->scoreboard[cfg->child] : NULL;
  if (apache)
    pool_init(&request_pool);
  for (;;) {
    if (apache)
      score_status(slot, SERVER_READY);
    lock_accept(cfg);
    int c;
    struct sockaddr_in peer, me;
    socklen_t plen = sizeof peer, mlen = sizeof me;
    while ((c = accept(cfg->listen_fd, apache ? (struct sockaddr *)&peer : NULL,
                       apache ? &plen : NULL)) < 0)
      if (errno != EINTR && errno != ECONNABORTED)
        fail("accept");
    unlock_accept(cfg);
    if (cfg->wset)                           /* the monitor's window opens */
      m5_work(1);
    char host[32] = "-";
    if (apache) {                            /* 1.3's new_connection */
      int one = 1;
      score_status(slot, SERVER_BUSY_READ);
      getsockname(c, (struct sockaddr *)&me, &mlen);
      setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      peer_name(&peer, host, sizeof host);
      slot->conn_count = 0;
    }
    int r;
    while ((r = apache ? serve_apache(cfg, c, host) : serve(cfg, c)) == 1)
      if (apache)
        score_status(slot, SERVER_BUSY_KEEPALIVE);
    if (r < 0) {
      close(c);
      _exit(0);
    }
    if (apache)
      score_timeout(slot, 30);               /* MAX_SECS_TO_LINGER's timeout */
    lingering_close(c);
    if (apache)
      score_timeout(slot, 0);
    if (cfg->wset)
      m5_work(0);
  }
}
