"""gem5 v24 standard-library components for the testbed machine.

Runs only inside gem5 (it imports ``m5`` and ``gem5`` at the top); the host
never imports it.  Each function maps one part of the plain parameter dict
from :mod:`testbed_params` to one stdlib component, and
:func:`build_board` composes them like any stdlib board:

    processor = make_processor(params["processor"])
    caches    = TestbedCacheHierarchy(params)
    memory    = make_memory(params["memory"])
    board     = make_board(params["board"], processor, memory, caches)

The stdlib's ``PrivateL1PrivateL2CacheHierarchy`` is not used: it drops
``l2_assoc`` (its L2 comes out 16-way) and its caches carry a stride
prefetcher.  :class:`TestbedCacheHierarchy` builds every cache from the
machine description and checks the built objects before gem5 instantiates
them.
"""

from pathlib import Path

from m5.objects import (
    BadAddr,
    Cache,
    CoherentXBar,
    CommMonitor,
    DerivedClockDomain,
    L2XBar,
    Port,
    SrcClockDomain,
    SystemXBar,
    VoltageDomain,
)
from m5.params import NULL

from gem5.components.boards.abstract_board import AbstractBoard
from gem5.components.boards.x86_board import X86Board
from gem5.components.cachehierarchies.classic.abstract_classic_cache_hierarchy import (  # noqa: E501
    AbstractClassicCacheHierarchy,
)
from gem5.components.memory.simple import SingleChannelSimpleMemory
from gem5.components.processors.cpu_types import CPUTypes
from gem5.components.processors.simple_processor import SimpleProcessor
from gem5.isas import ISA
from gem5.resources.resource import DiskImageResource, KernelResource
from gem5.utils.override import overrides


def make_cache(p: dict) -> Cache:
    """One classic cache with exactly the requested geometry, no prefetcher.

    The line size is not a cache parameter: every classic cache takes the
    board's ``cache_line_size``.
    """
    return Cache(
        size=f"{p['size']}B",
        assoc=p["assoc"],
        tag_latency=p["tag_latency"],
        data_latency=p["data_latency"],
        response_latency=p["response_latency"],
        mshrs=p["mshrs"],
        tgts_per_mshr=p["tgts_per_mshr"],
        writeback_clean=p["writeback_clean"],
        is_read_only=p["is_read_only"],
        prefetcher=NULL,
    )


def _has_no_prefetcher(cache) -> bool:
    pf = cache.prefetcher
    return pf is None or pf is NULL or type(pf).__name__ == "NullSimObject"


