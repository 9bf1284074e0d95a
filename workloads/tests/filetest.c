/* filetest: read files of the image and check their contents: a text
 * file, and a 3-page generated pattern (byte i = (i * 7 + 3) & 0xff) read
 * in odd-sized pieces, with lseek and fstat.  On the testbed, a log file
 * under /var/log takes appends past its in-memory ring (logfile.c) and
 * fstat counts them; the image refuses writers elsewhere. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"

#define PATTERN_SIZE 10000

int main(int argc, char **argv)
{
  const char *root = argc > 1 ? argv[1] : "";       /* host: the files dir */
  char path[256], buf[512];
  snprintf(path, sizeof path, "%s/etc/motd", root);
  int fd = open(path, O_RDONLY);
  CHECK("filetest", fd >= 0);
  ssize_t n = read(fd, buf, sizeof buf - 1);
  CHECK("filetest", n > 0);
  buf[n] = 0;
  CHECK("filetest", strcmp(buf, "colorsim root file system\n") == 0);
  CHECK("filetest", read(fd, buf, sizeof buf) == 0);
  CHECK("filetest", close(fd) == 0);

  snprintf(path, sizeof path, "%s/data/pattern.bin", root);
  fd = open(path, O_RDONLY);
  CHECK("filetest", fd >= 0);
  struct stat st;
  CHECK("filetest", fstat(fd, &st) == 0 && st.st_size == PATTERN_SIZE);
  long total = 0;
  for (;;) {
    n = read(fd, buf, 333);
    CHECK("filetest", n >= 0);
    if (n == 0)
      break;
    for (ssize_t i = 0; i < n; i++)
      CHECK("filetest", (unsigned char)buf[i] == (unsigned char)((total + i) * 7 + 3));
    total += n;
  }
  CHECK("filetest", total == PATTERN_SIZE);
  CHECK("filetest", lseek(fd, 4095, SEEK_SET) == 4095);
  CHECK("filetest", read(fd, buf, 2) == 2);
  CHECK("filetest", (unsigned char)buf[0] == (unsigned char)(4095 * 7 + 3));
  CHECK("filetest", (unsigned char)buf[1] == (unsigned char)(4096 * 7 + 3));
  close(fd);
  snprintf(path, sizeof path, "%s/no/such/file", root);
  CHECK("filetest", open(path, O_RDONLY) == -1 && errno == ENOENT);
  if (!root[0]) {
    CHECK("filetest", open("/etc/motd", O_WRONLY) == -1 && errno == EROFS);
    int log = open("/var/log/test_log", O_WRONLY | O_CREAT | O_APPEND, 0644);
    CHECK("filetest", log >= 0);
    char line[71];
    memset(line, 'x', sizeof line);
    for (int i = 0; i < 3000; i++)                  /* 213000 B: past the ring */
      CHECK("filetest", write(log, line, sizeof line) == sizeof line);
    CHECK("filetest", read(log, buf, 1) == -1);
    CHECK("filetest", fstat(log, &st) == 0 && st.st_size == 3000 * 71);
    int again = open("/var/log/test_log", O_WRONLY | O_APPEND);
    CHECK("filetest", again >= 0 && write(again, line, 10) == 10);
    CHECK("filetest", fstat(log, &st) == 0 && st.st_size == 3000 * 71 + 10);
    close(again);
    close(log);
  }
  printf("filetest: ok (%ld bytes checked)\n", total);
  return 0;
}
