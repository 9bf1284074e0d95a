/* apache.c: Apache 1.3's per-request core work (apache.h).  Each piece
 * follows what 1.3's own code does for a static file, in miniature: no
 * modules beyond the core, mod_mime's type lookup and mod_log_config's
 * common log; no virtual hosts, .htaccess or content negotiation. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "apache.h"

/* ---- pools ------------------------------------------------------------ */

struct pool_block {
  struct pool_block *next;
  char *first_avail, *end;
};

static struct pool_block *block_new(size_t min)
{
  size_t size = min + sizeof(struct pool_block) > POOL_BLOCK
                    ? min + sizeof(struct pool_block) : POOL_BLOCK;
  struct pool_block *b = malloc(size);
  if (!b)
    abort();
  b->next = NULL;
  b->first_avail = (char *)(b + 1);
  b->end = (char *)b + size;
  return b;
}

void pool_init(struct pool *p)
{
  p->first = p->cur = block_new(0);
}

void *pool_alloc(struct pool *p, size_t n)
{
  n = (n + 7) & ~(size_t)7;                /* 1.3 aligns to a double */
  while ((size_t)(p->cur->end - p->cur->first_avail) < n) {
    if (!p->cur->next)
      p->cur->next = block_new(n);
    p->cur = p->cur->next;
    p->cur->first_avail = (char *)(p->cur + 1);
  }
  void *m = p->cur->first_avail;
  p->cur->first_avail += n;
  return m;
}

char *pool_strndup(struct pool *p, const char *s, size_t n)
{
  char *d = pool_alloc(p, n + 1);
  memcpy(d, s, n);
  d[n] = 0;
  return d;
}

static char *pool_strdup(struct pool *p, const char *s)
{
  return pool_strndup(p, s, strlen(s));
}

void pool_clear(struct pool *p)
{
  p->cur = p->first;
  p->cur->first_avail = (char *)(p->cur + 1);
}

/* ---- tables ----------------------------------------------------------- */

struct table *table_make(struct pool *p, int cap)
{
  struct table *t = pool_alloc(p, sizeof *t);
  t->elts = pool_alloc(p, cap * sizeof *t->elts);
  t->n = 0;
  t->cap = cap;
  t->pool = p;
  return t;
}

void table_add(struct table *t, const char *key, const char *val)
{
  if (t->n == t->cap) {                    /* 1.3's array doubles */
    struct table_entry *e = pool_alloc(t->pool, 2 * t->cap * sizeof *e);
    memcpy(e, t->elts, t->n * sizeof *e);
    t->elts = e;
    t->cap *= 2;
  }
  t->elts[t->n++] = (struct table_entry){pool_strdup(t->pool, key),
                                         pool_strdup(t->pool, val)};
}

void table_set(struct table *t, const char *key, const char *val)
{
  for (int i = 0; i < t->n; i++)
    if (!strcasecmp(t->elts[i].key, key)) {
      t->elts[i].val = pool_strdup(t->pool, val);
      return;
    }
  table_add(t, key, val);
}

const char *table_get(const struct table *t, const char *key)
{
  for (int i = 0; i < t->n; i++)
    if (!strcasecmp(t->elts[i].key, key))
      return t->elts[i].val;
  return NULL;
}

/* ---- the scoreboard --------------------------------------------------- */

