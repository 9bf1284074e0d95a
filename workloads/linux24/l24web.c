/* l24web: /init of the web and chat image for real Linux 2.4
 * (kernels/linux24/).  It brings the loopback interface up, runs /bin/web
 * (workloads/web/) or /bin/chat (workloads/chat/) with the arguments from
 * the kernel command line, waits for it, says how it ended in the testbed
 * kernel's words ("init: exited with status N", which the runner checks)
 * and stops the machine through QEMU's isa-debug-exit port 0xf4.
 *
 *   webargs=--httpd,32,--clients,8,...   (commas for spaces; Linux hands
 *                                         init every unknown name=value
 *                                         word as an environment variable)
 *   chatargs=--rooms,2,--users,5,...     (chat instead of web)
 *
 * The region of interest is the program's own: it marks it with m5 ops
 * from user space (workloads/include/m5roi.h, COLORSIM_M5_PAGE), as
 * l24tasks does for the task workload.  Server and clients both run on
 * the measured CPUs and talk over loopback, unless the kernel has our
 * client partition and cards (servercpus=, serverport=). */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "l24exit.h"

#define ARGS_MAX 32

static void fail(const char *what)
{
  printf("init: %s failed (%s)\n", what, strerror(errno));
  machine_exit();
}

static void set_addr(struct sockaddr *sa, const char *dotted)
{
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  inet_pton(AF_INET, dotted, &a.sin_addr);
  memcpy(sa, &a, sizeof a);
}

/* 2.4 registers "lo" but leaves it down and without an address (ifconfig
 * lo 127.0.0.1 up, as a distribution's boot scripts do); the address also
 * gives it the route to 127.0.0.0/8. */
static void loopback_up(void)
{
  struct ifreq r;
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  if (s < 0)
    fail("socket");
  memset(&r, 0, sizeof r);
  strcpy(r.ifr_name, "lo");
  set_addr(&r.ifr_addr, "127.0.0.1");
  if (ioctl(s, SIOCSIFADDR, &r) < 0)
    fail("SIOCSIFADDR lo");
  set_addr(&r.ifr_netmask, "255.0.0.0");
  if (ioctl(s, SIOCSIFNETMASK, &r) < 0)
    fail("SIOCSIFNETMASK lo");
  if (ioctl(s, SIOCGIFFLAGS, &r) < 0)
    fail("SIOCGIFFLAGS lo");
  r.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (ioctl(s, SIOCSIFFLAGS, &r) < 0)
    fail("SIOCSIFFLAGS lo");
  close(s);
}

/* The kernel mounts the RAM disk read-only; a distribution's boot scripts
 * remount the root read-write, and so does this init.  web needs it for
 * Apache's per-request access-log write (/var/log/access_log) and for the
 * file that --accept fcntl and flock lock (/etc/accept.lock: fcntl's
 * write lock needs the file open for writing).  The RAM disk goes with
 * the machine. */
static void root_writable(void)
{
  static const char *dirs[] = {"/etc", "/var", "/var/log"};
  if (mount("/dev/ram0", "/", "ext2", MS_REMOUNT, NULL) < 0)
    fail("remounting / read-write");
  for (unsigned i = 0; i < sizeof dirs / sizeof *dirs; i++)
    if (mkdir(dirs[i], 0755) < 0 && errno != EEXIST)
      fail(dirs[i]);
}

/* /proc before the program starts: its region reads the kernel's
 * scheduler counts there (/proc/colorsim_rq, m5roi.h), and init the
 * cards' at the end. */
static void proc_mounted(void)
{
  if ((mkdir("/proc", 0555) < 0 && errno != EEXIST) || mount("proc", "/proc", "proc", 0, NULL) < 0)
    fail("mounting /proc");
}

/* Which CPUs took the cards' interrupts and how many packets each brought
 * (the kernel's /proc/colorsim_cards, there when the cards are on). */
static void show_cards(void)
{
  char line[128];
  FILE *f = fopen("/proc/colorsim_cards", "r");
  if (!f)
    return;
  while (fgets(line, sizeof line, f))
    fputs(line, stdout);
  fclose(f);
}

int main(void)
{
  static char words[256];
  const char *args = getenv("chatargs");
  const char *name = args ? "chatargs" : "webargs";
  char *argv[ARGS_MAX + 2] = {args ? "/bin/chat" : "/bin/web"};
  int argc = 1;
  if (!args)
    args = getenv("webargs");
  setvbuf(stdout, NULL, _IONBF, 0);
  if (args && strlen(args) >= sizeof words) {
    printf("init: %s is too long\n", name);
    machine_exit();
  }
  strcpy(words, args ? args : "");
  for (char *w = strtok(words, ","); w; w = strtok(NULL, ",")) {
    if (argc > ARGS_MAX) {
      printf("init: more than %d %s words\n", ARGS_MAX, name);
      machine_exit();
    }
    argv[argc++] = w;
  }
  argv[argc] = NULL;
  loopback_up();
  root_writable();
  proc_mounted();
  /* the kernel's client partition (kernels/linux24/README.md) hands init
   * servercpus=N too: the program's clients then run on the CPUs from N
   * on; with serverport=P their packets reach the server's cards */
  const char *servers = getenv("servercpus"), *port = getenv("serverport");
  printf("workload: %s%s%s", argv[0], args ? " " : "", args ? args : "");
  if (servers && port)
    printf(", clients on the CPUs from %s on, through the server's cards (port %s)\n",
           servers, port);
  else if (servers)
    printf(", clients on the CPUs from %s on, over loopback\n", servers);
  else
    printf(" on the measured CPUs, clients over loopback\n");
  /* the program's m5 ops come from user space here (m5roi.h) */
  if (setenv("COLORSIM_M5_PAGE", "1", 1) != 0)
    fail("setenv");
  pid_t pid = fork();
  if (pid < 0)
    fail("fork");
  if (pid == 0) {
    execv(argv[0], argv);
    printf("init: exec %s failed (%s)\n", argv[0], strerror(errno));
    _exit(127);
  }
  /* web's servers outlive it (it leaves them to the machine's stop) and
   * become init's children, as do chat's ended threads: wait for the
   * program alone. */
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      fail("waitpid");
  show_cards();
  if (WIFEXITED(st))
    printf("init: exited with status %d\n", WEXITSTATUS(st));
  else
    printf("init: killed by signal %d\n", WTERMSIG(st));
  machine_exit();
}
