// gem5-loader: do what gem5's X86 loader does, then enter the kernel's
// ELF64 entry point in long mode (see README.md).  32-bit freestanding C.
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define ZERO_PAGE 0x90200
#define CMDLINE   0x90000
#define PML4      0x70000
#define GDT       0x76000

void enter_long_mode(u32 entry_lo, u32 entry_hi);   // loader_entry.S

static void
fill(void *d, int c, u32 n)
{
  u8 *p = d;
  while (n--) *p++ = (u8)c;
}

static void
copy(void *d, const void *s, u32 n)
{
  u8 *p = d;
  const u8 *q = s;
  while (n--) *p++ = *q++;
}

static void
fail(const char *msg)
{
  for (const char *m = "gem5-loader: "; *m; m++)
    __asm__ volatile("outb %0, %1" ::"a"(*m), "Nd"((u16)0x3f8));
  for (; *msg; msg++)
    __asm__ volatile("outb %0, %1" ::"a"(*msg), "Nd"((u16)0x3f8));
  for (;;) __asm__ volatile("cli; hlt");
}

// Copy every PT_LOAD segment of the ELF64 at `elf` to its physical address.
static u64
load_elf64(const u8 *elf)
{
  if (elf[0] != 0x7f || elf[1] != 'E' || elf[4] != 2)
    fail("module is not an ELF64 image\n");
  u64 phoff = *(const u64 *)(elf + 0x20);
  u16 phentsize = *(const u16 *)(elf + 0x36), phnum = *(const u16 *)(elf + 0x38);
  for (u16 i = 0; i < phnum; i++) {
    const u8 *ph = elf + (u32)phoff + i * phentsize;
    if (*(const u32 *)ph != 1)            // PT_LOAD
      continue;
    u32 off = (u32)*(const u64 *)(ph + 8), paddr = (u32)*(const u64 *)(ph + 24);
    u32 filesz = (u32)*(const u64 *)(ph + 32), memsz = (u32)*(const u64 *)(ph + 40);
    copy((void *)paddr, elf + off, filesz);
    fill((u8 *)paddr + filesz, 0, memsz - filesz);
  }
  return *(const u64 *)(elf + 0x18);
}

// The Linux zero page, as gem5's X86FsLinux writes it: command line and
// e820 map only; everything else stays zero.
static void
write_zero_page(const u32 *mbi)
{
  fill((void *)CMDLINE, 0, 0x1000);
  if (mbi[0] & (1 << 2)) {                 // skip "<loader path> "
    const char *s = (const char *)mbi[4];
    while (*s && *s != ' ') s++;
    while (*s == ' ') s++;
    u32 n = 0;
    while (s[n] && n < 511) n++;
    copy((void *)CMDLINE, s, n);
  }
  *(u32 *)(ZERO_PAGE + 0x228) = CMDLINE;
  if (!(mbi[0] & (1 << 6)))
    fail("no multiboot memory map\n");
  u8 count = 0;
  for (u32 p = mbi[12], end = mbi[12] + mbi[11]; p < end && count < 128;
       p += *(u32 *)p + 4) {
    u8 *e = (u8 *)(ZERO_PAGE + 0x2d0 + 20 * count++);
    copy(e, (void *)(p + 4), 16);          // base, length
    *(u32 *)(e + 16) = *(u32 *)(p + 20) == 1 ? 1 : 2;
  }
  *(u8 *)(ZERO_PAGE + 0x1e8) = count;
}

// gem5's boot page tables: identity map of 0-4 GiB, 2 MiB pages, 0x87.
static void
write_page_tables(void)
{
  u64 *pml4 = (u64 *)PML4, *pdpt = (u64 *)(PML4 + 0x1000), *pd = (u64 *)(PML4 + 0x2000);
  for (int i = 0; i < 512; i++)
    pml4[i] = 0x6;
  pml4[0] = (PML4 + 0x1000) | 0x7;
  for (int i = 0; i < 512; i++)
    pdpt[i] = i < 4 ? (u64)(PML4 + 0x2000 + 0x1000 * i) | 0x7 : 0x6;
  for (u32 i = 0; i < 2048; i++)
    pd[i] = ((u64)i << 21) | 0x87;
  u64 *gdt = (u64 *)GDT;
  gdt[0] = 0;
  gdt[1] = 0x00209A0000000000ULL;          // 0x08: 64-bit code, DPL 0
  gdt[2] = 0x0000920000000000ULL;          // 0x10: data
  gdt[3] = 0x00008B0000000000ULL;          // 0x18: "busy TSS" (unused)
}

void
loader_main(u32 magic, const u32 *mbi)
{
  if (magic != 0x2BADB002)
    fail("not started by a multiboot loader\n");
  if (!(mbi[0] & (1 << 3)) || mbi[5] < 1)
    fail("no kernel module: pass the ELF64 kernel with -initrd\n");
  const u32 *mod = (const u32 *)mbi[6];
  u64 entry = load_elf64((const u8 *)mod[0]);
  write_zero_page(mbi);
  write_page_tables();
  enter_long_mode((u32)entry, (u32)(entry >> 32));
}
