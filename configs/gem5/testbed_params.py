"""Map a colorsim gem5 run spec (JSON) to plain gem5 parameters.

This module is pure Python on purpose: gem5's ``run_fs.py`` imports it to
build the system, and the host side (``colorsim/engines/gem5.py``, the
tests, ``--dry-run``) imports it to show and check the very same numbers
without gem5 installed.  Nothing here imports ``m5`` or ``gem5``.

The spec is written by the host from a :class:`colorsim.describe.machine.Machine`
(``Machine.to_dict()``), so the machine's numbers exist once, in
``configs/machines.toml``.  What the machine table does not describe (cache
pipeline latencies, MSHRs, bus width, memory bandwidth) is listed in
:data:`DEFAULT_TIMING`, written into the spec by the host, and marked as
an assumption wherever it is shown.

The parameters are a plain dict with one entry per stdlib component
(``board``, ``processor``, ``caches``, ``membus``, ``p6_buses``, ``memory``, ``monitor``
for the memory-side view, ``bus_monitors`` for the per-CPU bus view)
plus the ``kernel`` and the ``console`` file name.
"""

from __future__ import annotations

import json
from enum import Enum

SCHEMA = 1
PAGE_SIZE = 4096
# gem5 prints SparseHistogram keys with 6 significant digits: keys at or
# above 1e6 come out in scientific notation and lose precision.
STATS_EXACT_LIMIT = 1_000_000
# The X86Board caps memory at 3 GB (I/O hole at 0xC0000000).
X86BOARD_MAX_MEMORY = 3 * 1024**3
# The kernel command line lives at 0x90000, at most 511 characters.
CMDLINE_MAX = 511
M5OPS_BASE = 0xFFFF0000
# gem5's X86 loader has no initrd: a user program's root-file-system image
# is loaded raw at this physical address (the workload's extras), and the
# kernel finds it from rootfs_base=/rootfs_size= on its command line
# (kernels/kernel/memory.c).  128 MiB: far above the kernel's image and
# below the smallest machine's memory.
ROOTFS_BASE = 0x8000000
CONSOLE_FILE = "board.pc.com_1.device"
# gem5's SnoopFilter default max_capacity; it panics ("snoop filter
# exceeded capacity") once it tracks more lines than capacity / line size.
SNOOP_FILTER_DEFAULT = 8 * 1024**2
IOCACHE_SIZE = 1024
MONITOR_NAME = "mem_monitor"
# One CommMonitor per CPU between its L2 and the memory bus: the bus view
# (every request an L2 puts on the bus, whoever serves it).  Stats are
# "<hierarchy>.l2_monitors<i>.readAddrDist" (no index with one CPU).
BUS_MONITOR_NAME = "l2_monitors"
# One PcRangeCacheProbe per measured CPU's L2 (the suite's gem5 patch
# 0002): the reads and read misses of loads from the run-queue loop.
RQLOOP_PROBE_NAME = "rqloop_probes"
# The measured CPUs' front-side buses (the P6 bus), one CoherentXBar per
# bus between the L2s and the chipset's crossbar ("membus").
P6_BUS_NAME = "p6buses"
# The machine's [timing] costs a P6 bus is made of (core clocks); the host
# copies them into the spec's "bus" entry.
BUS_COSTS = ("bus_addr", "bus_line", "inval", "hitm", "bus_cpus", "cross_bus")

# Timing that machines.toml does not describe.  Every value here is an
# assumption of this testbed, not a number from the paper; the host copies
# this table into each spec so a run records what it used.
DEFAULT_TIMING = {
    # P6 L1: 3-cycle load-to-use is modelled as 1+1+1 cycles.
    "l1": {"tag_latency": 1, "data_latency": 1, "response_latency": 1,
           "mshrs": 4, "tgts_per_mshr": 8},
    # Full-speed on-package/back-side L2 (PPro, PIII Xeon).
    "l2": {"tag_latency": 4, "data_latency": 4, "response_latency": 2,
           "mshrs": 8, "tgts_per_mshr": 8},
    # The P6 front-side bus is 64 bits wide: a 32-byte line takes 4 beats.
    "membus_width": 8,
    # SimpleMemory's own default; the real P6 bus was slower (a knob).
    "memory_bandwidth": "12.8GiB/s",
    "memory_latency_var": "0ns",
}


