#!/usr/bin/env python3
"""Paper-scale sweep cost: extrapolated from measured per-run costs, or
measured whole.

Usage:
  python3 benchmarks/bench_sweep.py [--jobs 2]          # extrapolate (default)
  python3 benchmarks/bench_sweep.py --full [--jobs 2]   # run the paper sweep, time it

Extrapolation: the paper-scale grid of every experiment
(configs/experiments.toml) is expanded and its runnable points deduplicated
(points shared between experiments run once).  A run's cost depends on its
machine, CPU count, task count and region (warm-up + ROI ticks), not on the
kernel variant or seed, so one point of each such cost class is run through
the real sweep worker process (python3 -m colorsim.orchestrate.sweepworker, one QEMU)
into a scratch folder and timed.  The estimate is the sum over all points of
their class's measured cost, divided by --jobs (the local executor keeps
that many runs going); builds and the catalog rebuild are not included.
Runs measured one at a time, on an idle machine, cost less than runs two
at a time on two cores, so the estimate is a lower bound.
"""

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from colorsim.describe.experiments import load_experiments  # noqa: E402


def distinct_points(exps, quick=False):
    seen = {}
    for e in exps.values():
        for p in e.points(quick):
            if p.runnable and p.refusal() is None:   # refused: missing
                seen.setdefault(tuple(sorted(p.params().items())), p)
    return list(seen.values())


def cost_class(p):
    """The sweep's own cost classes (colorsim.orchestrate.sweep.cost_class)."""
    from colorsim.orchestrate.sweep import cost_class as of_params
    return of_params(p.params())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--full", action="store_true",
                    help="run the paper-scale sweep (runs/) and time it")
    ap.add_argument("--quick", action="store_true",
                    help="the --quick grids instead of the paper's")
    a = ap.parse_args()
    exps = load_experiments()
    pts = distinct_points(exps, a.quick)
    scale = "quick" if a.quick else "paper"
    if a.full:
        from colorsim.orchestrate.sweep import run_sweep
        t = time.monotonic()
        c = run_sweep("all", quick=a.quick, jobs=a.jobs)
        print(f"measured: {scale}-scale sweep, {c['runs']} distinct runs "
              f"({c['ran']} ran, {c['skipped']} already complete), --jobs "
              f"{a.jobs}: {time.monotonic() - t:.1f} s wall")
        return
    from colorsim.run.build import ensure_built
    from colorsim.orchestrate.process import execute
    from colorsim.orchestrate.sweep import Task, worker_command
    classes = Counter(cost_class(p) for p in pts)
    sample = {}
    for p in pts:
        sample.setdefault(cost_class(p), p)
    ensure_built({p.spec().variant.build_id for p in sample.values()},
                 progress=lambda m: None, image=True)
    cost = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (k, p) in enumerate(sorted(sample.items())):
            task = Task(f"{i:016x}".ljust(64, "0"), {**p.params(), "timeout": p.timeout})
            res = execute(worker_command(task, Path(tmp)), p.timeout + 120)
            if res["status"] != "done":
                sys.exit(f"bench: {k} failed: {res.get('reason')}")
            cost[k] = res["seconds"]
            print(f"  {k[0]} {k[1]} CPUs, {k[4]} {k[2]} ({k[5] or 'built-in'}), "
                  f"{'timing, ' if k[6] else ''}{k[3]} ticks: "
                  f"{cost[k]:.2f} s per run x {classes[k]} runs", flush=True)
    serial = sum(cost[k] * n for k, n in classes.items())
    print(f"extrapolated: {scale}-scale sweep, {len(pts)} distinct runs in "
          f"{len(classes)} cost classes: {serial:.0f} s of run time, about "
          f"{serial / a.jobs:.0f} s wall with --jobs {a.jobs} "
          f"(builds and catalog not included)")


if __name__ == "__main__":
    main()
