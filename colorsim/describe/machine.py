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
import os
import re
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path

from colorsim import ROOT
from colorsim.errors import ConfigError, read_user_text
from colorsim.describe.clients import Clients, clients_from_table
from colorsim.describe.tomlcheck import check_keys, duplicate, duplicate_message
from colorsim.units import format_size, is_pow2, parse_freq, parse_size, parse_time_ns

MACHINES_FILE = ROOT / "configs" / "machines.toml"
MACHINES_ENV = "COLORSIM_MACHINES"      # another machines file, if set
PAGE_SIZE = 4096
MIN_MEMORY = 16 * 2**20        # the kernel boots and runs small workloads
MIN_CLOCK_HZ, MAX_CLOCK_HZ = 10**6, 10**11


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
        # --timing derives the guest's tick (clock / 100) and sync quantum
        # (clock / 10**4) from it: below 1 MHz they round to nothing.
        if not MIN_CLOCK_HZ <= self.clock_hz <= MAX_CLOCK_HZ:
            raise ConfigError(f"processor clock {self.clock_hz} Hz is outside "
                              f"1MHz..100GHz")


@dataclass(frozen=True)
class Memory:
    size: int
    latency_ns: float

    def __post_init__(self):
        # QEMU takes -m in MiB (0 means its own default), and the testbed
        # kernel does not boot in less than MIN_MEMORY: 1 MiB hangs it.
        if self.size % 2**20 or self.size < MIN_MEMORY:
            raise ConfigError(f"guest memory {format_size(self.size)} is "
                              f"refused: it must be a whole number of MiB, "
                              f"at least {format_size(MIN_MEMORY)}")
        if self.size > 2 * 1024**3:
            raise ConfigError("guest memory above 2 GiB is refused: QEMU's "
                              "plugin physical addresses are exact only "
                              "below the PCI hole")


RR_SLICE_LIMIT = 2**31 - 1        # instructions; QEMU takes a uint32
SLICE_BOUNDS = ("rr_slice_min", "rr_slice_max")   # QEMU's rr-slice-min, -max


@dataclass(frozen=True)
class Emulation:
    icount_shift: int
    # The smallest round-robin slice in instructions (QEMU's -accel
    # tcg,rr-slice-min, one of our QEMU patches); 0 keeps QEMU's own
    # division of the time to the next deadline over the vCPUs.
    rr_slice_min: int = 0
    # The largest (-accel tcg,rr-slice-max, another of our patches); 0: no
    # cap.  Both change how finely the vCPUs interleave, which the
    # interleaving table measures (colorsim interleaving-sensitivity).
    rr_slice_max: int = 0

    def __post_init__(self):
        if not 0 <= self.icount_shift <= 10:
            raise ConfigError(f"icount_shift {self.icount_shift} is outside "
                              f"QEMU's range 0..10")
        for f in SLICE_BOUNDS:
            v = getattr(self, f)
            if not 0 <= v <= RR_SLICE_LIMIT:
                raise ConfigError(f"{f} {v} is outside 0..{RR_SLICE_LIMIT} "
                                  f"instructions")
        if self.rr_slice_max and self.rr_slice_min > self.rr_slice_max:
            raise ConfigError(f"rr_slice_min {self.rr_slice_min} is above "
                              f"rr_slice_max {self.rr_slice_max}")

    @property
    def accel(self) -> str:
        """QEMU's -accel value: one thread running the vCPUs in turn."""
        return "tcg,thread=single" + "".join(
            f",{f.replace('_', '-')}={getattr(self, f)}"
            for f in SLICE_BOUNDS if getattr(self, f))

    def to_dict(self) -> dict:
        """As recorded in a run's identity: the slice bounds only when set,
        so that runs made before they existed keep their ids."""
        d = {"icount_shift": self.icount_shift}
        for f in SLICE_BOUNDS:
            if getattr(self, f):
                d[f] = getattr(self, f)
        return d


TIMING_FIELDS = ("inst", "l2_hit", "mem", "hitm", "inval", "bus_line",
                 "bus_addr")
# Further [x.timing] keys, each its own busmon option, with its default
# when a machine leaves it out.
TIMING_EXTRA = {"bus_depth": ("busdepth", 8), "locked_rmw": ("locked", 0),
                "bus_cpus": ("buscpus", 0), "cross_bus": ("crossbus", 0),
                "quantum": ("quantum", 0), "hold_for_clients": ("clienthold", False),
                "store_buffer": ("storebuf", 0), "dtlb": ("dtlb", 0),
                "dtlb_large": ("dtlblarge", 0), "itlb": ("itlb", 0),
                "itlb_large": ("itlblarge", 0), "overlap": ("overlap", 0)}


