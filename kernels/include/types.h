// Basic fixed-width types for a freestanding kernel.
#pragma once

typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned long uintptr_t;
typedef unsigned long size_t;
typedef long ssize_t;
typedef _Bool bool;
#define true 1
#define false 0
#define NULL ((void *)0)

#define offsetof(t, m) __builtin_offsetof(t, m)
#define container_of(ptr, type, member) \
  ((type *)((char *)(ptr) - offsetof(type, member)))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define READ_ONCE(x) (*(volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define barrier() __asm__ volatile("" ::: "memory")

// The kernel runs identity-mapped below 4 GiB: a 32-bit value is a
// complete pointer (see sched.h), and physical == virtual.
#define P32(p) ((uint32_t)(uintptr_t)(p))
#define PTR(v) ((void *)(uintptr_t)(v))