class SpecError(ValueError):
    """The run spec cannot describe a gem5 system we are willing to build."""


class CpuType(Enum):
    """CPU models a run may use; values are what ``--cpu`` accepts."""

    ATOMIC = "atomic"   # boot / fast-forward; no cache stalls
    TIMING = "timing"   # default for measured runs
    O3 = "o3"           # out-of-order; needs fetchBufferSize <= line

    @classmethod
    def from_str(cls, text: str) -> "CpuType":
        """Parse ``text``; the error lists the valid choices."""
        for member in cls:
            if member.value == str(text).lower():
                return member
        raise SpecError(f"unknown CPU type {text!r}; choose one of "
                        f"{', '.join(m.value for m in cls)}")

    @property
    def stdlib_name(self) -> str:
        """Member name of ``gem5.components.processors.cpu_types.CPUTypes``."""
        return self.name

    @property
    def gem5_class(self) -> str:
        return {"atomic": "X86AtomicSimpleCPU",
                "timing": "X86TimingSimpleCPU",
                "o3": "X86O3CPU"}[self.value]


class Phase(Enum):
    """What one gem5 invocation does (see configs/gem5/README.md)."""

    BOOT = "boot"        # atomic CPUs from power-on to the kernel's checkpoint
    MEASURE = "measure"  # restore the checkpoint, run the ROI, exit
    FULL = "full"        # no checkpoint: power-on to exit with one CPU type

    @classmethod
    def from_str(cls, text: str) -> "Phase":
        for member in cls:
            if member.value == str(text).lower():
                return member
        raise SpecError(f"unknown phase {text!r}; choose one of "
                        f"{', '.join(m.value for m in cls)}")


def page_offset_mask(line: int, page: int = PAGE_SIZE) -> int:
    """Address mask keeping the page offset at line granularity.

    ``0xFE0`` for 32-byte lines in 4 KiB pages: the CommMonitor's address
    distribution then counts bus transactions per line slot of a page,
    which is where the task structures' hot lines collide.
    """
    if not _is_pow2(line) or not _is_pow2(page) or line > page:
        raise SpecError(f"line {line} B and page {page} B must be powers of "
                        f"two with line <= page")
    return (page - 1) & ~(line - 1)


def load_spec(path) -> dict:
    """Read and validate the JSON spec the host wrote."""
    with open(path) as f:
        spec = json.load(f)
    validate_spec(spec)
    return spec


