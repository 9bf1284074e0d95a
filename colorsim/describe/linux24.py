"""Real Linux 2.4 kernels as a kernel family: what they are.

The user brings a Linux 2.4.37.x tree (``LINUX24_SRC``); no Linux code is
in this repository.  ``--kernel linux24:vanilla`` or ``linux24:cN`` names
one of our x86_64 builds of it for a machine, ``linux24-i386:vanilla`` or
``linux24-i386:cN`` one of our i386 builds (the paper's architecture): its
build id, the patches it takes (kernels/linux24/patches, and
kernels/linux24/patches/i386: build fixes for gcc-12, and the
task-structure coloring of the paper's Fig. 4b), the config and the
coloring bits of eq. (1).  Building it, its image's init and its layout are in
:mod:`colorsim.run.linux24`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path

from colorsim import BUILD, ROOT
from colorsim.errors import ConfigError

HERE = ROOT / "kernels" / "linux24"


PATCHES = HERE / "patches"


# The architectures a build can be for, and the prefix of each one's
# kernel names (--kernel linux24:c32, linux24-i386:c32).
ARCHES = {"x86_64": "linux24", "i386": "linux24-i386"}


QEMU_CPU = "qemu64,vendor=GenuineIntel"   # AMD vendor adds an e820 range 2.4 cannot map


@dataclass(frozen=True)
class ArchFacts:
    """What building, booting and reading one architecture's image differ
    in: one record per architecture, so another touches one place."""
    qemu_cpu: str        # QEMU's -cpu
    user: tuple          # [lo, hi) user addresses: PCs there are user mode
    pointer: int         # bytes of a pointer (the walk reads run_list.next)
    kernel_base: int     # the kernel's virtual address of physical 0
    m5base: int = None   # where init maps the m5-op page, if not busmon's default
    boot_tools: tuple = ()   # beyond the toolchain (TOOLS names their packages)
    make_config: tuple = ()  # make's arguments naming it (oldconfig's too)


ARCH = {
    "x86_64": ArchFacts(QEMU_CPU, (0, 0x800000000000), 8, 0xffffffff80000000),
    # a P6-family CPU QEMU models (it has no Pentium Pro; the kernel's
    # config names the machine's CPU, M686 or MPENTIUMIII); the m5-op page
    # below the kernel's 3 GiB (l24tasks.c's M5_VADDR); as86/ld86 for the
    # boot sector
    "i386": ArchFacts("pentium3", (0, 0xC0000000), 4, 0xC0000000, m5base=0xB0000000,
                      boot_tools=("as86", "ld86"), make_config=("ARCH=i386",)),
}


BUILD_FIXES = "0001-gcc12-x86_64-build.patch"


# Every image: the same tree and config give the same bytes wherever and
# whenever they are built (no date, build count, user, host or build
# directory in the image; gzip without a time stamp).
REPRODUCIBLE = "0003-reproducible-build.patch"


# --timing images only: guest ticks from modelled time (a clock array the
# bus monitor fills and a free check function beside the local APIC
# timer's handler; kernels/linux24/README.md).
MODELLED_TIME = "0004-modelled-time.patch"


COLORING = "0002-task-coloring.patch"


# Every image: no INIT level de-assert IPI on an xAPIC (version 0x14 and
# up, as QEMU's and gem5's local APICs report), where it is undefined and
# gem5's APIC resets every CPU on it (kernels/linux24/README.md).
XAPIC = "0005-xapic-no-arb-sync.patch"


# i386 (the paper's architecture): gcc-12's fixes there (asmlinkage
# declarations, the compiler check, schedule() out of line), the coloring
# (current found by masking the stack pointer, then adding the block's
# color: the paper's extra instructions in every current and GET_CURRENT)
# the same reproducible build, and for --timing images the modelled-time
# ticks.  None for gem5, which runs no 32-bit protected-mode kernel.
I386_BUILD_FIXES = "i386/0001-gcc12-i386-build.patch"
I386_COLORING = "i386/0002-task-coloring.patch"
I386_REPRODUCIBLE = "i386/0003-reproducible-build.patch"
I386_MODELLED_TIME = "i386/0004-modelled-time.patch"


# Runs with client CPUs only: the client partition (servercpus=N), a run
# queue and lock of the client CPUs' own, so the web server's clients never
# wait on the measured CPUs' runqueue_head (kernels/linux24/README.md).
# Images without client CPUs do not take it, so they stay what they were.
CLIENT_PARTITION = "0006-client-partition.patch"
I386_CLIENT_PARTITION = "i386/0005-client-partition.patch"
# and with it the server's cards: the clients' packets to the server are
# received on the server's CPUs, the server's to them on the client CPUs
# (serverport=P), not on the sending CPU as 2.4's loopback does
CLIENT_CARDS = "0007-client-cards.patch"
I386_CLIENT_CARDS = "i386/0006-client-cards.patch"


# With the client partition too: the measured CPUs' schedule() calls, the
# queue each walk goes over, the switches and recalculations, per CPU and
# read from /proc/colorsim_rq at the region's start, marks and end (the
# testbed kernel's "roi:" and "rq:" numbers).
RUN_QUEUE_COUNTS = "0008-run-queue-counts.patch"
I386_RUN_QUEUE_COUNTS = "i386/0007-run-queue-counts.patch"
# and the cards' DMA, with nicdma=1 (the machine's [network] dma): each
# frame the server's cards receive or send, told to the bus monitor
# (busmon dmabell=), which books its lines on the server's bus
CARD_DMA = "0009-card-dma.patch"
I386_CARD_DMA = "i386/0008-card-dma.patch"
# and where the measured CPUs' other tasks sleep (accept, the accept lock,
# socket reads and writes, semop, ...), read from /proc/colorsim_wait at the
# region's end (the testbed kernel's "wait:" line).  It touches only files
# both architectures share, so one patch serves both.
WAIT_SITES = "0010-wait-sites.patch"
# Their CONFIG_NR_CPUS: x86_64 2.4 takes 2-8 (arch/x86_64/config.in), i386
# up to 32; the testbed brings at most 16 online (runspec.VCPUS_MAX).
NR_CPUS_CLIENTS = {"x86_64": 8, "i386": 16}


SRC_ENV = "LINUX24_SRC"


THREAD_SIZE = 8192


LINE = 32


VERSION = re.compile(r"^2\.4\.37(\.\d+)?$")


# The programs the linux24 path runs and the Debian package of each:
# building (make, patch, gcc, tar for the out-of-tree copy), checking and
# reading the image (objdump, nm; gdb reads task_struct from the DWARF),
# and its init and RAM disk (musl-gcc, mke2fs, debugfs for the inodes' change times).  scripts/setup.sh installs
# every one of these packages (tests/test_linux24.py checks it does).
TOOLS = {"make": "make", "patch": "patch", "gcc": "gcc", "tar": "tar",
         "objdump": "binutils", "nm": "binutils", "gdb": "gdb",
         "musl-gcc": "musl-tools", "mke2fs": "e2fsprogs",
         "debugfs": "e2fsprogs",
         # i386 images: the boot sector's assembler and linker
         "as86": "bin86", "ld86": "bin86"}


def check_tools(names) -> None:
    """A one-line ConfigError naming the package of the first missing tool."""
    import shutil
    for tool in names:
        if not shutil.which(tool):
            raise ConfigError(f"{tool} is not installed: apt-get install "
                              f"{TOOLS[tool]} (or run scripts/setup.sh; the "
                              f"linux24 kernels need it)")


# gcc-12 on a 2.4 tree (../shared facts): no PIE, GNU89 inline semantics,
# no library calls for copy loops, no sibling calls (they overwrite the
# caller's stack arguments), no SSE before the kernel enables it, and the
# opt-out of 2.4's "new gcc" check in our build-fix patch.
CC = ("gcc -fno-pie -fgnu89-inline -fno-tree-loop-distribute-patterns "
      "-fno-optimize-sibling-calls -mno-sse -mno-mmx -mno-sse2 -mno-3dnow "
      "-mno-avx -DCOLORSIM_NEWER_GCC")
# i386 (../shared facts): the same, for 32-bit code; gcc's x86_64 SSE
# default does not arise there.  The boot sector is as86's (Debian's
# bin86), the rest GNU as and ld in 32-bit mode.
CC_I386 = ("gcc -m32 -fno-pie -fgnu89-inline -fno-tree-loop-distribute-patterns "
           "-fno-optimize-sibling-calls -DCOLORSIM_NEWER_GCC")
I386_MAKE_ARGS = [*ARCH["i386"].make_config, "LD=ld -m elf_i386", "AS=as --32"]
# Line tables for the scheduler only: where the run-queue loop's code is.
# -g does not change the code gcc generates.
DEBUG_SCHED = "CFLAGS_sched.o=-g"


def source_tree() -> Path:
    """$LINUX24_SRC, checked, or a one-line ConfigError."""
    text = os.environ.get(SRC_ENV, "")
    if not text:
        raise ConfigError(f"{SRC_ENV} is not set: point it at a Linux 2.4.37.x "
                          f"source tree (e.g. the kernel.org linux-2.4.37.11 "
                          f"tarball, unpacked)")
    src = Path(text).resolve()
    check_version(src)
    return src


def source_version(src: Path) -> str:
    """The tree's version from its top-level Makefile, e.g. '2.4.37.11'."""
    mk = src / "Makefile"
    if not mk.is_file():
        raise ConfigError(f"{SRC_ENV}={src} has no Makefile: not a Linux "
                          f"source tree")
    fields = dict(re.findall(r"^(VERSION|PATCHLEVEL|SUBLEVEL|EXTRAVERSION)"
                             r"\s*=[ \t]*(\S*)", mk.read_text(errors="replace"),
                             re.M))
    if not all(k in fields for k in ("VERSION", "PATCHLEVEL", "SUBLEVEL")):
        raise ConfigError(f"{SRC_ENV}={src}: its Makefile names no kernel "
                          f"version: not a Linux source tree")
    return (f"{fields['VERSION']}.{fields['PATCHLEVEL']}.{fields['SUBLEVEL']}"
            f"{fields.get('EXTRAVERSION', '')}")


