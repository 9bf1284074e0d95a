// The few string routines a freestanding kernel needs (gcc may emit calls
// to memset/memcpy on its own, so these names are required).
#include "kernel.h"

void *
memset(void *d, int c, size_t n)
{
  uint8_t *p = d;
  while (n--) *p++ = (uint8_t)c;
  return d;
}

void *
memcpy(void *d, const void *s, size_t n)
{
  uint8_t *p = d;
  const uint8_t *q = s;
  while (n--) *p++ = *q++;
  return d;
}

int
memcmp(const void *a, const void *b, size_t n)
{
  const uint8_t *p = a, *q = b;
  for (; n; n--, p++, q++)
    if (*p != *q) return *p - *q;
  return 0;
}

size_t
strlen(const char *s)
{
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

int
strncmp(const char *a, const char *b, size_t n)
{
  for (; n; n--, a++, b++) {
    if (*a != *b) return (uint8_t)*a - (uint8_t)*b;
    if (!*a) return 0;
  }
  return 0;
}

void
strlcpy(char *d, const char *s, size_t n)
{
  size_t i = 0;
  for (; i + 1 < n && s[i]; i++) d[i] = s[i];
  if (n) d[i] = 0;
}
