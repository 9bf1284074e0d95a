"""Kernel variants and the coloring arithmetic (the paper's eq. 1 and 3).

A variant name is ``vanilla`` (one color) or ``cN`` with N colors, a power of
two, for Linux 2.4's scheduler; ``mq`` and ``mq-cN`` are the same with the
multi-queue scheduler (IBM's MQ for 2.4, kernels/kernel/sched_mq.c).
The coloring parameters come from the machine's L2: the task structure
moves by ``color x line`` bytes, the color being address bits b .. b+n-1 of
the 8 KiB block, b = log2(L2 size / associativity).

How many colors fit is one rule, :func:`max_colors`: the task structure
shifted by the largest color must still leave the kernel stack its minimum
in the 8 KiB block, (N - 1) x line + sizeof(task_struct) <= 8 KiB -
KERNEL_STACK_MIN.  Both sizes are read from the kernel's own headers, the
place the kernel checks them (kernels/kernel/task.c, task_selfcheck).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from colorsim import BUILD, ROOT
from colorsim.errors import ConfigError
from colorsim.describe.machine import Machine
from colorsim.units import is_pow2

KERNEL_INCLUDE = ROOT / "kernels" / "include"


def c_define(path, name: str) -> int:
    """The integer of ``#define NAME <int>`` in a C header of the suite, so
    that host and guest hold one number."""
    text = path.read_text()
    m = re.search(rf"^#define\s+{name}\s+(\d+)\b", text, re.M)
    if not m:
        raise RuntimeError(f"{name} is not defined in {path.relative_to(ROOT)}")
    return int(m.group(1))


def kernel_define(header: str, name: str) -> int:
    return c_define(KERNEL_INCLUDE / header, name)


# The longest command line the testbed kernel keeps (kernels/include/param.h,
# less the NUL); a longer one panics at boot, so it is refused before
# anything is built or booted.
CMDLINE_MAX = kernel_define("param.h", "CMDLINE_MAX") - 1


THREAD_SIZE = kernel_define("param.h", "THREAD_SIZE")
KERNEL_STACK_MIN = kernel_define("param.h", "KERNEL_STACK_MIN")
TASK_STRUCT_SIZE = kernel_define("sched.h", "TASK_STRUCT_SIZE")


def max_colors(line: int) -> int:
    """The most colors (a power of two) whose shifted task structure keeps
    KERNEL_STACK_MIN bytes of stack in its THREAD_SIZE block."""
    room = THREAD_SIZE - KERNEL_STACK_MIN - TASK_STRUCT_SIZE
    c = 1
    while (2 * c - 1) * line <= room:
        c *= 2
    return c


def colors_rule(line: int) -> str:
    """The rule in words, for help texts and refusals."""
    return (f"N a power of two with (N-1) x {line} B line + "
            f"{TASK_STRUCT_SIZE} B task_struct <= {THREAD_SIZE - KERNEL_STACK_MIN} B, "
            f"so that {KERNEL_STACK_MIN} B of the {THREAD_SIZE} B block stay "
            f"kernel stack: c2..c{max_colors(line)} with {line} B lines")
# linux24: one run queue under runqueue_lock (kernels/kernel/sched.c);
# mq: per-CPU run queues and locks (kernels/kernel/sched_mq.c, built with
# -DCONFIG_SCHED_MQ).
SCHEDULERS = ("linux24", "mq")


@dataclass(frozen=True)
class KernelVariant:
    colors: int          # 1 = vanilla
    line: int            # cache line size in bytes
    way_bits: int        # b = log2(L2 size / associativity)
    scheduler: str = "linux24"

    def __post_init__(self):
        if self.scheduler not in SCHEDULERS:
            raise ConfigError(f"unknown scheduler {self.scheduler!r}; known: "
                              f"{', '.join(SCHEDULERS)}")
        if not is_pow2(self.colors):
            raise ConfigError(f"number of colors must be a power of two, "
                              f"got {self.colors}")
        if self.colors > max_colors(self.line):
            shift = (self.colors - 1) * self.line
            pre = "mq-" if self.scheduler == "mq" else ""
            left = THREAD_SIZE - shift - TASK_STRUCT_SIZE
            where = (f"leaving {left} B of kernel stack" if left >= 0 else
                     f"past the end of its {THREAD_SIZE} B block")
            raise ConfigError(
                f"{self.colors} colors do not fit: the last color shifts the "
                f"{TASK_STRUCT_SIZE} B task_struct by {shift} B, {where} "
                f"(at least {KERNEL_STACK_MIN} B of stack needed); use "
                f"{pre}c2..{pre}c{max_colors(self.line)} with {self.line} B lines")
        if self.way_bits < 13:
            raise ConfigError(f"L2 way size 2^{self.way_bits} B is smaller "
                              f"than the 8 KiB task block: coloring by "
                              f"block address bits cannot help")

    @property
    def name(self) -> str:
        if self.scheduler == "mq":
            return "mq" if self.colors == 1 else f"mq-c{self.colors}"
        return "vanilla" if self.colors == 1 else f"c{self.colors}"

    @property
    def line_shift(self) -> int:
        return self.line.bit_length() - 1

    @property
    def color_shift(self) -> int:
        """Right shift that brings bit b down to the line-offset bit."""
        return self.way_bits - self.line_shift

    @property
    def color_mask(self) -> int:
        return (self.colors - 1) << self.line_shift

    def color_offset(self, base: int) -> int:
        """Offset of the task structure inside the 8 KiB block at ``base``."""
        return (base >> self.color_shift) & self.color_mask

    @property
    def build_id(self) -> str:
        """Directory name of this variant's build: what the image depends on."""
        sched = "mq-" if self.scheduler == "mq" else ""
        if self.colors == 1:
            return f"{sched}vanilla-l{self.line}"
        return f"{sched}c{self.colors}-b{self.way_bits}-l{self.line}"

    def cflags(self) -> list[str]:
        flags = [f"-DCONFIG_COLORS={self.colors}",
                 f"-DCONFIG_COLOR_SHIFT={self.color_shift if self.colors > 1 else 0}",
                 f"-DCONFIG_COLOR_MASK={self.color_mask:#x}",
                 f"-DCONFIG_LINE_SIZE={self.line}"]
        if self.scheduler == "mq":     # linux24's flags stay as they were
            flags.append("-DCONFIG_SCHED_MQ=1")
        return flags

    # The kind's side in describing a run (RunSpec asks the variant; the
    # run side is colorsim/run/kernels/testbed.py).
    clients_on_server_cpus = False   # a program's clients get CPUs of their own
    wire = True                      # and reach the server through the wire (wire.c)
    cards = False                    # the server's cards come with the wire only

    def kernel_dir(self) -> Path:
        return BUILD / "kernels" / self.build_id

    def kernel_elf64(self) -> Path:
        return self.kernel_dir() / "kernel.elf"

    def rootfs_image(self, program: str) -> Path:
        return BUILD / "disk-images" / "rootfs.img"

    def for_run(self, timing: bool, client_cpus: int = 0) -> "KernelVariant":
        """The image a run boots (the same with or without --timing)."""
        return self

    def cmdline_limit(self) -> tuple:
        """The longest command line the kernel keeps, and who says so."""
        return CMDLINE_MAX, "the testbed kernel keeps (CMDLINE_MAX)"

    def cmdline(self, spec, lapic_hz: int, timing: str) -> str:
        """The testbed kernel's command line for ``spec`` (its workload,
        modelled time, client CPUs, the wire); ``timing``: the modelled-
        time settings, or ""."""
        w = spec.workload
        line = (f"tasks={w.tasks} burst={w.burst} buffer={w.buffer} "
                f"warmup={w.warmup_ticks} roi={w.roi_ticks} seed={w.seed} "
                f"lapic_hz={lapic_hz}")
        if timing:
            line += " " + timing
        line += f" init={w.program}" if w.program else ""
        line += f" clientcpus={w.client_cpus}" if w.client_cpus else ""
        net = spec.machine.network
        if spec.wire:                                 # the wire (wire.c)
            line += f" wire_bps={net.bandwidth_bps} wire_ns={net.latency_ns}"
            line += " nicdma=1" if net.dma else ""
        return line + (f" initargs={w.args}" if w.args else "")

    def check_run(self, spec) -> None:
        """Refuse what this kernel cannot run (nothing the spec's own
        checks do not cover)."""

    def id_dict(self, d: dict) -> dict:
        """The variant's part of a run's identity dict."""
        return d