def check_version(src: Path, arch: str = "x86_64") -> str:
    v = source_version(src)
    if not VERSION.match(v):
        raise ConfigError(f"{SRC_ENV}={src} is Linux {v}; the suite's patches "
                          f"are for 2.4.37.x only")
    if not (src / "arch" / arch).is_dir():
        raise ConfigError(f"{SRC_ENV}={src} has no arch/{arch}")
    return v


@dataclass(frozen=True)
class Linux24Build:
    """One image: a machine's config and a coloring (colors=1: vanilla)."""
    config: str          # ppro4 or piii8 (kernels/linux24/configs/)
    colors: int = 1
    way_bits: int = 17   # b = log2(L2 size / associativity)
    timing: bool = False  # --timing: ticks from modelled time (patch 0004)
    arch: str = "x86_64"  # or i386, the paper's (ARCHES)
    clients: bool = False  # client CPUs: the client partition patch

    scheduler = "linux-2.4.37"     # the real one (KernelVariant's are the testbed's)
    line = LINE

    @property
    def name(self) -> str:
        kind = ARCHES[self.arch]
        return f"{kind}-vanilla" if self.colors == 1 else f"{kind}-c{self.colors}"

    @property
    def is_i386(self) -> bool:
        return self.arch == "i386"

    @property
    def build_id(self) -> str:
        base = (f"{self.config}-vanilla" if self.colors == 1 else
                f"{self.config}-c{self.colors}-b{self.way_bits}")
        return (("i386-" if self.is_i386 else "") + base
                + ("-timing" if self.timing else "")
                + ("-clients" if self.clients else ""))

    @property
    def color_shift(self) -> int:
        """Eq. (1): bring block address bit b down to the line bit."""
        return self.way_bits - (LINE.bit_length() - 1)

    @property
    def color_mask(self) -> int:
        return (self.colors - 1) * LINE

    def color_offset(self, block: int) -> int:
        return (block >> self.color_shift) & self.color_mask

    @property
    def patches(self) -> list:
        if self.is_i386:     # its own set: the same three kinds of change
            names = ([I386_BUILD_FIXES] + ([I386_COLORING] if self.colors > 1 else [])
                     + [I386_REPRODUCIBLE] + ([I386_MODELLED_TIME] if self.timing else [])
                     + ([I386_CLIENT_PARTITION, I386_CLIENT_CARDS, I386_RUN_QUEUE_COUNTS,
                         I386_CARD_DMA, WAIT_SITES]
                        if self.clients else []))
        else:
            names = ([BUILD_FIXES] + ([COLORING] if self.colors > 1 else [])
                     + [REPRODUCIBLE, XAPIC] + ([MODELLED_TIME] if self.timing else [])
                     + ([CLIENT_PARTITION, CLIENT_CARDS, RUN_QUEUE_COUNTS, CARD_DMA,
                         WAIT_SITES] if self.clients else []))
        return [PATCHES / n for n in names]

    @property
    def config_file(self) -> Path:
        prefix = "i386-" if self.is_i386 else ""
        return HERE / "configs" / f"{prefix}{self.config}.config"

    def config_text(self) -> str:
        """The .config it is built with: the machine's, and for the client
        partition room for the client CPUs (CONFIG_NR_CPUS: the most the
        port allows, NR_CPUS_CLIENTS)."""
        text = self.config_file.read_text()
        if self.clients:
            n = NR_CPUS_CLIENTS[self.arch]
            text = re.sub(r"(?m)^CONFIG_NR_CPUS=\d+$", f"CONFIG_NR_CPUS={n}", text)
        return text

    def make_args(self) -> list:
        args = ([*I386_MAKE_ARGS, f"CC={CC_I386}"] if self.is_i386 else [f"CC={CC}"])
        args.append(DEBUG_SCHED)
        if self.colors > 1:
            args += [f"COLORSIM_COLOR_SHIFT={self.color_shift}",
                     f"COLORSIM_COLOR_MASK={self.color_mask:#x}"]
        return args

    @property
    def dir(self) -> Path:
        return BUILD / "linux24" / self.build_id

    @property
    def bzimage(self) -> Path:
        return self.dir / "bzImage"

    # The kind's side in describing a run (RunSpec asks the variant; the
    # run side is colorsim/run/kernels/linux24.py).
    clients_on_server_cpus = True    # by default: no client CPUs (--client-cpus N adds them)
    wire = False                     # client traffic is 2.4's loopback: no modelled wire
    cards = True                     # but with client CPUs the server has cards (0007)

    def kernel_dir(self) -> Path:
        return self.dir

    def kernel_elf64(self) -> Path:
        """Its bzImage: the file a run's identity hashes."""
        return self.bzimage

    def rootfs_image(self, program: str) -> Path:
        """Its ext2 initrd: the web image, or the tasks workload's (the
        i386 one for i386 images)."""
        return web_image(self.arch) if program else tasks_initrd(self.arch)

    def for_run(self, timing: bool, client_cpus: int = 0) -> "Linux24Build":
        """A --timing run boots the image whose ticks come from modelled
        time (kernels/linux24/patches/0004), a run with client CPUs the one
        with the client partition (0006)."""
        return dataclasses.replace(self, timing=self.timing or timing,
                                   clients=self.clients or client_cpus > 0)

    def cmdline_limit(self) -> tuple:
        return CMDLINE_MAX, "Linux 2.4 keeps (COMMAND_LINE_SIZE)"

    def cmdline(self, spec, lapic_hz: int, timing: str) -> str:
        """Its command line: the web image's or the tasks workload's."""
        w = spec.workload
        args = w.args
        if w.seed != 1:             # web's clients' request mix (check_run)
            args += ("," if args else "") + f"--seed,{w.seed}"
        line = (web_cmdline(args, timing, w.program) if w.program else
                cmdline(w.tasks, w.burst, w.warmup_ticks, w.roi_ticks, w.buffer,
                        timing))
        # i386 2.4 finds QEMU's 8254 timer not wired to the IO-APIC and
        # panics (../shared facts): interrupts through the 8259s, local
        # APIC timers as before
        if spec.workload.client_cpus:     # CPUs from cpus on run the clients,
            line += f" servercpus={spec.cpus}"   # and packets to the server's port
            line += f" serverport={web_port(w.args)}"   # reach its cards (0007)
            line += " nicdma=1" if spec.nic_dma else ""   # whose DMA crosses its bus
        return line + " noapic" if self.is_i386 else line

    def check_run(self, spec) -> None:
        """What a Linux 2.4 run cannot be (yet)."""
        if self.is_i386:
            self.check_i386_run(spec)
        if spec.workload.program not in ("", *PROGRAMS):
            raise ConfigError("linux24 kernels run their own init: the tasks "
                              "workload, --workload web or --workload chat; no "
                              "other --workload")
        if spec.engine == "gem5" and spec.workload.program:
            raise ConfigError("linux24 kernels run the tasks workload on gem5; "
                              "--workload web and chat on them run on QEMU only")
        # 2.4 has no placement seed of the testbed kernel's: the seed is
        # web's (its clients' request mix), and other runs would repeat
        if spec.workload.seed != 1 and spec.workload.program != WEB_PROGRAM:
            raise ConfigError("a seed other than 1 on linux24 kernels is web's (its "
                              "clients' request mix, web --seed): the tasks workload "
                              "and Chat on 2.4 take no seed, and their runs would "
                              "repeat; use --seed 1")
        if spec.workload.seed != 1 and "--seed" in spec.workload.args.split(","):
            raise ConfigError("--seed and web's own --seed argument both given: on "
                              "linux24 kernels the run's seed is web's; give one")
        if spec.workload.client_cpus and spec.workload.program != WEB_PROGRAM:
            raise ConfigError("client CPUs (--client-cpus) on linux24 kernels "
                              "are for --workload web's clients; use "
                              "--client-cpus 0")
        most = NR_CPUS_CLIENTS[self.arch]
        if spec.workload.client_cpus and spec.vcpus > most:
            raise ConfigError(f"{spec.cpus} CPUs + {spec.workload.client_cpus} client CPUs "
                              f"is more than the {most} {self.arch} Linux 2.4 is built for "
                              f"here (CONFIG_NR_CPUS); use fewer client CPUs")

    def check_i386_run(self, spec) -> None:
        """The i386 images run on QEMU: gem5 v24's X86 CPUs run no 32-bit
        protected-mode kernel (docs/linux24.md, "i386 on gem5")."""
        if spec.engine == "gem5":
            raise ConfigError(f"{self.name} runs on QEMU: not gem5 (gem5 v24 runs "
                              f"no 32-bit protected-mode kernel: it delivers no "
                              f"interrupt outside long mode); use "
                              f"linux24:{self.name.rsplit('-', 1)[1]} (x86_64) for it")

    def id_dict(self, d: dict) -> dict:
        if not self.timing:
            del d["timing"]             # counting runs' ids stay as before
        if not self.is_i386:
            del d["arch"]               # x86_64 runs' ids stay as before
        if not self.clients:
            del d["clients"]            # runs without client CPUs too
        return d