# The costs that can be switched off one at a time (``colorsim run
# --timing-off NAME``, ``colorsim timing-sensitivity``): name -> what
# switching it off means.
TIMING_SWITCHES = {
    "fetch": "no instruction fetches (data accesses only)",
    "locked_rmw": "a locked RMW costs only its line",
    "store_buffer": "every store stalls for its line in full",
    "two_buses": "all CPUs on one bus (no crossing cost)",
    "dtlb": "no DTLB: translation is free (no page walks)",
    "itlb": "no ITLB: code translation is free (no page walks)",
}


# Costs that are off by default and can be switched on for a what-if
# (``colorsim timing-sensitivity``'s rows): name -> (value, what it means).
TIMING_ADDITIONS = {
    "overlap": (4, "load misses outside the run-queue loop overlap, "
                   "4 in flight (an upper bound)"),
    "branch_miss": (15, "mispredicted branches cost 15 clocks "
                        "(the machine's BTB)"),
}


def _switch(cost: str) -> str:
    """The Timing field behind a switchable cost; ConfigError if unknown."""
    if cost not in TIMING_SWITCHES:
        raise ConfigError(f"unknown timing cost {cost!r} (known: "
                          f"{', '.join(TIMING_SWITCHES)})")
    return "bus_cpus" if cost == "two_buses" else cost


@dataclass(frozen=True)
class Timing:
    """Costs in core clocks for the bus monitor's modelled time
    (``[machine.timing]``; busmon's timing= option, in this order)."""

    inst: int
    l2_hit: int
    mem: int
    hitm: int
    inval: int
    bus_line: int
    bus_addr: int
    bus_depth: int = 8      # transactions in flight on the bus at most
    locked_rmw: int = 0     # a locked RMW's own cost, beyond its line (0: off)
    fetch: bool = False     # instruction fetches through L1I and L2 when timing
    bus_cpus: int = 0       # CPUs per bus (0: one bus for all)
    cross_bus: int = 0      # a transaction that crosses to the other bus
    quantum: int = 0        # most clocks a CPU may lead the slowest (0: off)
    store_buffer: int = 0   # store buffer entries (0: every store stalls)
    dtlb: int = 0           # DTLB entries, 4 KiB pages (0: no DTLB)
    dtlb_large: int = 0     # DTLB entries, large pages
    itlb: int = 0           # ITLB entries, 4 KiB pages (0: no ITLB)
    itlb_large: int = 0     # ITLB entries, large pages
    overlap: int = 0        # load misses in flight outside the run-queue loop
    hold_for_clients: bool = False  # server CPUs wait while a client CPU works
    branch_miss: int = 0    # clocks a mispredicted branch costs (0: off)
    btb: int = 512          # branch target buffer entries (with branch_miss)

    def __post_init__(self):
        for f in TIMING_FIELDS:
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 1_000_000:
                raise ConfigError(f"timing.{f} must be a whole number of "
                                  f"clocks 0..1000000, got {v!r}")
        if self.inst < 1:
            raise ConfigError("timing.inst must be at least 1 clock")
        for f in ("fetch", "hold_for_clients"):
            if not isinstance(getattr(self, f), bool):
                raise ConfigError(f"timing.{f} must be true or false, got "
                                  f"{getattr(self, f)!r}")
        for f, top in (("locked_rmw", 1_000_000), ("cross_bus", 1_000_000),
                       ("bus_cpus", 1024), ("store_buffer", 64),
                       ("dtlb", 1024), ("dtlb_large", 1024), ("itlb", 1024),
                       ("itlb_large", 1024), ("overlap", 64),
                       ("quantum", 1_000_000_000), ("branch_miss", 1000)):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= top:
                raise ConfigError(f"timing.{f} must be a whole number "
                                  f"0..{top}, got {v!r}")
        b = self.btb
        if (isinstance(b, bool) or not isinstance(b, int) or not 4 <= b <= 4096
                or b & (b - 1)):
            raise ConfigError(f"timing.btb must be a power of two 4..4096 "
                              f"(entries, 4-way), got {b!r}")
        d = self.bus_depth
        if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= 64:
            raise ConfigError(f"timing.bus_depth must be a whole number of "
                              f"transactions 1..64, got {d!r}")

    def plugin_arg(self) -> str:
        return ":".join(str(getattr(self, f)) for f in TIMING_FIELDS)

    def is_on(self, cost: str, cpus: int) -> bool:
        """Whether a switchable cost (TIMING_SWITCHES) is on for a run
        with this many CPUs."""
        if cost == "two_buses":
            return 0 < self.bus_cpus < cpus
        return bool(getattr(self, _switch(cost)))

    def adding(self, cost: str) -> "Timing":
        """The same costs with one of TIMING_ADDITIONS switched on."""
        if cost not in TIMING_ADDITIONS:
            raise ConfigError(f"unknown timing addition {cost!r} (known: "
                              f"{', '.join(TIMING_ADDITIONS)})")
        return dataclasses.replace(self, **{cost: TIMING_ADDITIONS[cost][0]})

    def without(self, cost: str) -> "Timing":
        """The same costs with one switched off (``--timing-off``)."""
        _switch(cost)
        if cost == "fetch":
            return dataclasses.replace(self, fetch=False)
        if cost == "two_buses":
            return dataclasses.replace(self, bus_cpus=0, cross_bus=0)
        return dataclasses.replace(self, **{cost: 0})

    def plugin_args(self) -> list:
        """busmon's options for these costs: timing= and the others
        (branch= only when on, so that earlier runs' commands stay)."""
        return ([f"timing={self.plugin_arg()}"]
                + [f"{opt}={int(getattr(self, k))}"
                   for k, (opt, _) in TIMING_EXTRA.items()]
                + ([f"branch={self.branch_miss}:{self.btb}"]
                   if self.branch_miss else []))

    def identity(self) -> dict:
        """As recorded in a timing run's identity: keys added since the
        first timing runs only when switched on, so those runs keep their
        ids."""
        d = dataclasses.asdict(self)
        if not d["hold_for_clients"]:
            del d["hold_for_clients"]
        if not d["branch_miss"]:
            del d["branch_miss"], d["btb"]
        return d


