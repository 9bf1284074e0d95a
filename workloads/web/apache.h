/* apache.h: the per-request work of Apache 1.3's core, shaped after its
 * documented path (workloads/README.md, "The server's per-request work"):
 * a resource pool, the request and its header tables, the scoreboard in
 * shared memory, the response header and the access log line. */
#ifndef WEB_APACHE_H
#define WEB_APACHE_H

#include <stddef.h>
#include <sys/stat.h>

/* A resource pool (1.3's alloc.c): blocks of at least POOL_BLOCK bytes,
 * allocated from by bumping a pointer and all freed at once.  A cleared
 * pool keeps its blocks for the next request, as 1.3 keeps them on its
 * free list. */
#define POOL_BLOCK 8192            /* 1.3's BLOCK_MINALLOC */

struct pool_block;
struct pool {
  struct pool_block *first, *cur;
};

void pool_init(struct pool *p);
void *pool_alloc(struct pool *p, size_t n);
char *pool_strndup(struct pool *p, const char *s, size_t n);
void pool_clear(struct pool *p);

/* A table (1.3's table: an array of key/value entries in a pool, keys
 * compared without case, looked up by a linear scan). */
struct table_entry {
  const char *key, *val;
};
struct table {
  struct table_entry *elts;
  int n, cap;
  struct pool *pool;
};

struct table *table_make(struct pool *p, int cap);
void table_set(struct table *t, const char *key, const char *val);
void table_add(struct table *t, const char *key, const char *val);
const char *table_get(const struct table *t, const char *key);

/* One scoreboard slot (1.3.19's short_score with mod_status compiled in,
 * field for field as we read its scoreboard.h; on x86_64 its longs and
 * pointers are 8 bytes, so the slot is larger than on the paper's i386). */
struct score_slot {
  unsigned char status;
  unsigned long access_count, bytes_served, my_access_count, my_bytes_served;
  unsigned long conn_bytes;
  unsigned short conn_count;
  long start_time[2], stop_time[2];   /* struct timeval */
  long times[4];                      /* struct tms */
  unsigned long cur_vtime;            /* OPTIMIZE_TIMEOUTS: the virtual timer */
  unsigned short timeout_len;
  char client[32];
  char request[64];
  void *vhostrec;
};

/* The slot's status values (1.3's SERVER_*). */
enum { SERVER_READY = 2, SERVER_BUSY_READ, SERVER_BUSY_WRITE, SERVER_BUSY_KEEPALIVE,
       SERVER_BUSY_LOG };

/* The scoreboard: one slot per child, in memory the parent maps shared
 * before it forks them (1.3 on Linux: an anonymous shared mapping). */
struct score_slot *scoreboard_make(long children);

/* 1.3's ap_update_child_status and, under OPTIMIZE_TIMEOUTS (Linux), its
 * timeouts: a hard timeout is a write of the slot's timer words instead
 * of an alarm() system call. */
void score_status(struct score_slot *s, int status);
void score_timeout(struct score_slot *s, unsigned len);

/* One parsed request (a few of 1.3's request_rec fields). */
struct request {
  struct pool *pool;
  const char *the_request, *method, *uri, *protocol;
  const char *filename, *content_type;
  struct table *headers_in, *headers_out;
  struct stat finfo;
  int keepalive;
  long bytes_sent;
  long request_time;
};

/* Parse the request text (its header, ending in an empty line) into r,
 * the way 1.3 reads the request line and the MIME headers, unescapes and
 * normalizes the URI and maps it below root; 0, or -1 for a bad request. */
int request_parse(struct request *r, struct pool *p, const char *text,
                  const char *root);

/* The response header (1.3's basic_http_header and its headers_out:
 * Date, Server, Last-Modified, ETag, Accept-Ranges, Content-Length,
 * Connection, Content-Type), formatted into buf; its length. */
int response_header(struct request *r, char *buf, int cap);

/* The access log line in the Common Log Format (mod_log_config's
 * default: host ident user [time] "request" status bytes), written with
 * one write() as 1.3 does without BUFFERED_LOGS. */
void access_log(int fd, const struct request *r, const char *host);

#endif
