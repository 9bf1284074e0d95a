"""Exercise configs/gem5/testbed_components.py against stand-in gem5 modules.

gem5 is not installable here, so tiny fakes of the few stdlib classes the
module uses let the composition and wiring code run: every cache is built
with the machine's geometry, no prefetcher, the monitor sits between the
bus and memory, and the post-construction check refuses a wrong cache.
This checks our code, not gem5's behaviour.
"""

import importlib.util
import sys
import types
from enum import Enum

import pytest

from colorsim import ROOT
from colorsim.engines.gem5 import Gem5Engine
from colorsim.machine import load_machines
from colorsim.runspec import RunSpec, Workload
from colorsim.variants import parse_variant

NULL = object()


class Port:
    def __init__(self, owner, name):
        self.owner, self.name, self.peers = owner, name, []


class SimObj:
    def __init__(self, **kw):
        for k, v in kw.items():
            object.__setattr__(self, k, v)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        port = Port(self, name)
        object.__setattr__(self, name, port)
        return port

    def __setattr__(self, name, value):
        if isinstance(value, Port):          # gem5's port binding
            cur = getattr(self, name)
            cur.peers.append(value)
            value.peers.append(cur)
        else:
            object.__setattr__(self, name, value)


class Cache(SimObj):
    def __init__(self, size, assoc, prefetcher=None, writeback_clean=False,
                 **kw):
        super().__init__(size=int(size.rstrip("B")), assoc=assoc,
                         prefetcher=StridePF() if prefetcher is None
                         else prefetcher,
                         writeback_clean=writeback_clean, **kw)


class StridePF(SimObj):
    pass


class Core:
    def __init__(self):
        self.core = SimObj()
        self.links = {}

    def connect_icache(self, p): self.links["icache"] = p
    def connect_dcache(self, p): self.links["dcache"] = p
    def connect_walker_ports(self, a, b): self.links["walkers"] = (a, b)
    def connect_interrupt(self, a, b): self.links["interrupt"] = (a, b)


class Hierarchy(SimObj):
    def __init__(self):
        pass


class Processor:
    def __init__(self, cpu_type, isa, num_cores):
        self.cpu_type, self._cores = cpu_type, [Core() for _ in
                                                range(num_cores)]

    def get_cores(self): return self._cores
    def get_num_cores(self): return len(self._cores)


class Memory(SimObj):
    def get_mem_ports(self):
        return [("range", self.port)]


class Board(SimObj):
    def __init__(self, clk_freq, processor, memory, cache_hierarchy):
        super().__init__(clk_freq=clk_freq, processor=processor,
                         memory=memory, cache_hierarchy=cache_hierarchy,
                         mem_ranges=["r"])

    def connect_system_port(self, p): self.system_port = p
    def get_processor(self): return self.processor
    def get_memory(self): return self.memory
    def has_coherent_io(self): return True
    def get_mem_side_coherent_io_port(self): return Port(self, "io")
    def set_kernel_disk_workload(self, **kw): self.workload_kw = kw


def _install_fakes(monkeypatch):
    mods = {
        "m5": {}, "m5.objects": dict(
            NULL=NULL, BadAddr=SimObj, Cache=Cache, CommMonitor=SimObj,
            L2XBar=SimObj, Port=Port, SystemXBar=SimObj),
        "gem5": {}, "gem5.components": {},
        "gem5.components.boards": {},
        "gem5.components.boards.abstract_board": {"AbstractBoard": Board},
        "gem5.components.boards.x86_board": {"X86Board": Board},
        "gem5.components.cachehierarchies": {},
        "gem5.components.cachehierarchies.classic": {},
        "gem5.components.cachehierarchies.classic."
        "abstract_classic_cache_hierarchy": {
            "AbstractClassicCacheHierarchy": Hierarchy},
        "gem5.components.memory": {},
        "gem5.components.memory.simple": {
            "SingleChannelSimpleMemory": Memory},
        "gem5.components.processors": {},
        "gem5.components.processors.cpu_types": {"CPUTypes": Enum(
            "CPUTypes", "ATOMIC TIMING O3 KVM MINOR")},
        "gem5.components.processors.simple_processor": {
            "SimpleProcessor": Processor},
        "gem5.isas": {"ISA": Enum("ISA", "X86 ARM RISCV")},
        "gem5.resources": {},
        "gem5.resources.resource": {"DiskImageResource": SimObj,
                                    "KernelResource": SimObj},
        "gem5.utils": {}, "gem5.utils.override": {
            "overrides": lambda base: (lambda f: f)},
    }
    for name, attrs in mods.items():
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, mod)
    path = ROOT / "configs" / "gem5" / "testbed_components.py"
    spec = importlib.util.spec_from_file_location("_tc_under_test", path)
    tc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tc)
    return tc


@pytest.fixture
def tc(monkeypatch):
    return _install_fakes(monkeypatch)


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
    assert board.cache_line_size == 32
    h = board.cache_hierarchy
    h.incorporate_cache(board)                 # runs check_hierarchy too
    n = prm["processor"]["num_cores"]
    for level in ("l1i", "l1d", "l2"):
        caches = getattr(h, f"{level}caches")
        assert len(caches) == n
        for c in caches:
            assert (c.size, c.assoc) == (prm["caches"][level]["size"],
                                         prm["caches"][level]["assoc"])
            assert c.prefetcher is NULL
    mon = h.mem_monitor
    assert mon.read_addr_mask == mon.write_addr_mask == 0xFE0
    assert mon.disable_addr_dists is False
    assert board.memory.port in mon.mem_side_port.peers
    assert h.membus.mem_side_ports in mon.cpu_side_port.peers
    core = board.processor.get_cores()[0]
    assert core.links["dcache"] is h.l1dcaches[0].cpu_side
    assert h.l2caches[0].mem_side in h.membus.cpu_side_ports.peers


def test_o3_fetch_buffer(tc):
    prm = _params("ppro4", cpu="o3")
    proc = tc.make_processor(prm["processor"])
    assert all(c.core.fetchBufferSize == 32 for c in proc.get_cores())


def test_check_refuses_16way_l2(tc):
    prm = _params("ppro4")
    board = tc.build_board(prm)
    h = board.cache_hierarchy
    h.incorporate_cache(board)
    h.l2caches[2].assoc = 16
    h.l1dcaches[0].prefetcher = StridePF()
    with pytest.raises(AssertionError) as e:
        tc.check_hierarchy(h, board)
    assert "l2[2]" in str(e.value) and "16-way" in str(e.value)
    assert "l1d[0] has prefetcher" in str(e.value)


def test_workload_restore(tc, tmp_path):
    prm = _params("ppro4")
    board = tc.build_board(prm)
    tc.set_workload(board, prm, tmp_path / "disk.img",
                    checkpoint=tmp_path / "cpt")
    kw = board.workload_kw
    assert kw["kernel_args"] == [prm["kernel"]["cmdline"]]
    assert kw["checkpoint"] == tmp_path / "cpt"
    assert kw["exit_on_work_items"] is False