def variant_for(machine, kernel: str, arch: str = "x86_64") -> Linux24Build:
    """``vanilla`` or ``cN`` on ``machine`` (its L2 decides b, eq. (1)),
    built for ``arch``."""
    kind = ARCHES[arch]
    m = re.fullmatch(r"vanilla|c(\d+)", kernel)
    if not m:
        raise ConfigError(f"unknown {kind} kernel {kernel!r}: use "
                          f"{kind}:vanilla or {kind}:cN (N colors, a power of two)")
    colors = int(m.group(1) or 1)
    if colors < 2 and m.group(1):
        raise ConfigError(f"kernel {kind}:{kernel}: a colored kernel needs at "
                          f"least 2 colors (use {kind}:vanilla for one)")
    if colors & (colors - 1):
        raise ConfigError(f"number of colors must be a power of two, got {colors}")
    if (colors - 1) * LINE > 1024:
        raise ConfigError(f"{kind}:c{colors} would move the task structure "
                          f"{(colors - 1) * LINE} B into its block; at most c32 "
                          f"keeps 2.4's kernel stack its room")
    if machine.name not in ("ppro4", "piii8"):
        raise ConfigError(f"linux24 kernels have configs for ppro4 and piii8, "
                          f"not {machine.name}")
    l2 = machine.caches.l2
    if l2.line != LINE:
        raise ConfigError(f"linux24 kernels color by {LINE} B lines; machine "
                          f"{machine.name} has {l2.line} B")
    return Linux24Build(machine.name, colors, l2.way_bits, arch=arch)


