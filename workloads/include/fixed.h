/* fixed.h: a double as text with a fixed number of decimals, without
 * printf's %f.  musl formats %f through long double (x87), and gem5's x87
 * model derails it; this rounds with SSE to a whole count of the last
 * decimal and prints integers, the same text as "%.*f" gives. */
#ifndef COLORSIM_FIXED_H
#define COLORSIM_FIXED_H
#include <stdio.h>

static inline const char *fixed(char buf[32], double x, int places)
{
  long scale = 1;
  for (int i = 0; i < places; i++)
    scale *= 10;
  const char *sign = x < 0 ? "-" : "";
  long v = (long)((x < 0 ? -x : x) * scale + 0.5);
  if (places)
    snprintf(buf, 32, "%s%ld.%0*ld", sign, v / scale, places, v % scale);
  else
    snprintf(buf, 32, "%s%ld", sign, v);
  return buf;
}

#endif
