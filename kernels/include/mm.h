// Address spaces: struct mm_struct, its areas (VMAs), page tables, and
// copying to and from user memory.
//
// Every address space maps the kernel: PML4 slot 0 (0-512 GiB, the boot
// identity map of 0-4 GiB with 2 MiB pages) is shared, supervisor-only.
// User space is PML4 slots 1-255, so user programs are loaded at
// USER_BASE (static-pie executables: any base works).  The kernel keeps
// 32-bit task pointers (sched.h), which is why it stays identity-mapped
// low and user space moves up, rather than the other way round.
#pragma once
#include "spinlock.h"
#include "types.h"

#define USER_BASE      0x0000008000000000UL   // 512 GiB: PML4 slot 1
#define USER_END       0x0000800000000000UL   // canonical user limit
#define USER_STACK_TOP 0x00007ffffff00000UL
#define USER_STACK_MAX (8UL << 20)            // grows on demand
#define MMAP_TOP       (USER_STACK_TOP - USER_STACK_MAX - (1UL << 30))
#define ELF_LOAD_BIAS  USER_BASE              // where ET_DYN images go

#define PROT_READ  1
#define PROT_WRITE 2
#define PROT_EXEC  4

#define PTE_P  0x001UL
#define PTE_W  0x002UL
#define PTE_U  0x004UL
#define PTE_PS 0x080UL
#define PTE_SHARED 0x200UL     // software bit: the page is a shm region's (shm.c)
#define PTE_ADDR 0x000ffffffffff000UL

#define NR_VMAS 96      // fits in the mm's page after the mm_struct

struct shm_region;

struct vm_area {
  uint64_t start, end;   // [start, end), page aligned; end == 0: free slot
  uint32_t prot;
  uint32_t pgoff;        // shm: the region's page at start
  struct shm_region *shm;  // MAP_SHARED | MAP_ANONYMOUS (holds a reference)
};

struct mm_struct {
  int id;                     // the built-in workload's "process" number
  uint64_t *pgd;              // PML4; NULL for the built-in workload's mms
  int mm_users;               // threads using it (atomic)
  int mm_count;               // references incl. lazy-TLB borrowers (atomic)
  spinlock_t page_table_lock; // VMAs and page tables
  uint64_t start_brk, brk;
  uint64_t mmap_base;         // next mmap search starts below this
  struct vm_area *vma;        // NR_VMAS slots, in the same page as the mm
};

static inline bool mm_has_user(struct mm_struct *mm) { return mm && mm->pgd; }

// vm.c: page tables
uint64_t *pgd_alloc(void);
uint64_t *pte_lookup(uint64_t *pgd, uint64_t va, bool create);
int map_page(uint64_t *pgd, uint64_t va, void *page, uint64_t flags);
void unmap_range(uint64_t *pgd, uint64_t start, uint64_t end);
void free_user_tables(uint64_t *pgd);
int copy_user_pages(uint64_t *dst, uint64_t *src);
void switch_mm(struct mm_struct *next);
void load_kernel_cr3(void);
void flush_tlb(void);

// mmap.c: areas, faults, user copies
struct mm_struct *mm_alloc(void);
void mmget(struct mm_struct *mm);
void mmgrab(struct mm_struct *mm);
void mmput(struct mm_struct *mm);
void mmdrop(struct mm_struct *mm);
struct mm_struct *dup_mm(struct mm_struct *old);
struct vm_area *find_vma(struct mm_struct *mm, uint64_t addr);
int insert_vma(struct mm_struct *mm, uint64_t start, uint64_t end, uint32_t prot);
int handle_mm_fault(struct mm_struct *mm, uint64_t addr, bool write);
void *user_page(struct mm_struct *mm, uint64_t va);
long do_brk(uint64_t newbrk);
long do_mmap(uint64_t addr, uint64_t len, int prot, int flags, int fd, uint64_t off);
long do_munmap(uint64_t addr, uint64_t len);
long do_mprotect(uint64_t addr, uint64_t len, int prot);
// shm.c: shared anonymous memory
struct shm_region *shm_create(uint64_t len);
void shm_get(struct shm_region *r);
void shm_put(struct shm_region *r);
void *shm_page(struct shm_region *r, uint64_t i);
int copy_from_user(void *dst, uint64_t src, size_t n);
int copy_to_user(uint64_t dst, const void *src, size_t n);
long strncpy_from_user(char *dst, uint64_t src, size_t n);
