"""Timing-mode results: lockmeter (the paper's Tables 6 and 8), work per
modelled second and cycles per schedule(), from runs made with --timing.

``python3 -m colorsim timing-table [--run] [--out DIR]`` makes (with --run)
and prints the timing table: ppro4 with 1024 tasks, vanilla, c32, mq and
mq-c32 at 256 KiB, 512 KiB and 1 MiB; piii8 with 1..8 CPUs, the same
kernels.  --kernels, --machine and --l2 pick a part of it.

The lockmeter meters the run-queue lock(s): vanilla's and cN's one global
runqueue_lock, or each CPU's own run-queue lock under mq and mq-cN; its
counters are per acquiring CPU, so the sums below are over all the locks.

The unit of work is one burst of the built-in workload: busmon's unit=
counts entries to its compute loop (kernels/workload/tasks.c), per CPU,
as `work_units`.  Runs made before that counter existed fall back to
schedule() calls (each burst ends in one; a few more come from tick
preemption).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from colorsim.errors import ConfigError
from colorsim.results.runrows import modeled_seconds
from colorsim.run.schedshare import spin_counted_once
from colorsim.argtypes import directory, name_list

PPRO_L2 = ("256KiB", "512KiB", "1MiB")
KERNELS = ("vanilla", "c32", "mq", "mq-c32")


def timing_summary(run: Path) -> dict:
    """One run's timing numbers; ConfigError if it is not a timing run."""
    run = Path(run)
    try:
        cfg = json.loads((run / "config.json").read_text())
        with open(run / "counters.csv", newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{run}: not a readable run ({e})") from None
    if not cfg.get("timing"):
        raise ConfigError(f"{run}: not a timing run (made without --timing)")
    hz = cfg["machine"]["processor"]["clock_hz"]
    per = {}
    sched = 0
    elapsed = skew = None
    for r in rows:
        cpu, stat = int(r["cpu"]), r["stat"]
        if cpu < 0:             # the kernel's region numbers (console.py):
            if stat == "schedule_calls":       # some are not whole numbers
                sched = int(r["value"])
            elif stat == "elapsed_cycles" and r["dump"] == "0":
                elapsed = int(r["value"])      # busmon: the region's length
            elif stat == "max_skew_cycles" and r["dump"] == "0":
                skew = int(r["value"])         # busmon: largest lead at a poll
            continue
        v = int(r["value"])
        d = per.setdefault(cpu, {})
        d[stat] = d.get(stat, 0) + v
    us = lambda cyc: cyc / hz * 1e6
    spin_once = spin_counted_once(run)      # older plugins booked it twice
    cpus = sorted(per)
    out = {"run": run.name, "machine": cfg["machine"]["name"],
           "cpus": len(cpus), "l2": cfg["machine"]["caches"]["l2"]["size"],
           "kernel": cfg["variant"]["name"], "schedule_calls": sched}
    acq = sum(per[c]["lock_acquisitions"] for c in cpus)
    con = sum(per[c]["lock_contended"] for c in cpus)
    hold = sum(per[c]["lock_hold_cycles"] for c in cpus)
    cycles = [per[c]["cycles"] for c in cpus]
    seconds = modeled_seconds(elapsed, hz)
    units = sum(per[c].get("work_units", 0) for c in cpus) or sched
    out.update(
        work_units=units,
        lock_acquisitions=acq,
        lock_contention=con / acq if acq else float("nan"),
        lock_spin_us=(us(sum(per[c]["lock_spin_cycles"] for c in cpus))
                      if spin_once else float("nan")),
        lock_hold_mean_us=us(hold / acq) if acq else float("nan"),
        lock_hold_max_us=us(max(per[c]["lock_hold_max_cycles"] for c in cpus)),
        modeled_seconds=seconds,
        work_per_modeled_second=units / seconds if seconds else float("nan"),
        max_skew_us=us(skew) if skew is not None else float("nan"),
        busy_fraction=(sum(cycles) / len(cycles) / hz / seconds
                       if seconds else float("nan")),
        cycles_per_schedule=sum(cycles) / sched if sched else float("nan"),
        insts=sum(per[c]["insts"] for c in cpus),
        cycles_spread=(max(cycles) - min(cycles)) / max(cycles) if max(cycles) else 0.0,
        per_cpu=[{"cpu": c,
                  "acquisitions": per[c]["lock_acquisitions"],
                  "contention": (per[c]["lock_contended"] / per[c]["lock_acquisitions"]
                                 if per[c]["lock_acquisitions"] else float("nan")),
                  "spin_us": (us(per[c]["lock_spin_cycles"]) if spin_once
                              else float("nan")),
                  "hold_mean_us": (us(per[c]["lock_hold_cycles"] / per[c]["lock_acquisitions"])
                                   if per[c]["lock_acquisitions"] else float("nan")),
                  "hold_max_us": us(per[c]["lock_hold_max_cycles"]),
                  "cycles": per[c]["cycles"], "insts": per[c]["insts"]}
                 for c in cpus])
    return out


def _points(kernels=KERNELS, machine=None, l2s=PPRO_L2):
    if machine in (None, "ppro4"):
        for l2 in l2s:
            for k in kernels:
                yield dict(machine="ppro4", l2=l2, cpus=None, kernel=k)
    if machine in (None, "piii8"):
        for n in range(1, 9):
            for k in kernels:
                yield dict(machine="piii8", l2=None, cpus=n, kernel=k)


def _make(p, out: Path, force: bool) -> Path:
    from colorsim.describe.machine import get_machine
    from colorsim.run.runner import run
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    m = get_machine(p["machine"])
    if p["l2"]:
        m = m.with_l2(p["l2"])
    if p["cpus"]:
        m = m.with_cpus(p["cpus"])
    spec = RunSpec(m, parse_variant(p["kernel"], m), Workload(tasks=1024),
                   timing=True)
    name = spec.default_name()
    if not (out / name / "config.json").is_file() or force:
        run(spec, name=name, out=out, force=force)
    return out / name


def cmd_timing_table(a):
    out = a.out or Path("runs") / "timing"
    rows = []
    kernels = a.kernels or KERNELS
    l2s = a.l2 or PPRO_L2
    for k in kernels:
        from colorsim.describe.machine import get_machine
        from colorsim.describe.variants import parse_variant
        parse_variant(k, get_machine("ppro4"))        # ConfigError if bad
    if a.machine not in (None, "ppro4", "piii8"):
        raise ConfigError(f"--machine must be ppro4 or piii8, got {a.machine!r}")
    for p in _points(kernels, a.machine, l2s):
        path = (_make(p, out, a.force) if a.run else None)
        if path is None:
            from colorsim.describe.machine import get_machine
            from colorsim.describe.runspec import RunSpec, Workload
            from colorsim.describe.variants import parse_variant
            m = get_machine(p["machine"])
            m = m.with_l2(p["l2"]) if p["l2"] else m
            m = m.with_cpus(p["cpus"]) if p["cpus"] else m
            path = out / RunSpec(m, parse_variant(p["kernel"], m),
                                 Workload(tasks=1024), timing=True).default_name()
        if not (path / "config.json").is_file():
            print(f"missing: {path} (run with --run)", file=sys.stderr)
            continue
        rows.append(timing_summary(path))
    print(f"{'machine':7} {'cpus':>4} {'L2':>7} {'kernel':8} {'units':>6} {'sched':>6} "
          f"{'work/s':>9} {'cyc/sched':>10} {'lock acq':>8} {'contend':>8} "
          f"{'hold µs':>8} {'max µs':>8} {'spin µs':>10} {'spread':>6} {'skew µs':>7}")
    for r in rows:
        print(f"{r['machine']:7} {r['cpus']:>4} {r['l2'] // 1024:>4}KiB "
              f"{r['kernel']:8} {r['work_units']:>6} {r['schedule_calls']:>6} "
              f"{r['work_per_modeled_second']:>9.0f} {r['cycles_per_schedule']:>10.0f} "
              f"{r['lock_acquisitions']:>8} {r['lock_contention']:>8.3f} "
              f"{r['lock_hold_mean_us']:>8.1f} {r['lock_hold_max_us']:>8.1f} "
              f"{r['lock_spin_us']:>10.0f} {r['cycles_spread']:>6.3f} "
              f"{r['max_skew_us']:>7.0f}")
        if a.per_cpu:
            for c in r["per_cpu"]:
                print(f"{'':7} {'cpu' + str(c['cpu']):>4} {'':6} {'':8} {'':6} {'':6} "
                      f"{'':9} {'':10} {c['acquisitions']:>8} {c['contention']:>8.3f} "
                      f"{c['hold_mean_us']:>8.1f} {c['hold_max_us']:>8.1f} "
                      f"{c['spin_us']:>10.0f}")
    return 0


def add_parser(sub):
    t = sub.add_parser("timing-table", help="work per modelled second and the "
                       "lockmeter, as a table")
    t.add_argument("--run", action="store_true", help="make missing runs first")
    t.add_argument("--force", action="store_true", help="redo the runs")
    t.add_argument("--out", type=directory, help="run directory (default runs/timing)")
    t.add_argument("--kernels", type=name_list, help="comma-separated kernels (default "
                   + ",".join(KERNELS) + ")")
    t.add_argument("--machine", help="ppro4 or piii8 only (default both)")
    t.add_argument("--l2", type=name_list, help="ppro4's L2 sizes, comma-separated (default "
                   + ",".join(PPRO_L2) + ")")
    t.add_argument("--per-cpu", action="store_true",
                   help="also the lockmeter per CPU (the paper's Tables 6 and 8)")
    t.set_defaults(func=cmd_timing_table)
