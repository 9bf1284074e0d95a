/* pipetest: pipes, poll, select and dup2.
 *   - 200 KB through a pipe from a child, in odd-sized writes, read in odd
 *     sizes: every byte in order (the writer blocks on a full page, the
 *     reader on an empty one), then end of file once the writer exits;
 *   - poll and select: not readable when empty (timeout 0 and 20 ms),
 *     readable after a write, POLLHUP once the writer is gone;
 *   - write with no reader left: EPIPE;
 *   - dup2 a pipe onto a child's stdout, exec /bin/hello: its output
 *     comes through the pipe;
 *   - O_NONBLOCK read of an empty pipe: EAGAIN;
 *   - 8 writers x 600 records of 40 bytes into one pipe, read by a reader
 *     that starts late: every record whole, in order per writer;
 *   - a one-byte token passed among 8 processes 2400 times (a lock);
 *   - poll on 120 pipes, woken by a write to the last one; on 300, the
 *     same, or ENOMEM where the kernel cannot wait on that many (the
 *     testbed's table holds 128 entries), never a sleep that misses it.
 * Runs on the testbed and on a Linux host (argv[1]: the programs' dir). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define T "pipetest"
#define TOTAL (200 * 1024)

static unsigned char pat(long i) { return (unsigned char)(i * 13 + (i >> 9)); }

static void bulk(void)
{
  int fd[2];
  CHECK(T, pipe(fd) == 0);
  pid_t p = fork();
  CHECK(T, p >= 0);
  if (p == 0) {
    close(fd[0]);
    unsigned char buf[3001];
    for (long off = 0; off < TOTAL;) {
      long n = TOTAL - off < 3001 ? TOTAL - off : 3001;
      for (long i = 0; i < n; i++)
        buf[i] = pat(off + i);
      long w = write(fd[1], buf, n);
      if (w <= 0)
        _exit(2);
      off += w;
    }
    _exit(0);
  }
  close(fd[1]);
  unsigned char buf[777];
  long got = 0, r;
  while ((r = read(fd[0], buf, sizeof buf)) > 0) {
    for (long i = 0; i < r; i++)
      CHECK(T, buf[i] == pat(got + i));
    got += r;
  }
  CHECK(T, r == 0 && got == TOTAL);
  int st;
  CHECK(T, waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  close(fd[0]);
}

static void polling(void)
{
  int fd[2];
  CHECK(T, pipe(fd) == 0);
  struct pollfd pfd = {fd[0], POLLIN, 0};
  CHECK(T, poll(&pfd, 1, 0) == 0);
  CHECK(T, poll(&pfd, 1, 20) == 0);
  fd_set rs;
  FD_ZERO(&rs);
  FD_SET(fd[0], &rs);
  struct timeval tv = {0, 20000};
  CHECK(T, select(fd[0] + 1, &rs, NULL, NULL, &tv) == 0);
  /* a child writes after a while: poll sleeps until then */
  pid_t p = fork();
  if (p == 0) {
    usleep(30000);
    CHECK(T, write(fd[1], "x", 1) == 1);
    _exit(0);
  }
  close(fd[1]);
  CHECK(T, poll(&pfd, 1, -1) == 1 && (pfd.revents & POLLIN));
  FD_ZERO(&rs);
  FD_SET(fd[0], &rs);
  CHECK(T, select(fd[0] + 1, &rs, NULL, NULL, NULL) == 1 && FD_ISSET(fd[0], &rs));
  char c;
  CHECK(T, read(fd[0], &c, 1) == 1 && c == 'x');
  waitpid(p, NULL, 0);
  pfd.revents = 0;
  CHECK(T, poll(&pfd, 1, 1000) == 1 && (pfd.revents & POLLHUP));
  CHECK(T, read(fd[0], &c, 1) == 0);
  close(fd[0]);
  /* writable end: POLLOUT */
  CHECK(T, pipe(fd) == 0);
  struct pollfd w = {fd[1], POLLOUT, 0};
  CHECK(T, poll(&w, 1, 0) == 1 && (w.revents & POLLOUT));
  close(fd[0]);
  errno = 0;
  CHECK(T, write(fd[1], "y", 1) == -1 && errno == EPIPE);
  close(fd[1]);
}

/* poll on n empty pipes; a child writes to the last after 20 ms and stays
 * until poll has returned (its exit would close its ends of every pipe and
 * wake the poller through the others).  Returns what poll returned (errno
 * kept); *ms: how long it took.  A poller that missed the write would
 * sleep to its timeout of 5 s. */
