// The firmware memory map, from whichever loader started us.
//
//  * multiboot (QEMU): EAX magic 0x2BADB002, info block with flags bit 6
//    (mmap_length at +44, mmap_addr at +48) and bit 2 (cmdline at +16).
//  * gem5's X86 loader: RSI = 0x90200, a Linux zero page with e820_entries
//    (u8) at +0x1e8, the table at +0x2d0 (20-byte entries) and the command
//    line pointer (u32) at +0x228.  gem5 has no initrd: it loads the root
//    file system's image as an extra file at a physical address, and the
//    command line says where (rootfs_base=, rootfs_size=).
#include "kernel.h"

#define MB_BOOT_MAGIC 0x2BADB002
#define ZERO_PAGE     0x90200

const char *boot_protocol = "unknown";
static uint64_t module_base, module_size;   // the root-file-system image

static bool
is_multiboot(uint64_t magic)
{
  return magic == MB_BOOT_MAGIC;
}

// Copies the command line and names the protocol; call before anything
// allocates memory.
void
boot_info_init(uint64_t magic, uint64_t info)
{
  if (is_multiboot(magic)) {
    boot_protocol = "multiboot";
    uint32_t flags = *(uint32_t *)info;
    if (flags & (1 << 2)) {
      const char *s = PTR(*(uint32_t *)(info + 16));
      // QEMU puts "<kernel path> <append>": skip the path.
      while (*s && *s != ' ') s++;
      while (*s == ' ') s++;
      cmdline_set(s);
    }
    if ((flags & (1 << 3)) && *(uint32_t *)(info + 20)) {   // mods_count
      uint32_t *mod = PTR(*(uint32_t *)(info + 24));        // the first
      module_base = mod[0];
      module_size = mod[1] - mod[0];
    }
  } else if (info == ZERO_PAGE) {
    boot_protocol = "gem5-zero-page";
    uint32_t p = *(uint32_t *)(info + 0x228);
    cmdline_set(p ? PTR(p) : "");
    module_base = cmdline_u64("rootfs_base", 0);
    module_size = module_base ? cmdline_u64("rootfs_size", 0) : 0;
  } else {
    boot_protocol = "none";
    cmdline_set("");
  }
}

// The image QEMU loaded with -initrd (a multiboot module), if any.
bool
boot_module(uint64_t *base, uint64_t *size)
{
  *base = module_base;
  *size = module_size;
  return module_size != 0;
}

static int
add_one_region(struct mem_region *out, int n, int max, uint64_t base, uint64_t len)
{
  if (n < max && len) {
    out[n].base = base;
    out[n].len = len;
    n++;
  }
  return n;
}

// A RAM region less the module: the page allocator must not hand out the
// image's pages.
static int
add_region(struct mem_region *out, int n, int max, uint64_t base, uint64_t len)
{
  uint64_t end = base + len, mend = module_base + module_size;
  if (!module_size || mend <= base || module_base >= end)
    return add_one_region(out, n, max, base, len);
  uint64_t mstart = module_base & ~0xfffUL;
  mend = (mend + 0xfff) & ~0xfffUL;
  if (mstart > base)
    n = add_one_region(out, n, max, base, mstart - base);
  if (end > mend)
    n = add_one_region(out, n, max, mend, end - mend);
  return n;
}

// Fills out[] with usable RAM regions; returns their number.
int
firmware_memory_map(uint64_t magic, uint64_t info, struct mem_region *out, int max)
{
  int n = 0;
  if (is_multiboot(magic)) {
    uint32_t flags = *(uint32_t *)info;
    if (!(flags & (1 << 6)))
      panic("multiboot loader gave no memory map");
    uint64_t p = *(uint32_t *)(info + 48);
    uint64_t end = p + *(uint32_t *)(info + 44);
    while (p < end) {
      uint32_t size = *(uint32_t *)p;
      uint64_t base = *(uint64_t *)(p + 4);
      uint64_t len = *(uint64_t *)(p + 12);
      uint32_t type = *(uint32_t *)(p + 20);
      if (type == 1)
        n = add_region(out, n, max, base, len);
      p += size + 4;
    }
  } else if (info == ZERO_PAGE) {
    int count = *(uint8_t *)(info + 0x1e8);
    for (int i = 0; i < count; i++) {
      uint64_t e = info + 0x2d0 + 20 * i;
      if (*(uint32_t *)(e + 16) == 1)
        n = add_region(out, n, max, *(uint64_t *)e, *(uint64_t *)(e + 8));
    }
  } else {
    panic("no memory map: unknown boot protocol");
  }
  return n;
}