def is_linux24(variant) -> bool:
    return isinstance(variant, Linux24Build)


# The network workloads' image (colorsim/run/linux24web.py): /init,
# /bin/web, /bin/chat and the web file set (about 5 MiB); the configs' RAM
# disk holds 64 MiB.
WEB_PROGRAM = "/bin/web"
CHAT_PROGRAM = "/bin/chat"
PROGRAMS = (WEB_PROGRAM, CHAT_PROGRAM)
# Linux 2.4's COMMAND_LINE_SIZE is 256 with its NUL (i386 and x86_64 alike);
# the boot code cuts a longer line silently, so it is refused before a run.
CMDLINE_MAX = 255
WEB_IMAGE_KIB = 8192


def tasks_initrd(arch: str = "x86_64") -> Path:
    """The tasks workload's RAM disk for ``arch``'s images."""
    return BUILD / "linux24" / ("initrd-i386.ext2" if arch == "i386" else "initrd.ext2")


def web_image(arch: str = "x86_64") -> Path:
    """The web workload's RAM disk for ``arch``'s images."""
    return BUILD / "linux24" / ("initrd-web-i386.ext2" if arch == "i386"
                                else "initrd-web.ext2")


WEB_PORT_DEFAULT = 8080      # workloads/web/web.c's port without --port