class TestbedCacheHierarchy(AbstractClassicCacheHierarchy):
    """Each core has a private L1I, L1D and L2.  The measured CPUs' L2s sit
    on the machine's P6 bus(es) (``p6buses``: one CoherentXBar per bus, at
    the bus clock, with one response layer as the bus's one data path),
    and the buses on the chipset's crossbar (``membus``, the point of
    coherency, where memory, I/O and the clients' CPUs are); a machine
    without bus costs puts every L2 on the membus.  Two views of the
    traffic, both CommMonitors whose address distributions are masked to
    the page offset at line granularity:

    * the bus view (the paper's GATES tracer on the front-side bus): one
      monitor per CPU between its L2 and the bus (``l2_monitors``), so every
      request an L2 puts on the bus is counted, also the fills another
      CPU's cache serves;
    * the memory view: one monitor between the bus and memory
      (``mem_monitor``), which sees only what memory serves.
    """

    def __init__(self, params: dict) -> None:
        """:param params: the dict from ``testbed_params.gem5_params``."""
        AbstractClassicCacheHierarchy.__init__(self)
        self._caches = params["caches"]
        self._iocache = params["iocache"]
        self._monitor = params["monitor"]
        self._bus_monitor = params["bus_monitors"]
        self._rqloop = params["rqloop_probes"]
        self._line = params["board"]["cache_line_size"]
        self._buses = params["p6_buses"]
        self._client_clock = params["processor"].get("client_clock")
        self.membus = make_membus(params["membus"])
        self.membus.badaddr_responder = BadAddr()
        self.membus.default = self.membus.badaddr_responder.pio

    @overrides(AbstractClassicCacheHierarchy)
    def get_mem_side_port(self) -> Port:
        return self.membus.mem_side_ports

    @overrides(AbstractClassicCacheHierarchy)
    def get_cpu_side_port(self) -> Port:
        return self.membus.cpu_side_ports

    @overrides(AbstractClassicCacheHierarchy)
    def incorporate_cache(self, board: AbstractBoard) -> None:
        board.connect_system_port(self.membus.cpu_side_ports)
        self._connect_memory(board)
        n = board.get_processor().get_num_cores()
        self.l1icaches = [make_cache(self._caches["l1i"]) for _ in range(n)]
        self.l1dcaches = [make_cache(self._caches["l1d"]) for _ in range(n)]
        self.l2caches = [make_cache(self._caches["l2"]) for _ in range(n)]
        self.l2buses = [L2XBar() for _ in range(n)]
        # In front of each L1D: the CPU's data port and both page walkers
        # share it, so a walk's loads go through the L1D, as the P6's page
        # miss handler's do (and as busmon models them).  A walker straight
        # on the coherent L2 bus is a non-caching requestor beside the
        # L1s, which gem5's timing CPUs do not survive.
        self.l1dbuses = [L2XBar() for _ in range(n)]
        bus = self._bus_monitor
        # No latency histograms: the monitor then adds no sender state to
        # packets that a peer cache may answer.
        # One per measured CPU; a client CPU's L2 is on the bus directly.
        monitors = [CommMonitor(disable_addr_dists=bus["disable_addr_dists"],
                                read_addr_mask=bus["read_addr_mask"],
                                write_addr_mask=bus["write_addr_mask"],
                                disable_latency_hists=True)
                    for _ in range(bus["count"])]
        setattr(self, bus["name"], monitors)
        if self._buses:
            setattr(self, self._buses["name"], make_p6_buses(self._buses))
            for bus in getattr(self, self._buses["name"]):
                bus.mem_side_ports = self.membus.cpu_side_ports
        if board.has_coherent_io():
            self._setup_io_cache(board)
        for i, core in enumerate(board.get_processor().get_cores()):
            self._connect_core(i, core)
        self._add_rqloop_probes()
        check_hierarchy(self, board)

    def _add_rqloop_probes(self) -> None:
        """The run-queue loop's L2 reads and read misses of each measured
        CPU: a probe on its L2's Hit and Miss points counts the reads whose
        load came from the loop (the QEMU plugin's rqloop_l2_read_*)."""
        p = self._rqloop
        if not p["count"]:
            return
        try:
            from m5.objects import AddrRange, PcRangeCacheProbe
        except ImportError:
            raise RuntimeError(
                "this gem5 has no PcRangeCacheProbe: it was built without "
                "the suite's patch 0002 (run scripts/build-gem5.sh)") from None
        ranges = [AddrRange(lo, hi) for lo, hi in p["ranges"]]
        setattr(self, p["name"],
                [PcRangeCacheProbe(cache=self.l2caches[i], pc_ranges=ranges)
                 for i in range(p["count"])])

    def _connect_core(self, i, core) -> None:
        """CPU -> L1I, CPU and page walkers -> L1D bus -> L1D; both L1s ->
        private L2 bus -> L2 -> bus-view monitor -> its P6 bus (a client
        CPU: L2 -> membus, unmonitored)."""
        core.connect_icache(self.l1icaches[i].cpu_side)
        core.connect_dcache(self.l1dbuses[i].cpu_side_ports)
        core.connect_walker_ports(self.l1dbuses[i].cpu_side_ports,
                                  self.l1dbuses[i].cpu_side_ports)
        self.l1dbuses[i].mem_side_ports = self.l1dcaches[i].cpu_side
        self.l1icaches[i].mem_side = self.l2buses[i].cpu_side_ports
        self.l1dcaches[i].mem_side = self.l2buses[i].cpu_side_ports
        self.l2buses[i].mem_side_ports = self.l2caches[i].cpu_side
        if i < self._bus_monitor["count"]:
            monitor = getattr(self, self._bus_monitor["name"])[i]
            monitor.cpu_side_port = self.l2caches[i].mem_side
            self.bus_of(i).cpu_side_ports = monitor.mem_side_port
        else:
            self.membus.cpu_side_ports = self.l2caches[i].mem_side
            if self._client_clock:
                # a client core's caches at its clock: their hits cost
                # its cycles, as the server's cost the server's
                for part in (self.l1icaches, self.l1dcaches, self.l1dbuses,
                             self.l2buses, self.l2caches):
                    part[i].clk_domain = core.core.clk_domain
        core.connect_interrupt(self.membus.mem_side_ports,
                               self.membus.cpu_side_ports)

    def bus_of(self, i: int):
        """The bus measured CPU ``i``'s L2 is on: CPUs 0..k-1 on the first
        P6 bus, k..2k-1 on the second (k CPUs per bus); else the membus."""
        if not self._buses:
            return self.membus
        buses = getattr(self, self._buses["name"])
        return buses[i // self._buses["cpus_per_bus"]]

    def _connect_memory(self, board: AbstractBoard) -> None:
        """membus -> CommMonitor -> each memory port."""
        monitors = []
        for _, port in board.get_memory().get_mem_ports():
            mon = CommMonitor(
                disable_addr_dists=self._monitor["disable_addr_dists"],
                read_addr_mask=self._monitor["read_addr_mask"],
                write_addr_mask=self._monitor["write_addr_mask"],
            )
            mon.cpu_side_port = self.membus.mem_side_ports
            mon.mem_side_port = port
            monitors.append(mon)
        # One channel: stats are "<hierarchy>.mem_monitor.readAddrDist".
        if len(monitors) == 1:
            setattr(self, self._monitor["name"], monitors[0])
        else:
            setattr(self, self._monitor["name"] + "s", monitors)

    def _setup_io_cache(self, board: AbstractBoard) -> None:
        """A small cache in front of coherent I/O (IDE DMA) on the membus."""
        self.iocache = Cache(
            size=f"{self._iocache['size']}B", assoc=self._iocache["assoc"],
            tag_latency=50, data_latency=50, response_latency=50,
            mshrs=20, tgts_per_mshr=12, addr_ranges=board.mem_ranges,
            prefetcher=NULL)
        self.iocache.mem_side = self.membus.cpu_side_ports
        self.iocache.cpu_side = board.get_mem_side_coherent_io_port()


def check_hierarchy(hierarchy: TestbedCacheHierarchy, board) -> None:
    """Refuse a built system whose caches differ from the machine's.

    Reads the SimObjects' own parameter values (what gem5 will
    instantiate), not the dict they came from.  The host repeats the check
    on ``config.json`` after the run (``Gem5Engine.collect``).
    """
    problems = []
    line = int(board.cache_line_size)
    if line != hierarchy._line:
        problems.append(f"board.cache_line_size is {line}, expected "
                        f"{hierarchy._line}")
    for level in ("l1i", "l1d", "l2"):
        want = hierarchy._caches[level]
        for i, cache in enumerate(getattr(hierarchy, f"{level}caches")):
            got = (int(cache.size), int(cache.assoc))
            if got != (want["size"], want["assoc"]):
                problems.append(f"{level}[{i}] is {got[0]} B {got[1]}-way, "
                                f"expected {want['size']} B "
                                f"{want['assoc']}-way")
            if not _has_no_prefetcher(cache):
                problems.append(f"{level}[{i}] has prefetcher "
                                f"{cache.prefetcher}")
            if bool(cache.writeback_clean):
                problems.append(f"{level}[{i}] writes back clean lines")
    bus = hierarchy._bus_monitor
    monitors = getattr(hierarchy, bus["name"], [])
    if len(monitors) != bus["count"] or bus["count"] > len(hierarchy.l2caches):
        problems.append(f"{len(monitors)} bus-view monitors for "
                        f"{bus['count']} measured CPUs of "
                        f"{len(hierarchy.l2caches)}")
    for i, mon in enumerate(monitors):
        masks = (int(mon.read_addr_mask), int(mon.write_addr_mask))
        if masks != (bus["read_addr_mask"], bus["write_addr_mask"]) or \
                bool(mon.disable_addr_dists):
            problems.append(f"bus-view monitor {i} does not count page "
                            f"offsets with mask {bus['read_addr_mask']:#x}")
    problems += _check_buses(hierarchy)
    rq = hierarchy._rqloop
    probes = getattr(hierarchy, rq["name"], [])
    if len(probes) != rq["count"] or any(
            pr.cache is not hierarchy.l2caches[i]
            for i, pr in enumerate(probes)):
        problems.append(f"{len(probes)} run-queue loop probes for "
                        f"{rq['count']} measured L2s")
    if problems:
        raise AssertionError("built cache hierarchy does not match the "
                             "machine description:\n  "
                             + "\n  ".join(problems))


def _check_buses(hierarchy) -> list:
    """The P6 buses as described: their number, one response layer each,
    the data path's width and the request phase."""
    pb = hierarchy._buses
    if not pb:
        return []
    buses = getattr(hierarchy, pb["name"], [])
    problems = [] if len(buses) == pb["count"] else [
        f"{len(buses)} P6 buses, expected {pb['count']}"]
    for b, bus in enumerate(buses):
        got = (bool(bus.single_response_layer), int(bus.width),
               int(bus.header_latency))
        if got != (True, pb["width"], pb["header_latency"]):
            problems.append(f"P6 bus {b} is (one response layer, width, "
                            f"request phase) {got}, expected (True, "
                            f"{pb['width']}, {pb['header_latency']})")
    return problems


def make_clock_domain(clock: str) -> SrcClockDomain:
    return SrcClockDomain(clock=clock, voltage_domain=VoltageDomain())


def make_membus(p: dict) -> SystemXBar:
    """The system crossbar: gem5's SystemXBar, or with P6 buses above it,
    the chipset at the bus clock whose only latency is a crossing's."""
    bus = SystemXBar(width=p["width"])
    # The snoop filter only tracks lines; its capacity is a sanity
    # bound in lines of the system's line size (8 MiB / 32 B by
    # default), which eight full 1 MiB L2s plus their L1s exceed.
    bus.snoop_filter.max_capacity = f"{p['snoop_filter_max_capacity']}B"
    if p.get("snoop_filter") is False:
        bus.snoop_filter = NULL
    if "clock" in p:
        bus.clk_domain = make_clock_domain(p["clock"])
        for k in ("frontend_latency", "forward_latency", "response_latency",
                  "snoop_response_latency"):
            setattr(bus, k, p[k])
    return bus


def make_p6_buses(p: dict) -> list:
    """One coherent crossbar per P6 bus, every port's responses on one
    layer (the suite's gem5 patch 0003), snooping every L2 on it."""
    try:
        return [CoherentXBar(
            clk_domain=make_clock_domain(p["clock"]), width=p["width"],
            header_latency=p["header_latency"],
            frontend_latency=p["frontend_latency"],
            forward_latency=p["forward_latency"],
            response_latency=p["response_latency"],
            snoop_response_latency=p["snoop_response_latency"],
            single_response_layer=p["single_response_layer"],
            snoop_filter=NULL, point_of_coherency=False,
            point_of_unification=False) for _ in range(p["count"])]
    except AttributeError as e:
        if "single_response_layer" not in str(e):
            raise
        raise RuntimeError(
            "this gem5's CoherentXBar has no single_response_layer: it was "
            "built without the suite's patch 0003 (run "
            "scripts/build-gem5.sh)") from None


def make_processor(p: dict) -> SimpleProcessor:
    """N cores of one CPU model; O3 gets fetchBufferSize = line size.  The
    client cores (after the measured ones) run at ``client_clock`` when
    given; every core's TSC counts ``tsc_period`` when given."""
    processor = SimpleProcessor(cpu_type=getattr(CPUTypes,
                                                 p["stdlib_cpu_type"]),
                                isa=ISA.X86, num_cores=p["num_cores"])
    for i, core in enumerate(processor.get_cores()):
        if p["fetch_buffer_size"] is not None:
            core.core.fetchBufferSize = p["fetch_buffer_size"]
        if p.get("tsc_period"):
            try:
                for isa in core.core.isa:
                    isa.tsc_period = p["tsc_period"]
            except AttributeError:
                raise SystemExit(
                    "this gem5's X86ISA has no tsc_period: it was built "
                    "without the suite's patch 0004 (run "
                    "scripts/build-gem5.sh)") from None
        if p.get("client_clock") and i >= p["measured_cpus"]:
            core.core.clk_domain = make_clock_domain(p["client_clock"])
    return processor


class TestbedBoard(X86Board):
    """The X86Board whose client cores, if they run at a clock of their
    own, keep their local APIC timers at the board's clock / 16, the
    timer rate the kernel is told (``lapic_hz``): the wire's one-shot
    and every tick then mean the same time on every CPU.  The stdlib makes
    the interrupt controllers only when it connects the board."""

    def __init__(self, *args, client_cores=(), **kwargs):
        super().__init__(*args, **kwargs)
        self._client_cores = list(client_cores)

    @overrides(X86Board)
    def _pre_instantiate(self):
        super()._pre_instantiate()
        for core in self._client_cores:
            for apic in core.core.interrupts:
                apic.clk_domain = DerivedClockDomain(
                    clk_domain=self.clk_domain, clk_divider=16)


def make_memory(p: dict) -> SingleChannelSimpleMemory:
    """Flat-latency memory: the machine's load-to-use latency."""
    return SingleChannelSimpleMemory(latency=p["latency"],
                                     latency_var=p["latency_var"],
                                     bandwidth=p["bandwidth"],
                                     size=f"{p['size']}B")


def make_board(p: dict, processor, memory, caches,
               client_cores=()) -> X86Board:
    """The X86Board at the machine's clock with the machine's line size."""
    board = TestbedBoard(clk_freq=p["clk_freq"], processor=processor,
                         memory=memory, cache_hierarchy=caches,
                         client_cores=client_cores)
    board.cache_line_size = p["cache_line_size"]
    return board


def build_board(params: dict) -> X86Board:
    """Compose the whole system from the plain parameter dict."""
    processor = make_processor(params["processor"])
    caches = TestbedCacheHierarchy(params)
    memory = make_memory(params["memory"])
    p = params["processor"]
    clients = (processor.get_cores()[p["measured_cpus"]:]
               if p.get("client_clock") else ())
    return make_board(params["board"], processor, memory, caches, clients)


def set_workload(board, params: dict, disk_image: Path,
                 checkpoint: Path = None) -> None:
    """Our kernel ELF and its command line, a user program's root file
    system loaded raw where the command line says; optionally restore a
    checkpoint.

    The X86Board insists on a disk image; an empty raw file is enough (the
    testbed kernel never touches the IDE disk).
    """
    board.set_kernel_disk_workload(
        kernel=KernelResource(local_path=params["kernel"]["path"]),
        disk_image=DiskImageResource(local_path=str(disk_image)),
        kernel_args=[params["kernel"]["cmdline"]],
        exit_on_work_items=False,
        checkpoint=Path(checkpoint) if checkpoint else None,
    )
    rootfs = params["kernel"].get("rootfs")
    if rootfs:      # a user program's image, raw at its address
        board.workload.extras = [rootfs["path"]]
        board.workload.extras_addrs = [rootfs["base"]]
