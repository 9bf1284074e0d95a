"""The referee: the timed web and Chat results on gem5 beside QEMU's.

``python3 -m colorsim referee [--run] [--out DIR]`` runs (with --run) and
prints, at two points small enough for gem5's timing CPUs, vanilla and c32,
three seeds each, on three engines: gem5 (TimingSimple CPUs, whose clocks
interleave in modelled time), QEMU's timing mode as configured, and QEMU
with every clock held within 1 µs (the convergence table's finest row).
The points:

* ``web``: Figure 9's 8-CPU point made smaller (piii8, 8 CPUs, 64 httpd,
  64 clients of 4 requests on 6 client CPUs);
* ``chat``: Chat at 2 CPUs with 800 threads (10 rooms x 20 users) and 5
  messages per user, the middle 20 % to 80 %.

Each row gives the throughput per modelled second and c32's gain (mean
[least..most] over the seeds), runqueue_lock's contention as the kernel
counted it (kernels/kernel/lockstat.c: the same code on both engines) and,
on QEMU, as the lockmeter ordered it in modelled time, the mean hold (gem5:
the kernel's, in gem5's clock; QEMU: the lockmeter's), schedule() calls per
request or message, and the run-queue walk's L2 miss ratio (gem5: the
suite's probe on each L2, configs/gem5/README.md; runs of a gem5 built
before it have none).  ``--write FILE`` / ``--check FILE`` put the table into,
or compare it with, FILE's ``referee`` block (docs/engines.md's).
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from colorsim import ROOT
from colorsim.orchestrate.convergence import bounded
from colorsim.orchestrate.seeds import SEEDS, rate_cells
from colorsim.orchestrate.interleaving import KERNELS, web_spec
from colorsim.orchestrate.sensitivity import add_table_run_options, emit_table, made_run

RECORDED = ROOT / "recorded" / "gem5" / "referee.csv"  # its gem5 runs' numbers
MACHINE = "piii8"
WEB = {"cpus": 8, "httpd": 64, "clients": 64, "requests": 4, "client_cpus": 6}
CHAT = {"cpus": 2, "rooms": 10, "users": 20, "messages": 5, "skip": 20}
# engine rows: (label, engine, clocks held within µs; None: as configured)
ENGINES = (("gem5 TimingSimple", "gem5", None),
           ("QEMU --timing, as configured", "qemu", None),
           ("QEMU --timing, clocks within 1 µs", "qemu", 1))
POINTS = ("web", "chat")


def spec_for(point: str, engine: str, q_us, kernel: str, seed: int):
    """One run of the table: ``point`` on ``engine`` (QEMU: --timing, its
    clocks held within ``q_us``), with this kernel and seed."""
    from colorsim.describe.experiments import PROGRAMS, workload_args
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    p = WEB if point == "web" else CHAT
    timing = engine == "qemu"
    m = get_machine(MACHINE).with_cpus(p["cpus"])
    m = bounded(m, q_us) if timing else m
    if point == "web":
        w = web_spec(m, kernel, p, seed).workload
    else:
        threads = p["rooms"] * p["users"] * 4     # chat: 4 threads per user
        w = Workload(tasks=threads, program=PROGRAMS["chat"],
                     args=workload_args("chat", threads, {"messages": p["messages"],
                                                          "skip": p["skip"]}),
                     seed=seed)
    return RunSpec(m, parse_variant(kernel, m), w, engine=engine, timing=timing,
                   timeout_s=3600)


def summary(path: Path) -> dict:
    """A run's numbers for the table, from its catalog row."""
    from colorsim.results.rundata import load_run
    from colorsim.results.runrows import run_rows
    r = run_rows(load_run(path), path.parent)["runs"]
    gem5 = r["engine"] == "gem5"
    web = r["workload_program"] == "/bin/web"
    units = r["roi_requests"] if web else r["roi_messages"]
    return {"rate": r["requests_per_modeled_second"] if web
            else r["messages_per_modeled_second"],
            "kernel_contention": r["kernel_lock_contention"],
            "meter_contention": r["lock_contention"],
            "hold": r["kernel_lock_hold_mean_us"] if gem5 else r["lock_hold_mean_us"],
            "walks": r["schedule_calls"] / units if units else math.nan,
            "walk_miss": r["rqloop_l2_miss_ratio"],
            "host_s": json.loads((path / "config.json").read_text())["wall_s"]}


def rows(out: Path, run: bool, force: bool, missing=None):
    """(point, engine label, {kernel: [summary per seed]}) per row whose
    runs are all there (made first with ``run``)."""
    for point in POINTS:
        for label, engine, q in ENGINES:
            got = {k: [] for k in KERNELS}
            for seed in SEEDS:
                for k in KERNELS:
                    path = made_run(spec_for(point, engine, q, k, seed), out, run,
                                    force, missing)
                    if path is not None:
                        got[k].append(summary(path))
            if all(len(v) == len(SEEDS) for v in got.values()):
                yield point, label, got


# What recorded/gem5/referee.csv keeps of each gem5 run: its name, the
# builds it came from, and the numbers the table shows.
IDENTITY = ("engine_version", "engine_sha256", "engine_config_sha256",
            "kernel_sha256", "rootfs_sha256", "config_sha256")
NUMBERS = ("rate", "kernel_contention", "meter_contention", "hold", "walks",
           "walk_miss", "host_s")