def web_port(args: str) -> int:
    """The port a web run's server listens on (its arguments were checked
    by describe/programs.py)."""
    m = re.search(r"(?:^|,)--port,(\d+)(?:,|$)", args or "")
    return int(m.group(1)) if m else WEB_PORT_DEFAULT


def web_cmdline(args: str, timing: str = "", program: str = WEB_PROGRAM) -> str:
    """2.4's command line for a web or chat run: init
    (workloads/linux24/l24web.c) gets the program's arguments,
    comma-separated as the testbed's initargs=, as webargs (chatargs for
    chat); the RAM disk is sized for the image.  ``timing`` as for
    cmdline()."""
    name = "chatargs" if program == CHAT_PROGRAM else "webargs"
    return (f"console=ttyS0 root=/dev/ram0 init=/init nmi_watchdog=0 "
            f"ramdisk_size={WEB_IMAGE_KIB} {name}={args}"
            + (f" {timing}" if timing else ""))


def cmdline(tasks: int, burst: int, warmup: int, roi: int, buffer: int = 256,
            timing: str = "") -> str:
    """2.4's command line; the name=value words it does not know reach init
    as environment variables (l24tasks reads them).  ``timing``: the
    modelled-time options a --timing image takes (timing_hz=,
    timing_quantum=: patch 0004)."""
    return (f"console=ttyS0 root=/dev/ram0 init=/init nmi_watchdog=0 "
            f"tasks={tasks} burst={burst} buffer={buffer} warmup={warmup} roi={roi}"
            + (f" {timing}" if timing else ""))
