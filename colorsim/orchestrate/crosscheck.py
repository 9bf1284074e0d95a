"""``python3 -m colorsim crosscheck [GEM5_RUN ...]``: both engines on the same work.

For every gem5 run (default: the recorded runs in ``recorded/gem5/``) this
makes the QEMU runs of the same configuration, twice: counting only, and
with ``--timing``.  It then sets the two engines side by side on the two
things each can measure:

* **Traffic per unit of work**: colored-line bus transactions per
  ``schedule()`` call (the ``compare`` command's total; gem5's own view,
  QEMU's counting run).
* **Throughput in modelled time**: ``schedule()`` calls in the same
  region of modelled ticks, gem5's timing CPUs against our timing model,
  and above all the gain of the colored kernel over vanilla on each engine
  (the paper's Figure 6 direction: fewer misses, more work per second).

It writes ``crosscheck.csv`` (tidy: one row per run) and
``crosscheck.png`` into ``--out`` (default ``runs/crosscheck``) and prints
the table.  Runs already made are reused, as ``colorsim run`` does.
``--write FILE`` puts the table, and the costs each engine charged, between
FILE's ``<!-- crosscheck:begin -->`` and ``<!-- crosscheck:end -->``
markers and draws the figure beside FILE (crosscheck.png), from the same
runs; ``--check FILE`` fails if FILE's block is not what the runs give.
"""

from __future__ import annotations

import json
from pathlib import Path

from colorsim import ROOT
from colorsim.errors import ConfigError
from colorsim.argtypes import directory

RECORDED = ROOT / "recorded" / "gem5"
FIELDS = ("config", "machine", "l2", "cpus", "kernel", "tasks", "seed", "engine", "clock",
          "run", "schedule_calls", "colored_lines", "colored_per_schedule",
          "all_per_schedule", "hitm_per_bus_read", "verified")


def gem5_runs(paths) -> list:
    """Complete gem5 run directories among ``paths`` (folders of runs are
    searched one level down); a one-line ConfigError if there are none."""
    found = []
    for p in map(Path, paths):
        cands = [p] if (p / "config.json").is_file() else (
            sorted(q for q in p.iterdir() if (q / "config.json").is_file())
            if p.is_dir() else [])
        if not cands:
            raise ConfigError(f"{p}: no gem5 run directory there (no config.json)")
        for c in cands:
            try:
                cfg = json.loads((c / "config.json").read_text())
            except (OSError, ValueError) as e:
                raise ConfigError(f"{c}/config.json is not readable JSON ({e})") from None
            if cfg.get("engine") == "gem5" and cfg.get("complete"):
                found.append(c)
    if not found:
        raise ConfigError(f"no complete gem5 runs in {', '.join(map(str, paths))}")
    return found


def qemu_spec(gem5_cfg: dict, timing: bool):
    """The QEMU run of a gem5 run's configuration."""
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    m = gem5_cfg["machine"]
    machine = get_machine(m["name"]).with_l2(m["caches"]["l2"]["size"])
    machine = machine.with_cpus(m["processor"]["cpus"])
    w = gem5_cfg["workload"]
    work = Workload(tasks=w["tasks"], burst=w["burst"], buffer=w["buffer"],
                    warmup_ticks=w["warmup_ticks"], roi_ticks=w["roi_ticks"],
                    seed=w["seed"])
    return RunSpec(machine, parse_variant(gem5_cfg["variant"]["name"], machine),
                   work, timing=timing)


def config_key(cfg: dict) -> str:
    m = cfg["machine"]
    from colorsim.units import format_size
    return (f"{m['name']} {m['processor']['cpus']} CPUs "
            f"L2 {format_size(m['caches']['l2']['size'])} "
            f"{cfg['workload']['tasks']} tasks")


