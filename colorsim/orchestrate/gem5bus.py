"""The P6 bus as gem5 builds it, parameter by parameter, beside the
machine description it comes from (docs/engines.md, "The P6 bus on gem5").

Nothing is run: the table is what ``configs/gem5/testbed_params.py`` makes
of each machine in ``configs/machines.toml`` that has bus costs, the same
parameters a gem5 run is built from.
"""

from __future__ import annotations

from colorsim.report.markdown import add_block_options, check_block_files, emit

BLOCK = "gem5-bus"


def rows() -> list:
    """(machine, gem5 parameter, value, where it comes from) per line."""
    from colorsim.describe.machine import load_machines
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    from colorsim.run.engines.gem5 import Gem5Engine
    out = []
    for name, m in load_machines().items():
        if m.timing is None:
            continue
        spec = RunSpec(m, parse_variant("vanilla", m), Workload(), engine="gem5")
        prm = Gem5Engine(cpu="timing").params(spec)
        pb, mb, mem = prm["p6_buses"], prm["membus"], prm["memory"]
        src = pb["sources"]
        mhz = f"{pb['clock_hz'] / 1e6:.2f} MHz"
        out += [
            (name, "p6buses", f"{pb['count']} x CoherentXBar, "
             f"{pb['cpus_per_bus']} CPUs each", src["buses"]),
            (name, "p6buses.clk_domain.clock", f"{pb['clock']} ({mhz})",
             src["clock"]),
            (name, "p6buses.width", f"{pb['width']} B", src["width"]),
            (name, "p6buses.header_latency", pb["header_latency"],
             src["header_latency"]),
            (name, "p6buses.frontend_latency", pb["frontend_latency"],
             src["frontend_latency"]),
            (name, "p6buses.snoop_response_latency",
             pb["snoop_response_latency"], src["snoop_response_latency"]),
            (name, "p6buses.single_response_layer",
             pb["single_response_layer"], src["data phase"]),
            (name, "p6buses.forward_latency, response_latency",
             f"{pb['forward_latency']}, {pb['response_latency']}",
             "none: the phases above are the whole transaction; " + src["hitm"]),
            (name, "membus.snoop_response_latency",
             mb["snoop_response_latency"], src["cross_bus"]),
            (name, "membus.clk_domain.clock; other latencies",
             f"{mb['clock']}; 0", "the chipset at the bus clock, adding no "
             "time of its own"),
            (name, "memory latency", mem["latency"],
             f"memory.latency {mem['load_to_use']} (load-to-use) less the "
             f"L1 and L2 tag and response latencies and the request and "
             f"data phases"),
        ]
    return out


def render(table_rows) -> str:
    lines = ["| machine | gem5 parameter | value | source (`configs/machines.toml`, "
             "`[machine.timing]` in core clocks) |",
             "|---|---|---|---|"]
    lines += [f"| {m} | `{p}` | {v} | {s} |" for m, p, v, s in table_rows]
    return "\n".join(lines) + "\n"


def cmd_gem5_bus(a) -> int:
    check_block_files(a, BLOCK)
    emit(render(rows()), a, BLOCK, how="gem5-bus")
    return 0


def add_parser(sub):
    p = sub.add_parser("gem5-bus", help="the P6 bus gem5 builds, each "
                       "parameter beside its source (docs/engines.md)")
    add_block_options(p, BLOCK)
    p.set_defaults(func=cmd_gem5_bus)
    return p
