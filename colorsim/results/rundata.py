"""Run directories -> tidy pandas tables.

Every engine leaves the same two tables in a run directory:
``bus_offsets.csv`` (dump, cpu, mode, kind, offset, count) and
``counters.csv`` (dump, cpu, mode, stat, value).  Here they gain the run's
configuration as columns, so rows from many runs concatenate into one
results table and every figure is a function of that table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from colorsim.errors import ResultsError
from colorsim.run.rundir import read_config, read_table, verify_run

CONFIG_COLUMNS = ["run", "engine", "machine", "cpus", "l2_size", "l2_assoc",
                  "line", "kernel", "colors", "tasks", "burst", "seed",
                  "verified"]


@dataclass
class Run:
    path: Path
    config: dict
    layout: dict
    offsets: pd.DataFrame
    counters: pd.DataFrame
    unverified: str = ""     # why it cannot be checked (no manifest), or ""

    @property
    def verified(self) -> bool:
        return not self.unverified

    @property
    def name(self) -> str:
        return self.config.get("name", self.path.name)

    @property
    def label(self) -> str:
        v = self.config["variant"]
        l2 = self.config["machine"]["caches"]["l2"]["size"] // 1024
        return (f"{v['name']} ({self.config['machine']['processor']['cpus']} CPUs, "
                f"L2 {l2} KiB, {self.config['workload']['tasks']} tasks)"
                + ("" if self.verified else " [unverified]"))

    def config_row(self) -> dict:
        c, m = self.config, self.config["machine"]
        return {"run": self.name, "engine": c["engine"], "machine": m["name"],
                "cpus": m["processor"]["cpus"],
                "l2_size": m["caches"]["l2"]["size"],
                "l2_assoc": m["caches"]["l2"]["assoc"],
                "line": m["caches"]["l2"]["line"],
                "kernel": c["variant"]["name"],
                "colors": c["variant"]["colors"],
                "tasks": c["workload"]["tasks"],
                "burst": c["workload"]["burst"],
                "seed": c["workload"]["seed"],
                "verified": self.verified}


def load_run(path) -> Run:
    """A complete run, checked against the manifest and configuration
    digest its completion wrote (colorsim.run.rundir.verify_run) and the schema
    of every table; a damaged one is refused by name.  A run without a
    manifest loads with ``unverified`` saying why (never as a good run)."""
    path = Path(path)
    config = read_config(path)
    if not config.get("complete"):
        failure = path / "failure.txt"
        if failure.is_file():
            reason = (failure.read_text(errors="replace").splitlines() or ["?"])[0]
            raise ResultsError(f"{path} is a failed run ({reason}); see "
                               f"{failure}")
        if path.name.endswith(".failed"):
            raise ResultsError(f"{path} is a failed run")
        raise ResultsError(f"{path} is an incomplete run")
    unverified = verify_run(path, config) or ""
    layout_path = path / "layout.json"
    try:
        layout = json.loads(layout_path.read_text())
    except FileNotFoundError:
        raise ResultsError(f"{layout_path} is missing") from None
    except ValueError as e:
        raise ResultsError(f"{layout_path} is damaged: not JSON ({e})") from None
    offsets = read_table(path / "bus_offsets.csv")
    counters = read_table(path / "counters.csv")
    return Run(path, config, layout, offsets, counters, unverified)


def find_runs(paths, notice=print) -> list:
    """The complete runs at or below ``paths``, in order.

    A path that is a run is taken as it is (and refused if it is not
    complete).  Below a folder, failed (``NAME.failed``) and in-progress
    (``.NAME.partial``) runs are skipped with one notice that counts them.
    """
    runs = [load_run(d) for d in find_run_paths(paths, notice)]
    unverified = [r for r in runs if not r.verified]
    if unverified:          # used, but never silently as good runs
        notice(f"colorsim: {len(unverified)} of {len(runs)} run(s) are "
               f"unverified (marked verified=False): {unverified[0].path}: "
               f"{unverified[0].unverified}")
    return runs


def find_run_paths(paths, notice=print) -> list:
    """The run directories :func:`find_runs` loads, not yet checked."""
    found, skipped = [], {"failed": 0, "partial": 0}
    for p in map(Path, paths):
        if not p.exists():
            raise ResultsError(f"{p} does not exist")
        if (p / "config.json").is_file() or not p.is_dir():
            found.append(p)
            continue
        below = sorted((c.parent for c in p.rglob("config.json")),
                       key=lambda d: (len(d.parts), d))
        taken = []                 # run roots; a gem5 run has gem5/config.json
        for d in below:
            if any(d.is_relative_to(t) for t in taken):
                continue
            taken.append(d)
            if d.name.startswith("."):
                skipped["partial"] += 1
            elif d.name.endswith(".failed"):
                skipped["failed"] += 1
            else:
                found.append(d)
        if not below:
            raise ResultsError(f"{p} holds no run directories")
    skips = (f"skipped {skipped['failed']} failed and {skipped['partial']} "
             f"unfinished run(s)")
    if not found:
        raise ResultsError(f"no complete runs among {', '.join(map(str, paths))} "
                           f"({skips})")
    if any(skipped.values()):
        notice(f"colorsim: {skips}; using {len(found)}")
    return found


def _with_config(run: Run, df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    for k, v in run.config_row().items():
        df[k] = v
    return df[CONFIG_COLUMNS + [c for c in df.columns if c not in CONFIG_COLUMNS]]


def offsets_table(runs) -> pd.DataFrame:
    """One row per (run, dump, cpu, mode, kind, offset) with the config."""
    return pd.concat([_with_config(r, r.offsets) for r in runs], ignore_index=True)


def counters_table(runs) -> pd.DataFrame:
    return pd.concat([_with_config(r, r.counters) for r in runs], ignore_index=True)


# Dump 0 is the region of interest: the kernel's m5 dumpstats.  gem5 adds
# its own final dump at exit (after the region), so "last" would be wrong.
ROI_DUMP = 0


def offset_histogram(run: Run, view: str = "chunk", dump: int = ROI_DUMP) -> pd.Series:
    """Bus transactions per page offset, all CPUs, modes and kinds summed.

    view "chunk": fills keyed by the 8-byte critical chunk that missed, as a
    P6 bus tracer sees them; "line": every transaction at its line base.
    """
    df = select_bus_view(run.offsets)
    df = df[df["dump"] == dump]
    if df.empty:
        return pd.Series(dtype="int64")
    off = df["offset"]
    if view == "line":
        off = off - off % run.layout["variant"]["line"]
    elif view != "chunk":
        raise ValueError(f"view must be 'chunk' or 'line', not {view!r}")
    return df.groupby(off)["count"].sum().sort_index()


def hot_offsets(layout: dict) -> dict:
    """Where the scheduler's per-task line can land for this kernel."""
    hot = layout["scheduler_hot"]
    v = layout["variant"]
    step = v["line"]
    # a kernel whose walk reads more than one line per task (real Linux on
    # x86_64: 8-byte fields) names how many; its colored lines run on
    per_task = hot.get("lines_per_task", 1)
    lines = [hot["line_offset"] + k * step for k in range(v["colors"] + per_task - 1)]
    return {"first_touched": hot["first_touched_offset"],
            "line_offset": hot["line_offset"], "line": step,
            "lines": lines, "per_task": per_task}


