// Address spaces: mm_struct life cycle (2.4's mm_users / mm_count), the
// areas (VMAs) of brk, mmap and the stack, demand-zero page faults, and
// copies between kernel and user memory.
//
// Pages are allocated on first touch (a fault) and copied at fork (no
// copy-on-write).  VMAs are a small unsorted array per mm.
#include "errno.h"
#include "kernel.h"
#include "param.h"
#include "mm.h"
#include "sched.h"

#define MAP_SHARED    0x01
#define MAP_PRIVATE   0x02
#define MAP_FIXED     0x10
#define MAP_ANONYMOUS 0x20

static uint64_t page_up(uint64_t a) { return (a + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1); }

struct mm_struct *
mm_alloc(void)
{
  _Static_assert(sizeof(struct mm_struct) + NR_VMAS * sizeof(struct vm_area)
                 <= PAGE_SIZE, "mm_struct");
  struct mm_struct *mm = alloc_pages(0);
  if (!mm)
    return NULL;
  memset(mm, 0, PAGE_SIZE);
  mm->vma = (struct vm_area *)(mm + 1);
  mm->pgd = pgd_alloc();
  if (!mm->pgd) {
    free_pages(mm, 0);
    return NULL;
  }
  mm->mm_users = mm->mm_count = 1;
  mm->page_table_lock = (spinlock_t)SPIN_LOCK_UNLOCKED;
  mm->mmap_base = MMAP_TOP;
  return mm;
}

void mmget(struct mm_struct *mm) { __atomic_add_fetch(&mm->mm_users, 1, __ATOMIC_SEQ_CST); }
void mmgrab(struct mm_struct *mm) { __atomic_add_fetch(&mm->mm_count, 1, __ATOMIC_SEQ_CST); }

// Last reference, including lazy-TLB borrowers: nobody can have this pgd
// in CR3 any more.
void
mmdrop(struct mm_struct *mm)
{
  if (!mm_has_user(mm))
    return;                       // the built-in workload's static mms
  if (__atomic_sub_fetch(&mm->mm_count, 1, __ATOMIC_SEQ_CST))
    return;
  uint64_t cr3;                   // a task without page tables of its own
  __asm__ volatile("mov %%cr3, %0" : "=r"(cr3));   // (built-in workload)
  if (cr3 == (uint64_t)mm->pgd)   // does not switch CR3: never leave it on
    load_kernel_cr3();            // freed tables
  free_user_tables(mm->pgd);
  free_pages(mm->pgd, 0);
  free_pages(mm, 0);
}

// Unmap an area and free its slot (and its reference to a shm region).
static void
drop_vma(struct mm_struct *mm, struct vm_area *v)
{
  unmap_range(mm->pgd, v->start, v->end);
  if (v->shm)
    shm_put(v->shm);
  v->shm = NULL;
  v->end = 0;
}

// Last thread gone (exit or exec): free the user pages now; the tables
// and pgd go with the last mm_count reference.
void
mmput(struct mm_struct *mm)
{
  if (__atomic_sub_fetch(&mm->mm_users, 1, __ATOMIC_SEQ_CST))
    return;
  for (int i = 0; i < NR_VMAS; i++)
    if (mm->vma[i].end)
      drop_vma(mm, &mm->vma[i]);
  mmdrop(mm);
}

// fork without CLONE_VM: same areas, every present page copied.
struct mm_struct *
dup_mm(struct mm_struct *old)
{
  struct mm_struct *mm = mm_alloc();
  if (!mm)
    return NULL;
  uint64_t f = spin_lock_irqsave(&old->page_table_lock);
  memcpy(mm->vma, old->vma, NR_VMAS * sizeof mm->vma[0]);
  for (int i = 0; i < NR_VMAS; i++)
    if (mm->vma[i].end && mm->vma[i].shm)
      shm_get(mm->vma[i].shm);     // the child's areas map the same region
  mm->start_brk = old->start_brk;
  mm->brk = old->brk;
  mm->mmap_base = old->mmap_base;
  int r = copy_user_pages(mm->pgd, old->pgd);
  spin_unlock_irqrestore(&old->page_table_lock, f);
  if (r < 0) {
    mmput(mm);
    return NULL;
  }
  return mm;
}

struct vm_area *
find_vma(struct mm_struct *mm, uint64_t addr)
{
  for (int i = 0; i < NR_VMAS; i++)
    if (mm->vma[i].end && addr >= mm->vma[i].start && addr < mm->vma[i].end)
      return &mm->vma[i];
  return NULL;
}

int
insert_vma(struct mm_struct *mm, uint64_t start, uint64_t end, uint32_t prot)
{
  for (int i = 0; i < NR_VMAS; i++)
    if (!mm->vma[i].end) {
      mm->vma[i] = (struct vm_area){.start = start, .end = end, .prot = prot};
      return 0;
    }
  return -ENOMEM;
}

