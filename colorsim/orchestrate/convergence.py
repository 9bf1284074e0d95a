"""Convergence in the skew bound: do the timed web results settle as the
modelled clocks are held closer together?

``python3 -m colorsim convergence [--run] [--out DIR]`` runs (with --run)
and prints Figure 9's 8-CPU point (the interleaving table's: piii8, 256
httpd, 256 clients of 8 requests on 6 client CPUs, --timing), vanilla and
c32, three seeds each, with the machine as configs/machines.toml describes
it and then with every clock held within Q of the slowest running one, for
four Q from coarse to fine: busmon's quantum for the server CPUs and the
client model's skew for the client CPUs, both Q.  A row agrees with the
next finer one when their mean gains differ by no more than the wider of
their seed ranges; the rows where that holds from there on are converged.
``--write FILE`` / ``--check FILE`` put the table into, or compare it with,
FILE's ``convergence`` block (engine/qemu-plugin/README.md's).
--cpus, --httpd, --clients, --requests and --client-cpus make a smaller
point of the same shape.
"""

from __future__ import annotations

import dataclasses
import statistics

from colorsim.orchestrate.interleaving import (KERNELS, MACHINE, POINT,
                                               add_point_options, point_from_args,
                                               summary, web_spec)
from colorsim.orchestrate.sensitivity import add_table_run_options, emit_table, made_run

QS_US = (100, 20, 5, 1)        # the skew bound Q, modelled µs, coarse to fine
ROWS = (None, *QS_US)          # None: as configured
SEEDS = (1, 2, 3)


def machine_for(q_us, cpus=POINT["cpus"]):
    """piii8 with ``cpus`` CPUs, its clocks held within ``q_us`` µs (None:
    as configured)."""
    from colorsim.describe.machine import get_machine
    m = get_machine(MACHINE).with_cpus(cpus)
    if q_us is None:
        return m
    hz = m.processor.clock_hz
    clients = (dataclasses.replace(m.clients, skew_us=q_us)
               if m.clients is not None else None)
    return dataclasses.replace(
        m, clients=clients,
        timing=dataclasses.replace(m.timing, quantum=hz * q_us // 1_000_000))


def spec_for(kernel, q_us, seed, point=POINT):
    return web_spec(machine_for(q_us, point["cpus"]), kernel, point, seed)


def rows(point, out, run, force, missing=None):
    """(q_us, {kernel: [summary per seed]}) per row whose runs are all
    there (made first with ``run``)."""
    for q in ROWS:
        got = {k: [] for k in KERNELS}
        for seed in SEEDS:
            for k in KERNELS:
                path = made_run(spec_for(k, q, seed, point), out, run, force,
                                missing)
                if path is not None:
                    got[k].append(dict(summary(path), mips=guest_mips(path)))
        if all(len(v) == len(SEEDS) for v in got.values()):
            yield q, got


def guest_mips(path) -> float:
    """Guest instructions (all vCPUs, clients' too) per host second, in
    millions: what the row's order costs."""
    import json
    bm = json.loads((path / "busmon.json").read_text())
    wall = json.loads((path / "config.json").read_text())["wall_s"]
    return bm["insts_since_start"] / wall / 1e6 if wall else float("nan")


def gains(got) -> list:
    """c32's gain over vanilla per seed."""
    return [c["req_s"] / v["req_s"] - 1 if v["req_s"] else float("nan")
            for v, c in zip(got["vanilla"], got["c32"])]


def agrees(a, b) -> bool:
    """Two rows' mean gains differ by no more than the wider seed range."""
    ga, gb = gains(a), gains(b)
    spread = max(max(ga) - min(ga), max(gb) - min(gb))
    return abs(statistics.mean(ga) - statistics.mean(gb)) <= spread


def _q_label(q) -> str:
    return "as configured" if q is None else f"{q} µs"


def _mean_range(values, fmt) -> str:
    return (f"{fmt.format(statistics.mean(values))} "
            f"[{fmt.format(min(values))}..{fmt.format(max(values))}]")


HEADER = ("| clocks held within | vanilla req/s | c32 req/s | c32's gain "
          "| agrees with the next finer row | lock contention, vanilla / c32 "
          "| host s, vanilla / c32 | guest MIPS |\n|---|---|---|---|---|---|---|---|")


def format_row(q, got, finer) -> str:
    v, c = got["vanilla"], got["c32"]
    g = [100 * x for x in gains(got)]
    mean = lambda rs, key: statistics.mean(r[key] for r in rs)
    nxt = "—" if finer is None else ("yes" if agrees(got, finer) else "no")
    return (f"| {_q_label(q)} | {_mean_range([r['req_s'] for r in v], '{:.0f}')} "
            f"| {_mean_range([r['req_s'] for r in c], '{:.0f}')} "
            f"| {_mean_range(g, '{:+.1f}')} % | {nxt} "
            f"| {mean(v, 'contention'):.2f} / {mean(c, 'contention'):.2f} "
            f"| {mean(v, 'host_s'):.0f} / {mean(c, 'host_s'):.0f} "
            f"| {statistics.mean(r['mips'] for r in v + c):.1f} |")


def render(got_rows, p: dict) -> str:
    what = "Figure 9's 8-CPU point" if p == POINT else "A smaller point"
    lines = [f"{what}: {MACHINE}, {p['cpus']} CPUs, {p['httpd']} httpd, "
             f"{p['clients']} clients of {p['requests']} requests on "
             f"{p['client_cpus']} client CPUs, --timing, seeds "
             f"{', '.join(map(str, SEEDS))}: mean [least..most] over the seeds. "
             "Requests per modelled second of the region; c32's gain paired "
             "by seed; a row agrees with the next finer one when the mean "
             "gains differ by no more than the wider of the two seed ranges; "
             "host s: mean wall time per run, and guest MIPS: guest "
             "instructions (every vCPU's) per host second, on the machine "
             "that made the table.", "", HEADER]
    got_rows = list(got_rows)
    for i, (q, got) in enumerate(got_rows):
        finer = (got_rows[i + 1][1] if q is not None and i + 1 < len(got_rows)
                 else None)
        lines.append(format_row(q, got, finer))
    return "\n".join(lines) + "\n"


def cmd_convergence(a):
    from colorsim.report.markdown import check_block_files
    point = point_from_args(a, SEEDS[0])
    for k in KERNELS:                   # refuse a point the runner refuses,
        spec_for(k, QS_US[-1], SEEDS[0], point)     # before any run
    check_block_files(a, "convergence")
    emit_table(a, "convergence", "convergence",
               lambda missing: rows(point, a.out, a.run, a.force, missing),
               lambda got: render(got, point))
    return 0


def add_parser(sub):
    from colorsim.report.markdown import add_block_options
    t = sub.add_parser("convergence",
                       help="the web results with the modelled clocks held "
                       "closer together")
    add_table_run_options(t, "convergence")
    add_point_options(t)
    add_block_options(t, "convergence")
    t.set_defaults(func=cmd_convergence)