NETWORK_CARDS = 4          # kernels/kernel/loopback.c NR_NICS


@dataclass(frozen=True)
class Network:
    """The wire between the client machines and the server's cards
    (``[machine.network]``): bits per second per card, one-way latency,
    and whether the server's cards move frames by DMA on its bus (bus
    master cards: the frames' lines cross the bus the CPUs use,
    kernels/kernel/wire.c)."""

    cards: int
    bandwidth_bps: int
    latency_ns: int
    dma: bool = False

    def to_dict(self) -> dict:
        """As recorded in a run's identity: ``dma`` only when on, so runs
        made before it existed (no DMA) keep their ids."""
        d = dataclasses.asdict(self)
        if not self.dma:
            del d["dma"]
        return d

    def __post_init__(self):
        if self.cards != NETWORK_CARDS:
            raise ConfigError(f"network.cards must be {NETWORK_CARDS} (the "
                              f"testbed kernel's cards), got {self.cards}")
        if not 1_000_000 <= self.bandwidth_bps <= 100_000_000_000:
            raise ConfigError(f"network.bandwidth must be 1Mbit/s..100Gbit/s, "
                              f"got {self.bandwidth_bps} bit/s")
        if not 0 <= self.latency_ns <= 1_000_000_000:
            raise ConfigError(f"network.latency must be 0..1s, got "
                              f"{self.latency_ns} ns")
        if not isinstance(self.dma, bool):
            raise ConfigError(f"network.dma must be true or false, got "
                              f"{self.dma!r}")


