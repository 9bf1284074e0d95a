"""Kernel variants and the coloring arithmetic (the paper's eq. 1 and 3).

A variant name is ``vanilla`` (one color) or ``cN`` with N colors, a power of
two from 2 to 32 (wider settings are accepted up to the page limit).  The
coloring parameters come from the machine's L2: the task structure moves by
``color x line`` bytes, the color being address bits b .. b+n-1 of the 8 KiB
block, b = log2(L2 size / associativity).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import ConfigError
from .machine import PAGE_SIZE, Machine
from .units import is_pow2

THREAD_SIZE = 8192
SCHEDULERS = ("linux24",)  # the multi-queue scheduler lands later as "mq"


@dataclass(frozen=True)
class KernelVariant:
    colors: int          # 1 = vanilla
    line: int            # cache line size in bytes
    way_bits: int        # b = log2(L2 size / associativity)
    scheduler: str = "linux24"

    def __post_init__(self):
        if not is_pow2(self.colors):
            raise ConfigError(f"number of colors must be a power of two, "
                              f"got {self.colors}")
        if self.colors * self.line > PAGE_SIZE:
            raise ConfigError(
                f"{self.colors} colors x {self.line} B lines = "
                f"{self.colors * self.line} B is wider than the 4 KiB page "
                f"the task structure must stay in")
        if self.way_bits < 13:
            raise ConfigError(f"L2 way size 2^{self.way_bits} B is smaller "
                              f"than the 8 KiB task block: coloring by "
                              f"block address bits cannot help")

    @property
    def name(self) -> str:
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
        if self.colors == 1:
            return f"vanilla-l{self.line}"
        return f"c{self.colors}-b{self.way_bits}-l{self.line}"

    def cflags(self) -> list[str]:
        return [f"-DCONFIG_COLORS={self.colors}",
                f"-DCONFIG_COLOR_SHIFT={self.color_shift if self.colors > 1 else 0}",
                f"-DCONFIG_COLOR_MASK={self.color_mask:#x}",
                f"-DCONFIG_LINE_SIZE={self.line}"]


_NAME = re.compile(r"^(vanilla|c(\d+))$")


def parse_variant(name: str, machine: Machine) -> KernelVariant:
    m = _NAME.match(name)
    if not m:
        raise ConfigError(f"unknown kernel {name!r}: use 'vanilla' or 'cN' "
                          f"with N colors (c2, c4, c8, c16, c32)")
    colors = 1 if m.group(1) == "vanilla" else int(m.group(2))
    if m.group(2) is not None and colors < 2:
        raise ConfigError(f"kernel {name!r}: a colored kernel needs at least "
                          f"2 colors (use 'vanilla' for one)")
    l2 = machine.caches.l2
    return KernelVariant(colors, l2.line, l2.way_bits)


def colors_needed(processes: int, l2_size: int) -> int:
    """Eq. (3): c >= p / (s / 8 KiB), rounded up to a power of two."""
    need = -(-processes * THREAD_SIZE // l2_size)
    c = 1
    while c < need:
        c *= 2
    return c


_BUILD_ID = re.compile(r"^(?:vanilla|c(\d+)-b(\d+))-l(\d+)$")


def variant_from_build_id(build_id: str) -> KernelVariant:
    """Inverse of :attr:`KernelVariant.build_id` (used by the SCons build)."""
    m = _BUILD_ID.match(build_id)
    if not m:
        raise ConfigError(f"bad kernel build id {build_id!r}: expected "
                          f"'vanilla-l<line>' or 'c<N>-b<bits>-l<line>'")
    colors = int(m.group(1) or 1)
    way_bits = int(m.group(2) or 13)
    return KernelVariant(colors, int(m.group(3)), way_bits)
