// The socket system calls (2.4's net/socket.c): a socket is a file whose
// private data is a struct sock (sock.c).  Only AF_INET SOCK_STREAM:
// every address is this machine (the loopback card), and the port picks
// the listener.
#include "errno.h"
#include "fs.h"
#include "kernel.h"
#include "mm.h"
#include "net.h"
#include "poll.h"
#include "sched.h"

#define AF_UNIX  1
#define AF_INET  2
#define SOCK_STREAM 1
#define SOCK_NONBLOCK 04000
#define SOCK_CLOEXEC  02000000
#define MSG_DONTWAIT 0x40
#define MSG_WAITALL  0x100
#define SOL_SOCKET 1
#define SO_ERROR   4
#define SO_SNDBUF  7
#define SO_RCVBUF  8

struct sockaddr_in_k { uint16_t family, port; uint32_t addr; uint8_t zero[8]; };

static inline uint16_t ntohs(uint16_t v) { return (uint16_t)(v << 8 | v >> 8); }

static long sock_read(struct file *f, uint64_t buf, uint64_t n)
{
  return stream_recvmsg(f->private_data, buf, n, f->flags & O_NONBLOCK, false);
}

static long sock_write(struct file *f, uint64_t buf, uint64_t n)
{
  return stream_sendmsg(f->private_data, buf, n, f->flags & O_NONBLOCK);
}

static unsigned sock_poll(struct file *f, struct poll_table *pt)
{
  struct sock *sk = f->private_data;
  poll_wait(&sk->sleep, pt);
  return stream_poll(sk);
}

static void sock_release(struct file *f) { stream_close(f->private_data); }

static const struct file_operations socket_fops = {
  .read = sock_read, .write = sock_write, .poll = sock_poll,
  .release = sock_release,
};

// A new file for sk (taking over its reference) in the lowest free slot.
static long
sock_map_fd(struct sock *sk, long flags)
{
  struct file *f = get_empty_filp(FILE_SOCKET, NULL);
  if (!f) {
    stream_close(sk);
    return -ENFILE;
  }
  f->flags = O_RDWR | (flags & SOCK_NONBLOCK ? O_NONBLOCK : 0);
  f->f_op = &socket_fops;
  f->private_data = sk;
  long fd = install_fd(f);
  if (fd < 0)
    fput(f);                             // closes sk
  return fd;
}

// The socket behind fd, with a file reference the caller drops.
static struct sock *
sockfd_lookup(long fd, struct file **fp, long *err)
{
  struct file *f = fget(fd);
  *err = -EBADF;
  if (!f)
    return NULL;
  if (f->kind != FILE_SOCKET) {
    fput(f);
    *err = -ENOTSOCK;
    return NULL;
  }
  *fp = f;
  return f->private_data;
}

long
sys_socket(long family, long type, long protocol)
{
  if (family != AF_INET)
    return -EAFNOSUPPORT;
  if ((type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) != SOCK_STREAM)
    return -EPROTONOSUPPORT;
  if (protocol != 0 && protocol != 6)    // IPPROTO_TCP
    return -EPROTONOSUPPORT;
  struct sock *sk = sk_alloc();
  if (!sk)
    return -ENOMEM;
  return sock_map_fd(sk, type);
}

static long
get_port(uint64_t uaddr, long len, uint16_t *port)
{
  struct sockaddr_in_k a;
  if (len < 8 || copy_from_user(&a, uaddr, 8) < 0)
    return -EFAULT;
  if (a.family != AF_INET)
    return -EAFNOSUPPORT;
  *port = ntohs(a.port);
  return 0;
}

#define SOCK_CALL(fd, body)                                   \
  ({                                                          \
    struct file *__f;                                         \
    long __e;                                                 \
    struct sock *sk = sockfd_lookup((fd), &__f, &__e);        \
    if (sk) {                                                 \
      __e = (body);                                           \
      fput(__f);                                              \
    }                                                         \
    __e;                                                      \
  })

long
sys_bind(long fd, uint64_t uaddr, long len)
{
  uint16_t port;
  long r = get_port(uaddr, len, &port);
  if (r)
    return r;
  if (!port)
    return -EINVAL;                      // no ephemeral ports for listeners
  return SOCK_CALL(fd, stream_bind(sk, port));
}

