"""Exercise configs/gem5/ against stand-in gem5 modules.

gem5 cannot be installed here, so small fakes of the stdlib classes the
configuration uses let the composition, wiring and exit-event code run.
The fakes copy the *interfaces* of gem5 v24.0.0.1 as read from its sources
(constructor keywords, required parameters, port names, defaults, the order
in which the board calls its components), so a misspelt keyword, a wrong
port name or an out-of-order call fails here first:

* ``src/mem/cache/Cache.py`` (BaseCache: required size, assoc, tag/data/
  response latency, mshrs, tgts_per_mshr; ``prefetcher`` defaults to NULL),
* ``src/mem/CommMonitor.py`` (ports ``cpu_side_port``/``mem_side_port``),
* ``src/mem/XBar.py`` (SystemXBar ``width``, ``snoop_filter.max_capacity``),
* ``src/python/gem5/components/...`` (X86Board, SimpleProcessor,
  BaseCPUCore, SingleChannelSimpleMemory, KernelDiskWorkload),
* ``src/python/gem5/simulate/{simulator,exit_event}.py``.

This checks our code against those interfaces, not gem5's behaviour.
"""

import importlib.util
import json
import sys
import types
from enum import Enum
from pathlib import Path

import pytest

from colorsim import ROOT
from colorsim.run.engines.gem5 import Gem5Engine
from colorsim.describe.machine import load_machines
from colorsim.describe.runspec import RunSpec, Workload
from colorsim.describe.variants import parse_variant

CONFIG = ROOT / "configs" / "gem5"


class NullSimObject:
    """m5.params.NULL (one instance)."""


NULL = NullSimObject()


class Port:
    def __init__(self, owner, name):
        self.owner, self.name, self.peers = owner, name, []


class SimObj:
    """A SimObject with a closed set of parameters and ports.

    Unknown keywords or attributes raise, as gem5 does ("has no parameter").
    Ports are created on first use; assigning a port to a port binds them.
    """

    PARAMS = {}            # name -> default (REQUIRED: must be given)
    PORTS = ()
    CHILDREN = ()

    def __init__(self, **kw):
        object.__setattr__(self, "_v", dict(self.PARAMS))
        for k, v in kw.items():
            setattr(self, k, v)
        missing = [k for k, v in self._v.items() if v is REQUIRED]
        if missing:
            raise TypeError(f"{type(self).__name__} needs {missing}")

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._v:
            return self._v[name]
        if name in self.PORTS:
            port = Port(self, name)
            object.__setattr__(self, name, port)
            return port
        raise AttributeError(f"{type(self).__name__} has no {name!r}")

    def __setattr__(self, name, value):
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        elif name in self.PORTS:
            if not isinstance(value, Port):
                raise TypeError(f"{name} needs a port")
            cur = getattr(self, name)
            cur.peers.append(value)
            value.peers.append(cur)
        elif name in self._v:
            self._v[name] = value
        elif isinstance(value, (SimObj, list)) or name in self.CHILDREN:
            object.__setattr__(self, name, value)       # a child
        else:
            raise AttributeError(f"{type(self).__name__} has no parameter "
                                 f"{name!r}")


REQUIRED = object()


class StridePrefetcher(SimObj):
    pass


class Cache(SimObj):
    PARAMS = {"size": REQUIRED, "assoc": REQUIRED, "tag_latency": REQUIRED,
              "data_latency": REQUIRED, "response_latency": REQUIRED,
              "mshrs": REQUIRED, "tgts_per_mshr": REQUIRED,
              "write_buffers": 8, "demand_mshr_reserve": 1,
              "is_read_only": False, "prefetcher": NULL,
              "writeback_clean": False, "clusivity": "mostly_incl",
              "addr_ranges": ["AllMemory"], "sequential_access": False,
              "clk_domain": "Parent.clk_domain"}
    PORTS = ("cpu_side", "mem_side")

    def __init__(self, **kw):
        super().__init__(**kw)
        self._v["size"] = int(str(self._v["size"]).rstrip("B"))


class SnoopFilter(SimObj):
    PARAMS = {"lookup_latency": 1, "max_capacity": "8MiB"}


class VoltageDomain(SimObj):
    PARAMS = {"voltage": "1.0V"}


class SrcClockDomain(SimObj):
    PARAMS = {"clock": REQUIRED, "voltage_domain": REQUIRED,
              "domain_id": -1, "init_perf_level": 0}


class DerivedClockDomain(SimObj):
    PARAMS = {"clk_domain": REQUIRED, "clk_divider": REQUIRED}


class X86ISA(SimObj):
    """X86ISA.py; tsc_period is the suite's patch 0004."""
    PARAMS = {"tsc_period": "0ns", "vendor_string": "HygonGenuine"}


class X86LocalApic(SimObj):
    """X86LocalApic.py: the timer's clock is the CPU's / 16 by default."""
    PARAMS = {"clk_domain": "DerivedClockDomain(Parent.clk_domain, 16)",
              "int_latency": "1ns", "pio_latency": "100ns"}