def validate_spec(spec: dict) -> None:
    """Refuse a spec early, with a message naming the value and the limit."""
    if spec.get("schema") != SCHEMA:
        raise SpecError(f"spec schema {spec.get('schema')!r} is not "
                        f"{SCHEMA}; rewrite it with this colorsim version")
    for key in ("machine", "kernel", "cpu_type", "timing"):
        if key not in spec:
            raise SpecError(f"spec has no {key!r} entry")
    m = spec["machine"]
    lines = {c["line"] for c in m["caches"].values()}
    if len(lines) != 1:
        raise SpecError(f"all cache levels must share one line size "
                        f"(gem5 has one system line size), got "
                        f"{sorted(lines)}")
    for level, c in m["caches"].items():
        sets = c["size"] // (c["assoc"] * c["line"])
        if not _is_pow2(sets) or sets * c["assoc"] * c["line"] != c["size"]:
            raise SpecError(f"{level}: {c['size']} B / ({c['assoc']} ways x "
                            f"{c['line']} B) is not a power-of-two number of "
                            f"sets, which gem5's set-associative tags need")
    if m["memory"]["size"] > X86BOARD_MAX_MEMORY:
        raise SpecError(f"memory {m['memory']['size']} B exceeds the "
                        f"X86Board's 3 GiB limit (I/O hole)")
    if m["processor"]["cpus"] < 1:
        raise SpecError("a machine needs at least one CPU")
    clients = spec.get("client_cpus", 0)
    if not isinstance(clients, int) or clients < 0:
        raise SpecError(f"client_cpus must be a whole number >= 0, got "
                        f"{clients!r}")
    client_hz = spec.get("client_clock_hz")
    if client_hz is not None and (
            isinstance(client_hz, bool) or not isinstance(client_hz, int)
            or not 10**6 <= client_hz <= 10**12 or not clients):
        raise SpecError(f"client_clock_hz must be a whole number of Hz "
                        f"1e6..1e12 on a machine with client CPUs, got "
                        f"{client_hz!r} with {clients} client CPUs")
    tsc = spec.get("tsc_period_ps")
    if tsc is not None and (isinstance(tsc, bool) or not isinstance(tsc, int)
                            or not 1 <= tsc <= 10**6):
        raise SpecError(f"tsc_period_ps must be a whole number 1..1000000, "
                        f"got {tsc!r}")
    rootfs = spec["kernel"].get("rootfs")
    if rootfs is not None and (
            rootfs["base"] + rootfs["size"] > m["memory"]["size"]):
        raise SpecError(f"the root file system's image ({rootfs['size']} B "
                        f"at {rootfs['base']:#x}) does not fit the machine's "
                        f"{m['memory']['size']} B of memory")
    cmdline = spec["kernel"]["cmdline"]
    if len(cmdline) > CMDLINE_MAX:
        raise SpecError(f"kernel command line is {len(cmdline)} characters; "
                        f"gem5's X86 loader allows {CMDLINE_MAX}")
    if "{" in cmdline or "}" in cmdline:
        raise SpecError("kernel command line must not contain braces: the "
                        "stdlib formats it with str.format()")
    CpuType.from_str(spec["cpu_type"])


def cache_params(level: str, geom: dict, timing: dict) -> dict:
    """gem5 ``Cache`` parameters for one private cache of every CPU."""
    lat = timing["l2" if level == "l2" else "l1"]
    return {
        "size": geom["size"],
        "assoc": geom["assoc"],
        "line": geom["line"],
        "sets": geom["size"] // (geom["assoc"] * geom["line"]),
        "prefetcher": None,            # NULL: no StridePrefetcher
        "writeback_clean": False,      # only dirty lines reach the bus
        "is_read_only": level == "l1i",
        "tag_latency": lat["tag_latency"],
        "data_latency": lat["data_latency"],
        "response_latency": lat["response_latency"],
        "mshrs": lat["mshrs"],
        "tgts_per_mshr": lat["tgts_per_mshr"],
    }


