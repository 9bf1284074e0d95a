"""``python3 -m colorsim compare QEMU_RUN GEM5_RUN``: the engines per schedule().

The two engines run the same kernel for the same modeled region but do
different amounts of work in it (gem5's timing CPUs run several times more
instructions than QEMU's icount clock allows), so their region totals
differ.  What they must agree on is the traffic per unit of work: bus
transactions per ``schedule()`` call.  This command prints, per page offset
at line granularity (gem5's monitors key whole lines) and in total, each
engine's transactions per schedule() and the ratio gem5 / QEMU.

It refuses (one line, exit status 2) runs that are not one QEMU and one gem5
run of the same configuration: machine, L2, CPUs, kernel variant, workload.
"""

from __future__ import annotations

from pathlib import Path

from colorsim.errors import ConfigError

KIND_CHOICES = ("all", "common")
SPAN_COLORS = 32


def colored_lines_span(layout: dict, span_colors: int = SPAN_COLORS) -> tuple:
    """[lo, hi) of the page offsets the hot line can occupy with
    max(kernel's colors, ``span_colors``) colors, within the page."""
    from colorsim.results.rundata import hot_offsets
    h = hot_offsets(layout)
    colors = max(layout["variant"]["colors"], span_colors)
    colors += layout["scheduler_hot"].get("lines_per_task", 1) - 1
    page = layout.get("page_size", 4096)
    return h["line_offset"], min(page, h["line_offset"] + colors * h["line"])


def add_parser(subparsers):
    """Register ``compare`` on the command line's subparsers."""
    p = subparsers.add_parser(
        "compare", help="a QEMU run beside a gem5 run of the same "
                        "configuration, per schedule()")
    p.add_argument("runs", nargs=2, type=Path, metavar="RUN",
                   help="a QEMU run directory and a gem5 run directory "
                        "(either order)")
    p.add_argument("--gem5-view", choices=["bus", "memory"], default=None,
                   help="gem5's traffic: 'bus' (per-L2 monitors, as QEMU's "
                        "busmon) or 'memory' (the monitor before memory); "
                        "default: bus where the run has it, else memory")
    p.add_argument("--kinds", choices=KIND_CHOICES, default="all",
                   help="'all': every kind each engine counts (QEMU also "
                        "counts invalidations); 'common': fills and "
                        "write-backs only, what both engines can count")
    p.add_argument("--span-colors", type=int, default=SPAN_COLORS,
                   help="colored lines = the offsets the scheduler's hot line "
                        "can take with this many colors (default 32: "
                        "Figure 1's span, 0x20-0x41f on 32-byte lines), or "
                        "with the kernel's own colors if more")
    p.set_defaults(func=cmd_compare)
    return p


# (label, how to read it from a run's config.json)
_CONFIG_KEYS = (
    ("machine", lambda c: c["machine"]["name"]),
    ("cpus", lambda c: c["machine"]["processor"]["cpus"]),
    ("l2", lambda c: (c["machine"]["caches"]["l2"]["size"],
                      c["machine"]["caches"]["l2"]["assoc"],
                      c["machine"]["caches"]["l2"]["line"])),
    ("variant", lambda c: (c["variant"]["name"], c["variant"]["colors"],
                           c["variant"]["line"])),
    ("workload", lambda c: tuple(sorted(c["workload"].items()))),
)


def config_differences(a: dict, b: dict) -> list[str]:
    """What differs between two runs' configurations (empty: comparable)."""
    out = []
    for label, get in _CONFIG_KEYS:
        try:
            va, vb = get(a), get(b)
        except (KeyError, TypeError):
            out.append(f"{label} missing")
            continue
        if va != vb:
            if label == "workload":
                da, db = dict(va), dict(vb)
                keys = sorted(k for k in set(da) | set(db)
                              if da.get(k) != db.get(k))
                va = ",".join(f"{k}={da.get(k)}" for k in keys)
                vb = ",".join(f"{k}={db.get(k)}" for k in keys)
            out.append(f"{label} {va} vs {vb}")
    return out


