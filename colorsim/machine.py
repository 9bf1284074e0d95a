"""Machine descriptions, composed like a gem5 standard-library board.

A :class:`Machine` is built from a :class:`Processor`, a
:class:`CacheHierarchy` (private L1I, L1D and L2 per CPU), a :class:`Memory`
and :class:`Emulation` settings.  The numbers live in
``configs/machines.toml``; this module only reads, validates and derives.
Every part is plain, frozen data: it can be printed, hashed, compared and
turned into a dict for a run's configuration.
"""

from __future__ import annotations

import dataclasses
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path

from . import ROOT
from .errors import ConfigError
from .units import format_size, is_pow2, parse_freq, parse_size, parse_time_ns

MACHINES_FILE = ROOT / "configs" / "machines.toml"
PAGE_SIZE = 4096


@dataclass(frozen=True)
class CacheGeometry:
    """One cache: size in bytes, ways, line size in bytes."""

    size: int
    assoc: int
    line: int

    def __post_init__(self):
        for what, v in (("size", self.size), ("associativity", self.assoc),
                        ("line size", self.line)):
            if not is_pow2(v):
                raise ConfigError(f"cache {what} must be a power of two, "
                                  f"got {v}")
        if self.size < self.assoc * self.line:
            raise ConfigError(f"cache of {self.size} B cannot hold "
                              f"{self.assoc} ways of {self.line} B lines")

    @property
    def sets(self) -> int:
        return self.size // (self.assoc * self.line)

    @property
    def way_bits(self) -> int:
        """b = log2(size / associativity): the paper's eq. (1)."""
        return (self.size // self.assoc).bit_length() - 1

    def describe(self) -> str:
        return f"{format_size(self.size)} {self.assoc}-way {self.line} B lines"


@dataclass(frozen=True)
class CacheHierarchy:
    """Private L1 instruction, L1 data and L2 caches for every CPU."""

    l1i: CacheGeometry
    l1d: CacheGeometry
    l2: CacheGeometry

    @property
    def line(self) -> int:
        return self.l2.line


REPLACEMENTS = ("lru", "plru")
INCLUSIONS = ("inclusive", "non-inclusive")


@dataclass(frozen=True)
class CachePolicy:
    """How the caches behave (``[machine.caches]`` in machines.toml):
    replacement per level ("lru" or tree "plru"; l1 covers L1I and L1D),
    whether L2 evictions back-invalidate L1 ("inclusive"), and whether the
    bus monitor models instruction fetches through the L1I, competing with
    data in the unified L2.  Kept apart from CacheHierarchy, whose entries
    are all geometries."""

    l1_replacement: str = "lru"
    l2_replacement: str = "lru"
    inclusion: str = "non-inclusive"
    instruction_fetch: bool = False

    def __post_init__(self):
        for level, r in (("l1", self.l1_replacement), ("l2", self.l2_replacement)):
            if r not in REPLACEMENTS:
                raise ConfigError(f"{level} replacement {r!r}: expected one "
                                  f"of {', '.join(REPLACEMENTS)}")
        if self.inclusion not in INCLUSIONS:
            raise ConfigError(f"inclusion {self.inclusion!r}: expected one "
                              f"of {', '.join(INCLUSIONS)}")
        if not isinstance(self.instruction_fetch, bool):
            raise ConfigError(f"instruction_fetch must be true or false, got "
                              f"{self.instruction_fetch!r}")


@dataclass(frozen=True)
class Processor:
    cpus: int
    clock_hz: int

    def __post_init__(self):
        if not 1 <= self.cpus <= 8:
            raise ConfigError(f"processor has {self.cpus} CPUs; the testbed "
                              f"supports 1 to 8")


@dataclass(frozen=True)
class Memory:
    size: int
    latency_ns: float

    def __post_init__(self):
        if self.size > 2 * 1024**3:
            raise ConfigError("guest memory above 2 GiB is refused: QEMU's "
                              "plugin physical addresses are exact only "
                              "below the PCI hole")


@dataclass(frozen=True)
class Emulation:
    icount_shift: int

    def __post_init__(self):
        if not 0 <= self.icount_shift <= 10:
            raise ConfigError(f"icount_shift {self.icount_shift} is outside "
                              f"QEMU's range 0..10")


@dataclass(frozen=True)
class Machine:
    name: str
    description: str
    processor: Processor
    caches: CacheHierarchy
    memory: Memory
    emulation: Emulation
    l2_choices: tuple = ()
    max_cpus: int = 0
    cache_policy: CachePolicy = CachePolicy()

    def with_l2(self, size) -> "Machine":
        """The same machine with another L2 size (associativity kept)."""
        size = parse_size(size)
        l2 = dataclasses.replace(self.caches.l2, size=size)   # validates
        if self.l2_choices and size not in self.l2_choices:
            warnings.warn(f"{self.name} was measured with L2 "
                          f"{', '.join(map(format_size, self.l2_choices))}; "
                          f"{format_size(size)} is a what-if", stacklevel=2)
        caches = dataclasses.replace(self.caches, l2=l2)
        return dataclasses.replace(self, caches=caches)

    def with_cpus(self, cpus: int) -> "Machine":
        if not isinstance(cpus, int) or cpus < 1:
            raise ConfigError(f"--cpus must be a positive integer, got {cpus}")
        if cpus > self.max_cpus:
            raise ConfigError(f"machine {self.name} has {self.max_cpus} "
                              f"CPUs; cannot run with {cpus}")
        proc = dataclasses.replace(self.processor, cpus=cpus)
        return dataclasses.replace(self, processor=proc)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["l2_choices"] = list(self.l2_choices)
        return d


def _cache(entry, line, where) -> CacheGeometry:
    try:
        return CacheGeometry(parse_size(entry["size"]), int(entry["assoc"]),
                             int(line))
    except KeyError as e:
        raise ConfigError(f"{where}: missing {e.args[0]!r}") from None


def machine_from_table(name: str, t: dict) -> Machine:
    """Build a Machine from one table of machines.toml."""
    try:
        c = t["caches"]
        caches = CacheHierarchy(_cache(c["l1i"], c["line"], f"{name}.l1i"),
                                _cache(c["l1d"], c["line"], f"{name}.l1d"),
                                _cache(c["l2"], c["line"], f"{name}.l2"))
        proc = Processor(int(t["processor"]["cpus"]),
                         parse_freq(t["processor"]["clock"]))
        mem = Memory(parse_size(t["memory"]["size"]),
                     parse_time_ns(t["memory"]["latency"]))
        emu = Emulation(int(t["emulation"]["icount_shift"]))
        repl = c.get("replacement", {})
        policy = CachePolicy(repl.get("l1", "lru"), repl.get("l2", "lru"),
                             c.get("inclusion", "non-inclusive"),
                             c.get("instruction_fetch", False))
    except KeyError as e:
        raise ConfigError(f"machine {name}: missing {e.args[0]!r}") from None
    choices = tuple(parse_size(s) for s in c.get("l2_choices", ()))
    return Machine(name, t.get("description", name), proc, caches, mem, emu,
                   choices, proc.cpus, policy)


def load_machines(path: Path = MACHINES_FILE) -> dict:
    with open(path, "rb") as f:
        tables = tomllib.load(f)
    return {name: machine_from_table(name, t) for name, t in tables.items()}


def get_machine(name: str, path: Path = MACHINES_FILE) -> Machine:
    machines = load_machines(path)
    if name not in machines:
        raise ConfigError(f"unknown machine {name!r}; known machines: "
                          f"{', '.join(sorted(machines))}")
    return machines[name]
