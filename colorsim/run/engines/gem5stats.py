"""gem5's ``stats.txt`` as the suite's tables.

The collect step of the gem5 engine (:mod:`colorsim.run.engines.gem5`)
turns gem5's dumps into the same ``bus_offsets.csv`` and ``counters.csv``
the QEMU bus monitor writes: the address monitors' SparseHistograms become
bus transactions per page offset (the memory view and the per-CPU bus
view), and the cores' and caches' stats become per-CPU counters and
run-wide rows (modelled and host seconds, bus requests by kind, work per
modelled second)."""

from __future__ import annotations

import re

from colorsim.errors import RunError

BUS_HEADER = ["dump", "cpu", "mode", "kind", "offset", "count", "view"]
COUNTER_HEADER = ["dump", "cpu", "mode", "stat", "value"]

# Per-CPU counters: (our stat, component, alternatives).  The first
# alternative with any stat present in a dump is used, its stats summed.
# A missing stat of a present component counts as 0: gem5's cache stats
# carry the `nozero` flag, so zero lines are not printed.
COUNTER_MAP = (
    ("insts", "core", (("commitStats0.numInsts",), ("committedInsts",),
                       ("exec_context.thread_0.numInsts",))),
    ("cycles", "core", (("numCycles",),)),
    ("l1i_accesses", "l1i", (("demandAccesses::total",),)),
    ("l1i_misses", "l1i", (("demandMisses::total",),)),
    ("l1d_read_accesses", "l1d", (("ReadReq.accesses::total",),)),
    ("l1d_read_misses", "l1d", (("ReadReq.misses::total",),)),
    ("l1d_write_accesses", "l1d", (("WriteReq.accesses::total",),)),
    ("l1d_write_misses", "l1d", (("WriteReq.misses::total",),)),
    ("l1d_accesses", "l1d", (("demandAccesses::total",),)),
    ("l1d_misses", "l1d", (("demandMisses::total",),)),
    ("l2_accesses", "l2", (("demandAccesses::total",),)),
    ("l2_misses", "l2", (("demandMisses::total",),)),
    ("l2_read_misses", "l2", (("ReadSharedReq.misses::total",
                               "ReadCleanReq.misses::total"),)),
    ("l2_write_misses", "l2", (("ReadExReq.misses::total",
                                "UpgradeReq.misses::total"),)),
    ("l2_writebacks", "l2", (("writebacks::total",),)),
    # loads from the run-queue loop that reached the L2 (patch 0002's probe)
    ("rqloop_l2_read_accesses", "rqloop", (("readAccesses",),)),
    ("rqloop_l2_read_misses", "rqloop", (("readMisses",),)),
)
# Counters of the QEMU plugin that gem5's stats cannot provide.
NO_GEM5_EQUIVALENT = {
    "user/kernel split (mode)": "gem5 stats are not split by privilege "
                                "level; every gem5 row has mode 'all'",
    "run-queue-loop miss causes": "the probe counts the loop's L2 reads "
                                  "and misses, not why a line was missing",
    "critical-chunk offsets": "gem5 classic caches fill whole, "
                              "line-aligned blocks",
    "lockmeter": "not built on either engine yet",
}

_COMPONENTS = {
    "core": r"board\.processor\.cores(\d*)\.core\.",
    "l1i": r"board\.cache_hierarchy\.l1icaches(\d*)\.",
    "l1d": r"board\.cache_hierarchy\.l1dcaches(\d*)\.",
    "l2": r"board\.cache_hierarchy\.l2caches(\d*)\.",
    "rqloop": r"board\.cache_hierarchy\.rqloop_probes(\d*)\.",
}
_MONITOR = (r"\.{name}s?(\d*)\.(?P<kind>read|write)AddrDist$")
_BUS_MONITOR = (r"\.{name}(\d*)\.(?P<kind>read|write)AddrDist$")
_TRANS_DIST = "board.cache_hierarchy.membus.transDist::"
# Run-wide stats (cpu -1): our stat -> gem5 stats summed (a missing one
# counts as 0 when any of them is present).  The membus transaction
# distribution counts every request on the bus by command, whoever answers
# it: the kinds of the QEMU plugin's bus_* counters.
GLOBAL_MAP = (
    ("sim_seconds", ("simSeconds",)),
    ("host_seconds", ("hostSeconds",)),
    ("bus_read", ("board.cache_hierarchy.membus.transDist::ReadSharedReq",
                  "board.cache_hierarchy.membus.transDist::ReadCleanReq",
                  "board.cache_hierarchy.membus.transDist::ReadReq")),
    ("bus_rfo", ("board.cache_hierarchy.membus.transDist::ReadExReq",)),
    ("bus_invalidate", ("board.cache_hierarchy.membus.transDist::UpgradeReq",
                        "board.cache_hierarchy.membus.transDist::SCUpgradeReq",
                        "board.cache_hierarchy.membus.transDist::InvalidateReq")),
    ("bus_writeback", ("board.cache_hierarchy.membus.transDist::"
                       "WritebackDirty",)),
)


# With the machine's P6 buses (configs/gem5/testbed_params.bus_params) the
# bus is theirs: each bus's own requests by command are its transDist less
# the snoops it received from the chipset (snoopDist, the suite's gem5
# patch 0003).  The membus then sees only what leaves a bus, not the fills
# another CPU on the same bus serves.
P6_BUS_DIST = re.compile(r"^board\.cache_hierarchy\.p6buses\d*\."
                         r"(?P<dist>transDist|snoopDist)::(?P<cmd>\w+)$")