def _line_histogram(run, which, kinds):
    """Transactions per line offset of one run, one bus view, ``kinds``."""
    import pandas as pd

    from colorsim.results.rundata import ROI_DUMP, select_bus_view
    df = select_bus_view(run.offsets, which)
    df = df[df["dump"] == ROI_DUMP]
    if kinds == "common":
        df = df[df["kind"].isin(["read", "rfo", "writeback"])]
    if df.empty:
        return pd.Series(dtype="float64")
    line = run.layout["variant"]["line"]
    off = df["offset"] - df["offset"] % line
    return df.groupby(off)["count"].sum().sort_index()


def comparison(qemu_dir, gem5_dir, gem5_view=None, kinds="all",
               span_colors: int = SPAN_COLORS) -> dict:
    """The comparison as data: rows per offset and totals (see module doc).

    :raises ConfigError: not one QEMU and one gem5 run, configurations
        differ, or a run has no schedule() count.
    """
    from colorsim.results.rundata import (load_run, select_bus_view, work_units,
                                  bus_views)
    runs = [load_run(qemu_dir), load_run(gem5_dir)]
    by_engine = {r.config.get("engine"): r for r in runs}
    if set(by_engine) != {"qemu", "gem5"}:
        engines = ", ".join(str(r.config.get("engine")) for r in runs)
        raise ConfigError(f"compare needs one QEMU run and one gem5 run, got "
                          f"engines {engines}")
    q, g = by_engine["qemu"], by_engine["gem5"]
    diff = config_differences(q.config, g.config)
    if diff:
        raise ConfigError(f"the runs differ in configuration ({q.path} vs "
                          f"{g.path}): " + "; ".join(diff))
    if kinds not in KIND_CHOICES:
        raise ConfigError(f"--kinds must be one of {', '.join(KIND_CHOICES)}")
    view = gem5_view or bus_views(g)[0]
    if view not in bus_views(g):
        raise ConfigError(f"{g.path} has no {view} view (it has "
                          f"{', '.join(bus_views(g))})")
    select_bus_view(g.offsets, view)      # validates the name
    sched = {}
    for name, r in (("qemu", q), ("gem5", g)):
        s = work_units(r)["schedule"]
        if not s == s or s <= 0:          # NaN or zero
            raise ConfigError(f"{r.path} has no schedule() count (no "
                              f"'roi: end ... schedules N' console line)")
        sched[name] = s
    hq = _line_histogram(q, "bus", kinds)
    hg = _line_histogram(g, view, kinds)
    if span_colors < 1:
        raise ConfigError(f"--span-colors must be at least 1, not "
                          f"{span_colors}")
    lo, hi = colored_lines_span(q.layout, span_colors)
    offsets = sorted(set(hq.index) | set(hg.index))
    rows = []
    for off in offsets:
        cq, cg = float(hq.get(off, 0)), float(hg.get(off, 0))
        if cq == 0 and cg == 0:
            continue
        rows.append(_row(int(off), cq, cg, sched))
    colored = [r for r in rows if lo <= r["offset"] < hi]
    totals = [
        _row(f"colored lines {lo:#x}-{hi - 1:#x}",
             sum(r["qemu"] for r in colored), sum(r["gem5"] for r in colored),
             sched),
        _row("all offsets", float(hq.sum()), float(hg.sum()), sched),
    ]
    kinds_rows = [_row(k, bus_requests(q).get(k, float("nan")),
                       bus_requests(g).get(k, float("nan")), sched)
                  for k in BUS_KINDS]
    return {"qemu": q, "gem5": g, "gem5_view": view, "kinds": kinds,
            "schedules": sched, "rows": rows, "totals": totals,
            "bus_kinds": kinds_rows}


BUS_KINDS = ("bus_read", "bus_rfo", "bus_writeback", "bus_invalidate")


