// The kernel command line: "key=value" words, read as numbers.
//
// It is copied into the kernel first thing, because the loader leaves it in
// memory that the page allocator will later hand out.
//
// A line or a value that does not fit is a panic, not a silent cut: a cut
// value would run another experiment than the one asked for.
#include "kernel.h"
#include "param.h"

static char cmdline[CMDLINE_MAX];

void
cmdline_set(const char *s)
{
  s = s ? s : "";
  if (strlen(s) >= sizeof cmdline)
    panic("the command line is %lu bytes, longer than the %lu this kernel "
          "takes (CMDLINE_MAX)", strlen(s), sizeof cmdline - 1);
  strlcpy(cmdline, s, sizeof cmdline);
}

const char *
cmdline_get(void)
{
  return cmdline;
}

// Value of "key=N" (decimal or 0x-hex), or dflt when absent.
uint64_t
cmdline_u64(const char *key, uint64_t dflt)
{
  size_t kl = strlen(key);
  for (const char *p = cmdline; *p; p++) {
    if ((p == cmdline || p[-1] == ' ') && !strncmp(p, key, kl) && p[kl] == '=') {
      const char *v = p + kl + 1;
      uint64_t x = 0;
      int base = 10;
      if (v[0] == '0' && v[1] == 'x') { base = 16; v += 2; }
      for (;; v++) {
        int d;
        if (*v >= '0' && *v <= '9') d = *v - '0';
        else if (base == 16 && *v >= 'a' && *v <= 'f') d = *v - 'a' + 10;
        else break;
        x = x * base + d;
      }
      return x;
    }
  }
  return dflt;
}

// Value of "key=word" copied into buf (at most n-1 bytes); false when absent.
bool
cmdline_str(const char *key, char *buf, size_t n)
{
  size_t kl = strlen(key);
  for (const char *p = cmdline; *p; p++) {
    if ((p == cmdline || p[-1] == ' ') && !strncmp(p, key, kl) && p[kl] == '=') {
      const char *v = p + kl + 1;
      size_t i = 0;
      for (; v[i] && v[i] != ' '; i++) {
        if (i + 1 >= n)
          panic("%s= is longer than the %lu bytes the kernel keeps for it",
                key, n - 1);
        buf[i] = v[i];
      }
      buf[i] = 0;
      return true;
    }
  }
  return false;
}