def bus_transactions(values: dict) -> dict:
    """``values`` with the membus transaction distribution replaced by the
    P6 buses' own requests, when the run had P6 buses."""
    own = {}
    for name, v in values.items():
        m = P6_BUS_DIST.match(name)
        if m:
            key = _TRANS_DIST + m.group("cmd")
            own[key] = own.get(key, 0) + (v if m.group("dist") == "transDist"
                                          else -v)
    if not own:
        return values
    out = {k: v for k, v in values.items() if not k.startswith(_TRANS_DIST)}
    out.update(own)
    return out


def bus_rows(dumps, monitor_name: str = "mem_monitor",
             bus_monitor_name: str = "l2_monitors") -> list[list]:
    """bus_offsets rows from the monitors' SparseHistograms.

    The memory-side monitor gives rows with cpu -1 and view ``memory``; the
    per-CPU monitors between each L2 and the bus give rows with cpu i and
    view ``bus``.  Rows are sorted by dump, view, cpu, kind, offset.
    """
    import re

    pats = ((re.compile(_MONITOR.format(name=re.escape(monitor_name))),
             "memory"),
            (re.compile(_BUS_MONITOR.format(name=re.escape(bus_monitor_name))),
             "bus"))
    rows = []
    for d in dumps:
        for s in d.stats:
            for pat, view in pats:
                m = pat.search(s.base)
                if m:
                    break
            if not m or s.key in (None, "samples") or s.key_value is None:
                continue
            if not s.key_exact:
                raise RunError(f"{s.name}: key printed inexactly (>= 1e6); "
                               f"the monitor mask must keep keys below 1e6")
            kind = "read" if m.group("kind") == "read" else "writeback"
            cpu = -1 if view == "memory" else int(m.group(1) or 0)
            rows.append([d.index, cpu, "all", kind, int(s.key_value),
                         int(s.value), view])
    rows.sort(key=lambda r: (r[0], r[6], r[1], r[3], r[4]))
    return rows


def global_rows(dumps, roi: dict = None) -> list[list]:
    """Run-wide counters rows (cpu -1, mode ``all``) of every dump.

    * :data:`GLOBAL_MAP` stats (modeled and host seconds, bus requests by
      kind from the membus transaction distribution);
    * ``host_mips``: committed instructions of all cores (per-core
      ``commitStats0.numInsts``; gem5 v24's ``simInsts`` and
      ``hostInstRate`` count every instruction twice) per host second;
    * from the console (``roi``, dump 0 only): ``schedule_calls`` and the
      kernel's other region numbers, and ``schedules_per_sim_second``, the
      work done per modeled second.
    """
    per_cpu = counter_rows(dumps)
    rows = []
    for d in dumps:
        values = bus_transactions(d.as_dict())
        found = {}
        # transDist carries `nozero`: with the bus in the dump, a command
        # that never occurred counts 0.
        has_bus = any(n.startswith(_TRANS_DIST) for n in values)
        for stat, names in GLOBAL_MAP:
            present = [values[n] for n in names if n in values]
            if not present and has_bus and names[0].startswith(_TRANS_DIST):
                present = [0]
            if present:
                total = sum(present)
                found[stat] = int(total) if total == int(total) else total
        insts = sum(r[4] for r in per_cpu if r[0] == d.index and
                    r[3] == "insts")
        if insts and found.get("host_seconds"):
            found["host_mips"] = round(insts / found["host_seconds"] / 1e6, 4)
        if d.index == 0 and roi:
            found.update(roi)
            if roi.get("schedule_calls") is not None and \
                    found.get("sim_seconds"):
                found["schedules_per_sim_second"] = round(
                    roi["schedule_calls"] / found["sim_seconds"], 3)
        rows += [[d.index, -1, "all", stat, value]
                 for stat, value in found.items()]
    return rows


def counter_rows(dumps, cpus: int = None) -> list[list]:
    """counters rows: per dump, per CPU, :data:`COUNTER_MAP` stats; with
    ``cpus``, only the measured CPUs' (a program's client CPUs follow
    them)."""
    import re

    comps = {c: re.compile("^" + rx + "(?P<stat>.+)$")
             for c, rx in _COMPONENTS.items()}
    rows = []
    for d in dumps:
        found = {}          # (component, cpu) -> {stat: value}
        for s in d.stats:
            for comp, rx in comps.items():
                m = rx.match(s.name)
                if m:
                    cpu = int(m.group(1) or 0)
                    found.setdefault((comp, cpu), {})[m.group("stat")] = \
                        s.value
                    break
        for cpu in sorted({cpu for _, cpu in found}):
            if cpus is not None and cpu >= cpus:
                continue
            for stat, comp, alternatives in COUNTER_MAP:
                values = found.get((comp, cpu))
                if values is None:
                    continue
                rows.append([d.index, cpu, "all", stat,
                             _pick(values, alternatives)])
    return rows


def _pick(values: dict, alternatives) -> float:
    for names in alternatives:
        present = [values[n] for n in names if n in values]
        if present:
            total = sum(present)
            return int(total) if total == int(total) else total
    return 0