# BaseXBar and CoherentXBar (XBar.py): no defaults for the latencies and
# the width; single_response_layer is the suite's patch 0003.
COHERENT_XBAR = {"width": REQUIRED, "frontend_latency": REQUIRED,
                 "forward_latency": REQUIRED, "response_latency": REQUIRED,
                 "header_latency": 1, "snoop_response_latency": REQUIRED,
                 "snoop_filter": NULL, "single_response_layer": False,
                 "point_of_coherency": False, "point_of_unification": False,
                 "clk_domain": "Parent.clk_domain",
                 "max_outstanding_snoops": 512,
                 "max_routing_table_size": 512}


class CoherentXBar(SimObj):
    PARAMS = COHERENT_XBAR
    PORTS = ("cpu_side_ports", "mem_side_ports", "default")
    CHILDREN = ("badaddr_responder",)


class _XBar(CoherentXBar):
    def __init__(self, **kw):
        super().__init__(**kw)
        self._v["snoop_filter"] = SnoopFilter()


class SystemXBar(_XBar):
    PARAMS = dict(COHERENT_XBAR, width=16, frontend_latency=3,
                  forward_latency=4, response_latency=2,
                  snoop_response_latency=4, point_of_coherency=True,
                  point_of_unification=True)


class L2XBar(_XBar):
    PARAMS = dict(COHERENT_XBAR, width=32, frontend_latency=1,
                  forward_latency=0, response_latency=1,
                  snoop_response_latency=1, point_of_unification=True)


class IOXBar(SimObj):
    PARAMS = {"width": 16}
    PORTS = ("cpu_side_ports", "mem_side_ports", "default")


class BadAddr(SimObj):
    PORTS = ("pio",)


class CommMonitor(SimObj):
    PARAMS = {"sample_period": "1ms", "read_addr_mask": "MaxAddr",
              "write_addr_mask": "MaxAddr", "disable_addr_dists": True,
              "disable_latency_hists": False}
    PORTS = ("cpu_side_port", "mem_side_port")


class PcRangeCacheProbe(SimObj):
    """The suite's own probe (scripts/gem5-patches/0002): its
    PcRangeCacheProbe.py has two parameters, both required."""
    PARAMS = {"cache": REQUIRED, "pc_ranges": REQUIRED}


class AddrRange:
    """m5.objects.AddrRange(start, end): end exclusive."""
    def __init__(self, start, end):
        self.start, self.end = start, end


class CPU(SimObj):
    """BaseCPU: createThreads() (in BaseCPUCore's constructor) makes the
    ISA objects, createInterruptController() the local APIC."""
    PARAMS = {"clk_domain": "Parent.clk_domain"}
    PORTS = ("icache_port", "dcache_port")
    CHILDREN = ("isa", "interrupts")

    def __init__(self, **kw):
        super().__init__(**kw)
        self.isa = [X86ISA()]


class O3CPU(CPU):
    PARAMS = {**CPU.PARAMS, "fetchBufferSize": 64}


class SimpleCore:
    """BaseCPUCore: the BaseCPU is ``core``; the connect_* signatures."""

    def __init__(self, cpu_type):
        self.core = O3CPU() if cpu_type.name == "O3" else CPU()
        self.links = {}

    def connect_icache(self, port):
        self.core.icache_port = port

    def connect_dcache(self, port):
        self.core.dcache_port = port

    def connect_walker_ports(self, port1, port2):
        self.links["walkers"] = (port1, port2)

    def connect_interrupt(self, interrupt_requestor=None,
                          interrupt_responce=None):
        self.core.interrupts = [X86LocalApic()]   # made only here
        self.links["interrupt"] = (interrupt_requestor, interrupt_responce)


class SimpleProcessor:
    def __init__(self, cpu_type, num_cores, isa):
        self.cpu_type, self.isa = cpu_type, isa
        self.cores = [SimpleCore(cpu_type) for _ in range(num_cores)]

    def get_cores(self):
        return self.cores

    def get_num_cores(self):
        return len(self.cores)

    def get_isa(self):
        return self.isa

    def incorporate_processor(self, board):
        board.mem_mode = "atomic" if self.cpu_type.name == "ATOMIC" \
            else "timing"


class SimpleMemory(SimObj):
    PARAMS = {"latency": "30ns", "latency_var": "0ns",
              "bandwidth": "12.8GiB/s", "range": None}
    PORTS = ("port",)


class SingleChannelSimpleMemory(SimObj):
    CHILDREN = ("module",)

    def __init__(self, latency, latency_var, bandwidth, size):
        super().__init__()
        self.module = SimpleMemory(latency=latency, latency_var=latency_var,
                                   bandwidth=bandwidth)
        self._size = int(size.rstrip("B"))

    def get_size(self):
        return self._size

    def set_memory_range(self, ranges):
        assert len(ranges) == 1 and ranges[0] == ("range", self._size)
        self.module.range = ranges[0]

    def get_mem_ports(self):
        return [(self.module.range, self.module.port)]

    def incorporate_memory(self, board):
        pass


