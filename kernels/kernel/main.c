// kmain: the boot CPU's table of contents.  Secondary CPUs start in
// smpboot.c's ap_main.
#include "fs.h"
#include "kernel.h"
#include "net.h"
#include "proc.h"
#include "sched.h"
#include "smp.h"
#include "user.h"

void workload_start(int n, uint32_t burst, uint32_t len);

// The workload: the built-in tasks (the default), or init=/path, a user
// program from the root-file-system image as pid 1.
static bool
start_workload(void)
{
  char init[RFS_NAME_MAX];
  uint64_t base, size;
  if (boot_module(&base, &size))
    rootfs_init(base, size);
  if (cmdline_str("init", init, sizeof init)) {
    start_init(init);
    return false;
  }
  int tasks = cmdline_u64("tasks", 64);
  workload_start(tasks, cmdline_u64("burst", 2000), cmdline_u64("buffer", 256));
  printk("workload: %d tasks, nr_running %d, %lu MiB free\n", tasks, nr_running,
         nr_free_pages() >> 8);
  return true;
}

static void
banner(void)
{
  printk("colorsim testbed kernel (Linux 2.4 scheduler model, not Linux)\n");
  printk("variant: colors %d shift %d mask %x line %d; task_struct %lu bytes\n",
         CONFIG_COLORS, CONFIG_COLOR_SHIFT, CONFIG_COLOR_MASK, CONFIG_LINE_SIZE,
         sizeof(struct task_struct));
  // The command line may be longer than printk's line: written whole.
  printk("boot: %s, cmdline \"", boot_protocol);
  console_write(cmdline_get(), strlen(cmdline_get()));
  printk("\"\n");
}

void
kmain(uint64_t magic, uint64_t info)
{
  struct mem_region regions[32];

  console_init();                              // COM1, polled
  boot_info_init(magic, info);                 // command line, protocol
  banner();
  idt_init();                                  // trap vectors
  int n = firmware_memory_map(magic, info, regions, 32);
  buddy_init(regions, n);                      // page allocator
  printk("memory: %lu MiB free in %d regions\n", nr_free_pages() >> 8, n);
  buddy_age(cmdline_u64("seed", 1), cmdline_u64("age", 4096));  // history
  task_init_boot();                            // we are init_task now
  sched_init();                                // run queue
  futex_init();
  cpu_init_user(0);                            // GDT, TSS, syscall MSRs
  outb(0x21, 0xff);                            // mask the 8259s: the local
  outb(0xa1, 0xff);                            //   APICs do everything
  cpus_discover();                             // MADT or MP table
  printk("cpus: %d from %s\n", ncpus, cpu_source);
  partition_init();                            // client CPUs (partition.c)
  lapic_init(cmdline_u64("lapic_hz", 1000000000));  // BSP tick
  cpus[0].online = 1;
  smp_boot_aps();                              // after task_init_boot
  net_init();                                  // the loopback card's IRQ CPU
  sti();
  bool builtin = start_workload();             // built-in tasks or init=
  if (cmdline_u64("panic_test", 0))
    panic("panic_test requested on the command line");
  if (builtin)
    workload_started();                        // region-of-interest clock
  cpu_idle();                                  // init_task idles CPU 0
}