def colored_span(layouts) -> tuple:
    """[start, end) of page offsets any of these kernels' hot lines occupy."""
    starts, ends = [], []
    for lay in layouts:
        h = hot_offsets(lay)
        starts.append(h["line_offset"])
        ends.append(h["lines"][-1] + h["line"])
    return min(starts), max(ends)


def offset_summary(runs, view: str = "chunk") -> pd.DataFrame:
    """Per run: the peak offset, its count, the colored-lines sum, the total."""
    lo, hi = colored_span([r.layout for r in runs])
    rows = []
    for r in runs:
        h = offset_histogram(r, view)
        peak_off = int(h.idxmax()) if len(h) else None
        c = counter_totals(r)
        reads = c.get("rqloop_l2_read_accesses", 0)
        rows.append({**r.config_row(),
                     "first_touched": hot_offsets(r.layout)["first_touched"],
                     "peak_offset": peak_off,
                     "peak_count": int(h.max()) if len(h) else 0,
                     "colored_lines_sum": int(h[(h.index >= lo) & (h.index < hi)].sum()),
                     "colored_span": f"{lo:#x}-{hi:#x}",
                     "total": int(h.sum()),
                     "rqloop_l2_miss_ratio": (c.get("rqloop_l2_read_misses", 0) / reads
                                              if reads else float("nan"))})
    return pd.DataFrame(rows)


def counter_totals(run: Run, dump: int = ROI_DUMP) -> pd.Series:
    """Counters summed over CPUs and modes, by stat name."""
    df = run.counters
    return df[df["dump"] == dump].groupby("stat")["value"].sum()


# -- which traffic: the bus view or the memory view ---------------------
# bus_offsets.csv may carry a "view" column: "bus" counts every request a
# CPU's cache puts on the shared bus (the QEMU plugin; gem5's per-L2
# monitors), "memory" only what memory serves (gem5's monitor before the
# memory).  Runs written before the column existed hold one view: QEMU's is
# the bus, gem5's the memory.