long sys_listen(long fd, long backlog) { return SOCK_CALL(fd, stream_listen(sk, backlog)); }

long
sys_connect(long fd, uint64_t uaddr, long len)
{
  uint16_t port;
  long r = get_port(uaddr, len, &port);
  if (r)
    return r;
  return SOCK_CALL(fd, stream_connect(sk, port, __f->flags & O_NONBLOCK));
}

static long
put_addr(uint64_t uaddr, uint64_t ulen, uint16_t port)
{
  struct sockaddr_in_k a = {.family = AF_INET, .port = ntohs(port),
                            .addr = 0x0100007f};   // 127.0.0.1
  uint32_t len;
  if (!uaddr)
    return 0;
  if (copy_from_user(&len, ulen, 4) < 0)
    return -EFAULT;
  if (len > sizeof a)
    len = sizeof a;
  if (copy_to_user(uaddr, &a, len) < 0)
    return -EFAULT;
  len = sizeof a;
  return copy_to_user(ulen, &len, 4);
}

long
sys_accept4(long fd, uint64_t uaddr, uint64_t ulen, long flags)
{
  if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))
    return -EINVAL;
  long err;
  struct file *f;
  struct sock *sk = sockfd_lookup(fd, &f, &err);
  if (!sk)
    return err;
  struct sock *child = stream_accept(sk, f->flags & O_NONBLOCK, &err);
  uint16_t port = sk->port;
  fput(f);
  if (!child)
    return err;
  long nfd = sock_map_fd(child, flags);
  if (nfd >= 0 && put_addr(uaddr, ulen, port) < 0) {
    sys_close(nfd);
    return -EFAULT;
  }
  return nfd;
}

long sys_accept(long fd, uint64_t uaddr, uint64_t ulen) { return sys_accept4(fd, uaddr, ulen, 0); }

long
sys_sendto(long fd, uint64_t buf, uint64_t n, long flags, uint64_t addr, long alen)
{
  return SOCK_CALL(fd, stream_sendmsg(sk, buf, n,
                                      (__f->flags & O_NONBLOCK) || (flags & MSG_DONTWAIT)));
}

long
sys_recvfrom(long fd, uint64_t buf, uint64_t n, long flags, uint64_t addr, uint64_t alen)
{
  return SOCK_CALL(fd, stream_recvmsg(sk, buf, n,
                                      (__f->flags & O_NONBLOCK) || (flags & MSG_DONTWAIT),
                                      flags & MSG_WAITALL));
}

long sys_shutdown(long fd, long how) { return SOCK_CALL(fd, stream_shutdown(sk, how)); }

long
sys_getsockname(long fd, uint64_t uaddr, uint64_t ulen)
{
  return SOCK_CALL(fd, put_addr(uaddr, ulen, sk->port));
}

long
sys_getpeername(long fd, uint64_t uaddr, uint64_t ulen)
{
  return SOCK_CALL(fd, sk->state == TCP_ESTABLISHED ? put_addr(uaddr, ulen, sk->port)
                                                    : -ENOTCONN);
}

// Options are accepted and ignored (TCP_NODELAY, SO_REUSEADDR, buffer
// sizes): there is no Nagle, no TIME_WAIT, and the buffers are fixed.
long
sys_setsockopt(long fd, long level, long name, uint64_t val, long len)
{
  return SOCK_CALL(fd, 0);
}

long
sys_getsockopt(long fd, long level, long name, uint64_t val, uint64_t ulen)
{
  return SOCK_CALL(fd, ({
    int v = 0;
    if (level == SOL_SOCKET && name == SO_ERROR) {
      v = sk->err;
      sk->err = 0;
    } else if (level == SOL_SOCKET && (name == SO_RCVBUF || name == SO_SNDBUF)) {
      v = sk->rcvbuf;
    }
    int len = 4;
    copy_to_user(val, &v, 4) < 0 || copy_to_user(ulen, &len, 4) < 0 ? -EFAULT : 0;
  }));
}
