// execve of a static ELF64 executable from the image, and init's start.
//
// Both ET_EXEC (linked at or above USER_BASE) and ET_DYN (static-pie, what
// musl-gcc -static-pie makes) load; ET_DYN goes at ELF_LOAD_BIAS and
// relocates itself.  Segments are copied from the page cache into fresh
// pages; the stack gets argv, envp and the auxiliary vector musl reads
// (AT_PHDR finds its TLS segment and, for static-pie, its own base).
#include "errno.h"
#include "fs.h"
#include "kernel.h"
#include "m5op.h"
#include "param.h"
#include "fpu.h"
#include "mm.h"
#include "proc.h"
#include "sched.h"
#include "user.h"

#define MAX_ARGS 32
#define ARG_BYTES 2048

struct elf64_ehdr {
  uint8_t ident[16];
  uint16_t type, machine;
  uint32_t version;
  uint64_t entry, phoff, shoff;
  uint32_t flags;
  uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};

struct elf64_phdr {
  uint32_t type, flags;
  uint64_t offset, vaddr, paddr, filesz, memsz, align;
};

#define ET_EXEC 2
#define ET_DYN  3
#define PT_LOAD 1
#define PT_INTERP 3
#define PF_X 1
#define PF_W 2
#define PF_R 4

enum { AT_NULL = 0, AT_PHDR = 3, AT_PHENT = 4, AT_PHNUM = 5, AT_PAGESZ = 6,
       AT_BASE = 7, AT_ENTRY = 9, AT_UID = 11, AT_EUID = 12, AT_GID = 13,
       AT_EGID = 14, AT_HWCAP = 16, AT_CLKTCK = 17, AT_SECURE = 23,
       AT_RANDOM = 25, AT_EXECFN = 31 };

static int
read_exact(struct inode *ino, uint64_t off, void *dst, uint64_t n)
{
  return inode_read(ino, off, dst, n) == (long)n ? 0 : -ENOEXEC;
}

static int
check_header(struct elf64_ehdr *eh)
{
  if (memcmp(eh->ident, "\177ELF", 4) || eh->ident[4] != 2 || eh->machine != 62 ||
      (eh->type != ET_EXEC && eh->type != ET_DYN) ||
      eh->phentsize != sizeof(struct elf64_phdr) || eh->phnum == 0 || eh->phnum > 16)
    return -ENOEXEC;
  return 0;
}

// Copy one PT_LOAD segment into mm (pages allocated now, zero-filled
// past filesz).
static int
load_segment(struct mm_struct *mm, struct inode *ino, struct elf64_phdr *ph, uint64_t bias)
{
  uint64_t va = ph->vaddr + bias, start = va & ~(uint64_t)(PAGE_SIZE - 1);
  uint64_t end = (va + ph->memsz + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1);
  if (ph->filesz > ph->memsz || start < USER_BASE || end > MMAP_TOP || end < start)
    return -ENOEXEC;
  uint32_t prot = ((ph->flags & PF_R) ? PROT_READ : 0) |
                  ((ph->flags & PF_W) ? PROT_WRITE : 0) |
                  ((ph->flags & PF_X) ? PROT_EXEC : 0);
  struct vm_area *v = find_vma(mm, start);
  if (v)                                 // shares a page with the last one
    v->prot |= prot, start = v->end;
  if (start < end && insert_vma(mm, start, end, prot) < 0)
    return -ENOMEM;
  for (uint64_t done = 0; done < ph->filesz;) {
    uint64_t a = va + done, in_page = a % PAGE_SIZE, chunk = PAGE_SIZE - in_page;
    if (chunk > ph->filesz - done) chunk = ph->filesz - done;
    uint8_t *page = user_page(mm, a - in_page);
    if (!page || read_exact(ino, ph->offset + done, page + in_page, chunk) < 0)
      return -ENOEXEC;
    done += chunk;
  }
  if (v && (prot & PROT_WRITE)) {        // the shared page: writable now
    uint64_t *pte = pte_lookup(mm->pgd, v->end - PAGE_SIZE, false);
    if (pte && (*pte & PTE_P))
      *pte |= PTE_W;
  }
  return 0;
}

struct image {
  uint64_t entry, phdr, phnum, brk;
};