static bool
range_free(struct mm_struct *mm, uint64_t start, uint64_t end)
{
  for (int i = 0; i < NR_VMAS; i++)
    if (mm->vma[i].end && start < mm->vma[i].end && mm->vma[i].start < end)
      return false;
  return true;
}

// Split the area containing addr so that an area boundary falls at addr.
static int
split_vma(struct mm_struct *mm, uint64_t addr)
{
  struct vm_area *v = find_vma(mm, addr);
  if (!v || v->start == addr)
    return 0;
  uint64_t end = v->end;
  int r = insert_vma(mm, addr, end, v->prot);
  if (r < 0)
    return r;
  struct vm_area *tail = NULL;  // the new slot (v still covers addr too)
  for (int i = 0; i < NR_VMAS; i++)
    if (mm->vma[i].end == end && mm->vma[i].start == addr)
      tail = &mm->vma[i];
  v->end = addr;
  if (v->shm) {                 // both halves map the region
    tail->shm = v->shm;
    tail->pgoff = v->pgoff + (addr - v->start) / PAGE_SIZE;
    shm_get(v->shm);
  }
  return 0;
}

// Demand paging: a zeroed page for a touch inside an area that allows it.
int
handle_mm_fault(struct mm_struct *mm, uint64_t addr, bool write)
{
  int r = -EFAULT;
  uint64_t va = addr & ~(uint64_t)(PAGE_SIZE - 1);
  uint64_t f = spin_lock_irqsave(&mm->page_table_lock);
  struct vm_area *v = find_vma(mm, addr);
  if (!v || !(v->prot & (PROT_READ | PROT_WRITE | PROT_EXEC)) ||
      (write && !(v->prot & PROT_WRITE)))
    goto out;
  uint64_t *pte = pte_lookup(mm->pgd, va, false);
  if (pte && (*pte & PTE_P)) {     // another thread was first, or a TLB race
    r = (!write || (*pte & PTE_W)) ? 0 : -EFAULT;
    goto out;
  }
  if (v->shm) {                    // the region's page, shared
    void *page = shm_page(v->shm, v->pgoff + (va - v->start) / PAGE_SIZE);
    r = page ? map_page(mm->pgd, va, page,
                        PTE_SHARED | ((v->prot & PROT_WRITE) ? PTE_W : 0)) : -EFAULT;
    goto out;
  }
  void *page = alloc_pages(0);
  if (!page) {
    r = -ENOMEM;
    goto out;
  }
  memset(page, 0, PAGE_SIZE);
  r = map_page(mm->pgd, va, page, (v->prot & PROT_WRITE) ? PTE_W : 0);
  if (r < 0)
    free_pages(page, 0);
out:
  spin_unlock_irqrestore(&mm->page_table_lock, f);
  return r;
}

// The kernel address of user page va, faulting it in (for exec's loader).
void *
user_page(struct mm_struct *mm, uint64_t va)
{
  uint64_t *pte = pte_lookup(mm->pgd, va, false);
  if (!pte || !(*pte & PTE_P)) {
    if (handle_mm_fault(mm, va, false) < 0)
      return NULL;
    pte = pte_lookup(mm->pgd, va, false);
  }
  return PTR(*pte & PTE_ADDR);
}

// Is [addr, addr+n) inside the user areas (with write permission)?  Then
// the kernel may touch it directly: CR3 is current's, and a missing page
// faults in through trap.c.
static bool
access_ok(uint64_t addr, size_t n, bool write)
{
  struct mm_struct *mm = task_mm(current);
  if (!mm_has_user(mm) || addr < USER_BASE || addr + n > USER_END || addr + n < addr)
    return false;
  uint64_t end = addr + n;
  while (addr < end) {
    struct vm_area *v = find_vma(mm, addr);
    if (!v || (write && !(v->prot & PROT_WRITE)) || !(v->prot & (PROT_READ | PROT_WRITE)))
      return false;
    addr = v->end;
  }
  return true;
}

int
copy_from_user(void *dst, uint64_t src, size_t n)
{
  if (!access_ok(src, n, false))
    return -EFAULT;
  memcpy(dst, PTR(src), n);
  return 0;
}

int
copy_to_user(uint64_t dst, const void *src, size_t n)
{
  if (!access_ok(dst, n, true))
    return -EFAULT;
  memcpy(PTR(dst), src, n);
  return 0;
}

// A NUL-terminated string of at most n-1 bytes; its length, or -errno.
long
strncpy_from_user(char *dst, uint64_t src, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    if (!access_ok(src + i, 1, false))
      return -EFAULT;
    dst[i] = *(char *)PTR(src + i);
    if (!dst[i])
      return i;
  }
  return -ENAMETOOLONG;
}