def gem5_params(spec: dict, cpu_type=None, phase=Phase.MEASURE) -> dict:
    """The whole system as plain gem5 parameters.

    :param spec: the validated JSON spec (see :func:`load_spec`).
    :param cpu_type: a :class:`CpuType` or its string; ``None`` takes the
        spec's.  The boot phase always uses atomic CPUs.
    :param phase: a :class:`Phase` or its string.
    :returns: a dict of dicts, one per stdlib component.
    """
    validate_spec(spec)
    phase = Phase.from_str(phase.value if isinstance(phase, Phase) else phase)
    if cpu_type is None:
        cpu_type = spec["cpu_type"]
    if not isinstance(cpu_type, CpuType):
        cpu_type = CpuType.from_str(cpu_type)
    if phase is Phase.BOOT:
        cpu_type = CpuType.ATOMIC
    m, timing = spec["machine"], spec["timing"]
    line = m["caches"]["l2"]["line"]
    clock_hz = int(m["processor"]["clock_hz"])
    mask = page_offset_mask(line)
    buses = bus_params(spec)
    ranges = rqloop_ranges(spec)
    if mask >= STATS_EXACT_LIMIT:
        raise SpecError(f"monitor mask {mask:#x} allows keys >= 1e6, which "
                        f"stats.txt prints inexactly")
    return {
        "phase": phase.value,
        "board": {"clk_freq": f"{clock_hz}Hz", "clock_hz": clock_hz,
                  "cache_line_size": line, "m5ops_base": M5OPS_BASE},
        "processor": {
            "cpu_type": cpu_type.value,
            "stdlib_cpu_type": cpu_type.stdlib_name,
            "cpu_class": cpu_type.gem5_class,
            # the measured CPUs, then the clients' (not measured: no
            # bus-view monitor, no counters; their traffic still crosses
            # the bus and reaches the memory-side monitor)
            "num_cores": int(m["processor"]["cpus"]) + spec.get("client_cpus", 0),
            "measured_cpus": int(m["processor"]["cpus"]),
            "isa": "X86",
            # O3 is fatal unless fetchBufferSize <= the line size.
            "fetch_buffer_size": (min(64, line) if cpu_type is CpuType.O3
                                  else None),
            "lapic_hz": clock_hz // 16,
            # the client cores' clock (the client model's PCs; their
            # local APIC timers stay at the server's), None: the board's
            "client_clock": (f"{spec['client_clock_hz']}Hz"
                             if spec.get("client_clock_hz") else None),
            # every core's TSC counts this period (a constant-rate TSC,
            # gem5 patch 0004), None: each core's own cycles
            "tsc_period": (f"{spec['tsc_period_ps']}ps"
                           if spec.get("tsc_period_ps") else None),
        },
        "caches": {level: cache_params(level, m["caches"][level], timing)
                   for level in ("l1i", "l1d", "l2")},
        "iocache": {"size": IOCACHE_SIZE, "assoc": 8, "prefetcher": None},
        "membus": membus_params(spec, buses),
        "p6_buses": buses,
        "memory": {
            "kind": "SingleChannelSimpleMemory",
            "size": int(m["memory"]["size"]),
            "latency": f"{dram_latency_ns(spec, buses):g}ns",
            "load_to_use": f"{float(m['memory']['latency_ns']):g}ns",
            "latency_var": timing["memory_latency_var"],
            "bandwidth": timing["memory_bandwidth"],
        },
        "monitor": {
            "name": MONITOR_NAME,
            "placement": "membus.mem_side_ports -> monitor -> memory port",
            "disable_addr_dists": False,
            "read_addr_mask": mask,
            "write_addr_mask": mask,
            "max_key": mask,
        },
        "bus_monitors": {
            "name": BUS_MONITOR_NAME,
            "count": int(m["processor"]["cpus"]),
            "placement": "l2caches[i].mem_side -> monitor -> "
                         + ("p6buses[bus of i].cpu_side_ports" if buses
                            else "membus.cpu_side_ports"),
            "disable_addr_dists": False,
            "read_addr_mask": mask,
            "write_addr_mask": mask,
            "max_key": mask,
        },
        "rqloop_probes": {
            "name": RQLOOP_PROBE_NAME,
            "count": int(m["processor"]["cpus"]) if ranges else 0,
            "placement": "l2caches[i] Hit and Miss probe points",
            "ranges": ranges,
        },
        "kernel": {"path": spec["kernel"]["path"],
                   "cmdline": spec["kernel"]["cmdline"],
                   "rootfs": spec["kernel"].get("rootfs")},
        "console": CONSOLE_FILE,
    }