def record_gem5(out: Path, dest: Path) -> int:
    """Write the gem5 rows' runs under ``out`` to ``dest`` (a CSV, one
    line per run: name, point, kernel, seed, identity, numbers), so that a
    clone without gem5 can check the table's gem5 rows.  Refuses, before
    writing anything, when a run is missing."""
    import csv
    from colorsim.errors import ResultsError
    label, engine, q = ENGINES[0]
    lines = []
    for point in POINTS:
        for k in KERNELS:
            for seed in SEEDS:
                path = out / spec_for(point, engine, q, k, seed).default_name()
                if not (path / "config.json").is_file():
                    raise ResultsError(f"{path} is missing: make the gem5 runs "
                                       f"first (--run)")
                config = json.loads((path / "config.json").read_text())
                lines.append({"run": path.name, "point": point, "kernel": k,
                              "seed": seed, **{f: config[f] for f in IDENTITY},
                              **summary(path)})
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, ["run", "point", "kernel", "seed", *IDENTITY, *NUMBERS],
                           lineterminator="\n")
        w.writeheader()
        w.writerows({k: repr(float(v)) if k in NUMBERS else v
                     for k, v in line.items()} for line in lines)
    tmp.replace(dest)
    return len(lines)


def recorded_rows(recorded: Path):
    """The gem5 rows from ``recorded`` (record_gem5's CSV)."""
    import csv
    label = ENGINES[0][0]
    with open(recorded, newline="") as f:
        runs = list(csv.DictReader(f))
    for point in POINTS:
        got = {k: [{n: float(r[n]) for n in NUMBERS} for r in runs
                   if r["point"] == point and r["kernel"] == k]
               for k in KERNELS}
        yield point, label, got


def _mean(rs, key):
    vals = [r[key] for r in rs if r[key] == r[key]]
    return statistics.mean(vals) if vals else math.nan


def _pair(got, key, fmt) -> str:
    v, c = _mean(got["vanilla"], key), _mean(got["c32"], key)
    if math.isnan(v) and math.isnan(c):
        return "-"
    return f"{fmt.format(v)} / {fmt.format(c)}"


def format_row(point, label, got) -> str:
    return (f"| {point} | {label} {rate_cells(got)}"
            f"| {_pair(got, 'kernel_contention', '{:.2f}')} "
            f"| {_pair(got, 'meter_contention', '{:.2f}')} "
            f"| {_pair(got, 'hold', '{:.1f}')} "
            f"| {_pair(got, 'walks', '{:.2f}')} "
            f"| {_pair(got, 'walk_miss', '{:.2f}')} "
            f"| {_pair(got, 'host_s', '{:.0f}')} |")


def title() -> str:
    w, c = WEB, CHAT
    return (f"{MACHINE}, vanilla and c32, seeds {', '.join(map(str, SEEDS))}: mean "
            f"[least..most] over the seeds, and vanilla / c32 means. web: "
            f"{w['cpus']} CPUs, {w['httpd']} httpd, {w['clients']} clients of "
            f"{w['requests']} requests on {w['client_cpus']} client CPUs; chat: "
            f"{c['cpus']} CPUs, {c['rooms']} rooms x {c['users']} users, "
            f"{c['messages']} messages per user, the middle {c['skip']} % to "
            f"{100 - c['skip']} %. Throughput per modelled second of the region; "
            "contention: the share of runqueue_lock's acquisitions that found it "
            "held, as the kernel counted them and as the lockmeter ordered them in "
            "modelled time (QEMU only); hold: mean µs (gem5: the kernel's count in "
            "gem5's clock; QEMU: the lockmeter's); walks: schedule() calls per "
            "request or message; walk L2 miss: the run-queue loop's read miss "
            "ratio (gem5: the suite's probe on each L2); host s: mean wall time "
            "per run on the machine that made the table.")


HEADER = ("| point | engine | vanilla per s | c32 per s | c32's gain "
          "| contention, kernel's | contention, lockmeter's | hold µs "
          "| walks per unit | walk L2 miss | host s |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|")


def render(got_rows) -> str:
    lines = [title(), "", HEADER]
    lines += [format_row(p, label, got) for p, label, got in got_rows]
    return "\n".join(lines) + "\n"


def cmd_referee(a):
    from colorsim.report.markdown import check_block_files
    for point in POINTS:                # refuse what the runner refuses,
        for _, engine, q in ENGINES:    # before any run
            spec_for(point, engine, q, KERNELS[0], SEEDS[0])
    check_block_files(a, "referee")
    if a.record_gem5:
        n = record_gem5(a.out, RECORDED)
        print(f"referee: {n} gem5 runs recorded in {RECORDED}")
    emit_table(a, "referee", "referee", lambda missing: rows(a.out, a.run, a.force, missing),
               render)
    return 0


def add_parser(sub):
    from colorsim.report.markdown import add_block_options
    t = sub.add_parser("referee",
                       help="the timed web and Chat results on gem5 beside QEMU's")
    add_table_run_options(t, "referee")
    t.add_argument("--record-gem5", action="store_true",
                   help="also write the gem5 runs' builds and numbers to "
                        "recorded/gem5/referee.csv, which the tests check the "
                        "table's gem5 rows against")
    add_block_options(t, "referee")
    t.set_defaults(func=cmd_referee)