def bus_views(run: Run) -> list:
    """The views a run's bus_offsets.csv holds, bus first."""
    if "view" in run.offsets.columns:
        have = set(run.offsets["view"].dropna())
    else:
        have = {"memory" if run.config.get("engine") == "gem5" else "bus"}
    return [v for v in ("bus", "memory") if v in have]


def select_bus_view(df: pd.DataFrame, which: str = None) -> pd.DataFrame:
    """Rows of one view: ``which``, else the bus view where present, else
    the memory view.  A table without a view column is returned unchanged
    (it holds one view only)."""
    if "view" not in df.columns:
        return df
    have = set(df["view"].dropna())
    if which is None:
        which = "bus" if "bus" in have or not have else "memory"
    if which not in ("bus", "memory"):
        raise ResultsError(f"bus view must be 'bus' or 'memory', not {which!r}")
    return df[df["view"] == which]


# -- normalisation: per schedule() and per unit of work -----------------
# "schedule": per schedule() call in the region (the kernel prints the count
# on the console; both engines' collect steps put it into counters.csv as
# stat schedule_calls, cpu -1).  "kinst": per 1000 committed instructions
# (all CPUs).  "sim_second": per modeled second of the region.
PER_UNITS = ("schedule", "kinst", "sim_second")
HZ = 100


def work_units(run: Run, dump: int = ROI_DUMP) -> dict:
    """The run's units of work in the region: schedule() calls, committed
    instructions (thousands) and modeled seconds (NaN where unknown)."""
    df = run.counters
    df = df[df["dump"] == dump]
    glob = df[df["cpu"] == -1].groupby("stat")["value"].sum()
    sched = glob.get("schedule_calls")
    jiffies = glob.get("roi_jiffies")
    if sched is None:            # a run collected before the stat existed
        from colorsim.run.console import roi_counters
        roi = roi_counters(run.path / "console.log")
        sched, jiffies = roi.get("schedule_calls"), roi.get("roi_jiffies")
    insts = df[(df["stat"] == "insts") & (df["cpu"] >= 0)]["value"].sum()
    seconds = glob.get("sim_seconds")
    if seconds is None and jiffies is not None:
        seconds = jiffies / HZ
    nan = float("nan")
    return {"schedule": float(sched) if sched is not None else nan,
            "kinst": insts / 1000 if insts else nan,
            "sim_second": float(seconds) if seconds is not None else nan}


def normalize(df: pd.DataFrame, runs, per: str = "schedule",
              columns=None) -> pd.DataFrame:
    """Add ``<column>_per_<per>`` columns: each count divided by its run's
    units of work (:func:`work_units`).  ``df`` needs a ``run`` column;
    ``columns`` defaults to every numeric column that is not configuration.
    """
    if per not in PER_UNITS:
        raise ResultsError(f"per must be one of {', '.join(PER_UNITS)}, "
                           f"not {per!r}")
    units = {r.name: work_units(r)[per] for r in runs}
    if columns is None:
        columns = [c for c in df.columns if c not in CONFIG_COLUMNS
                   and c not in ("dump", "cpu", "offset", "first_touched",
                                 "peak_offset")
                   and pd.api.types.is_numeric_dtype(df[c])]
    df = df.copy()
    div = df["run"].map(units)
    df[f"{per}s" if per == "schedule" else f"{per}_units"] = div
    for c in columns:
        df[f"{c}_per_{per}"] = df[c] / div
    return df


def offset_summary_per(runs, view: str = "chunk",
                       per: str = "schedule") -> pd.DataFrame:
    """:func:`offset_summary` with peak, colored-lines and total counts per
    schedule() (or per unit of work ``per``)."""
    return normalize(offset_summary(runs, view), runs, per,
                     ["peak_count", "colored_lines_sum", "total"])


def counters_table_per(runs, per: str = "schedule") -> pd.DataFrame:
    """:func:`counters_table` with ``value_per_<per>``."""
    return normalize(counters_table(runs), runs, per, ["value"])


def offset_histogram_per(run: Run, view: str = "chunk",
                         per: str = "schedule",
                         which: str = None) -> pd.Series:
    """:func:`offset_histogram` of one bus view, divided by the run's
    units of work: transactions per page offset per schedule()."""
    if per not in PER_UNITS:
        raise ResultsError(f"per must be one of {', '.join(PER_UNITS)}, "
                           f"not {per!r}")
    if which is not None:
        run = Run(run.path, run.config, run.layout,
                  select_bus_view(run.offsets, which), run.counters)
    return offset_histogram(run, view) / work_units(run)[per]