class AbstractClassicCacheHierarchy(SimObj):
    """Its base sets ``_root`` in __init__; subclasses provide the rest."""

    def __init__(self):
        super().__init__()
        self._root = "CacheNode(root)"

    def is_ruby(self):
        return False

    def incorporate_cache(self, board):
        raise NotImplementedError

    def get_mem_side_port(self):
        raise NotImplementedError

    def get_cpu_side_port(self):
        raise NotImplementedError


class X86Board(SimObj):
    """The v24 order: ranges and I/O set-up in the constructor (which takes
    the hierarchy's membus ports), components connected in
    ``_pre_instantiate`` (memory, caches, processor)."""

    PARAMS = {"cache_line_size": 64, "mem_mode": "atomic",
              "exit_on_work_items": False, "m5ops_base": 0}
    PORTS = ("system_port",)
    CHILDREN = ("processor", "memory", "cache_hierarchy", "bridge",
                "apicbridge", "iobus", "clk_domain")

    def __init__(self, clk_freq, processor, memory, cache_hierarchy):
        super().__init__()
        self._clk_freq = clk_freq
        self.clk_domain = SrcClockDomain(clock=clk_freq,
                                         voltage_domain=VoltageDomain())
        self.processor, self.memory = processor, memory
        self.cache_hierarchy = cache_hierarchy
        self._checkpoint = None
        # _setup_memory_ranges
        memory.set_memory_range([("range", memory.get_size())])
        self.mem_ranges = ["data", "io"]
        # _setup_board -> _setup_io_devices
        self.iobus = IOXBar()
        self._bridge_peer = cache_hierarchy.get_mem_side_port()
        self._apicbridge_peer = cache_hierarchy.get_cpu_side_port()
        self.m5ops_base = 0xFFFF0000

    def get_processor(self):
        return self.processor

    def get_memory(self):
        return self.memory

    def get_cache_hierarchy(self):
        return self.cache_hierarchy

    def get_cache_line_size(self):
        return self.cache_line_size

    def connect_system_port(self, port):
        self.system_port = port

    def has_coherent_io(self):
        return True

    def get_mem_side_coherent_io_port(self):
        return self.iobus.mem_side_ports

    def _pre_instantiate(self, full_system=None):
        self.memory.incorporate_memory(self)
        self.cache_hierarchy.incorporate_cache(self)
        self.processor.incorporate_processor(self)

    def set_kernel_disk_workload(self, kernel, disk_image, bootloader=None,
                                 disk_device=None, readfile=None,
                                 readfile_contents=None, kernel_args=None,
                                 exit_on_work_items=True, checkpoint=None):
        self._object_file = kernel.get_local_path()
        self._command_line = " ".join(kernel_args).format(
            root_value="/dev/hda" + (disk_image.get_root_partition() or ""),
            disk_device="/dev/hda")
        self._disk_file = disk_image.get_local_path()
        self.exit_on_work_items = exit_on_work_items
        if checkpoint:
            if not isinstance(checkpoint, Path):
                raise Exception("Checkpoints must be passed as a Path or an "
                                "CheckpointResource.")
            self._checkpoint = checkpoint


class FileResource:
    def __init__(self, local_path, id=None, resource_version=None,
                 description=None, source=None, downloader=None, **kwargs):
        self._local_path = local_path

    def get_local_path(self):
        if not Path(self._local_path).is_file():
            raise Exception(f"FileResource path specified, "
                            f"'{self._local_path}', is not a file.")
        return self._local_path


class KernelResource(FileResource):
    pass


class DiskImageResource(FileResource):
    def __init__(self, local_path, root_partition=None, **kwargs):
        super().__init__(local_path, **kwargs)
        self._root_partition = root_partition

    def get_root_partition(self):
        return self._root_partition


def overrides(base):
    def check(method):
        assert method.__name__ in dir(base), method.__name__
        return method
    return check


class ExitEvent(Enum):
    """gem5/simulate/exit_event.py (names and cause strings used here)."""

    EXIT = "exit"
    WORKBEGIN = "workbegin"
    WORKEND = "workend"
    SWITCHCPU = "switchcpu"
    FAIL = "fail"
    CHECKPOINT = "checkpoint"
    SCHEDULED_TICK = "scheduled tick exit"
    MAX_TICK = "max tick"
    USER_INTERRUPT = "user interupt"
    SIMPOINT_BEGIN = "simpoint begins"
    MAX_INSTS = "number of instructions reached"


CAUSES = {"m5_exit instruction encountered": ExitEvent.EXIT,
          "m5_fail instruction encountered": ExitEvent.FAIL,
          "checkpoint": ExitEvent.CHECKPOINT,
          "simulate() limit reached": ExitEvent.MAX_TICK}
MAX_TICK = 2**64 - 1