def parse_bandwidth(text) -> int:
    """"100Mbit/s" -> 100000000 (bits per second)."""
    m = re.fullmatch(r"\s*([0-9]+)\s*([kMG]?)bit/s\s*", str(text))
    if not m:
        raise ConfigError(f"bandwidth must look like 100Mbit/s or 1Gbit/s, "
                          f"got {text!r}")
    return int(m.group(1)) * {"": 1, "k": 10**3, "M": 10**6, "G": 10**9}[m.group(2)]


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
    timing: Timing = None      # [x.timing]; not part of to_dict (see RunSpec)
    network: Network = None    # [x.network]; not part of to_dict (see RunSpec)
    clients: Clients = None    # [x.clients]; not part of to_dict (see RunSpec)

    def with_clients(self, on: bool) -> "Machine":
        """The same machine with its client model, or (off) with clients
        as fast as QEMU's round robin makes them (``--client-model off``)."""
        if on and self.clients is None:
            raise ConfigError(f"machine {self.name} has no [clients] table")
        return self if on else dataclasses.replace(self, clients=None)

    def with_nic_dma(self, on: bool) -> "Machine":
        """The same machine with its cards' DMA on or off (a what-if:
        ``colorsim run --nic-dma``)."""
        if self.network is None:
            raise ConfigError(f"machine {self.name} has no [network]: "
                              f"--nic-dma needs one")
        return dataclasses.replace(
            self, network=dataclasses.replace(self.network, dma=bool(on)))

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

    def without_costs(self, costs) -> "Machine":
        """The same machine with these timing costs switched off."""
        if self.timing is None:
            raise ConfigError(f"machine {self.name} has no [timing] table")
        t = self.timing
        for c in costs:
            t = t.without(c)
        return dataclasses.replace(self, timing=t)

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
        # Counting-only runs do not depend on the timing table; a timing
        # run records it under its own key (RunSpec.to_dict).
        del d["timing"]
        del d["network"]
        del d["clients"]
        d["emulation"] = self.emulation.to_dict()
        return d


def _cache(entry, line, where) -> CacheGeometry:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a table like "
                          f"{{ size = \"512KiB\", assoc = 4 }}")
    try:
        return CacheGeometry(parse_size(entry["size"]), _int(entry["assoc"], "assoc"),
                             _int(line, "line"))
    except KeyError as e:
        raise ConfigError(f"{where}: missing {e.args[0]!r}") from None
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None


def _int(value, what) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(f"{what} must be an integer, got {value!r}")
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{what} must be an integer, got {value!r}") from None


def _values(*keys) -> dict:
    return dict.fromkeys(keys)


_CACHE = _values("size", "assoc")
# Every table and key a machine may have: anything else is a mistake,
# refused with its name (colorsim/describe/tomlcheck.py).
MACHINE_SCHEMA = {
    "description": None,
    "processor": _values("cpus", "clock"),
    "caches": {"line": None, "l1i": _CACHE, "l1d": _CACHE, "l2": _CACHE,
               "l2_choices": None, "replacement": _values("l1", "l2"),
               "inclusion": None, "instruction_fetch": None},
    "memory": _values("size", "latency"),
    "emulation": _values("icount_shift", "rr_slice_min", "rr_slice_max"),
    "timing": _values(*TIMING_FIELDS, *TIMING_EXTRA, "fetch", "branch_miss", "btb"),
    "network": _values("cards", "bandwidth", "latency", "dma"),
    "clients": _values("pcs", "clock", "cpi", "skew_us"),
}


def machine_from_table(name: str, t: dict) -> Machine:
    """Build a Machine from one table of machines.toml."""
    try:
        check_keys(t, MACHINE_SCHEMA, name)
        c = t["caches"]
        caches = CacheHierarchy(_cache(c["l1i"], c["line"], f"machine {name}, cache l1i"),
                                _cache(c["l1d"], c["line"], f"machine {name}, cache l1d"),
                                _cache(c["l2"], c["line"], f"machine {name}, cache l2"))
        proc = Processor(_int(t["processor"]["cpus"], "processor.cpus"),
                         parse_freq(t["processor"]["clock"]))
        mem = Memory(parse_size(t["memory"]["size"]),
                     parse_time_ns(t["memory"]["latency"]))
        emu = Emulation(_int(t["emulation"]["icount_shift"], "emulation.icount_shift"),
                        _int(t["emulation"].get("rr_slice_min", 0),
                             "emulation.rr_slice_min"),
                        _int(t["emulation"].get("rr_slice_max", 0),
                             "emulation.rr_slice_max"))
        choices = tuple(parse_size(s) for s in c.get("l2_choices", ()))
        repl = c.get("replacement", {})
        policy = CachePolicy(repl.get("l1", "lru"), repl.get("l2", "lru"),
                             c.get("inclusion", "non-inclusive"),
                             c.get("instruction_fetch", False))
        timing = None
        if "timing" in t:
            tt = t["timing"]
            timing = Timing(**{f: tt[f] for f in TIMING_FIELDS},
                            **{k: tt.get(k, d) for k, (_, d) in TIMING_EXTRA.items()},
                            fetch=tt.get("fetch", False),
                            branch_miss=tt.get("branch_miss", 0),
                            btb=tt.get("btb", 512))
        network = None
        if "network" in t:
            n = t["network"]
            network = Network(_int(n["cards"], "network.cards"),
                              parse_bandwidth(n["bandwidth"]),
                              int(parse_time_ns(n["latency"])),
                              n.get("dma", False))
        clients = (clients_from_table(t["clients"]) if "clients" in t
                   else None)
    except KeyError as e:
        raise ConfigError(f"machine {name}: missing {e.args[0]!r}") from None
    except (TypeError, AttributeError):
        raise ConfigError(f"machine {name}: a section has the wrong shape "
                          f"(see the other machines in machines.toml)") from None
    except ConfigError as e:
        msg = str(e)
        raise ConfigError(msg if msg.startswith(f"machine {name}")
                          else f"machine {name}: {msg}") from None
    return Machine(name, t.get("description", name), proc, caches, mem, emu,
                   choices, proc.cpus, policy, timing, network, clients)


