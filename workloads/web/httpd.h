/* httpd.h: one pre-forked server process (Apache 1.3's child_main). */
#ifndef WEB_HTTPD_H
#define WEB_HTTPD_H

/* How the children take turns at accept() (Apache 1.3's accept
 * serialisation, workload-facts.md 1.3):
 *   ACCEPT_NONE  every idle child blocks in accept() on the one listening
 *                socket; the kernel wakes one per connection (1.3.19's
 *                Linux default with one Listen socket);
 *   ACCEPT_PIPE  a lock: one token byte in a pipe; a child reads it
 *                before accept() and writes it back after.  Every release
 *                wakes every waiting child, as 2.4's fcntl and flock
 *                locks do (USE_FCNTL/FLOCK_SERIALIZED_ACCEPT);
 *   ACCEPT_SYSVSEM  a SysV semaphore of value 1: semop(-1, SEM_UNDO)
 *                before accept(), semop(+1, SEM_UNDO) after.  A release
 *                wakes one waiting child (2.4's update_queue), the undo
 *                frees the lock if a child dies holding it
 *                (USE_SYSVSEM_SERIALIZED_ACCEPT, 1.3.19's Linux choice
 *                when there are several Listen sockets);
 *   ACCEPT_FCNTL fcntl(F_SETLKW) write lock on the lock file, which the
 *                parent opened and the children share; F_UNLCK after.
 *                2.4 wakes every blocked locker at each unlock
 *                (USE_FCNTL_SERIALIZED_ACCEPT);
 *   ACCEPT_FLOCK flock(LOCK_EX) on the lock file, which each child opens
 *                itself (a shared open file would be one lock holder);
 *                LOCK_UN after; the same wake-all
 *                (USE_FLOCK_SERIALIZED_ACCEPT). */
enum accept_mode { ACCEPT_NONE, ACCEPT_PIPE, ACCEPT_SYSVSEM, ACCEPT_FCNTL,
                   ACCEPT_FLOCK };

/* The lock file of ACCEPT_FCNTL and ACCEPT_FLOCK, below --root (the
 * image has it; 1.3's is logs/accept.lock). */
#define ACCEPT_LOCK_FILE "/etc/accept.lock"

/* WORK_APACHE's access log (the kernel keeps /var/log in memory). */
#define ACCESS_LOG "/var/log/access_log"

/* The server's per-request work: WORK_APACHE, Apache 1.3's core path
 * (apache.h: pool, tables, scoreboard, response header, access log), or
 * WORK_MINIMAL, only what serving needs (parse the request line, stat,
 * open, send). */
enum request_work { WORK_APACHE, WORK_MINIMAL };

struct score_slot;

struct httpd_config {
  int listen_fd;
  enum request_work work;
  struct score_slot *scoreboard;  /* WORK_APACHE: one slot per child */
  long child;                  /* this child's slot */
  int log_fd;                  /* WORK_APACHE: the access log (inherited) */
  int wset;                    /* mark each connection as a unit of work */
  enum accept_mode accept;
  int lock_rd, lock_wr;        /* ACCEPT_PIPE */
  int semid;                   /* ACCEPT_SYSVSEM */
  int lock_fd;                 /* ACCEPT_FCNTL: the parent's; ACCEPT_FLOCK: the child's */
  int ready_fd;                /* one byte here once serving; -1: none */
  const char *root;            /* prefix for /www paths ("" on the testbed) */
};

/* The lock file's descriptor (ACCEPT_LOCK_FILE below root), or -1. */
int open_accept_lock(const char *root);

/* Serve until a "QUIT" request; then exit 0.  Exit 1 on any error. */
void httpd_child(const struct httpd_config *cfg) __attribute__((noreturn));

#endif