def bus_params(spec: dict):
    """The measured CPUs' P6 front-side bus(es), from the machine's
    [timing] costs (the spec's ``bus`` entry); ``None`` for a machine
    without them (its L2s then share one gem5 SystemXBar at core clock).

    Every number is the machine's, converted from core clocks to bus
    clocks; none is chosen here.  The bus clock: a line crosses the 64-bit
    data bus in ``line / width`` beats, one per bus clock, and takes
    ``bus_line`` core clocks.  Then, in bus clocks: the request phase
    (``bus_addr``) holds the address bus (``header_latency``, the request
    layer's occupancy) and delays the request (``frontend_latency``); the
    snoop phase (``inval - bus_addr``) delays a snooped cache's data
    (``snoop_response_latency``); the data phase is the line's beats on a
    single response layer that every CPU's fills share (patch 0003).
    A HITM transfer then takes request + snoop + data phases, which must
    be the machine's ``hitm``.  ``bus_cpus`` CPUs per bus (0: all on one);
    ``cross_bus`` is the chipset's hop between buses, charged to a snoop
    response that crosses (the membus's ``snoop_response_latency``).
    """
    b = spec.get("bus")
    if not b:
        return None
    missing = [k for k in BUS_COSTS if k not in b]
    if missing:
        raise SpecError(f"the spec's bus entry lacks {', '.join(missing)}")
    m, timing = spec["machine"], spec["timing"]
    line, width = m["caches"]["l2"]["line"], timing["membus_width"]
    beats = line // width
    if beats < 1 or beats * width != line:
        raise SpecError(f"a {line}-byte line is not a whole number of "
                        f"{width}-byte bus beats")
    ratio = b["bus_line"] / beats          # core clocks per bus clock
    clock_hz = int(m["processor"]["clock_hz"])
    period_ps = round(ratio * 1e12 / clock_hz)

    def bus_clocks(field, core_clocks):
        n = core_clocks / ratio
        if core_clocks < 0 or abs(n - round(n)) > 1e-9:
            raise SpecError(f"timing.{field}: {core_clocks:g} core clocks "
                            f"is not a whole number of bus clocks "
                            f"({ratio:g} core clocks each)")
        return int(round(n))

    request = bus_clocks("bus_addr", b["bus_addr"])
    snoop = bus_clocks("inval - bus_addr", b["inval"] - b["bus_addr"])
    data = bus_clocks("bus_line", b["bus_line"])
    hitm = bus_clocks("hitm", b["hitm"])
    if hitm != request + snoop + data:
        raise SpecError(f"timing.hitm is {hitm} bus clocks, but request + "
                        f"snoop + data phases make {request + snoop + data}")
    cpus = int(m["processor"]["cpus"])
    per_bus = b["bus_cpus"] if 0 < b["bus_cpus"] < cpus else cpus
    return {
        "name": P6_BUS_NAME, "kind": "CoherentXBar",
        "count": -(-cpus // per_bus), "cpus_per_bus": per_bus,
        "clock": f"{period_ps}ps", "clock_hz": round(1e12 / period_ps),
        "width": width, "header_latency": request,
        "frontend_latency": request, "forward_latency": 0,
        "response_latency": 0, "snoop_response_latency": snoop,
        "single_response_layer": True,
        "cross_bus": bus_clocks("cross_bus", b["cross_bus"]),
        "sources": {
            "clock": f"bus_line {b['bus_line']} core clocks / {beats} beats "
                     f"= {ratio:g} core clocks per bus clock",
            "width": f"{width} B: the P6's 64-bit data bus",
            "header_latency": f"request phase: bus_addr {b['bus_addr']} / "
                              f"{ratio:g}",
            "frontend_latency": "the request phase, as header_latency",
            "snoop_response_latency": f"snoop phase: (inval {b['inval']} - "
                                      f"bus_addr {b['bus_addr']}) / {ratio:g}",
            "data phase": f"{beats} beats of {width} B on one response layer "
                          f"(bus_line {b['bus_line']} / {ratio:g})",
            "hitm": f"hitm {b['hitm']} / {ratio:g} = request + snoop + data",
            "buses": (f"bus_cpus {b['bus_cpus']}: " if b["bus_cpus"] else
                      "bus_cpus 0: ") + f"{per_bus} CPUs per bus",
            "cross_bus": f"cross_bus {b['cross_bus']} / {ratio:g}, the "
                         f"chipset's snoop_response_latency",
        },
    }


def membus_params(spec: dict, buses) -> dict:
    """The system crossbar below the P6 buses (the chipset and memory
    controller; clients and I/O sit on it directly).  At the bus clock,
    adding no latency of its own but the crossing between buses, without
    a snoop filter; without P6 buses, gem5's SystemXBar as it comes."""
    d = {"kind": "SystemXBar", "width": spec["timing"]["membus_width"],
         "snoop_filter_max_capacity": snoop_filter_capacity(
             spec["machine"], spec.get("client_cpus", 0))}
    if buses:
        # No snoop filter: it tracks one requestor per port, and a bus
        # port carries several L2s (two may ask for one line at once,
        # which gem5's filter refuses as a "double request").  The chipset
        # broadcasts snoops to every bus, as a P6 bus does to its agents.
        d.update(clock=buses["clock"], frontend_latency=0, forward_latency=0,
                 response_latency=0,
                 snoop_response_latency=buses["cross_bus"],
                 snoop_filter=False)
    return d


def dram_latency_ns(spec: dict, buses) -> float:
    """SimpleMemory's latency: the machine's load-to-use latency
    (memory.latency) less what the caches and the bus already charge on an
    idle machine (L1 and L2 tag and response latencies; the request phase
    and the data beats), so that the bus's phases are not counted twice."""
    total = float(spec["machine"]["memory"]["latency_ns"])
    if not buses:
        return total
    clock_hz = int(spec["machine"]["processor"]["clock_hz"])
    t = spec["timing"]
    caches = sum(t[lvl]["tag_latency"] + t[lvl]["response_latency"]
                 for lvl in ("l1", "l2")) * 1e9 / clock_hz
    line = spec["machine"]["caches"]["l2"]["line"]
    bus = (buses["frontend_latency"] + line // buses["width"]) \
        * 1e9 / buses["clock_hz"]
    dram = round(total - caches - bus, 3)
    if dram <= 0:
        raise SpecError(f"memory.latency {total:g} ns is below what the "
                        f"caches and the bus charge on their own "
                        f"({caches + bus:g} ns)")
    return dram


def rqloop_ranges(spec: dict) -> list:
    """The run-queue loop's instruction ranges ``[[lo, hi), ...]`` from the
    spec's kernel entry (the host copies them from the built kernel's
    layout.json); none when the kernel was not built yet (a dry run)."""
    ranges = spec["kernel"].get("rqloop") or []
    for r in ranges:
        if len(r) != 2 or not 0 <= r[0] < r[1]:
            raise SpecError(f"run-queue loop range {r!r} is not [lo, hi) "
                            f"with lo < hi")
    return [[int(lo), int(hi)] for lo, hi in ranges]


def snoop_filter_capacity(machine: dict, client_cpus: int = 0) -> int:
    """Bytes the membus snoop filter may track: twice every cache above it.

    The filter is exact (a map of lines), so its capacity changes no
    timing; gem5's 8 MiB default is exactly eight 1 MiB L2s of 32-byte
    lines, and the L1 lines the L2s no longer hold would overflow it.
    """
    caches = machine["caches"]
    per_cpu = sum(caches[level]["size"] for level in ("l1i", "l1d", "l2"))
    cores = int(machine["processor"]["cpus"]) + client_cpus
    total = cores * per_cpu + IOCACHE_SIZE
    mib = 1024**2
    return max(SNOOP_FILTER_DEFAULT, -(-2 * total // mib) * mib)


def expected_cache_table(params: dict) -> dict:
    """``{level: (size, assoc, line)}`` that the built system must match."""
    return {level: (c["size"], c["assoc"], c["line"])
            for level, c in params["caches"].items()}


def _is_pow2(n) -> bool:
    return isinstance(n, int) and n > 0 and n & (n - 1) == 0