static int
load_elf(struct mm_struct *mm, struct inode *ino, struct image *img)
{
  struct elf64_ehdr eh;
  struct elf64_phdr ph[16];
  if (read_exact(ino, 0, &eh, sizeof eh) < 0 || check_header(&eh) < 0 ||
      read_exact(ino, eh.phoff, ph, eh.phnum * sizeof ph[0]) < 0)
    return -ENOEXEC;
  uint64_t bias = eh.type == ET_DYN ? ELF_LOAD_BIAS : 0;
  img->brk = 0;
  img->phdr = 0;
  for (int i = 0; i < eh.phnum; i++) {
    if (ph[i].type == PT_INTERP)
      return -ENOEXEC;                 // static executables only
    if (ph[i].type != PT_LOAD)
      continue;
    int r = load_segment(mm, ino, &ph[i], bias);
    if (r < 0) {
      if (ph[i].vaddr + bias < USER_BASE)
        printk("exec: %s is linked at %lx, below USER_BASE %lx: build it "
               "with musl-gcc -static-pie\n", ino->path, ph[i].vaddr, USER_BASE);
      return r;
    }
    if (eh.phoff >= ph[i].offset && eh.phoff < ph[i].offset + ph[i].filesz)
      img->phdr = ph[i].vaddr + bias + (eh.phoff - ph[i].offset);
    uint64_t end = ph[i].vaddr + bias + ph[i].memsz;
    if (end > img->brk)
      img->brk = end;
  }
  if (!img->brk || !img->phdr)
    return -ENOEXEC;
  img->entry = eh.entry + bias;
  img->phnum = eh.phnum;
  img->brk = (img->brk + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1);
  return 0;
}

// Write into the new stack (not yet current's): through its pages.
static int
put_stack(struct mm_struct *mm, uint64_t va, const void *src, uint64_t n)
{
  for (uint64_t done = 0; done < n;) {
    uint64_t a = va + done, in_page = a % PAGE_SIZE, chunk = PAGE_SIZE - in_page;
    if (chunk > n - done) chunk = n - done;
    uint8_t *page = user_page(mm, a - in_page);
    if (!page)
      return -ENOMEM;
    memcpy(page + in_page, (const uint8_t *)src + done, chunk);
    done += chunk;
  }
  return 0;
}

// The initial stack: argc, argv[], NULL, envp[] (empty), NULL, auxv, with
// the strings and 16 AT_RANDOM bytes above.  Returns the new rsp.
static uint64_t
setup_stack(struct mm_struct *mm, struct image *img, char *const argv[], int argc,
            const char *path)
{
  uint64_t sp = USER_STACK_TOP, uargv[MAX_ARGS + 1];
  if (insert_vma(mm, USER_STACK_TOP - USER_STACK_MAX, USER_STACK_TOP,
                 PROT_READ | PROT_WRITE) < 0)
    return 0;
  for (int i = argc - 1; i >= 0; i--) {
    size_t n = strlen(argv[i]) + 1;
    sp -= n;
    if (put_stack(mm, sp, argv[i], n) < 0)
      return 0;
    uargv[i] = sp;
  }
  uargv[argc] = 0;
  uint64_t execfn = uargv[0];
  uint8_t rnd[16];
  for (int i = 0; i < 16; i++)         // fixed: runs must repeat
    rnd[i] = 0x5a ^ i;
  sp = (sp - 16) & ~15UL;
  put_stack(mm, sp, rnd, 16);
  uint64_t random = sp;
  uint64_t aux[] = {AT_PHDR, img->phdr, AT_PHENT, sizeof(struct elf64_phdr),
                    AT_PHNUM, img->phnum, AT_PAGESZ, PAGE_SIZE, AT_BASE, 0,
                    AT_ENTRY, img->entry, AT_UID, 0, AT_EUID, 0, AT_GID, 0,
                    AT_EGID, 0, AT_HWCAP, 0, AT_CLKTCK, HZ, AT_SECURE, 0,
                    AT_RANDOM, random, AT_EXECFN, execfn, AT_NULL, 0};
  uint64_t words = 1 + (argc + 1) + 1 + ARRAY_SIZE(aux);
  sp = (sp - words * 8) & ~15UL;       // rsp 16-aligned at _start
  uint64_t at = sp, argc64 = argc, zero = 0;
  put_stack(mm, at, &argc64, 8);
  put_stack(mm, at += 8, uargv, (argc + 1) * 8);
  put_stack(mm, at += (argc + 1) * 8, &zero, 8);           // envp: empty
  if (put_stack(mm, at + 8, aux, sizeof aux) < 0)
    return 0;
  (void)path;
  return sp;
}

static void
set_comm(const char *path)
{
  const char *base = path;
  for (const char *s = path; *s; s++)
    if (*s == '/') base = s + 1;
  strlcpy(current->comm, base, sizeof current->comm);
}

