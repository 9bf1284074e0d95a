/* check.h: the test programs' one way to fail: a line naming the test
 * and the failed condition, exit status 1. */
#ifndef COLORSIM_CHECK_H
#define COLORSIM_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(name, cond)                                                  \
  do {                                                                     \
    if (!(cond)) {                                                         \
      printf("%s: FAIL %s (line %d)\n", name, #cond, __LINE__);            \
      fflush(stdout);                                                      \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

#endif
