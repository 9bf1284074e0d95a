// Kernel-wide helpers: console, strings, panic, command line, memory.
#pragma once
#include "types.h"

// console.c
void console_init(void);
void printk(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void console_write(const char *s, size_t n);   // raw bytes, no formatting
void panic(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
#define BUG_ON(c) do { if (c) panic("BUG at %s:%d: %s", __FILE__, __LINE__, #c); } while (0)

// string.c
void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strncmp(const char *a, const char *b, size_t n);
void strlcpy(char *d, const char *s, size_t n);

// cmdline.c
void cmdline_set(const char *s);
const char *cmdline_get(void);
uint64_t cmdline_u64(const char *key, uint64_t dflt);
bool cmdline_str(const char *key, char *buf, size_t n);

// memory.c: the firmware memory map
struct mem_region { uint64_t base, len; };
int firmware_memory_map(uint64_t magic, uint64_t info, struct mem_region *out, int max);
void boot_info_init(uint64_t magic, uint64_t info);
bool boot_module(uint64_t *base, uint64_t *size);
extern const char *boot_protocol;

// buddy.c
void buddy_init(struct mem_region *r, int n);
void *alloc_pages(int order);
void free_pages(void *addr, int order);
uint64_t nr_free_pages(void);
void buddy_age(uint64_t seed, int rounds);

// rand.c-style helper (xorshift), deterministic
static inline uint64_t xorshift64(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13; x ^= x >> 7; x ^= x << 17;
  return *s = x;
}

// roi.c
void roi_tick(uint64_t now);
void workload_started(void);
void machine_exit(int code) __attribute__((noreturn));

extern char __kernel_start[], __kernel_end[];
extern char __user_text_start[], __user_text_end[];
