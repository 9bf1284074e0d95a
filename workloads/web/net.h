/* net.h: the few socket helpers the web workload shares. */
#ifndef WEB_NET_H
#define WEB_NET_H

int tcp_listen(int port, int backlog);  /* exits on failure */
int tcp_dial(int port);                 /* -1 with errno on failure */
long write_all(int fd, const void *buf, long n);
/* Read until the end of an HTTP header ("\r\n\r\n"): bytes read (header
 * and whatever body followed), 0 at end of file, -1 on error or a
 * header too long for buf.  *hdr_len: the header's length. */
long read_header(int fd, char *buf, long cap, long *hdr_len);

#endif
