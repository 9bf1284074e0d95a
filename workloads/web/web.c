/* web: the web-server workload.  A pre-forking server in the Apache 1.3
 * style and a closed loop of clients in one program (workloads/README.md,
 * "Web"):
 *
 *   web [--httpd N] [--clients N] [--requests R] [--warmup W] [--measure M]
 *       [--accept none|pipe|sysvsem|fcntl|flock] [--work apache|minimal]
 *       [--keepalive K] [--seed S] [--port P] [--root DIR] [--wset 0|1]
 *
 * N server processes (default 256), each serving one connection at a time,
 * serialised around accept as --accept says (httpd.h); N clients (default
 * 256), each making R requests (default 20) with no think time, K per
 * connection (default 1: HTTP/1.0, no keep-alive).  --work says what a
 * server does per request besides serving the file (httpd.h): apache
 * (default), Apache 1.3's core work, with its access log ACCESS_LOG.
 * --wset 1 marks each connection, from accept to close, as a unit of work
 * for the bus monitor's working-set windows (m5_work).  The region of interest
 * starts after W completed requests (default a quarter of all) and ends
 * after M more (default half of all), before the clients start to finish,
 * so the loop stays closed while it is measured; the "roi" line gives the
 * exact count inside it.  Every response is
 * checked byte for byte; any error fails the run (exit 1).  At the end
 * each server process is sent a QUIT request and must exit 0.
 * --root prefixes the file paths (a Linux host: the mkfileset.py dir).
 * On the testbed with client CPUs the controller and the clients run there,
 * outside the measured machine (colorsim_client, m5roi.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "apache.h"
#include "client.h"
#include "fixed.h"
#include "httpd.h"
#include "m5roi.h"
#include "net.h"

static bool m5_supported;   /* the m5 call worked: we run on the testbed */
static int accept_sem = -1; /* --accept sysvsem: removed when the controller exits */
static pid_t controller;

/* A SysV semaphore outlives its processes: on a host, a run that ends
 * (well or not) must not leave one behind.  Launchers share the handler
 * after fork, so only the controller removes it. */
static void remove_accept_sem(void)
{
  if (accept_sem >= 0 && getpid() == controller)
    semctl(accept_sem, 0, IPC_RMID);
}

static void die(const char *what)
{
  printf("web: FAIL %s (%s)\n", what, strerror(errno));
  fflush(stdout);
  exit(1);
}

static long arg(char **argv, int *i, int argc)
{
  if (*i + 1 >= argc)
    die("missing option value");
  char *end;
  long v = strtol(argv[++*i], &end, 10);
  if (*end || v < 0)
    die("bad option value");
  return v;
}

/* Linux 2.4 has no clock_gettime (it came with 2.6) and musl falls back
 * for CLOCK_REALTIME only: there the time of day serves, which nothing
 * sets while the program runs. */
static double now(void)
{
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
    return ts.tv_sec + ts.tv_nsec / 1e9;
  struct timeval tv;
  if (gettimeofday(&tv, NULL) != 0)
    die("no clock");
  return tv.tv_sec + tv.tv_usec / 1e6;
}

/* What the servers' scoreboard slots counted (requests and bytes, 1.3's
 * access_count and bytes_served) and the access log's size.  A server
 * counts a request after its log line, so after the last response it may
 * still be counting: wait for the slots to reach the clients' count, a
 * bounded while. */
static void report_scoreboard(const struct httpd_config *hc, long httpd, long reqs)
{
  long n = 0, bytes = 0;
  for (int tries = 0; tries < 100000; tries++) {
    n = bytes = 0;
    for (long i = 0; i < httpd; i++) {
      n += (long)hc->scoreboard[i].access_count;
      bytes += (long)hc->scoreboard[i].bytes_served;
    }
    if (n >= reqs)
      break;
    sched_yield();
  }
  struct stat st;
  long logged = hc->log_fd >= 0 && fstat(hc->log_fd, &st) == 0 ? (long)st.st_size : -1;
  printf("web: scoreboard %ld requests %ld bytes; access log %ld bytes\n", n, bytes, logged);
}

