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
from colorsim.rundir import read_config, read_table, verify_run

CONFIG_COLUMNS = ["run", "engine", "machine", "cpus", "l2_size", "l2_assoc",
                  "line", "kernel", "colors", "tasks", "burst", "seed"]


@dataclass
class Run:
    path: Path
    config: dict
    layout: dict
    offsets: pd.DataFrame
    counters: pd.DataFrame

    @property
    def name(self) -> str:
        return self.config.get("name", self.path.name)

    @property
    def label(self) -> str:
        v = self.config["variant"]
        l2 = self.config["machine"]["caches"]["l2"]["size"] // 1024
        return (f"{v['name']} ({self.config['machine']['processor']['cpus']} CPUs, "
                f"L2 {l2} KiB, {self.config['workload']['tasks']} tasks)")

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
                "seed": c["workload"]["seed"]}


def load_run(path) -> Run:
    """A complete run, checked against the manifest its completion wrote
    and the schema of every table; a damaged one is refused by name."""
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
    verify_run(path, config)
    layout_path = path / "layout.json"
    try:
        layout = json.loads(layout_path.read_text())
    except FileNotFoundError:
        raise ResultsError(f"{layout_path} is missing") from None
    except ValueError as e:
        raise ResultsError(f"{layout_path} is damaged: not JSON ({e})") from None
    offsets = read_table(path / "bus_offsets.csv")
    counters = read_table(path / "counters.csv")
    return Run(path, config, layout, offsets, counters)


def find_runs(paths, notice=print) -> list:
    """The complete runs at or below ``paths``, in order.

    A path that is a run is taken as it is (and refused if it is not
    complete).  Below a folder, failed (``NAME.failed``) and in-progress
    (``.NAME.partial``) runs are skipped with one notice that counts them.
    """
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
    return [load_run(d) for d in found]


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
    df = run.offsets
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
    lines = [hot["line_offset"] + k * step for k in range(v["colors"])]
    return {"first_touched": hot["first_touched_offset"],
            "line_offset": hot["line_offset"], "line": step,
            "lines": lines}


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