#define MANY 300
static int poll_many(int n, long *ms)
{
  static int fd[MANY][2];
  static struct pollfd pfd[MANY];
  for (int i = 0; i < n; i++) {
    CHECK(T, pipe(fd[i]) == 0);
    pfd[i] = (struct pollfd){fd[i][0], POLLIN, 0};
  }
  int hold[2];
  CHECK(T, pipe(hold) == 0);
  pid_t p = fork();
  if (p == 0) {
    char c;
    close(hold[1]);
    usleep(20000);
    int ok = write(fd[n - 1][1], "z", 1) == 1;
    _exit(ok && read(hold[0], &c, 1) == 0 ? 0 : 1);
  }
  close(hold[0]);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int r = poll(pfd, n, 5000), e = errno;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  *ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
  close(hold[1]);
  int st;
  CHECK(T, waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  for (int i = 0; i < n; i++) {
    close(fd[i][0]);
    close(fd[i][1]);
  }
  errno = e;
  return r;
}

static void poll_wide(void)
{
  long ms;
  CHECK(T, poll_many(120, &ms) == 1 && ms < 1000);
  errno = 0;
  int r = poll_many(MANY, &ms);
  /* the host's Linux waits on all of them; the testbed's table holds 128
   * entries, so it refuses at once */
  CHECK(T, ms < 1000 && (r == 1 || (r == -1 && errno == ENOMEM)));
}

static void redirect(const char *bindir)
{
  int fd[2];
  CHECK(T, pipe(fd) == 0);
  pid_t p = fork();
  if (p == 0) {
    CHECK(T, dup2(fd[1], 1) == 1);
    close(fd[0]);
    close(fd[1]);
    char path[256];
    snprintf(path, sizeof path, "%s/hello", bindir);
    char *argv[] = {path, "through", "a pipe", NULL}, *envp[] = {NULL};
    execve(path, argv, envp);
    _exit(127);
  }
  close(fd[1]);
  char out[512];
  long n = 0, r;
  while ((r = read(fd[0], out + n, sizeof out - 1 - n)) > 0)
    n += r;
  out[n] = 0;
  int st;
  CHECK(T, waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 7);
  CHECK(T, strstr(out, "through") && strstr(out, "a pipe"));
  close(fd[0]);
  /* dup of a read end: both descriptors read the same pipe */
  CHECK(T, pipe2(fd, O_NONBLOCK) == 0);
  int d = dup(fd[0]);
  CHECK(T, d > fd[1]);
  char c;
  errno = 0;
  CHECK(T, read(d, &c, 1) == -1 && errno == EAGAIN);
  CHECK(T, write(fd[1], "z", 1) == 1);
  CHECK(T, read(d, &c, 1) == 1 && c == 'z');
  CHECK(T, fcntl(fd[0], F_GETFL) & O_NONBLOCK);
  close(d);
  close(fd[0]);
  close(fd[1]);
}

/* Many writers, small records, a reader that lags: every record arrives
 * whole (writes up to PIPE_BUF bytes are atomic) and none is lost, even
 * when writers on several CPUs race for the last room in the pipe. */
struct rec { int writer, seq; unsigned char fill[32]; };

static void many_writers(void)
{
  enum { WRITERS = 8, RECS = 600 };
  int fd[2];
  CHECK(T, pipe(fd) == 0);
  for (int w = 0; w < WRITERS; w++)
    if (fork() == 0) {
      close(fd[0]);
      for (int s = 0; s < RECS; s++) {
        struct rec r = {w, s, {0}};
        memset(r.fill, (w * 31 + s) & 0xff, sizeof r.fill);
        if (write(fd[1], &r, sizeof r) != sizeof r)
          _exit(2);
      }
      _exit(0);
    }
  close(fd[1]);
  int next[WRITERS] = {0};
  struct rec r;
  long n = 0, got;
  usleep(20000);                     /* let the pipe fill up */
  while ((got = read(fd[0], &r, sizeof r)) > 0) {
    CHECK(T, got == sizeof r);       /* records never split */
    CHECK(T, r.writer >= 0 && r.writer < WRITERS && r.seq == next[r.writer]++);
    for (unsigned i = 0; i < sizeof r.fill; i++)
      CHECK(T, r.fill[i] == ((r.writer * 31 + r.seq) & 0xff));
    n++;
  }
  CHECK(T, n == WRITERS * RECS);
  for (int w = 0; w < WRITERS; w++) {
    int st;
    CHECK(T, wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  close(fd[0]);
}

/* A pipe as a lock (the web server's --accept pipe): one token byte, 8
 * processes taking and returning it 300 times each.  Every release wakes
 * every waiter; all but one find the pipe empty again and must go back to
 * sleep, not see end of file. */
static void token_lock(void)
{
  enum { USERS = 8, ROUNDS = 300 };
  int fd[2];
  CHECK(T, pipe(fd) == 0 && write(fd[1], "L", 1) == 1);
  for (int u = 0; u < USERS; u++)
    if (fork() == 0) {
      for (int i = 0; i < ROUNDS; i++) {
        char t;
        if (read(fd[0], &t, 1) != 1 || t != 'L')
          _exit(3);
        if (i % 7 == 0)
          sched_yield();             /* hold it a while */
        if (write(fd[1], "L", 1) != 1)
          _exit(4);
      }
      _exit(0);
    }
  for (int u = 0; u < USERS; u++) {
    int st;
    CHECK(T, wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  char t;
  CHECK(T, read(fd[0], &t, 1) == 1 && t == 'L');   /* the token is still there */
  close(fd[0]);
  close(fd[1]);
}

int main(int argc, char **argv)
{
  signal(SIGPIPE, SIG_IGN);          /* the host would kill us on EPIPE */
  bulk();
  polling();
  poll_wide();
  many_writers();
  token_lock();
  redirect(argc > 1 ? argv[1] : "/bin");
  printf(T ": ok\n");
  return 0;
}