KERNEL_NAMES = ("'vanilla', 'cN', 'mq', 'mq-cN', 'linux24:vanilla', 'linux24:cN' "
                "or the i386 'linux24-i386:vanilla', 'linux24-i386:cN'")
_NAME = re.compile(r"^(?:(mq)(?:-c(\d+))?|vanilla|c(\d+))$")


def parse_variant(name: str, machine: Machine) -> KernelVariant:
    if name.startswith(("linux24:", "linux24-i386:")):   # real Linux 2.4
        from colorsim.describe.linux24 import variant_for   # from $LINUX24_SRC
        kind, _, rest = name.partition(":")
        return variant_for(machine, rest, "i386" if kind == "linux24-i386" else "x86_64")
    m = _NAME.match(name)
    if not m:
        raise ConfigError(f"unknown kernel {name!r}: use {KERNEL_NAMES} "
                          f"(mq = the multi-queue scheduler) with N colors, "
                          f"{colors_rule(machine.caches.l2.line)}")
    scheduler = "mq" if m.group(1) else "linux24"
    ncolors = m.group(2) or m.group(3)
    colors = int(ncolors) if ncolors is not None else 1
    if ncolors is not None and colors < 2:
        plain = "mq" if m.group(1) else "vanilla"
        raise ConfigError(f"kernel {name!r}: a colored kernel needs at least "
                          f"2 colors (use {plain!r} for one)")
    l2 = machine.caches.l2
    return KernelVariant(colors, l2.line, l2.way_bits, scheduler)


def colors_needed(processes: int, l2_size: int) -> int:
    """Eq. (3): c >= p / (s / 8 KiB), rounded up to a power of two."""
    need = -(-processes * THREAD_SIZE // l2_size)
    c = 1
    while c < need:
        c *= 2
    return c


_BUILD_ID = re.compile(r"^(mq-)?(?:vanilla|c(\d+)-b(\d+))-l(\d+)$")


def variant_from_build_id(build_id: str) -> KernelVariant:
    """Inverse of :attr:`KernelVariant.build_id` (used by the SCons build)."""
    m = _BUILD_ID.match(build_id)
    if not m:
        raise ConfigError(f"bad kernel build id {build_id!r}: expected "
                          f"'[mq-]vanilla-l<line>' or "
                          f"'[mq-]c<N>-b<bits>-l<line>'")
    colors = int(m.group(2) or 1)
    way_bits = int(m.group(3) or 13)
    return KernelVariant(colors, int(m.group(4)), way_bits,
                         "mq" if m.group(1) else "linux24")
