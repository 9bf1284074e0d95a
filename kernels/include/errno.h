// Linux's errno numbers (x86_64): system calls return -E* in rax.
#pragma once

#define EPERM    1
#define ENOENT   2
#define ESRCH    3
#define EINTR    4
#define EIO      5
#define E2BIG    7
#define ENOEXEC  8
#define EBADF    9
#define ECHILD  10
#define EAGAIN  11
#define ENOMEM  12
#define EFAULT  14
#define EBUSY   16
#define EEXIST  17
#define ENOTDIR 20
#define EISDIR  21
#define EINVAL  22
#define EMFILE  24
#define ENOTTY  25
#define ESPIPE  29
#define EROFS   30
#define ERANGE  34
#define ENAMETOOLONG 36
#define ENOSYS  38
#define ETIMEDOUT 110