def bus_requests(run) -> dict:
    """Run-wide bus requests by kind in the region, all offsets.

    QEMU: the plugin's per-CPU ``bus_*`` counters.  gem5: the ``bus_*``
    counters the collect step takes from the memory bus's transaction
    distribution (every request on the bus, whoever serves it); for a run
    collected before they existed, read from its ``gem5/stats.txt``.
    """
    from colorsim.results.rundata import ROI_DUMP
    c = run.counters
    c = c[(c["dump"] == ROI_DUMP) & c["stat"].isin(BUS_KINDS)]
    if c.empty and run.config.get("engine") == "gem5":
        stats = run.path / "gem5" / "stats.txt"
        if stats.is_file():
            from colorsim.run.statstxt import parse_stats

            from colorsim.run.engines.gem5stats import global_rows
            return {r[3]: float(r[4]) for r in global_rows(parse_stats(stats))
                    if r[0] == ROI_DUMP and r[3] in BUS_KINDS}
        return {}
    return {k: float(v) for k, v in c.groupby("stat")["value"].sum().items()}


def _row(key, cq, cg, sched) -> dict:
    pq, pg = cq / sched["qemu"], cg / sched["gem5"]
    return {"offset": key, "qemu": cq, "gem5": cg, "qemu_per_schedule": pq,
            "gem5_per_schedule": pg,
            "ratio": pg / pq if pq else float("inf")}


def format_comparison(c: dict) -> str:
    q, g = c["qemu"], c["gem5"]
    cfg = q.config
    l2 = cfg["machine"]["caches"]["l2"]
    out = [
        f"compare: {cfg['machine']['name']} {cfg['machine']['processor']['cpus']}"
        f" CPUs, L2 {l2['size'] // 1024} KiB {l2['assoc']}-way {l2['line']} B,"
        f" kernel {cfg['variant']['name']}, {cfg['workload']['tasks']} tasks",
        f"  qemu {q.path}: {c['schedules']['qemu']:.0f} schedule() calls, "
        f"bus view (busmon), line granularity",
        f"  gem5 {g.path}: {c['schedules']['gem5']:.0f} schedule() calls, "
        f"{c['gem5_view']} view",
        "  kinds: " + ("every kind each engine counts (QEMU: read, rfo, "
                        "writeback, invalidate; gem5: read incl. ReadEx, "
                        "writeback)" if c["kinds"] == "all" else
                        "fills and write-backs (no invalidations)"),
        "",
        f"{'offset':>24} {'qemu':>10} {'qemu/sched':>11} {'gem5':>10} "
        f"{'gem5/sched':>11} {'gem5/qemu':>10}",
    ]

    def line(r):
        key = (f"{r['offset']:#06x}" if isinstance(r["offset"], int)
               else r["offset"])
        ratio = "-" if r["ratio"] == float("inf") else f"{r['ratio']:.3f}"
        return (f"{key:>24} {r['qemu']:>10.0f} {r['qemu_per_schedule']:>11.2f} "
                f"{r['gem5']:>10.0f} {r['gem5_per_schedule']:>11.2f} "
                f"{ratio:>10}")
    out += [line(r) for r in c["rows"]]
    out.append("")
    out += [line(r) for r in c["totals"]]
    out += ["", "run-wide bus requests by kind, all offsets (QEMU: busmon "
            "counters; gem5: memory-bus transDist, whoever answered):"]
    out += [line(r).replace("nan", "  -") for r in c["bus_kinds"]]
    return "\n".join(out)


def cmd_compare(args):
    import sys
    c = comparison(args.runs[0], args.runs[1], gem5_view=args.gem5_view,
                   kinds=args.kinds, span_colors=args.span_colors)
    for r in (c["qemu"], c["gem5"]):
        if not r.verified:       # used, but not as a verified run
            print(f"colorsim: unverified run {r.path}: {r.unverified}",
                  file=sys.stderr)
    print(format_comparison(c))