long
do_brk(uint64_t newbrk)
{
  struct mm_struct *mm = task_mm(current);
  uint64_t f = spin_lock_irqsave(&mm->page_table_lock);
  uint64_t old = page_up(mm->brk), want = page_up(newbrk);
  if (newbrk < mm->start_brk || want > mm->mmap_base - (1UL << 30))
    goto out;
  if (want > old && !range_free(mm, old, want))
    goto out;
  struct vm_area *heap = mm->brk > mm->start_brk ? find_vma(mm, mm->start_brk) : NULL;
  if (want < old)
    unmap_range(mm->pgd, want, old);
  if (heap && want > heap->start)
    heap->end = want;
  else if (heap)
    heap->end = 0;                       // shrunk to nothing
  else if (want > mm->start_brk && insert_vma(mm, mm->start_brk, want, PROT_READ | PROT_WRITE) < 0)
    goto out;
  mm->brk = newbrk;
out:
  newbrk = mm->brk;
  spin_unlock_irqrestore(&mm->page_table_lock, f);
  if (newbrk < old)
    flush_tlb();
  return newbrk;
}

// Anonymous mappings, private or shared (shm.c); no file-backed ones.
// Without MAP_FIXED the area goes below the lowest earlier one: a bump
// allocator, addresses are not reused.
long
do_mmap(uint64_t addr, uint64_t len, int prot, int flags, int fd, uint64_t off)
{
  struct mm_struct *mm = task_mm(current);
  int share = flags & (MAP_SHARED | MAP_PRIVATE);
  if (!(flags & MAP_ANONYMOUS) || (share != MAP_PRIVATE && share != MAP_SHARED) || !len)
    return -EINVAL;
  len = page_up(len);
  struct shm_region *shm = NULL;
  if (share == MAP_SHARED && !(shm = shm_create(len)))
    return -ENOMEM;
  long r;
  uint64_t f = spin_lock_irqsave(&mm->page_table_lock);
  if (flags & MAP_FIXED) {
    if ((addr & (PAGE_SIZE - 1)) || addr < USER_BASE || addr + len > USER_END) {
      r = -EINVAL;
      goto out;
    }
    spin_unlock_irqrestore(&mm->page_table_lock, f);
    do_munmap(addr, len);
    f = spin_lock_irqsave(&mm->page_table_lock);
  } else {
    addr = mm->mmap_base - len;
    while (!range_free(mm, addr, addr + len))
      addr -= PAGE_SIZE;
    mm->mmap_base = addr;
  }
  r = insert_vma(mm, addr, addr + len, prot & 7);
  if (r == 0) {
    find_vma(mm, addr)->shm = shm;
    shm = NULL;                    // the area holds the reference now
    r = addr;
  }
out:
  spin_unlock_irqrestore(&mm->page_table_lock, f);
  if (shm)
    shm_put(shm);
  return r;
}

long
do_munmap(uint64_t addr, uint64_t len)
{
  struct mm_struct *mm = task_mm(current);
  if ((addr & (PAGE_SIZE - 1)) || !len)
    return -EINVAL;
  uint64_t end = addr + page_up(len);
  uint64_t f = spin_lock_irqsave(&mm->page_table_lock);
  int r = split_vma(mm, addr);
  if (!r)
    r = split_vma(mm, end);
  for (int i = 0; !r && i < NR_VMAS; i++) {
    struct vm_area *v = &mm->vma[i];
    if (v->end && v->start >= addr && v->end <= end)
      drop_vma(mm, v);
  }
  spin_unlock_irqrestore(&mm->page_table_lock, f);
  flush_tlb();     // other CPUs running this mm: see README (no shootdown)
  return r;
}

// Protections are per area; present pages get the new write bit.
long
do_mprotect(uint64_t addr, uint64_t len, int prot)
{
  struct mm_struct *mm = task_mm(current);
  if ((addr & (PAGE_SIZE - 1)))
    return -EINVAL;
  uint64_t end = addr + page_up(len);
  uint64_t f = spin_lock_irqsave(&mm->page_table_lock);
  int r = split_vma(mm, addr);
  if (!r)
    r = split_vma(mm, end);
  for (int i = 0; !r && i < NR_VMAS; i++) {
    struct vm_area *v = &mm->vma[i];
    if (!v->end || v->start < addr || v->end > end)
      continue;
    v->prot = prot & 7;
    for (uint64_t va = v->start; va < v->end; va += PAGE_SIZE) {
      uint64_t *pte = pte_lookup(mm->pgd, va, false);
      if (pte && (*pte & PTE_P))
        *pte = (*pte & ~PTE_W) | ((prot & PROT_WRITE) ? PTE_W : 0);
    }
  }
  spin_unlock_irqrestore(&mm->page_table_lock, f);
  flush_tlb();
  return r;
}