struct score_slot *scoreboard_make(long children)
{
  struct score_slot *s = mmap(NULL, children * sizeof *s, PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return s == MAP_FAILED ? NULL : s;
}

void score_status(struct score_slot *s, int status)
{
  s->status = (unsigned char)status;
}

void score_timeout(struct score_slot *s, unsigned len)
{
  s->cur_vtime++;
  s->timeout_len = (unsigned short)len;
}

/* ---- the request ------------------------------------------------------ */

/* mod_mime's types: a hash on the extension's first letter, a table per
 * bucket (1.3 reads conf/mime.types into them at start-up). */
static const char *const mime_types[][2] = {
  {"html", "text/html"}, {"htm", "text/html"}, {"txt", "text/plain"},
  {"gif", "image/gif"}, {"jpg", "image/jpeg"}, {"jpeg", "image/jpeg"},
  {"png", "image/png"}, {"css", "text/css"}, {"js", "application/x-javascript"},
  {"pdf", "application/pdf"}, {"ps", "application/postscript"},
  {"zip", "application/zip"}, {"gz", "application/x-gzip"},
  {"tar", "application/x-tar"}, {"xml", "text/xml"}, {"bin", "application/octet-stream"},
  {"class", "application/octet-stream"}, {"wav", "audio/x-wav"}, {"mpg", "video/mpeg"},
  {"mpeg", "video/mpeg"}, {"mov", "video/quicktime"}, {"avi", "video/x-msvideo"},
  {"tif", "image/tiff"}, {"tiff", "image/tiff"}, {"bmp", "image/bmp"},
  {"rtf", "text/rtf"}, {"doc", "application/msword"}, {"xls", "application/vnd.ms-excel"},
};
#define MIME_HASH 27

static const char *mime_lookup(const char *ext)
{
  static struct { const char *ext[8], *type[8]; int n; } bucket[MIME_HASH];
  static int ready;
  if (!ready) {
    for (size_t i = 0; i < sizeof mime_types / sizeof mime_types[0]; i++) {
      int h = (mime_types[i][0][0] - 'a') % MIME_HASH;
      if (bucket[h].n < 8) {
        bucket[h].ext[bucket[h].n] = mime_types[i][0];
        bucket[h].type[bucket[h].n++] = mime_types[i][1];
      }
    }
    ready = 1;
  }
  if (!isalpha((unsigned char)ext[0]))
    return NULL;
  int h = (tolower((unsigned char)ext[0]) - 'a') % MIME_HASH;
  for (int i = 0; i < bucket[h].n; i++)
    if (!strcasecmp(bucket[h].ext[i], ext))
      return bucket[h].type[i];
  return NULL;
}

/* 1.3's ap_unescape_url: %xx to the byte, in place. */
static void unescape_url(char *u)
{
  char *d = u;
  for (; *u; u++, d++) {
    if (u[0] == '%' && isxdigit((unsigned char)u[1]) && isxdigit((unsigned char)u[2])) {
      char hex[3] = {u[1], u[2], 0};
      *d = (char)strtol(hex, NULL, 16);
      u += 2;
    } else {
      *d = *u;
    }
  }
  *d = 0;
}

/* 1.3's ap_getparents: drop "./" segments and "seg/../" pairs. */
static void getparents(char *u)
{
  char *out = u, *in = u;
  while (*in) {
    if (in[0] == '/' && in[1] == '.' && (in[2] == '/' || !in[2])) {
      in += 2;
    } else if (in[0] == '/' && in[1] == '.' && in[2] == '.' && (in[3] == '/' || !in[3])) {
      while (out > u && *--out != '/')
        ;
      in += 3;
    } else {
      *out++ = *in++;
    }
  }
  *out = 0;
  if (!u[0])
    strcpy(u, "/");
}

/* The line at *text up to CRLF, copied into the pool; *text moves past it. */
static char *next_line(struct pool *p, const char **text)
{
  const char *e = strstr(*text, "\r\n");
  if (!e)
    return NULL;
  char *line = pool_strndup(p, *text, e - *text);
  *text = e + 2;
  return line;
}

static int parse_request_line(struct request *r, char *line)
{
  r->the_request = pool_strdup(r->pool, line);
  char *sp1 = strchr(line, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
  if (!sp2)
    return -1;
  r->method = pool_strndup(r->pool, line, sp1 - line);
  r->uri = pool_strndup(r->pool, sp1 + 1, sp2 - sp1 - 1);
  r->protocol = pool_strdup(r->pool, sp2 + 1);
  return strcmp(r->method, "GET") ? -1 : 0;
}

/* get_mime_headers: "Key: value" lines until the empty one. */
static void parse_headers(struct request *r, const char **text)
{
  char *line;
  while ((line = next_line(r->pool, text)) && line[0]) {
    char *colon = strchr(line, ':');
    if (!colon)
      continue;
    *colon = 0;
    char *val = colon + 1;
    while (*val == ' ' || *val == '\t')
      val++;
    table_add(r->headers_in, line, val);
  }
}

int request_parse(struct request *r, struct pool *p, const char *text, const char *root)
{
  memset(r, 0, sizeof *r);
  r->pool = p;
  r->request_time = (long)time(NULL);
  r->headers_in = table_make(p, 8);
  r->headers_out = table_make(p, 8);
  char *line = next_line(p, &text);
  if (!line || parse_request_line(r, line) < 0)
    return -1;
  parse_headers(r, &text);
  const char *conn = table_get(r->headers_in, "Connection");
  r->keepalive = conn && !strcasecmp(conn, "keep-alive");
  char *uri = pool_strdup(p, r->uri);
  unescape_url(uri);
  getparents(uri);
  r->uri = uri;
  size_t rl = strlen(root), ul = strlen(uri);
  char *fn = pool_alloc(p, rl + ul + 1);       /* translate_name: DocumentRoot + uri */
  memcpy(fn, root, rl);
  memcpy(fn + rl, uri, ul + 1);
  r->filename = fn;
  const char *dot = strrchr(uri, '.');
  r->content_type = (dot && mime_lookup(dot + 1)) ? mime_lookup(dot + 1) : "text/plain";
  return 0;
}

/* ---- the response ----------------------------------------------------- */

static const char *const day_snames[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const month_snames[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* 1.3's ap_gm_timestr_822: "Sun, 06 Nov 1994 08:49:37 GMT". */
static char *time_822(struct pool *p, long t)
{
  struct tm tm;
  time_t tt = (time_t)t;
  gmtime_r(&tt, &tm);
  char *s = pool_alloc(p, 32);
  snprintf(s, 32, "%s, %.2d %s %d %.2d:%.2d:%.2d GMT", day_snames[tm.tm_wday],
           tm.tm_mday, month_snames[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour,
           tm.tm_min, tm.tm_sec);
  return s;
}

int response_header(struct request *r, char *buf, int cap)
{
  char num[64];
  struct table *h = r->headers_out;
  table_set(h, "Date", time_822(r->pool, r->request_time));
  table_set(h, "Server", "Apache/1.3.19 (Unix) (colorsim)");
  table_set(h, "Last-Modified", time_822(r->pool, (long)r->finfo.st_mtime));
  snprintf(num, sizeof num, "\"%lx-%lx-%lx\"", (unsigned long)r->finfo.st_ino,
           (unsigned long)r->finfo.st_size, (unsigned long)r->finfo.st_mtime);
  table_set(h, "ETag", num);
  table_set(h, "Accept-Ranges", "bytes");
  snprintf(num, sizeof num, "%ld", (long)r->finfo.st_size);
  table_set(h, "Content-Length", num);
  table_set(h, "Connection", r->keepalive ? "Keep-Alive" : "close");
  table_set(h, "Content-Type", r->content_type);
  int n = snprintf(buf, cap, "%s 200 OK\r\n", r->protocol);
  for (int i = 0; i < h->n && n < cap; i++)
    n += snprintf(buf + n, cap - n, "%s: %s\r\n", h->elts[i].key, h->elts[i].val);
  n += snprintf(buf + n, n < cap ? cap - n : 0, "\r\n");
  return n < cap ? n : cap - 1;
}

void access_log(int fd, const struct request *r, const char *host)
{
  struct tm tm;
  time_t tt = (time_t)time(NULL);           /* 1.3 takes the time again */
  gmtime_r(&tt, &tm);
  char line[512];
  int n = snprintf(line, sizeof line,
                   "%s - - [%.2d/%s/%d:%.2d:%.2d:%.2d +0000] \"%s\" 200 %ld\n", host,
                   tm.tm_mday, month_snames[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour,
                   tm.tm_min, tm.tm_sec, r->the_request, r->bytes_sent);
  if (n > (int)sizeof line - 1)
    n = sizeof line - 1;
  if (fd >= 0 && write(fd, line, n) != n)
    return;                                   /* 1.3 ignores a failed log write */
}