int main(int argc, char **argv)
{
  long httpd = 256, clients = 256, requests = 20, warmup = -1, measure = -1;
  long keepalive = 1, seed = 1, port = 8080;
  struct httpd_config hc = {.accept = ACCEPT_NONE, .root = "", .lock_fd = -1,
                            .work = WORK_APACHE, .log_fd = -1};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--httpd")) httpd = arg(argv, &i, argc);
    else if (!strcmp(argv[i], "--clients")) clients = arg(argv, &i, argc);
    else if (!strcmp(argv[i], "--requests")) requests = arg(argv, &i, argc);
    else if (!strcmp(argv[i], "--warmup")) warmup = arg(argv, &i, argc);
    else if (!strcmp(argv[i], "--measure")) measure = arg(argv, &i, argc);
    else if (!strcmp(argv[i], "--keepalive")) keepalive = arg(argv, &i, argc);
    else if (!strcmp(argv[i], "--seed")) seed = arg(argv, &i, argc);
    else if (!strcmp(argv[i], "--wset")) hc.wset = arg(argv, &i, argc) != 0;
    else if (!strcmp(argv[i], "--port")) port = arg(argv, &i, argc);
    else if (!strcmp(argv[i], "--root") && i + 1 < argc) hc.root = argv[++i];
    else if (!strcmp(argv[i], "--work") && i + 1 < argc) {
      const char *m = argv[++i];
      if (!strcmp(m, "apache")) hc.work = WORK_APACHE;
      else if (!strcmp(m, "minimal")) hc.work = WORK_MINIMAL;
      else {
        errno = EINVAL;
        die("--work must be apache or minimal");
      }
    } else if (!strcmp(argv[i], "--accept") && i + 1 < argc) {
      const char *m = argv[++i];
      if (!strcmp(m, "none")) hc.accept = ACCEPT_NONE;
      else if (!strcmp(m, "pipe")) hc.accept = ACCEPT_PIPE;
      else if (!strcmp(m, "sysvsem")) hc.accept = ACCEPT_SYSVSEM;
      else if (!strcmp(m, "fcntl")) hc.accept = ACCEPT_FCNTL;
      else if (!strcmp(m, "flock")) hc.accept = ACCEPT_FLOCK;
      else {
        errno = EINVAL;
        die("--accept must be none, pipe, sysvsem, fcntl or flock");
      }
    } else {
      errno = EINVAL;
      die(argv[i]);
    }
  }
  if (requests > REQUESTS_MAX || keepalive > REQUESTS_MAX) {
    errno = EINVAL;
    die("--requests and --keepalive must be at most REQUESTS_MAX");
  }
  long total = clients * requests;
  if (warmup < 0) warmup = total / 4;
  if (measure < 0) measure = total / 2;
  if (httpd < 1 || clients < 1 || requests < 1 || keepalive < 1 || measure < 1 ||
      warmup + measure > total) {
    errno = EINVAL;
    die("need httpd, clients, requests, keepalive, measure >= 1 and warmup + measure <= clients * requests");
  }
  printf("web: %ld httpd, %ld clients x %ld requests, keep-alive %ld, accept %s, "
         "work %s, seed %ld; measure requests %ld..%ld\n", httpd, clients, requests,
         keepalive,
         hc.accept == ACCEPT_PIPE ? "pipe lock"
         : hc.accept == ACCEPT_SYSVSEM ? "sysvsem (wake-one semop)"
         : hc.accept == ACCEPT_FCNTL ? "fcntl lock (wake-all)"
         : hc.accept == ACCEPT_FLOCK ? "flock (wake-all)"
         : "none (kernel wake-one)", hc.work == WORK_APACHE ? "apache" : "minimal", seed,
         warmup, warmup + measure);
  fflush(stdout);

  hc.listen_fd = tcp_listen(port, clients + httpd);
  if (hc.work == WORK_APACHE) {
    /* 1.3's parent sets up the scoreboard and opens the logs before it
     * forks the children, which inherit both (on a host, the log goes
     * to /dev/null: the image's /var/log is the testbed's). */
    if (!(hc.scoreboard = scoreboard_make(httpd)))
      die("scoreboard");
    hc.log_fd = open(hc.root[0] ? "/dev/null" : ACCESS_LOG,
                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (hc.log_fd < 0)             /* a system without the directory */
      printf("web: no access log (%s: %s)\n", ACCESS_LOG, strerror(errno));
  }
  if (hc.accept == ACCEPT_SYSVSEM) {
    hc.semid = semget(IPC_PRIVATE, 1, 0600);
    if (hc.semid < 0 || semctl(hc.semid, 0, SETVAL, 1) < 0)
      die("accept semaphore");
    accept_sem = hc.semid;
    controller = getpid();
    atexit(remove_accept_sem);
  }
  if (hc.accept == ACCEPT_FCNTL && (hc.lock_fd = open_accept_lock(hc.root)) < 0)
    die("opening the accept lock file");
  if (hc.accept == ACCEPT_PIPE) {
    int lk[2];
    if (pipe(lk) < 0 || write(lk[1], "L", 1) != 1)
      die("accept lock pipe");
    hc.lock_rd = lk[0];
    hc.lock_wr = lk[1];
  }
  /* Launchers fork the servers and the clients: fork splits the parent's
   * time slice (2.4), and a controller that forked 2 x 256 children would
   * be left with none and wait for the next recalculation to count. */
  int ready[2];
  if (pipe(ready) < 0)
    die("ready pipe");
  hc.ready_fd = ready[1];
  pid_t server_launcher = fork();
  if (server_launcher < 0)
    die("fork");
  if (server_launcher == 0) {
    close(ready[0]);
    for (long i = 0; i < httpd; i++) {
      hc.child = i;                  /* its scoreboard slot */
      pid_t p = fork();
      if (p < 0)
        die("fork httpd");
      if (p == 0)
        httpd_child(&hc);
    }
    close(ready[1]);
    int bad = 0;
    for (long i = 0; i < httpd; i++) {
      int st;
      if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        bad++;
    }
    _exit(bad ? 1 : 0);
  }
  close(hc.listen_fd);     /* the servers hold it: when they are gone, so is it */
  /* The client side -- the controller and the clients -- runs outside the
   * server's machine where the testbed has client CPUs (as WebBench's
   * controller and client PCs): a child forked into the client partition
   * carries on from here, and this process only waits for it. */
  if (colorsim_client() == 0) {
    pid_t side = fork();
    if (side < 0)
      die("fork client side");
    if (side > 0) {
      close(ready[0]);
      close(ready[1]);
      int st;
      while (waitpid(side, &st, 0) < 0)
        if (errno != EINTR)
          die("wait for the client side");
      exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
    }
  }
  /* Wait until every server is in its accept loop (one byte each); end of
   * file first means one died before it got there. */
  close(ready[1]);
  for (long n = 0; n < httpd;) {
    char buf[256];
    long r = read(ready[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      die("servers not ready");
    n += r;
  }
  close(ready[0]);
  int progress[2], results[2];
  if (pipe(progress) < 0 || pipe(results) < 0)
    die("pipes");
  pid_t client_launcher = fork();
  if (client_launcher < 0)
    die("fork");
  if (client_launcher == 0) {
    close(progress[0]);
    close(results[0]);
    int start[2];
    if (pipe(start) < 0)
      die("start pipe");
    for (long i = 0; i < clients; i++) {
      struct client_config cc = {.id = i, .port = port, .requests = requests,
                                 .keepalive = keepalive, .seed = seed,
                                 .progress_fd = progress[1], .result_fd = results[1],
                                 .start_rd = start[0], .start_wr = start[1]};
      pid_t p = fork();
      if (p < 0)
        die("fork client");
      if (p == 0)
        client_main(&cc);
    }
    close(progress[1]);
    close(results[1]);
    close(start[0]);
    close(start[1]);             /* the last client to run starts them all */
    int bad = 0;
    for (long i = 0; i < clients; i++) {
      int st;
      if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        bad++;
    }
    _exit(bad ? 1 : 0);
  }
  close(progress[1]);
  close(results[1]);

  /* The controller: count completed requests, mark the region.  A read
   * returns bytes written before it, so the requests counted up to the
   * read that triggers an m5 op all completed before that op: the region
   * holds exactly done_end - done_begin requests (at least --measure; more
   * if the controller wakes late). */
  long done = 0, done_begin = -1, done_end = -1;
  int marks = 0;              /* quarters of the region marked so far */
  enum { MARKS = 4 };         /* the region's quarters: is it steady? */
  double t0 = 0, t1 = 0;
  char tick[4096];
  /* Results arrive while requests still complete: a pipe holds one page,
   * less than 256 results, so both pipes are read as they fill. */
  struct client_result res[64];
  long got = 0, reqs = 0, bytes = 0, rfill = 0;
  struct pollfd pfd[2] = {{progress[0], POLLIN, 0}, {results[0], POLLIN, 0}};
  while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
    if (poll(pfd, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      die("poll");
    }
    if (pfd[1].revents) {
      long r = read(results[0], (char *)res + rfill, sizeof res - rfill);
      if (r <= 0) {
        pfd[1].fd = -1;
      } else {
        rfill += r;
        long whole = rfill / sizeof res[0];
        for (long i = 0; i < whole; i++) {
          got++;
          reqs += res[i].requests;
          bytes += res[i].bytes;
        }
        rfill -= whole * sizeof res[0];
        memmove(res, (char *)res + whole * sizeof res[0], rfill);
      }
    }
    if (!pfd[0].revents)
      continue;
    long r = read(progress[0], tick, sizeof tick);
    if (r <= 0) {
      pfd[0].fd = -1;
      continue;
    }
    done += r;
    if (done_begin < 0 && done >= warmup) {
      m5_supported = m5_reset_stats() == 0;
      t0 = now();
      done_begin = done;
    } else if (done_begin >= 0 && done_end < 0 && marks < MARKS - 1 &&
               done - done_begin >= (marks + 1) * measure / MARKS &&
               done - done_begin < measure && done < total) {
      /* A quarter of the region has passed: the testbed kernel prints its
       * counts so far, and the requests and time so far go beside them
       * (where there is no such kernel, nothing is printed). */
      marks++;
      if (m5_mark() == 0) {
        char secs[32];
        printf("web: mark %d of %d: %ld requests in %s s\n", marks, MARKS,
               done - done_begin, fixed(secs, now() - t0, 6));
      }
    } else if (done_begin >= 0 && done_end < 0 &&
               (done - done_begin >= measure || done >= total)) {
      /* One read can bring many completions (a loaded host batches
       * them), so the region may begin past --warmup; it then ends with
       * the last request rather than never. */
      m5_dump_stats();
      t1 = now();
      done_end = done;
    }
  }
  /* A failure from here on is reported at the end: the servers are still
   * stopped first, so a failed run on a host leaves no process behind. */
  const char *failed = NULL;
  int st;
  if (waitpid(client_launcher, &st, 0) != client_launcher || !WIFEXITED(st) ||
      WEXITSTATUS(st) != 0)
    failed = "a client failed";
  else if (got != clients || reqs != total || done != total) {
    printf("web: %ld of %ld clients reported %ld of %ld requests; %ld counted\n",
           got, clients, reqs, total, done);
    failed = "requests lost";
  }
  else if (done_end < 0)
    failed = "the region never ended: make --warmup + --measure smaller";
  /* Stop the servers: each takes one QUIT connection and exits.  On the
   * testbed (where the m5 call works) init's exit stops the machine, and
   * a thousand exits and waits would only lengthen the run (wait4 scans
   * every task for each zombie), so the servers are left running; a
   * server that failed has already failed a client. */
  bool testbed = m5_supported;
  /* Servers left to the machine's stop wait on the accept semaphore:
   * removing it would wake them with EIDRM, and they would fail loudly
   * while the machine stops (on 2.4 init outlives this process). */
  if (testbed)
    accept_sem = -1;
  for (long i = 0; i < httpd && !testbed; i++) {
    int s = tcp_dial(port);
    char b[16];
    if (s < 0 || write_all(s, "QUIT\r\n\r\n", 8) < 0) {
      failed = failed ? failed : "quitting a server";
      if (s >= 0)
        close(s);
      break;
    }
    while (read(s, b, sizeof b) > 0)
      ;
    close(s);
  }
  if (!testbed && (waitpid(server_launcher, &st, 0) != server_launcher ||
                   !WIFEXITED(st) || WEXITSTATUS(st) != 0))
    failed = failed ? failed : "a server failed";
  if (failed) {
    errno = EPROTO;
    die(failed);
  }
  if (hc.work == WORK_APACHE)
    report_scoreboard(&hc, httpd, reqs);
  char secs[32];
  printf("web: roi %ld requests (completed %ld..%ld) in %s s\n", done_end - done_begin,
         done_begin, done_end, fixed(secs, t1 - t0, 6));
  printf("web: ok (%ld requests, %ld bytes, every byte verified; %ld servers %s)\n",
         reqs, bytes, httpd, testbed ? "left to the machine's stop" : "quit");
  return 0;
}
