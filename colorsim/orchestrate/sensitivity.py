"""Which modelled cost moves which timed result.

``python3 -m colorsim timing-sensitivity [--run] [--out DIR]`` runs (with
--run) and prints, for two points of the timing table (ppro4 at 512 KiB
and piii8 with 8 CPUs, 1024 tasks of the built-in workload), vanilla and
c32 with every cost of machines.toml's [x.timing] on, then with each
switchable cost (describe.machine.TIMING_SWITCHES) off in turn, and with
each what-if cost (TIMING_ADDITIONS: overlapped load misses) on.  Per row:
work per modelled second of both kernels, c32's gain over vanilla, the
run-queue lock's contention and schedule()'s share of the cycles; a cost
that is already off on a machine (piii8's two buses on ppro4) has no row
there.  ``--write FILE`` / ``--check FILE`` put the table into, or compare
it with, FILE's ``sensitivity`` block (engine/qemu-plugin/README.md's), and
refuse when a row's runs are missing.
"""

from __future__ import annotations

import sys
from pathlib import Path

from colorsim.argtypes import directory
from colorsim.errors import ConfigError, ResultsError
from colorsim.orchestrate.timing import timing_summary

POINTS = (("ppro4", "512KiB", None), ("piii8", None, 8))
KERNELS = ("vanilla", "c32")


# The row of every point that changes no cost but the allocation-history
# seed: how far chance alone moves the all-on row.
CHANCE = "seed"


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
    return m.without_costs([change] if change and change != CHANCE else [])


def _spec(machine, kernel, w: dict, change):
    """The timing run of one kernel for one row; ``w``: the workload's
    tasks, burst, roi and seed (the chance row's is the next seed)."""
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    seed = w["seed"] + 1 if change == CHANCE else w["seed"]
    return RunSpec(machine, parse_variant(kernel, machine),
                   Workload(tasks=w["tasks"], burst=w["burst"],
                            roi_ticks=w["roi"], seed=seed), timing=True)


def plan(points, costs):
    """(machine, l2, cpus, change) for each row of the table: every point's
    all-on row (change None) and its chance row (CHANCE: another seed),
    then each cost of ``costs`` that is on for the point switched off
    ("+cost": a what-if switched on).  A cost already off on a machine
    (piii8's two buses on ppro4) has no row."""
    for name, l2, cpus in points:
        base = _machine(name, l2, cpus, None)
        for change in (None, CHANCE, *costs):
            if (change and change != CHANCE and not change.startswith("+")
                    and not base.timing.is_on(change, base.processor.cpus)):
                continue
            yield name, l2, cpus, change


def point_label(name, l2, cpus) -> str:
    """The table's first column: the machine, its CPUs and its L2."""
    m = _machine(name, l2, cpus, None)
    return f"{name}, {m.processor.cpus} CPUs, {m.caches.l2.size // 1024} KiB L2"


def row_labels(points, costs) -> list:
    """(point, change) as the table's first two columns say them, one
    per row of ``plan``: the rows a complete table has."""
    return [(point_label(name, l2, cpus), change_label(change))
            for name, l2, cpus, change in plan(points, costs)]


def kernel_rows(keys, spec_of, summarize, out: Path, run: bool, force: bool,
                missing=None, kernels=("vanilla", "c32")):
    """(key, {kernel: summary}) for each of ``keys`` whose runs (one per
    kernel, ``spec_of(kernel, key)``) are there, or made with ``run``; a
    key with a missing run is left out (named by :func:`made_run`)."""
    for key in keys:
        got = {}
        for k in kernels:
            path = made_run(spec_of(k, key), out, run, force, missing)
            if path is None:
                break
            got[k] = summarize(path)
        if len(got) == len(kernels):
            yield key, got


def add_table_run_options(t, default_out: str) -> None:
    """A generated table's options for its runs: --run, --force and --out
    (default ``runs/<default_out>``)."""
    t.add_argument("--run", action="store_true", help="make missing runs first")
    t.add_argument("--force", action="store_true", help="redo the runs")
    t.add_argument("--out", type=directory, default=Path("runs") / default_out,
                   help=f"run directory (default runs/{default_out})")


def emit_table(a, block: str, how: str, rows_of, render) -> None:
    """A generated table's last step: gather its rows (``rows_of(missing)``),
    refuse --write/--check when a run is missing, then write, check or
    print ``render(rows)``."""
    from colorsim.errors import ResultsError
    from colorsim.report.markdown import emit
    missing = []
    got = list(rows_of(missing))
    if missing and (a.write or a.check):
        raise ResultsError(f"{len(missing)} runs of the table are missing "
                           f"(first {missing[0]}): make them with --run")
    emit(render(got), a, block, how=how)


def made_run(spec, out: Path, run: bool, force: bool, missing=None):
    """The run directory of ``spec`` under ``out``, made first with ``run``
    (again with ``force``); None when it is not there, or was made by other
    builds than today's, named on stderr and in ``missing`` (a list) when
    one is given.  With ``run`` the runner decides: it reuses a run of the
    same builds and refuses, without ``force``, one of others."""
    path = out / spec.default_name()
    if run:
        from colorsim.run.runner import run as run_one
        return run_one(spec, name=path.name, out=out, force=force)
    why = "run with --run"
    if (path / "config.json").is_file():
        other = other_builds(spec, path)
        if not other:
            return path
        why = f"made by other builds: {other}; make it again with --run --force"
    print(f"missing: {path} ({why})", file=sys.stderr)
    if missing is not None:
        missing.append(path)
    return None


