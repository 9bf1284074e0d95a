// CPU discovery: which local APIC IDs exist.
//
// QEMU/SeaBIOS: the ACPI MADT lists every CPU (its MP table lists only the
// boot CPU unless -smp N,sockets=N).  gem5's X86Board: an Intel MP table
// and no MADT.  So: MADT first, MP table as the fallback.
#include "kernel.h"
#include "smp.h"

struct cpu_info cpus[NR_CPUS];
int ncpus;
const char *cpu_source = "none";

static bool
checksum_ok(const uint8_t *p, size_t n)
{
  uint8_t s = 0;
  for (size_t i = 0; i < n; i++) s += p[i];
  return s == 0;
}

static void *
scan(uint64_t start, uint64_t end, const char *sig, size_t siglen, size_t sumlen)
{
  for (uint64_t p = start; p + siglen <= end; p += 16)
    if (!memcmp(PTR(p), sig, siglen) && checksum_ok(PTR(p), sumlen))
      return PTR(p);
  return NULL;
}

static void
add_cpu(uint8_t apic_id)
{
  if (ncpus < NR_CPUS)
    cpus[ncpus++].apic_id = apic_id;
  else
    printk("cpus: ignoring APIC %u beyond NR_CPUS=%d\n", apic_id, NR_CPUS);
}

static void *
acpi_find_table(const char *sig)
{
  uint8_t *rsdp = scan(0xE0000, 0x100000, "RSD PTR ", 8, 20);
  if (!rsdp)
    return NULL;
  uint32_t rsdt = *(uint32_t *)(rsdp + 16);
  uint32_t len = *(uint32_t *)(uint64_t)(rsdt + 4);
  for (uint32_t off = 36; off + 4 <= len; off += 4) {
    uint32_t t = *(uint32_t *)(uint64_t)(rsdt + off);
    if (!memcmp(PTR(t), sig, 4))
      return PTR(t);
  }
  return NULL;
}

static bool
madt_parse(void)
{
  uint8_t *madt = acpi_find_table("APIC");
  if (!madt)
    return false;
  uint32_t len = *(uint32_t *)(madt + 4);
  for (uint32_t off = 44; off + 2 <= len; off += madt[off + 1]) {
    uint8_t *e = madt + off;
    if (e[1] == 0) break;                       // malformed entry
    if (e[0] == 0 && (*(uint32_t *)(e + 4) & 1)) // processor local APIC, enabled
      add_cpu(e[3]);
  }
  return ncpus > 0;
}

static bool
mptable_parse(void)
{
  uint8_t *fp = scan(0xF0000, 0x100000, "_MP_", 4, 16);
  if (!fp)
    fp = scan(0x9FC00, 0xA0000, "_MP_", 4, 16);
  if (!fp || !*(uint32_t *)(fp + 4))
    return false;
  uint8_t *ct = PTR(*(uint32_t *)(fp + 4));
  if (memcmp(ct, "PCMP", 4))
    return false;
  uint16_t count = *(uint16_t *)(ct + 34);
  uint8_t *e = ct + 44;
  for (int i = 0; i < count; i++) {
    if (e[0] == 0) {                            // processor entry, 20 bytes
      if (e[3] & 1)
        add_cpu(e[1]);
      e += 20;
    } else {
      e += 8;
    }
  }
  return ncpus > 0;
}

void
cpus_discover(void)
{
  if (madt_parse())
    cpu_source = "ACPI MADT";
  else if (mptable_parse())
    cpu_source = "MP table";
  else {
    cpu_source = "none (boot CPU only)";
    add_cpu(lapic_id());
  }
  // The boot CPU is index 0 whatever its place in the table.
  uint8_t me = lapic_id();
  for (int i = 0; i < ncpus; i++)
    if (cpus[i].apic_id == me) {
      cpus[i].apic_id = cpus[0].apic_id;
      cpus[0].apic_id = me;
    }
  uint64_t max = cmdline_u64("maxcpus", NR_CPUS);
  if (max >= 1 && (uint64_t)ncpus > max)
    ncpus = max;
}
