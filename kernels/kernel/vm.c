// Page tables: 4-level x86_64 tables for each user address space.
//
// PML4 slot 0 is the boot identity map (boot_pml4's, shared and
// supervisor-only), so the kernel is mapped in every address space.  User
// pages are 4 KiB; every table on their path has the user bit, the boot
// map's tables do not.  Tables and pages come from the buddy allocator and
// are reached through the identity map (physical == kernel virtual).
#include "kernel.h"
#include "param.h"
#include "mm.h"
#include "sched.h"

extern uint64_t boot_pml4[];

#define PML4_USER_FIRST 1        // slot 0 is the kernel's
#define PML4_USER_LAST  255      // USER_END >> 39, exclusive

static uint64_t *
zeroed_page(void)
{
  uint64_t *p = alloc_pages(0);
  if (p)
    memset(p, 0, PAGE_SIZE);
  return p;
}

uint64_t *
pgd_alloc(void)
{
  uint64_t *pgd = zeroed_page();
  if (pgd)
    pgd[0] = boot_pml4[0];        // the kernel, supervisor-only
  return pgd;
}

static int
level_index(uint64_t va, int level)       // level 3 = PML4 .. 0 = PT
{
  return (va >> (12 + 9 * level)) & 511;
}

// The PTE for va, creating missing tables when asked; NULL if absent.
uint64_t *
pte_lookup(uint64_t *pgd, uint64_t va, bool create)
{
  uint64_t *table = pgd;
  for (int level = 3; level > 0; level--) {
    uint64_t *e = &table[level_index(va, level)];
    if (!(*e & PTE_P)) {
      if (!create)
        return NULL;
      uint64_t *t = zeroed_page();
      if (!t)
        return NULL;
      *e = (uint64_t)t | PTE_P | PTE_W | PTE_U;
    }
    table = PTR(*e & PTE_ADDR);
  }
  return &table[level_index(va, 0)];
}

int
map_page(uint64_t *pgd, uint64_t va, void *page, uint64_t flags)
{
  uint64_t *pte = pte_lookup(pgd, va, true);
  if (!pte)
    return -1;
  *pte = (uint64_t)page | flags | PTE_P | PTE_U;
  return 0;
}

// Free the pages mapped in [start, end) (a shared page stays its
// region's); the tables stay.
void
unmap_range(uint64_t *pgd, uint64_t start, uint64_t end)
{
  for (uint64_t va = start; va < end; va += PAGE_SIZE) {
    uint64_t *pte = pte_lookup(pgd, va, false);
    if (pte && (*pte & PTE_P)) {
      if (!(*pte & PTE_SHARED))
        free_pages(PTR(*pte & PTE_ADDR), 0);
      *pte = 0;
    }
  }
}

// Free every user page and table under pgd (not pgd itself).
static void
free_level(uint64_t *table, int level)
{
  for (int i = 0; i < 512; i++) {
    if (!(table[i] & PTE_P))
      continue;
    if (level > 0)
      free_level(PTR(table[i] & PTE_ADDR), level - 1);
    if (level > 0 || !(table[i] & PTE_SHARED))
      free_pages(PTR(table[i] & PTE_ADDR), 0);
    table[i] = 0;
  }
}

void
free_user_tables(uint64_t *pgd)
{
  for (int i = PML4_USER_FIRST; i < PML4_USER_LAST + 1; i++) {
    if (!(pgd[i] & PTE_P))
      continue;
    free_level(PTR(pgd[i] & PTE_ADDR), 2);
    free_pages(PTR(pgd[i] & PTE_ADDR), 0);
    pgd[i] = 0;
  }
}

// fork: copy every present user page (no copy-on-write); a shared page is
// mapped again, not copied.
static int
copy_level(uint64_t *dst_pgd, uint64_t *table, int level, uint64_t va)
{
  for (int i = 0; i < 512; i++) {
    if (!(table[i] & PTE_P))
      continue;
    uint64_t v = va | ((uint64_t)i << (12 + 9 * level));
    if (level > 0) {
      if (copy_level(dst_pgd, PTR(table[i] & PTE_ADDR), level - 1, v) < 0)
        return -1;
      continue;
    }
    if (table[i] & PTE_SHARED) {
      if (map_page(dst_pgd, v, PTR(table[i] & PTE_ADDR), table[i] & (PTE_W | PTE_SHARED)) < 0)
        return -1;
      continue;
    }
    void *page = alloc_pages(0);
    if (!page)
      return -1;
    memcpy(page, PTR(table[i] & PTE_ADDR), PAGE_SIZE);
    if (map_page(dst_pgd, v, page, table[i] & PTE_W) < 0) {
      free_pages(page, 0);
      return -1;
    }
  }
  return 0;
}

int
copy_user_pages(uint64_t *dst, uint64_t *src)
{
  for (int i = PML4_USER_FIRST; i < PML4_USER_LAST + 1; i++)
    if ((src[i] & PTE_P) &&
        copy_level(dst, PTR(src[i] & PTE_ADDR), 2, (uint64_t)i << 39) < 0)
      return -1;
  return 0;
}

// 2.4's switch_mm: load the next address space.  The built-in workload's
// mms have no page tables and share the boot map, so they switch nothing.
void
switch_mm(struct mm_struct *next)
{
  if (mm_has_user(next))
    __asm__ volatile("mov %0, %%cr3" ::"r"(next->pgd) : "memory");
}

void
load_kernel_cr3(void)
{
  __asm__ volatile("mov %0, %%cr3" ::"r"(boot_pml4) : "memory");
}

void
flush_tlb(void)
{
  uint64_t cr3;
  __asm__ volatile("mov %%cr3, %0; mov %0, %%cr3" : "=r"(cr3)::"memory");
}