class Simulator:
    """The v24 constructor and run loop, driven by a scripted exit list."""

    script = []            # exit causes, consumed by run()

    def __init__(self, board, full_system=None, on_exit_event=None,
                 expected_execution_order=None, checkpoint_path=None,
                 max_ticks=MAX_TICK, id=None):
        self.board, self.handlers = board, dict(on_exit_event or {})
        self.max_ticks, self.tick, self.cause = max_ticks, 0, None

    def run(self, max_ticks=None):
        if max_ticks:
            self.max_ticks = max_ticks
        self.board._pre_instantiate()
        self.restored_from = self.board._checkpoint
        while True:
            self.cause = self.script.pop(0)
            self.tick += 1000
            handler = self.handlers.get(CAUSES[self.cause])
            stop = next(handler) if handler else \
                CAUSES[self.cause] in (ExitEvent.EXIT, ExitEvent.FAIL,
                                       ExitEvent.MAX_TICK)
            if stop:
                return

    def save_checkpoint(self, checkpoint_dir):
        d = Path(checkpoint_dir)
        d.mkdir()                       # gem5: only the last component
        (d / "m5.cpt").write_text("[root]\n")

    def get_last_exit_event_cause(self):
        return self.cause

    def get_current_tick(self):
        return self.tick


def _install_fakes(monkeypatch, outdir="."):
    mods = {
        "m5": {"options": types.SimpleNamespace(outdir=str(outdir)),
               "MaxTick": MAX_TICK},
        "m5.objects": dict(
            AddrRange=AddrRange, BadAddr=BadAddr, Cache=Cache,
            CoherentXBar=CoherentXBar, CommMonitor=CommMonitor,
            DerivedClockDomain=DerivedClockDomain,
            L2XBar=L2XBar, PcRangeCacheProbe=PcRangeCacheProbe, Port=Port,
            SrcClockDomain=SrcClockDomain, SystemXBar=SystemXBar,
            VoltageDomain=VoltageDomain),
        "m5.params": {"NULL": NULL, "Port": Port},
        "gem5": {}, "gem5.components": {},
        "gem5.components.boards": {},
        "gem5.components.boards.abstract_board": {"AbstractBoard": X86Board},
        "gem5.components.boards.x86_board": {"X86Board": X86Board},
        "gem5.components.cachehierarchies": {},
        "gem5.components.cachehierarchies.classic": {},
        "gem5.components.cachehierarchies.classic."
        "abstract_classic_cache_hierarchy": {
            "AbstractClassicCacheHierarchy": AbstractClassicCacheHierarchy},
        "gem5.components.memory": {},
        "gem5.components.memory.simple": {
            "SingleChannelSimpleMemory": SingleChannelSimpleMemory},
        "gem5.components.processors": {},
        "gem5.components.processors.cpu_types": {"CPUTypes": Enum(
            "CPUTypes", "ATOMIC KVM O3 TIMING MINOR")},
        "gem5.components.processors.simple_processor": {
            "SimpleProcessor": SimpleProcessor},
        "gem5.isas": {"ISA": Enum("ISA", "X86 ARM RISCV")},
        "gem5.resources": {},
        "gem5.resources.resource": {"DiskImageResource": DiskImageResource,
                                    "KernelResource": KernelResource},
        "gem5.simulate": {},
        "gem5.simulate.exit_event": {"ExitEvent": ExitEvent},
        "gem5.simulate.simulator": {"Simulator": Simulator},
        "gem5.utils": {}, "gem5.utils.override": {"overrides": overrides},
    }
    for name, attrs in mods.items():
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, mod)
    # run_fs.py imports these two by their plain names and puts its own
    # directory on sys.path; both are undone after the test.
    monkeypatch.setattr(sys, "path", list(sys.path))
    _load(monkeypatch, "testbed_params", "testbed_params.py")
    return _load(monkeypatch, "testbed_components", "testbed_components.py")


def _load(monkeypatch, name, filename):
    spec = importlib.util.spec_from_file_location(name, CONFIG / filename)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def tc(monkeypatch, tmp_path):
    return _install_fakes(monkeypatch, tmp_path)


def _params(name, cpu="timing", l2=None):
    m = load_machines()[name]
    if l2:
        m = m.with_l2(l2)
    spec = RunSpec(m, parse_variant("vanilla", m), Workload(), engine="gem5")
    return Gem5Engine(cpu=cpu).params(spec)


@pytest.mark.parametrize("name,l2", [("ppro4", "256KiB"), ("ppro4", "1MiB"),
                                     ("piii8", None)])
