// Console: polled output on COM1 (0x3F8), printk and panic.
//
// One lock serializes lines from different CPUs.  panic() prints, tells
// gem5 the run failed (m5 fail) and makes QEMU exit through isa-debug-exit,
// so a broken run ends at once instead of looking like a hang.
#include <stdarg.h>

#include "kernel.h"
#include "m5op.h"
#include "spinlock.h"
#include "x86.h"

#define COM1 0x3f8

static spinlock_t console_lock = SPIN_LOCK_UNLOCKED;

void
console_init(void)
{
  outb(COM1 + 1, 0x00);   // no interrupts: output is polled
  outb(COM1 + 3, 0x80);   // DLAB on
  outb(COM1 + 0, 0x01);   // 115200 baud
  outb(COM1 + 1, 0x00);
  outb(COM1 + 3, 0x03);   // 8N1
  outb(COM1 + 2, 0xc7);   // FIFO on
}

static void
putc(char c)
{
  for (int i = 0; i < 100000 && !(inb(COM1 + 5) & 0x20); i++)
    cpu_relax();
  outb(COM1, c);
}

static void
puts_n(const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\n')
      putc('\r');
    putc(s[i]);
  }
}

// Minimal formatter: %d %u %x %lx %lu %ld %s %c %p %%, with width and '0'.
static size_t
format(char *out, size_t cap, const char *fmt, va_list ap)
{
  size_t n = 0;
#define EMIT(ch) do { if (n + 1 < cap) out[n] = (ch); n++; } while (0)
  for (; *fmt; fmt++) {
    if (*fmt != '%') { EMIT(*fmt); continue; }
    fmt++;
    char pad = ' ';
    int width = 0, is_long = 0;
    if (*fmt == '0') { pad = '0'; fmt++; }
    while (*fmt >= '0' && *fmt <= '9') width = width * 10 + (*fmt++ - '0');
    while (*fmt == 'l') { is_long = 1; fmt++; }
    char buf[24];
    int len = 0;
    uint64_t v;
    int neg = 0;
    switch (*fmt) {
    case 'd':
      v = is_long ? (uint64_t)va_arg(ap, long) : (uint64_t)(long)va_arg(ap, int);
      if ((int64_t)v < 0) { neg = 1; v = -v; }
      goto decimal;
    case 'u':
      v = is_long ? va_arg(ap, unsigned long) : va_arg(ap, unsigned int);
    decimal:
      do { buf[len++] = '0' + v % 10; v /= 10; } while (v);
      if (neg) buf[len++] = '-';
      break;
    case 'p':
      is_long = 1;
      EMIT('0'); EMIT('x');
      /* fall through */
    case 'x':
      v = is_long ? va_arg(ap, unsigned long) : va_arg(ap, unsigned int);
      do { buf[len++] = "0123456789abcdef"[v & 15]; v >>= 4; } while (v);
      break;
    case 'c':
      buf[len++] = (char)va_arg(ap, int);
      break;
    case 's': {
      const char *s = va_arg(ap, const char *);
      if (!s) s = "(null)";
      int sl = strlen(s);
      for (int i = sl; i < width; i++) EMIT(' ');
      // EMIT drops what does not fit, so the pointer moves outside it: a
      // string longer than the line must not stop the walk along it.
      for (; *s; s++) EMIT(*s);
      continue;
    }
    case '%':
      EMIT('%');
      continue;
    default:
      EMIT('%'); EMIT(*fmt);
      continue;
    }
    for (int i = len; i < width; i++) EMIT(pad);
    while (len) EMIT(buf[--len]);
  }
  if (cap) out[n < cap ? n : cap - 1] = 0;
  return n < cap ? n : cap - 1;
#undef EMIT
}

// A line cut at the buffer's end still ends as its format did, so the host,
// which reads the console line by line, never sees two lines run together.
static size_t
mark_cut(char *line, size_t n, size_t cap, const char *fmt)
{
  size_t fl = strlen(fmt);
  if (n + 1 < cap || cap < 5 || !fl || fmt[fl - 1] != '\n' ||
      line[n - 1] == '\n')                 // full, but not cut
    return n;
  memcpy(line + cap - 5, "...\n", 5);     // the NUL included
  return cap - 1;
}

void
printk(const char *fmt, ...)
{
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  size_t n = format(line, sizeof line, fmt, ap);
  va_end(ap);
  n = mark_cut(line, n, sizeof line, fmt);
  uint64_t f = spin_lock_irqsave(&console_lock);
  puts_n(line, n);
  spin_unlock_irqrestore(&console_lock, f);
}

// Bytes a user process writes to its console file descriptor.
void
console_write(const char *s, size_t n)
{
  uint64_t f = spin_lock_irqsave(&console_lock);
  puts_n(s, n);
  spin_unlock_irqrestore(&console_lock, f);
}

void
panic(const char *fmt, ...)
{
  char line[256];
  va_list ap;
  cli();
  va_start(ap, fmt);
  size_t n = format(line, sizeof line, fmt, ap);
  va_end(ap);
  // No lock: the panicking CPU may hold it.  Lines may interleave; fine.
  puts_n("\nKernel panic: ", 15);
  puts_n(line, n);
  puts_n("\n", 1);
  m5_op(M5OP_FAIL);
  machine_exit(2);
}