_SECTION = re.compile(r"^\s*\[+\s*([A-Za-z0-9_-]+)")


def _sections(text: str) -> list:
    """(machine name, first line, text) per top-level machine, so that a
    syntax error in one machine's lines leaves the others readable."""
    parts, name, start, lines = [], None, 1, []
    for no, line in enumerate(text.splitlines(keepends=True), 1):
        m = _SECTION.match(line)
        if m and m.group(1) != name:
            parts.append((name, start, "".join(lines)))
            name, start, lines = m.group(1), no, []
        lines.append(line)
    parts.append((name, start, "".join(lines)))
    return parts


def _where(e: Exception, first_line: int) -> str:
    """'line L, column C: what' with L counted in the whole file."""
    m = re.search(r"^(.*?)\s*\(at line (\d+), column (\d+)\)", str(e))
    if not m:
        return str(e)
    return (f"line {int(m.group(2)) + first_line - 1}, column {m.group(3)}: "
            f"{m.group(1)}")


def machines_file() -> Path:
    return Path(os.environ.get(MACHINES_ENV) or MACHINES_FILE)


def read_machines(path: Path = None) -> tuple:
    """({name: Machine}, {name: error}) of a machines file.

    A machine whose table is wrong, or whose lines hold a TOML syntax
    error, is reported by name without hiding the others.
    """
    path = Path(path or machines_file())
    text = read_user_text(path)
    try:
        tables = {n: (1, t) for n, t in tomllib.loads(text).items()}
        broken = {}
    except tomllib.TOMLDecodeError as e:
        tables, broken = {}, {}
        twice = duplicate(e)            # a table given twice: say so, not
        dup = None                      # what its second half lacks
        if twice and twice[0]:
            dup = twice[0].split(".")[0]
            broken[dup] = f"{path}: {duplicate_message(e)}"
        for name, first, chunk in _sections(text):
            if dup and name == dup:
                continue
            try:
                for n, t in tomllib.loads(chunk).items():
                    tables[n] = (first, t)
            except tomllib.TOMLDecodeError as e:
                where = f"machine {name}" if name else "the preamble"
                msg = duplicate_message(e, first)
                broken[name or "?"] = (f"{path}: {msg}" if msg else
                                       f"{path}: TOML syntax error in {where}, "
                                       f"{_where(e, first)}")
    machines = {}
    for name, (_, t) in tables.items():
        if not isinstance(t, dict):
            broken[name] = f"{path}: {name} = ... must be a table [{name}]"
            continue
        try:
            machines[name] = machine_from_table(name, t)
        except ConfigError as e:
            broken[name] = f"{path}: {e}"
    return machines, broken


def load_machines(path: Path = None) -> dict:
    """Every good machine (see :func:`read_machines` for the broken ones)."""
    return read_machines(path)[0]


def get_machine(name: str, path: Path = None) -> Machine:
    """The machine ``name``; a mistake in another machine's table does not
    stop it, but is warned about (a typo never passes unseen)."""
    machines, broken = read_machines(path)
    if name in broken:
        raise ConfigError(broken[name])
    if name not in machines:
        raise ConfigError(f"unknown machine {name!r}; known machines: "
                          f"{', '.join(sorted(machines))}")
    for other, why in sorted(broken.items()):
        warnings.warn(f"{why} (machine {name} is not affected)", stacklevel=2)
    return machines[name]