def other_builds(spec, path: Path) -> str:
    """What differs between the run at ``path`` and a run of ``spec`` with
    today's builds ('' when nothing does)."""
    import json
    from colorsim.run.runner import differences, identity
    try:
        ident = identity(spec)
    except OSError:
        return "today's builds are not made"
    return "; ".join(differences(json.loads((path / "config.json").read_text()),
                                 spec, ident))


def rows(points, costs, w: dict, out: Path, run: bool, force: bool,
         missing=None):
    """(point label, change, {kernel: summary}) per row of ``plan``.  A row
    whose runs are missing (without --run) is left out, and named on
    stderr and in ``missing`` (a list) when one is given."""
    from colorsim.run.schedshare import scheduler_shares
    for name, l2, cpus, change in plan(points, costs):
        m = _machine(name, l2, cpus, change)
        got = {}
        for k in KERNELS:
            path = made_run(_spec(m, k, w, change), out, run, force, missing)
            if path is None:
                break
            got[k] = dict(timing_summary(path),
                          sched_pct=scheduler_shares(path)["sched_pct"])
        if len(got) == len(KERNELS):
            yield point_label(name, l2, cpus), change, got


def change_label(change) -> str:
    if change is None:
        return "all on"
    if change == CHANCE:
        return "all on, the next seed (chance)"
    if change.startswith("+"):
        return f"`{change[1:]}` on (what-if)"
    return f"`{change}` off"


def format_row(point, change, got) -> str:
    """One Markdown row: the point, the change, both kernels' work per
    modelled second, c32's gain, lock contention and schedule()'s share."""
    v, c = got["vanilla"], got["c32"]
    gain = (c["work_per_modeled_second"] / v["work_per_modeled_second"] - 1
            if v["work_per_modeled_second"] else float("nan"))
    return (f"| {point} | {change_label(change)} "
            f"| {v['work_per_modeled_second']:.0f} | {c['work_per_modeled_second']:.0f} "
            f"| {100 * gain:+.1f} % "
            f"| {v['lock_contention']:.3f} / {c['lock_contention']:.3f} "
            f"| {v['sched_pct']:.1f} % / {c['sched_pct']:.1f} % |")


HEADER = ("| point | timing costs | vanilla work/s | c32 work/s | c32's gain "
          "| lock contention, vanilla / c32 | schedule() share, vanilla / c32 |\n"
          "|---|---|---|---|---|---|---|")


def render(got_rows, w: dict) -> str:
    """The Markdown table, with a line naming the workload it ran."""
    lines = [f"Built-in workload: {w['tasks']} tasks, burst {w['burst']}, "
             f"a region of {w['roi']} ticks, seed {w['seed']}. "
             "Work: bursts per modelled second of the region (elapsed, idle "
             "included). Contention: the share of run-queue lock acquisitions "
             "that found it taken. schedule() share: of all CPUs' cycles.",
             "", HEADER]
    lines += [format_row(*r) for r in got_rows]
    return "\n".join(lines) + "\n"


def all_costs() -> tuple:
    """Every switch off in turn, then every what-if on: the default."""
    from colorsim.describe.machine import TIMING_ADDITIONS, TIMING_SWITCHES
    return (*TIMING_SWITCHES, *("+" + c for c in TIMING_ADDITIONS))


def _costs(a) -> tuple:
    known = all_costs()
    costs = (tuple(c for c in a.costs.split(",") if c) if a.costs is not None
             else known)
    for c in costs:
        if c not in known:
            raise ConfigError(f"unknown timing cost {c!r} (known: "
                              f"{', '.join(known)})")
    return costs


def cmd_timing_sensitivity(a):
    from colorsim.report.markdown import check_block_files, emit
    costs = _costs(a)
    points = [p for p in POINTS if a.machine in (None, p[0])]
    if not points:
        raise ConfigError(f"--machine must be ppro4 or piii8, got {a.machine!r}")
    w = dict(tasks=a.tasks, burst=a.burst, roi=a.roi, seed=a.seed)
    for k, v in w.items():
        if v < 1:
            raise ConfigError(f"--{k} must be at least 1, got {v}")
    check_block_files(a)
    out = a.out or Path("runs") / "timing"
    missing = []
    got = list(rows(points, costs, w, out, a.run, a.force, missing))
    if missing and (a.write or a.check):
        # a table without a row would hide which cost moves which result
        raise ResultsError(f"{len(missing)} runs of the table are missing "
                           f"(first {missing[0]}): make them with --run")
    emit(render(got, w), a, "sensitivity",
         how="timing-sensitivity")
    return 0


def add_parser(sub):
    from colorsim.report.markdown import add_block_options
    t = sub.add_parser("timing-sensitivity", help="c32's gain and lock "
                       "contention with each timing cost switched off in turn")
    add_table_run_options(t, "timing")
    t.add_argument("--machine", help="ppro4 (512 KiB) or piii8 (8 CPUs) only "
                   "(default both)")
    t.add_argument("--costs", help="comma-separated costs to switch off, "
                   "or with + to switch on (default all)")
    t.add_argument("--tasks", type=int, default=1024,
                   help="tasks of the built-in workload (default 1024)")
    t.add_argument("--burst", type=int, default=32000,
                   help="built-in workload: compute iterations between two "
                   "sleeps (default 32000, where vanilla's schedule() takes "
                   "the share of cycles the paper's load gave the scheduler; "
                   "at the run's default of 2000 the run-queue lock is held "
                   "throughout)")
    t.add_argument("--roi", type=int, default=40,
                   help="ticks measured (default 40, four times a run's "
                   "default: long bursts make few of them per tick)")
    t.add_argument("--seed", type=int, default=1,
                   help="allocation-history seed (default 1); each point "
                   "also runs the next seed with every cost on, the "
                   "table's measure of chance")
    add_block_options(t, "sensitivity")
    t.set_defaults(func=cmd_timing_sensitivity)
