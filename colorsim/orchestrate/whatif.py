"""What the base costs move at the web points.

``python3 -m colorsim cost-whatif [--run] [--out DIR]`` runs (with --run)
and prints, at Figure 9's 8-CPU point and Figure 6's 512 KiB, 1024-httpd
point (the convergence table's points, configs/machines.toml as it is),
vanilla and c32, three seeds each, with the machine as configured and with
one base cost of ``[x.timing]`` changed per row: a non-memory instruction
at 2 clocks instead of 1 (``inst``), memory 1.5 times as slow (``mem``, as
under load), a HITM transfer and a crossing between the Profusion's two
buses twice as dear (``hitm``, ``cross_bus``; the latter only where a
machine has two buses).  None of these is a measured value: each row asks
how far a result would move were the assumption wrong by that much.  A row
moves beyond chance when its mean gain differs from the configured row's
by more than the wider of the two seed ranges (the convergence table's
rule).  ``--write FILE`` / ``--check FILE`` put the table into, or compare
it with, FILE's ``whatif`` block (engine/qemu-plugin/README.md's).
"""

from __future__ import annotations

import dataclasses

from colorsim.orchestrate.convergence import at_point, configured_q
from colorsim.orchestrate.interleaving import POINT
from colorsim.orchestrate.seeds import (KERNELS, SEEDS, agrees, contention_cell,
                                        rate_cells, seeded)
from colorsim.orchestrate.sensitivity import add_table_run_options, emit_table

POINTS = {"fig9": "Figure 9, 8 CPUs", "fig6": "Figure 6, 512 KiB, 1024 httpd"}
# row -> (what the row's second column says, the Timing fields it changes
# as a function of the configured Timing); None: as configured
CHANGES = {
    None: ("as configured", lambda t: {}),
    "inst": ("`inst` 2: a non-memory instruction takes 2 clocks", lambda t: {"inst": 2}),
    "mem": ("`mem` x 1.5: memory as under load", lambda t: {"mem": t.mem * 3 // 2}),
    "hitm": ("`hitm` x 2: a dirty line from another cache", lambda t: {"hitm": 2 * t.hitm}),
    "cross_bus": ("`cross_bus` x 2: the crossing between two buses",
                  lambda t: {"cross_bus": 2 * t.cross_bus}),
}


def changed(machine, change):
    """``machine`` with the row's cost changed."""
    fields = CHANGES[change][1](machine.timing)
    return dataclasses.replace(machine, timing=dataclasses.replace(machine.timing, **fields))


def applies(machine, change) -> bool:
    """A row the machine has: cross_bus only with two buses."""
    return change != "cross_bus" or (machine.timing.cross_bus > 0 and
                                     machine.timing.is_on("two_buses", machine.processor.cpus))


def spec_for(at, kernel, change, seed):
    spec = at.spec_of(kernel, None, seed)
    return dataclasses.replace(spec, machine=changed(spec.machine, change))


def rows(ats, out, run, force, missing=None):
    """(point, at, change, {kernel: [summary per seed]}) per row whose
    runs are all there (made first with ``run``)."""
    for name, at in ats:
        for change in CHANGES:
            if not applies(at.machine, change):
                continue
            got = seeded(lambda k, s: spec_for(at, k, change, s), at.summary,
                         out, run, force, missing)
            if got is not None:
                yield name, at, change, got


HEADER = ("| point | base cost | vanilla req/s | c32 req/s | c32's gain "
          "| moves beyond chance | lock contention, vanilla / c32 |\n"
          "|---|---|---|---|---|---|---|")


def render(got_rows, bound_us) -> str:
    held = (f"every clock held within {bound_us} µs" if bound_us
            else "the clocks' bounds as configured")
    lines = [f"Seeds {', '.join(map(str, SEEDS))}, --timing, {held} (configs/"
             "machines.toml): mean [least..most] over the seeds. Requests per "
             "modelled second of the region; c32's gain paired by seed; a row moves "
             "beyond chance when its mean gain differs from the configured row's by "
             "more than the wider of the two seed ranges.", "", HEADER]
    base = {}
    for name, at, change, got in got_rows:
        if change is None:
            base[at.block] = got
        ref = base.get(at.block)
        moves = ("—" if change is None or ref is None
                 else ("no" if agrees(got, ref) else "yes"))
        lines.append(f"| {POINTS[name]} | {CHANGES[change][0]} {rate_cells(got)}"
                     f"| {moves} {contention_cell(got)}|")
    return "\n".join(lines) + "\n"


def cmd_cost_whatif(a):
    from colorsim.report.markdown import check_block_files
    ats = [(p, at_point(p, dict(POINT, seed=SEEDS[0]))) for p in POINTS
           if a.at in (None, p)]
    for _, at in ats:                   # refuse a point the runner refuses,
        for k in KERNELS:               # before any run
            for change in CHANGES:
                spec_for(at, k, change, SEEDS[0])
    check_block_files(a, "whatif")
    emit_table(a, "whatif", "cost-whatif",
               lambda missing: rows(ats, a.out, a.run, a.force, missing),
               lambda got: render(got, configured_q(ats[0][1].machine)))
    return 0


def add_parser(sub):
    from colorsim.report.markdown import add_block_options
    t = sub.add_parser("cost-whatif",
                       help="the web results with one base cost changed")
    add_table_run_options(t, "whatif")
    t.add_argument("--at", choices=tuple(POINTS),
                   help="one point only (default both; --write and --check "
                   "want both)")
    add_block_options(t, "whatif")
    t.set_defaults(func=cmd_cost_whatif)