def test_build_and_wire(tc, name, l2):
    prm = _params(name, l2=l2)
    board = tc.build_board(prm)
    h = board.cache_hierarchy
    # The board took the membus ports while it was being constructed.
    assert board._bridge_peer is h.membus.mem_side_ports
    assert board._apicbridge_peer is h.membus.cpu_side_ports
    assert board.cache_line_size == 32
    board._pre_instantiate()                   # runs check_hierarchy too
    n = prm["processor"]["num_cores"]
    for level in ("l1i", "l1d", "l2"):
        caches = getattr(h, f"{level}caches")
        assert len(caches) == n
        for c in caches:
            assert (c.size, c.assoc) == (prm["caches"][level]["size"],
                                         prm["caches"][level]["assoc"])
            assert c.prefetcher is NULL and c.writeback_clean is False
    assert all(c.is_read_only for c in h.l1icaches)
    mon = h.mem_monitor
    assert mon.read_addr_mask == mon.write_addr_mask == 0xFE0
    assert mon.disable_addr_dists is False
    assert board.memory.module.port in mon.mem_side_port.peers
    assert h.membus.mem_side_ports in mon.cpu_side_port.peers
    assert h.membus.mem_side_ports not in board.memory.module.port.peers
    core = board.processor.get_cores()[0]
    # The CPU's data port and both page walkers share a bus in front of
    # the L1D: walks load through the L1D, as on the P6.
    assert h.l1dbuses[0].cpu_side_ports in core.core.dcache_port.peers
    assert h.l1dcaches[0].cpu_side in h.l1dbuses[0].mem_side_ports.peers
    assert h.l1dcaches[0].mem_side in h.l2buses[0].cpu_side_ports.peers
    # The bus view: L2 -> its own monitor -> its P6 bus, for every CPU;
    # the buses on the membus.
    assert h.l2caches[0].mem_side not in h.membus.cpu_side_ports.peers
    assert len(h.l2_monitors) == n
    per_bus = 4
    assert len(h.p6buses) == n // per_bus
    for i, bmon in enumerate(h.l2_monitors):
        assert bmon.cpu_side_port.peers == [h.l2caches[i].mem_side]
        assert bmon.mem_side_port in h.p6buses[i // per_bus].cpu_side_ports.peers
        assert bmon.mem_side_port not in h.membus.cpu_side_ports.peers
    for bus in h.p6buses:
        assert bus.mem_side_ports in h.membus.cpu_side_ports.peers
        assert bus.single_response_layer is True and bus.width == 8
        assert bus.snoop_filter is NULL and bus.point_of_coherency is False
        assert bmon.read_addr_mask == bmon.write_addr_mask == 0xFE0
        assert bmon.disable_addr_dists is False
        assert bmon.disable_latency_hists is True
    assert core.links["interrupt"] == (h.membus.mem_side_ports,
                                       h.membus.cpu_side_ports)
    assert core.links["walkers"] == (h.l1dbuses[0].cpu_side_ports,) * 2
    assert h.iocache.prefetcher is NULL
    assert board.iobus.mem_side_ports in h.iocache.cpu_side.peers
    assert h.membus.cpu_side_ports in board.system_port.peers
    # Below the P6 buses the chipset has no snoop filter (a bus port
    # carries several L2s, which gem5's filter refuses).
    assert h.membus.snoop_filter is NULL
    assert h.membus.width == prm["membus"]["width"]


def test_client_cpus_are_cores_without_a_bus_view(tc):
    """A web run's client CPUs on gem5: cores after the measured ones, with
    caches of their own straight on the bus (no bus-view monitor); the
    snoop filter covers their caches too."""
    m = load_machines()["ppro4"]
    spec = RunSpec(m, parse_variant("vanilla", m), Workload(program="/bin/web"),
                   engine="gem5")
    assert spec.workload.client_cpus == 3
    prm = Gem5Engine(cpu="timing").params(spec)
    assert prm["processor"]["num_cores"] == 7
    assert prm["processor"]["measured_cpus"] == prm["bus_monitors"]["count"] == 4
    board = tc.build_board(prm)
    board._pre_instantiate()
    h = board.cache_hierarchy
    assert len(h.l2caches) == 7 and len(h.l2_monitors) == 4
    for i in range(4):
        assert h.l2caches[i].mem_side not in h.membus.cpu_side_ports.peers
    for i in range(4, 7):
        assert h.l2caches[i].mem_side in h.membus.cpu_side_ports.peers
    above = 7 * sum(prm["caches"][lvl]["size"] for lvl in ("l1i", "l1d", "l2"))
    assert prm["membus"]["snoop_filter_max_capacity"] >= 2 * above
    h.l2_monitors = h.l2_monitors[:3]
    with pytest.raises(AssertionError, match="3 bus-view monitors for 4 measured"):
        tc.check_hierarchy(h, board)


def test_client_cores_run_at_the_client_models_clock(tc, monkeypatch):
    """A web run's client cores run at the client model's clock (the PCs
    each stands for), their local APIC timers at the board's clock / 16 as
    the kernel is told; the measured cores keep the board's clock; every
    core's TSC counts ns (the testbed kernel's clock, gem5 patch 0004)."""
    monkeypatch.setattr(Gem5Engine, "has_constant_tsc", lambda self: True)
    m = load_machines()["ppro4"]
    spec = RunSpec(m, parse_variant("vanilla", m),
                   Workload(program="/bin/web", client_cpus=4), engine="gem5")
    c = m.clients
    hz = round(c.clock_hz * c.pcs / (3 * c.cpi))     # 3 CPUs run clients
    assert spec.client_core_hz == hz
    prm = Gem5Engine(cpu="timing").params(spec)
    assert prm["processor"]["client_clock"] == f"{hz}Hz"
    assert prm["processor"]["tsc_period"] == "1000ps"
    board = tc.build_board(prm)
    board._pre_instantiate()
    cores = [c.core for c in board.processor.get_cores()]
    assert len(cores) == 8
    for i, cpu in enumerate(cores):
        assert [isa.tsc_period for isa in cpu.isa] == ["1000ps"]
        apic = cpu.interrupts[0].clk_domain
        if i < 4:
            assert cpu.clk_domain == "Parent.clk_domain"
            assert isinstance(apic, str)            # the CPU's / 16
        else:
            assert cpu.clk_domain.clock == f"{hz}Hz"
            assert apic.clk_domain is board.clk_domain
            assert apic.clk_divider == 16
        # its caches and their buses at its clock
        h = board.cache_hierarchy
        for part in (h.l1icaches, h.l1dcaches, h.l1dbuses, h.l2buses,
                     h.l2caches):
            assert part[i].clk_domain is cpu.clk_domain


def test_a_run_without_the_model_keeps_the_cores_clocks(tc, monkeypatch):
    """No client model (or the hold, or no wire) and no client clock; a
    gem5 without patch 0004 and a kernel that calibrates its TSC (Linux)
    get no TSC period; the spec refuses a client clock without client
    CPUs."""
    monkeypatch.setattr(Gem5Engine, "has_constant_tsc", lambda self: False)
    m = load_machines()["ppro4"]
    spec = RunSpec(m.with_clients(False), parse_variant("vanilla", m),
                   Workload(program="/bin/web"), engine="gem5")
    assert spec.client_core_hz is None
    d = Gem5Engine(cpu="timing").spec_dict(spec)
    assert d["client_clock_hz"] is None and d["tsc_period_ps"] is None
    prm = sys.modules["testbed_params"].gem5_params(d)
    assert prm["processor"]["client_clock"] is None
    board = tc.build_board(prm)
    board._pre_instantiate()
    for cpu in (c.core for c in board.processor.get_cores()):
        assert cpu.clk_domain == "Parent.clk_domain"
        assert [isa.tsc_period for isa in cpu.isa] == ["0ns"]
    assert {c.clk_domain for c in board.cache_hierarchy.l2caches} == {
        "Parent.clk_domain"}
    from colorsim.run.kernels import kind_of
    assert not kind_of(parse_variant("linux24:c32", m)).tsc_ns
    assert kind_of(spec.variant).tsc_ns
    d = {**d, "client_cpus": 0, "client_clock_hz": 500_000_000}
    with pytest.raises(sys.modules["testbed_params"].SpecError,
                       match="client_clock_hz .* 0 client CPUs"):
        sys.modules["testbed_params"].gem5_params(d)


def test_snoop_filter_covers_every_cache(tc):
    for name in ("ppro4", "piii8"):
        prm = _params(name, l2="1MiB")
        above = prm["processor"]["num_cores"] * sum(
            prm["caches"][lvl]["size"] for lvl in ("l1i", "l1d", "l2"))
        assert prm["membus"]["snoop_filter_max_capacity"] >= 2 * above
        assert prm["membus"]["snoop_filter_max_capacity"] >= 8 << 20


def test_o3_fetch_buffer(tc):
    prm = _params("ppro4", cpu="o3")
    proc = tc.make_processor(prm["processor"])
    assert all(c.core.fetchBufferSize == 32 for c in proc.get_cores())
    with pytest.raises(AttributeError):     # only O3 has the parameter
        tc.make_processor(dict(prm["processor"], stdlib_cpu_type="TIMING"))


def test_check_refuses_16way_l2(tc):
    prm = _params("ppro4")
    board = tc.build_board(prm)
    board._pre_instantiate()
    h = board.cache_hierarchy
    h.l2caches[2].assoc = 16
    h.l1dcaches[0].prefetcher = StridePrefetcher()
    with pytest.raises(AssertionError) as e:
        tc.check_hierarchy(h, board)
    assert "l2[2]" in str(e.value) and "16-way" in str(e.value)
    assert "l1d[0] has prefetcher" in str(e.value)


def test_each_measured_l2_counts_the_run_queue_loops_reads(tc):
    """With the loop's ranges in the spec, every measured CPU's L2 gets a
    probe on those ranges; a client CPU's L2 none; a missing probe is
    refused."""
    m = load_machines()["ppro4"]
    spec = RunSpec(m, parse_variant("vanilla", m), Workload(), engine="gem5")
    d = Gem5Engine().spec_dict(spec)
    d["kernel"]["rqloop"] = [[0xffffffff80101000, 0xffffffff80101080]]
    d["client_cpus"] = 2
    prm = sys.modules["testbed_params"].gem5_params(d)
    assert prm["rqloop_probes"]["count"] == 4
    board = tc.build_board(prm)
    board._pre_instantiate()
    h = board.cache_hierarchy
    assert len(h.rqloop_probes) == 4
    for i, probe in enumerate(h.rqloop_probes):
        assert probe.cache is h.l2caches[i]
        assert [(r.start, r.end) for r in probe.pc_ranges] == \
            [(0xffffffff80101000, 0xffffffff80101080)]
    h.rqloop_probes = h.rqloop_probes[:3]
    with pytest.raises(AssertionError, match="3 run-queue loop probes for 4"):
        tc.check_hierarchy(h, board)
    d["kernel"]["rqloop"] = [[0x2000, 0x1000]]
    with pytest.raises(sys.modules["testbed_params"].SpecError,
                       match="not \\[lo, hi\\)"):
        sys.modules["testbed_params"].gem5_params(d)


def test_bus_view_monitors_checked(tc):
    prm = _params("ppro4")
    assert prm["bus_monitors"]["count"] == 4
    board = tc.build_board(prm)
    board._pre_instantiate()
    h = board.cache_hierarchy
    h.l2_monitors[1].read_addr_mask = 0xFFF
    with pytest.raises(AssertionError, match="bus-view monitor 1"):
        tc.check_hierarchy(h, board)
    h.l2_monitors[1].read_addr_mask = 0xFE0
    h.l2_monitors = h.l2_monitors[:3]
    with pytest.raises(AssertionError, match="3 bus-view monitors for 4"):
        tc.check_hierarchy(h, board)


def test_dry_run_shows_bus_view(tc):
    """The dry run's system text names the monitors the stand-ins built."""
    from colorsim.run.engines.gem5show import describe_params
    prm = _params("piii8")
    board = tc.build_board(prm)
    board._pre_instantiate()
    text = "\n".join(describe_params(prm))
    n = len(board.cache_hierarchy.l2_monitors)
    assert n == 8
    assert f"bus view   {n} x CommMonitor l2_monitors[i]" in text
    assert "l2caches[i].mem_side -> monitor -> p6buses[bus of i]" in text
    assert "p6 bus     2 x CoherentXBar p6buses[b], 4 CPUs each, clock " \
        "10000ps (100.00 MHz), width 8 B, request phase 2" in text
    assert "mem view   CommMonitor mem_monitor" in text


def test_check_refuses_late_line_size(tc):
    prm = _params("ppro4")
    board = tc.build_board(prm)
    board.cache_line_size = 64
    with pytest.raises(AssertionError, match="cache_line_size is 64"):
        board._pre_instantiate()


def test_workload_restore(tc, tmp_path):
    prm = _params("ppro4")
    prm["kernel"]["path"] = str(tmp_path / "kernel.elf")
    Path(prm["kernel"]["path"]).write_bytes(b"\x7fELF")
    (tmp_path / "disk.img").write_bytes(b"")
    board = tc.build_board(prm)
    tc.set_workload(board, prm, tmp_path / "disk.img",
                    checkpoint=str(tmp_path / "cpt"))
    assert board._command_line == prm["kernel"]["cmdline"]
    assert board._checkpoint == tmp_path / "cpt"
    assert board.exit_on_work_items is False
    assert board._disk_file == str(tmp_path / "disk.img")


# -- run_fs.py: phases and exit events ---------------------------------

def _run_fs(monkeypatch, tmp_path, phase, causes, extra=()):
    outdir = tmp_path / "m5out"
    outdir.mkdir(exist_ok=True)
    _install_fakes(monkeypatch, outdir)
    kernel = tmp_path / "kernel.elf"
    kernel.write_bytes(b"\x7fELF")
    m = load_machines()["ppro4"]
    eng = Gem5Engine()
    spec = RunSpec(m, parse_variant("vanilla", m), Workload(), engine="gem5")
    d = eng.spec_dict(spec)
    d["kernel"]["path"] = str(kernel)
    spec_path = tmp_path / "gem5_spec.json"
    spec_path.write_text(json.dumps(d))
    run_fs = _load(monkeypatch, "_run_fs_under_test", "run_fs.py")
    monkeypatch.setattr(Simulator, "script", list(causes))
    seen = {}
    real_run = Simulator.run

    def spy(self, max_ticks=None):
        seen["sim"], seen["max_ticks"] = self, max_ticks
        return real_run(self, max_ticks)
    monkeypatch.setattr(Simulator, "run", spy)
    rc = run_fs.main(["--spec", str(spec_path), "--phase", phase, *extra])
    info = json.loads((outdir / "run_info.json").read_text())
    return rc, info, seen


def test_run_fs_boot_saves_checkpoint(monkeypatch, tmp_path):
    cpt = tmp_path / "new" / "cpt"
    rc, info, seen = _run_fs(monkeypatch, tmp_path, "boot", ["checkpoint"],
                             ["--checkpoint-dir", str(cpt)])
    assert rc == 0 and (cpt / "m5.cpt").is_file()
    assert info["checkpoint"] == str(cpt) and info["cpu_type"] == "atomic"
    assert seen["sim"].board.mem_mode == "atomic"
    assert seen["sim"].restored_from is None


def test_run_fs_boot_without_checkpoint_op(monkeypatch, tmp_path):
    rc, info, _ = _run_fs(monkeypatch, tmp_path, "boot",
                          ["m5_exit instruction encountered"],
                          ["--checkpoint-dir", str(tmp_path / "cpt")])
    assert rc == 3 and info["checkpoint"] is None


def test_run_fs_boot_at_tick(monkeypatch, tmp_path):
    rc, info, seen = _run_fs(monkeypatch, tmp_path, "boot",
                             ["simulate() limit reached"],
                             ["--checkpoint-dir", str(tmp_path / "cpt"),
                              "--checkpoint-at-tick", "5000"])
    assert rc == 0 and seen["max_ticks"] == 5000
    assert (tmp_path / "cpt" / "m5.cpt").is_file()


def test_run_fs_measure_restores(monkeypatch, tmp_path):
    cpt = tmp_path / "cpt"
    cpt.mkdir()
    (cpt / "m5.cpt").write_text("")
    rc, info, seen = _run_fs(
        monkeypatch, tmp_path, "measure",
        ["checkpoint", "m5_exit instruction encountered"],
        ["--cpu", "o3", "--checkpoint-dir", str(cpt)])
    assert rc == 0 and info["exit"] == "m5_exit instruction encountered"
    assert seen["sim"].restored_from == cpt
    assert seen["sim"].board.mem_mode == "timing"
    assert info["cpu_type"] == "o3" and seen["max_ticks"] is None


def test_run_fs_measure_needs_checkpoint(monkeypatch, tmp_path):
    with pytest.raises(SystemExit) as e:
        _run_fs(monkeypatch, tmp_path, "measure", [],
                ["--checkpoint-dir", str(tmp_path / "none")])
    assert e.value.code == 2


def test_run_fs_kernel_panic_is_an_error(monkeypatch, tmp_path):
    rc, info, _ = _run_fs(monkeypatch, tmp_path, "full",
                          ["m5_fail instruction encountered"])
    assert rc == 4 and info["failed"] is True


@pytest.mark.parametrize("name,period,buses,cross", [("ppro4", "15000ps", 1, 0),
                                                     ("piii8", "10000ps", 2, 2)])
def test_p6_bus_from_the_machines_costs(tc, name, period, buses, cross):
    """The P6 bus(es) at the bus clock the machine's costs imply, request
    and snoop phases in bus clocks, one response layer, the chipset's
    crossing cost; memory's latency is the load-to-use less what the
    caches and the bus charge."""
    prm = _params(name)
    pb, mb = prm["p6_buses"], prm["membus"]
    assert (pb["clock"], pb["count"], pb["cpus_per_bus"]) == (period, buses, 4)
    assert (pb["header_latency"], pb["frontend_latency"],
            pb["snoop_response_latency"]) == (2, 2, 4)
    assert mb["clock"] == period and mb["snoop_response_latency"] == cross
    board = tc.build_board(prm)
    board._pre_instantiate()
    h = board.cache_hierarchy
    assert [b.clk_domain.clock for b in h.p6buses] == [period] * buses
    assert h.membus.clk_domain.clock == period
    assert h.membus.frontend_latency == h.membus.forward_latency == 0
    m = load_machines()[name]
    load_to_use = m.memory.latency_ns
    hz, bus_hz = m.processor.clock_hz, pb["clock_hz"]
    path = (1 + 1 + 4 + 2) / hz * 1e9 + (2 + 4) / bus_hz * 1e9
    assert float(prm["memory"]["latency"].rstrip("ns")) == \
        pytest.approx(load_to_use - path, abs=0.01)
    h.p6buses[0].single_response_layer = False
    with pytest.raises(AssertionError, match="P6 bus 0 is"):
        tc.check_hierarchy(h, board)


def test_p6_bus_refuses_costs_that_are_not_bus_clocks(tc):
    """Costs that do not make whole bus clocks, or a HITM that is not the
    sum of its phases, are refused with the field's name."""
    m = load_machines()["ppro4"]
    spec = RunSpec(m, parse_variant("vanilla", m), Workload(), engine="gem5")
    d = Gem5Engine().spec_dict(spec)
    tp = sys.modules["testbed_params"]
    bad = dict(d, bus=dict(d["bus"], bus_addr=7))
    with pytest.raises(tp.SpecError, match="timing.bus_addr: 7 core clocks"):
        tp.gem5_params(bad)
    bad = dict(d, bus=dict(d["bus"], hitm=33))
    with pytest.raises(tp.SpecError, match="timing.hitm is 11 bus clocks"):
        tp.gem5_params(bad)
    slow = json.loads(json.dumps(d))
    slow["machine"]["memory"]["latency_ns"] = 100
    with pytest.raises(tp.SpecError, match="below what the caches and the bus"):
        tp.gem5_params(slow)
    d["bus"] = None             # a machine without costs: one SystemXBar
    prm = tp.gem5_params(d)
    assert prm["p6_buses"] is None and "clock" not in prm["membus"]
    board = tc.build_board(prm)
    board._pre_instantiate()
    h = board.cache_hierarchy
    cap = prm["membus"]["snoop_filter_max_capacity"]
    assert h.membus.snoop_filter.max_capacity == f"{cap}B"
    assert h.l2_monitors[0].mem_side_port in h.membus.cpu_side_ports.peers
