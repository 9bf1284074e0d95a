/* client.h: one closed-loop client (a WebBench client thread). */
#ifndef WEB_CLIENT_H
#define WEB_CLIENT_H

#define REQUESTS_MAX 1000000     /* --requests per client at most: clients x
                                    requests fits a long (colorsim's
                                    describe/programs.py reads this line) */

#include <stdint.h>

struct client_config {
  int id, port;
  long requests;               /* this client's requests, then it exits */
  int keepalive;               /* requests per connection (1: HTTP/1.0) */
  uint64_t seed;
  int progress_fd;             /* one byte per completed request */
  int result_fd;               /* a struct client_result at the end */
  int start_rd, start_wr;      /* the start pipe: begin at its end of file */
};

struct client_result {
  int id;
  long requests, bytes;
};

void client_main(const struct client_config *cfg) __attribute__((noreturn));

#endif
