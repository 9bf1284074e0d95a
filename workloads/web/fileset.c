/* fileset.c: sizes, names and the request mix (fileset.h). */
#include <stdio.h>
#include <string.h>

#include "fileset.h"

static const int class_share[FILESET_CLASSES] = {35, 50, 14, 1};   /* percent */

long fileset_size(int file)
{
  long size = (file % FILESET_PER_CLASS + 1) * 1024L;
  for (int c = file / FILESET_PER_CLASS; c > 0; c--)
    size *= 10;
  return size / 10;
}

void fileset_name(int file, char *buf, int n)
{
  snprintf(buf, n, "/www/class%d_%d", file / FILESET_PER_CLASS,
           file % FILESET_PER_CLASS + 1);
}

int fileset_lookup(const char *path)
{
  int c, j;
  char tail;
  if (sscanf(path, "/www/class%d_%d%c", &c, &j, &tail) != 2)
    return -1;
  if (c < 0 || c >= FILESET_CLASSES || j < 1 || j > FILESET_PER_CLASS)
    return -1;
  return c * FILESET_PER_CLASS + j - 1;
}

/* xorshift64*: the same sequence on the testbed and the host. */
uint64_t fileset_rand(uint64_t *s)
{
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}

int fileset_pick(uint64_t *rng)
{
  int p = fileset_rand(rng) % 100, c = 0;
  while (c < FILESET_CLASSES - 1 && p >= class_share[c])
    p -= class_share[c++];
  return c * FILESET_PER_CLASS + (int)(fileset_rand(rng) % FILESET_PER_CLASS);
}
