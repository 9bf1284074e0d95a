/* httpd.c: one server process.  Like an Apache 1.3 child, it serves one
 * connection at a time, all of its keep-alive requests, then goes back to
 * accept (workload-facts.md 1.4-1.5): take the accept lock if one is
 * used, accept, release it, read the request, stat and open the file,
 * write the header with the first piece of the file, the rest in 32 KiB
 * writes, close the file, and close the connection the lingering way
 * (shutdown, read to end of file, close).  1.3 mmaps the file; our kernel
 * maps no files, so the file is read() into a buffer: one more copy. */
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

#include "fileset.h"
#include "httpd.h"
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

/* One request: 1 = served and the client wants the connection kept,
 * 0 = served (or end of file), -1 = quit. */
static int serve(const struct httpd_config *cfg, int c)
{
  long hdr, n = read_header(c, request, sizeof request, &hdr);
  if (n == 0)
    return 0;
  if (n < 0)
    fail("reading a request");
  if (!strncmp(request, "QUIT", 4))
    return -1;
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
  /* header and the first segment in one writev, as 1.3 does */
  long got = read(fd, segment, SEGMENT), sent = 0;
  if (got < 0)
    fail("reading the file");
  struct iovec iov[2] = {{head, hl}, {segment, got}};
  long w = writev(c, iov, 2);
  if (w < hl)
    fail("writev");
  sent = w - hl;
  if (sent < got && write_all(c, segment + sent, got - sent) < 0)
    fail("write");
  while ((got = read(fd, segment, SEGMENT)) > 0)
    if (write_all(c, segment, got) < 0)
      fail("write");
  close(fd);
  return keep;
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
  for (;;) {
    lock_accept(cfg);
    int c;
    while ((c = accept(cfg->listen_fd, NULL, NULL)) < 0)
      if (errno != EINTR && errno != ECONNABORTED)
        fail("accept");
    unlock_accept(cfg);
    int r;
    while ((r = serve(cfg, c)) == 1)
      ;
    if (r < 0) {
      close(c);
      _exit(0);
    }
    lingering_close(c);
  }
}
