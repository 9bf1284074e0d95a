"""Which modelled cost moves which timed result.

``python3 -m colorsim timing-sensitivity [--run] [--out DIR]`` runs (with
--run) and prints, for two points of the timing table (ppro4 at 512 KiB
and piii8 with 8 CPUs, 1024 tasks of the built-in workload), vanilla and
c32 with every cost of machines.toml's [x.timing] on, then with each
switchable cost (describe.machine.TIMING_SWITCHES) off in turn, and with
each what-if cost (TIMING_ADDITIONS: overlapped load misses) on.  Per row:
work per modelled second of both kernels, c32's gain over vanilla, and the
run-queue lock's contention; a cost that is already off on a machine
(piii8's two buses on ppro4) has no row there.
"""

from __future__ import annotations

import sys
from pathlib import Path

from colorsim.argtypes import directory
from colorsim.errors import ConfigError
from colorsim.orchestrate.timing import timing_summary

POINTS = (("ppro4", "512KiB", None), ("piii8", None, 8))
KERNELS = ("vanilla", "c32")


def _machine(name, l2, cpus, change):
    """The machine with one cost switched off, or ("+cost") on."""
    import dataclasses
    from colorsim.describe.machine import get_machine
    m = get_machine(name)
    if l2:
        m = m.with_l2(l2)
    if cpus:
        m = m.with_cpus(cpus)
    if change and change.startswith("+"):
        return dataclasses.replace(m, timing=m.timing.adding(change[1:]))
    return m.without_costs([change] if change else [])


def _spec(machine, kernel, tasks, seed):
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    return RunSpec(machine, parse_variant(kernel, machine),
                   Workload(tasks=tasks, seed=seed), timing=True)


def rows(points, costs, tasks: int, out: Path, run: bool, force: bool,
         seed: int = 1):
    """(machine, cost switched off or None, {kernel: summary}) per row;
    a row whose runs are missing (without --run) is left out, and named
    on stderr."""
    for name, l2, cpus in points:
        base = _machine(name, l2, cpus, None)
        for off in (None, *costs):
            if (off and not off.startswith("+")
                    and not base.timing.is_on(off, base.processor.cpus)):
                continue
            m = _machine(name, l2, cpus, off)
            got = {}
            for k in KERNELS:
                spec = _spec(m, k, tasks, seed)
                path = out / spec.default_name()
                if run and (force or not (path / "config.json").is_file()):
                    from colorsim.run.runner import run as run_one
                    run_one(spec, name=path.name, out=out, force=force)
                if not (path / "config.json").is_file():
                    print(f"missing: {path} (run with --run)", file=sys.stderr)
                    break
                got[k] = timing_summary(path)
            if len(got) == len(KERNELS):
                yield name, off, got


def format_row(name, off, got) -> str:
    v, c = got["vanilla"], got["c32"]
    gain = (c["work_per_modeled_second"] / v["work_per_modeled_second"] - 1
            if v["work_per_modeled_second"] else float("nan"))
    return (f"{name:7} {v['cpus']:>4} {v['l2'] // 1024:>5}K {off or '(all on)':14} "
            f"{v['work_per_modeled_second']:>9.0f} {c['work_per_modeled_second']:>9.0f} "
            f"{100 * gain:>+7.1f}% {v['lock_contention']:>8.3f} "
            f"{c['lock_contention']:>8.3f}")


HEADER = (f"{'machine':7} {'cpus':>4} {'L2':>6} {'cost off/+on':14} {'van w/s':>9} "
          f"{'c32 w/s':>9} {'c32 gain':>8} {'van cont':>8} {'c32 cont':>8}")


def cmd_timing_sensitivity(a):
    from colorsim.describe.machine import TIMING_ADDITIONS, TIMING_SWITCHES
    known = (*TIMING_SWITCHES, *("+" + c for c in TIMING_ADDITIONS))
    costs = (tuple(c for c in a.costs.split(",") if c) if a.costs is not None
             else known)
    for c in costs:
        if c not in known:
            raise ConfigError(f"unknown timing cost {c!r} (known: "
                              f"{', '.join(known)})")
    points = [p for p in POINTS if a.machine in (None, p[0])]
    if not points:
        raise ConfigError(f"--machine must be ppro4 or piii8, got {a.machine!r}")
    out = a.out or Path("runs") / "timing"
    print(HEADER)
    for name, off, got in rows(points, costs, a.tasks, out, a.run, a.force,
                               a.seed):
        print(format_row(name, off, got), flush=True)
    return 0


def add_parser(sub):
    t = sub.add_parser("timing-sensitivity", help="c32's gain and lock "
                       "contention with each timing cost switched off in turn")
    t.add_argument("--run", action="store_true", help="make missing runs first")
    t.add_argument("--force", action="store_true", help="redo the runs")
    t.add_argument("--out", type=directory, help="run directory (default runs/timing)")
    t.add_argument("--machine", help="ppro4 (512 KiB) or piii8 (8 CPUs) only "
                   "(default both)")
    t.add_argument("--costs", help="comma-separated costs to switch off, "
                   "or with + to switch on (default all)")
    t.add_argument("--tasks", type=int, default=1024,
                   help="tasks of the built-in workload (default 1024)")
    t.add_argument("--seed", type=int, default=1,
                   help="allocation-history seed (default 1); another seed "
                   "with --costs '' shows how much the all-on row moves by "
                   "chance")
    t.set_defaults(func=cmd_timing_sensitivity)