// Replace current's address space with the program at path.  On failure
// the old one is untouched.  The trapframe at the top of current's block
// gets the new entry point and stack.
long
do_execve(const char *path, char *const argv[], int argc)
{
  struct inode *ino = rootfs_lookup(path);
  if (!ino)
    return -ENOENT;
  struct mm_struct *mm = mm_alloc(), *old = task_mm(current);
  struct image img;
  if (!mm)
    return -ENOMEM;
  int r = load_elf(mm, ino, &img);
  uint64_t sp = r < 0 ? 0 : setup_stack(mm, &img, argv, argc, path);
  if (!sp) {
    mmput(mm);
    return r < 0 ? r : -ENOMEM;
  }
  mm->start_brk = mm->brk = img.brk;
  struct mm_struct *lazy = PTR(current->active_mm);
  cli();                               // no tick between the mm and CR3
  current->mm = current->active_mm = P32(mm);
  switch_mm(mm);                       // init's kernel thread had no TSS
  set_kernel_stack(current->processor, current->block + THREAD_SIZE);
  wrmsr(MSR_FS_BASE, 0);               // stack yet: schedule sets it only
  current->fsbase = 0;                 // for tasks with user mode
  clear_fpu(current);                  // the new program starts clean
  sti();
  if (old)
    mmput(old);
  else if (lazy)
    mmdrop(lazy);                      // a kernel thread's borrowed mm
  set_comm(path);
  current->fsbase = 0;
  struct trapframe *tf = task_pt_regs(current);
  memset(tf, 0, sizeof *tf);
  tf->rip = img.entry;
  tf->rsp = sp;
  tf->cs = USER_CS;
  tf->ss = USER_DS;
  tf->rflags = 0x202;                  // IF
  return 0;
}

long
sys_execve(uint64_t upath, uint64_t uargv, uint64_t envp)
{
  char path[RFS_NAME_MAX], *argv[MAX_ARGS + 1];
  char *buf = alloc_pages(0);           // argument strings, copied in
  if (!buf)
    return -ENOMEM;
  long r = strncpy_from_user(path, upath, sizeof path);
  int argc = 0;
  uint64_t used = 0;
  while (r >= 0) {
    uint64_t p;
    if (argc == MAX_ARGS) { r = -E2BIG; break; }
    if (copy_from_user(&p, uargv + 8 * argc, 8) < 0) { r = -EFAULT; break; }
    if (!p) break;
    long n = strncpy_from_user(buf + used, p, ARG_BYTES - used);
    if (n < 0) { r = n == -ENAMETOOLONG ? -E2BIG : n; break; }
    argv[argc++] = buf + used;
    used += n + 1;
  }
  if (r >= 0 && argc == 0)
    argv[argc++] = path;
  if (r >= 0)
    r = do_execve(path, argv, argc);
  free_pages(buf, 0);
  return r;
}

// init: a kernel thread that execs the program and enters user mode on
// the trapframe its stack was laid out to leave free (task.c).
static char init_path[RFS_NAME_MAX];

// initargs=a,b,c on the command line: init's argv[1..] (the command line
// is key=value words, so the arguments are one word, split at commas).
static char init_args[INITARGS_MAX];
#define INIT_ARGS_MAX 16

static int
split_init_args(char **argv)
{
  int argc = 1;
  if (!cmdline_str("initargs", init_args, sizeof init_args) || !init_args[0])
    return argc;
  argv[argc++] = init_args;
  for (char *p = init_args; *p && argc < INIT_ARGS_MAX; p++)
    if (*p == ',') {
      *p = 0;
      argv[argc++] = p + 1;
    }
  return argc;
}

static void
init_thread(void *arg)
{
  char *argv[INIT_ARGS_MAX] = {init_path};
  int argc = split_init_args(argv);
  current->files = files_alloc_console();
  current->tgid = current->pid;
  current->group_leader = current;
  current->p_pptr = init_task;
  init_waitqueue_head(&current->wait_chldexit);
  long r = do_execve(init_path, argv, argc);
  if (r < 0)
    panic("init: cannot run %s (error %ld)", init_path, -r);
  // Booted, and the program loaded: gem5 checkpoints here, as at the
  // built-in workload's start (roi.c), so its detailed CPUs start from
  // the program's first instruction.  QEMU and our plugin ignore it.
  m5_op(M5OP_CHECKPOINT);
  printk("init: pid %d runs %s\n", current->pid, init_path);
  enter_user(task_pt_regs(current));
}

void
start_init(const char *path)
{
  if (!rootfs_present())
    panic("init=%s: no root file system image (QEMU -initrd, gem5 "
          "rootfs_base=)", path);
  strlcpy(init_path, path, sizeof init_path);
  kernel_thread_for_user(init_thread, NULL, "init");
}