def hitm_share(run) -> float:
    """Of a QEMU run's bus reads in the region, the share another CPU's
    cache served (HITM): fills gem5's memory view does not see."""
    import csv
    n = {"hitm": 0, "bus_read": 0}
    with open(Path(run) / "counters.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["dump"] == "0" and int(r["cpu"]) >= 0 and r["stat"] in n:
                n[r["stat"]] += int(r["value"])
    return n["hitm"] / n["bus_read"] if n["bus_read"] else float("nan")


def _row(cfg, engine, clock, run, sched, colored, all_lines,
         verified=True) -> dict:
    m = cfg["machine"]
    return {"config": config_key(cfg), "machine": m["name"], "verified": verified,
            "l2": m["caches"]["l2"]["size"], "cpus": m["processor"]["cpus"],
            "kernel": cfg["variant"]["name"], "tasks": cfg["workload"]["tasks"],
            "seed": cfg["workload"].get("seed", 1), "engine": engine, "clock": clock, "run": str(run),
            "schedule_calls": int(sched), "colored_lines": colored,
            "colored_per_schedule": colored / sched if sched else float("nan"),
            "all_per_schedule": all_lines / sched if sched else float("nan"),
            "hitm_per_bus_read": hitm_share(run) if engine == "qemu" else float("nan")}


def crosscheck(paths, out: Path, progress=print) -> list:
    """Make the QEMU runs and return the rows (see module doc)."""
    from colorsim.run import runner
    from colorsim.results.compare import comparison
    rows = []
    folders = gem5_runs(paths)
    for i, g in enumerate(folders, 1):
        cfg = json.loads((g / "config.json").read_text())
        progress(f"crosscheck [{i}/{len(folders)}] {config_key(cfg)} "
                 f"{cfg['variant']['name']}: QEMU counting and timing runs")
        runs = {}
        for timing in (False, True):
            spec = qemu_spec(cfg, timing)
            runs[timing] = runner.run(spec, out=out, progress=lambda *_: None)
        c = comparison(runs[False], g)          # refuses differing configs
        colored, everything = c["totals"]
        rows.append(_row(cfg, "gem5", f"modelled ({c['gem5_view']} view)", g,
                         c["schedules"]["gem5"], colored["gem5"], everything["gem5"],
                         c["gem5"].verified))
        rows.append(_row(cfg, "qemu", "icount (counting)", runs[False],
                         c["schedules"]["qemu"], colored["qemu"], everything["qemu"]))
        t = comparison(runs[True], g)
        colored, everything = t["totals"]
        rows.append(_row(cfg, "qemu", "modelled (--timing)", runs[True],
                         t["schedules"]["qemu"], colored["qemu"], everything["qemu"]))
    return rows


def gains(rows) -> list:
    """Per configuration, engine and clock: schedule() calls of each colored
    kernel over vanilla's in the same region (1.81 = 81 % more work)."""
    base = {(r["config"], r["engine"], r["clock"]): r["schedule_calls"]
            for r in rows if r["kernel"] == "vanilla"}
    out = []
    for r in rows:
        v = base.get((r["config"], r["engine"], r["clock"]))
        if r["kernel"] != "vanilla" and v:
            out.append({"config": r["config"], "kernel": r["kernel"],
                        "engine": r["engine"], "clock": r["clock"],
                        "gain": r["schedule_calls"] / v})
    return out


def _ordered(rows) -> list:
    return sorted(rows, key=lambda r: (r["machine"], r["l2"], r["kernel"] != "vanilla",
                                       r["kernel"], r["engine"], r["clock"]))


GAIN_NOTE = ("gain: schedule() calls over vanilla's in the same region (the same "
             "modelled ticks on gem5 and with --timing; icount ticks count "
             "instructions, so no gain is expected there)")


def format_table(rows) -> str:
    lines = [f"{'configuration':<26} {'kernel':<8} {'engine/clock':<28} "
             f"{'schedule()':>10} {'colored/sched':>13} {'gain':>7}"]
    g = {(x["config"], x["kernel"], x["engine"], x["clock"]): x["gain"]
         for x in gains(rows)}
    for r in _ordered(rows):
        gain = g.get((r["config"], r["kernel"], r["engine"], r["clock"]))
        lines.append(f"{r['config']:<26} {r['kernel']:<8} "
                     f"{r['engine'] + ' ' + r['clock']:<28} {r['schedule_calls']:>10} "
                     f"{r['colored_per_schedule']:>13.1f} "
                     + (f"{(gain - 1) * 100:>+6.0f}%" if gain else f"{'':>7}"))
    lines.append(GAIN_NOTE)
    return "\n".join(lines)


def costs(rows) -> list:
    """Per machine, what a memory access cost each engine: gem5's idle
    load-to-use time (the machine's memory.latency: memory, bus and caches
    together) and our timing model's, as the timing runs were made with it."""
    out = {}
    for r in rows:
        if r["engine"] != "qemu" or not r["clock"].startswith("modelled"):
            continue
        cfg = json.loads((Path(r["run"]) / "config.json").read_text())
        t, m = cfg.get("timing") or {}, cfg["machine"]
        hz = m["processor"]["clock_hz"]
        out.setdefault(r["machine"], {
            "machine": r["machine"], "gem5_mem_ns": m["memory"]["latency_ns"],
            "mem_cycles": t.get("mem"), "mem_ns": t.get("mem", 0) / hz * 1e9,
            "l2_hit": t.get("l2_hit"), "fetch": bool(t.get("fetch"))})
    return [out[k] for k in sorted(out)]


def markdown_table(rows) -> str:
    """The generated block of docs/engines.md: one line per run, then the
    memory costs each engine charged."""
    g = {(x["config"], x["kernel"], x["engine"], x["clock"]): x["gain"]
         for x in gains(rows)}
    pct = lambda x: "" if x != x else f"{x * 100:.0f} %"
    lines = ["| configuration | kernel | engine, clock | schedule() calls | "
             "colored lines per schedule() | gain over vanilla | "
             "HITM fills per bus read |", "|---|---|---|---|---|---|---|"]
    for r in _ordered(rows):
        gain = g.get((r["config"], r["kernel"], r["engine"], r["clock"]))
        lines.append(f"| {r['config']} | {r['kernel']} | {r['engine']}, {r['clock']} "
                     f"| {r['schedule_calls']} | {r['colored_per_schedule']:.1f} | "
                     + (f"{(gain - 1) * 100:+.0f} %" if gain else "")
                     + f" | {pct(r['hitm_per_bus_read'])} |")
    lines += ["", GAIN_NOTE + "; HITM fills: QEMU's bus reads another CPU's "
              "cache served (QEMU only: gem5's bus view counts these fills among "
              "its reads without telling them apart; a memory view has none).", "",
              "| machine | load-to-use, gem5 (memory.latency) | memory latency, ours (--timing) "
              "| L2 hit, ours | instruction fetch through the caches, ours |",
              "|---|---|---|---|---|"]
    for c in costs(rows):
        lines.append(f"| {c['machine']} | {c['gem5_mem_ns']:.0f} ns | "
                     f"{c['mem_cycles']} cycles ({c['mem_ns']:.0f} ns) | "
                     f"{c['l2_hit']} cycles | {'on' if c['fetch'] else 'off'} |")
    return "\n".join(lines) + "\n"


def write_csv(rows, path: Path) -> Path:
    from colorsim.run.tables import write_rows
    write_rows(path, FIELDS, [[r[k] for k in FIELDS] for r in rows])
    return path


def plot(rows, path: Path) -> Path:
    """Left: the colored kernel's schedule() gain over vanilla per
    configuration, gem5 beside our timing model.  Right: colored-line bus
    transactions per schedule(), both kernels, both engines (log scale)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from colorsim.report.plots import save_figure
    configs = sorted({r["config"] for r in rows},      # small machines first
                     key=lambda c: next((r["cpus"], r["l2"], r["tasks"]) for r in rows
                                        if r["config"] == c))
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.8))
    gs = gains(rows)
    series = [("gem5", "modelled", "#7a3e9d", "gem5 v24, TimingSimple CPUs"),
              ("qemu", "modelled (--timing)", "#d95f02", "QEMU + our timing model")]
    width = 0.38
    for k, (eng, clock, color, label) in enumerate(series):
        ys = []
        for c in configs:
            v = [x["gain"] for x in gs if x["config"] == c and x["engine"] == eng
                 and x["clock"].startswith(clock)]
            ys.append((v[0] - 1) * 100 if v else float("nan"))
        xs = [i + (k - 0.5) * width for i in range(len(configs))]
        bars = a.bar(xs, ys, width, color=color, label=label)
        a.bar_label(bars, fmt="%+.0f%%", fontsize=8)
    a.set_xticks(range(len(configs)), [c.replace(" L2", "\nL2") for c in configs], fontsize=8)
    top = max([(x["gain"] - 1) * 100 for x in gs] + [10])
    a.set_ylim(min(0, *[(x["gain"] - 1) * 100 for x in gs]) if gs else 0, top * 1.3)
    a.axhline(0, color="black", lw=0.6)
    a.set_ylabel("more schedule() calls than vanilla (%)")
    a.set_title("Work in the same modelled region: colored over vanilla")
    a.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    marks = {("gem5", "vanilla"): ("#7a3e9d", "o"), ("gem5", "c"): ("#7a3e9d", "s"),
             ("qemu", "vanilla"): ("#1b9e77", "o"), ("qemu", "c"): ("#1b9e77", "s")}
    for kern in sorted({r["kernel"] for r in rows}, key=lambda k: k != "vanilla"):
        for eng, clock in (("gem5", "modelled"), ("qemu", "icount")):
            pts = {r["config"]: r["colored_per_schedule"] for r in rows
                   if r["kernel"] == kern and r["engine"] == eng and r["clock"].startswith(clock)}
            if not pts:
                continue
            color, marker = marks[(eng, "vanilla" if kern == "vanilla" else "c")]
            # configurations are categories: points side by side, not joined
            dx = -0.1 if eng == "gem5" else 0.1
            b.plot([configs.index(c) + dx for c in configs if c in pts],
                   [pts[c] for c in configs if c in pts], marker=marker, ls="none",
                   color=color, label=f"{kern}, {'gem5' if eng == 'gem5' else 'QEMU'}")
    b.set_yscale("log")
    b.set_xticks(range(len(configs)), [c.replace(" L2", "\nL2") for c in configs], fontsize=8)
    b.set_ylabel("colored-line bus transactions per schedule()")
    b.set_title("Traffic per unit of work (gem5: its monitor's view)")
    b.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    seeds = sorted({r.get("seed", 1) for r in rows})
    fig.suptitle("QEMU beside the recorded gem5 runs: each configuration as "
                 "recorded (the gem5 runs' scale: small guests, short regions)\n"
                 f"seed{'s' if len(seeds) > 1 else ''} "
                 f"{', '.join(map(str, seeds))}, built-in workload (no accept "
                 "mode); left per modelled region, right per schedule() call",
                 fontsize=9)
    fig.tight_layout()
    return save_figure(fig, path)


def add_parser(sub):
    p = sub.add_parser("crosscheck", help="QEMU beside every recorded gem5 run: "
                       "traffic and the colored gain")
    p.add_argument("gem5_runs", nargs="*", type=Path, metavar="GEM5_RUN",
                   help=f"gem5 run directories or folders of them (default {RECORDED})")
    p.add_argument("--out", type=directory, default=None,
                   help="where the QEMU runs, crosscheck.csv and crosscheck.png go "
                        "(default runs/crosscheck)")
    from colorsim.report.markdown import add_block_options
    add_block_options(p, "crosscheck")
    p.set_defaults(func=cmd_crosscheck)
    return p


def cmd_crosscheck(args):
    import sys
    from colorsim.run.rundir import check_out_dir
    from colorsim.report.markdown import check_block_files, emit
    paths = args.gem5_runs or [RECORDED]
    from colorsim.run.runner import RUNS
    check_block_files(args, "crosscheck")          # before any run
    out = check_out_dir(args.out or RUNS / "crosscheck")
    rows = crosscheck(paths, out, progress=lambda m: print(m, file=sys.stderr))
    if args.write or args.check:
        emit(markdown_table(rows), args, "crosscheck", how="crosscheck")
    else:
        print(format_table(rows))
    unverified = sum(1 for r in rows if not r["verified"])
    if unverified:           # the recorded gem5 runs have no manifest
        print(f"colorsim: {unverified} of {len(rows)} rows come from unverified "
              f"runs (no manifest; verified=False in the CSV)", file=sys.stderr)
    csv_path = write_csv(rows, out / "crosscheck.csv")
    png = plot(rows, out / "crosscheck.png")
    print(f"wrote {csv_path} and {png}")
    if args.write:           # the figure beside the Markdown, from the same runs
        print(f"wrote {plot(rows, Path(args.write).parent / 'crosscheck.png')}")
