"""How much of a run the scheduler took: the share of the region's work
inside schedule(), under the run-queue lock, and spinning for it.

- ``sched_pct``: the scheduler's code (busmon's ``sched=`` ranges, layout.json
  ``ranges.sched``: schedule() and the functions of its own it calls) as a
  share of all CPUs' modelled cycles in a --timing run, or of all CPUs'
  instructions in a counting run (``basis`` says which);
- ``lock_held_pct`` (--timing only): the run-queue lock's hold cycles over
  the region's length (the mean CPU's cycles), so 100 means held all the
  time; under mq, summed over the per-CPU locks;
- ``lock_spin_pct`` (--timing only): cycles spent waiting for the lock, as
  a share of all CPUs' cycles (each CPU's cycles run over the whole region,
  idle included, so this is a share of elapsed time x CPUs).  Runs made by
  a busmon plugin before 2.3.0 have none (NaN): it booked a wait twice when
  a CPU's earlier hold was pushed back while it spun for its next, so
  their spin could exceed the region (``spin_counted_once``).

Runs made before the plugin counted ``sched_insts`` have no such numbers
(NaN).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

NAN = float("nan")


def region_sums(counters_csv: Path) -> dict:
    """The region's (dump 0) per-CPU counters summed over CPUs and modes,
    and the number of CPUs."""
    sums, cpus = {}, set()
    with open(counters_csv, newline="") as f:
        for r in csv.DictReader(f):
            if r["dump"] != "0" or int(r["cpu"]) < 0:
                continue
            cpus.add(r["cpu"])
            sums[r["stat"]] = sums.get(r["stat"], 0) + int(r["value"])
    sums["cpus"] = len(cpus)
    return sums


# the first busmon version whose lockmeter books each lock wait once
SPIN_COUNTED_ONCE = (2, 3, 0)


def spin_counted_once(run: Path) -> bool:
    """Whether the run's lock_spin_cycles can be read: True unless its
    busmon.json names a plugin version before SPIN_COUNTED_ONCE (runs of
    other engines have no busmon.json and book no double spin)."""
    try:
        version = json.loads((Path(run) / "busmon.json").read_text())["version"]
    except FileNotFoundError:
        return True
    except (OSError, ValueError, KeyError):
        return False
    try:
        return tuple(int(x) for x in version.split(".")) >= SPIN_COUNTED_ONCE
    except (AttributeError, ValueError):
        return False


def scheduler_shares(run: Path) -> dict:
    """``{"basis", "sched_pct", "lock_held_pct", "lock_spin_pct"}`` of one
    run directory (NaN where the run has no such counter)."""
    s = region_sums(Path(run) / "counters.csv")
    out = {"basis": "", "sched_pct": NAN, "lock_held_pct": NAN, "lock_spin_pct": NAN}
    cycles = s.get("cycles", 0)
    if cycles and "sched_cycles" in s:
        out.update(basis="cycles", sched_pct=100 * s["sched_cycles"] / cycles)
    elif s.get("insts") and "sched_insts" in s:
        out.update(basis="instructions", sched_pct=100 * s["sched_insts"] / s["insts"])
    if cycles and "lock_hold_cycles" in s:
        out["lock_held_pct"] = 100 * s["lock_hold_cycles"] / (cycles / s["cpus"])
        if spin_counted_once(run):
            out["lock_spin_pct"] = 100 * s["lock_spin_cycles"] / cycles
    return out


def describe(shares: dict) -> str:
    """One line for the run's progress report ('' without the counters)."""
    if not shares["basis"]:
        return ""
    line = f"schedule() {shares['sched_pct']:.1f} % of {shares['basis']}"
    if shares["lock_held_pct"] == shares["lock_held_pct"]:
        line += f"; runqueue_lock held {shares['lock_held_pct']:.1f} % of the time"
        if shares["lock_spin_pct"] == shares["lock_spin_pct"]:
            line += f", spinning {shares['lock_spin_pct']:.1f} % of cycles"
    return line
