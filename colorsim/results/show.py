"""The catalog as people read it: ``runs`` lists runs, ``show`` prints one
run's key statistics and every stats dump, in the units the other commands
use (sizes in KiB/MiB, page offsets in hex, whole counts without an
exponent); a run directory's path needs no catalog."""

from __future__ import annotations

from pathlib import Path

from colorsim.argtypes import directory
from colorsim.errors import ConfigError
from colorsim.results.catalog import (CATALOG, MARK, Catalog,
                                      is_recorded, parse_where)
from colorsim.results.runrows import TIMING_COLUMNS
from colorsim.units import format_size

# Columns `runs` and `show` print in the units of the other commands
SIZE_COLUMNS = ("l2_size",)
OFFSET_COLUMNS = ("peak_offset", "colored_lo", "colored_hi")
# n_rq_len_mean: the run queue the scheduler walked (the kernel's samples),
# beside the task or httpd count that was asked for
RUN_COLUMNS = ["run", "machine", "cpus", "l2_size", "kernel", "tasks",
               "n_rq_len_mean", "seed", "roi", "engine", "peak_offset", "colored_lines_sum",
               "rqloop_l2_miss_ratio", "schedule_calls", "verified"]
# where a recorded run came from, printed when any is listed
PROVENANCE_COLUMNS = ["path", "engine_version", "source_commit",
                      "source_dirty"]


def cmd_runs(a):
    import pandas as pd
    cat = Catalog(a.runs)
    df = cat.runs(recorded=True, **parse_where(a.where))
    cols = [c for c in RUN_COLUMNS if c in df.columns]
    if df["recorded"].fillna(False).astype(bool).any():
        cols += ["recorded"] + PROVENANCE_COLUMNS
    if a.columns:
        cols = a.columns.split(",")
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise ConfigError(f"--columns: no column {missing[0]!r}")
    if df.empty:
        print("(no runs match)")
        return
    with pd.option_context("display.width", 250, "display.max_columns", 40,
                           "display.max_rows", 100000):
        print(for_display(df[cols]).to_string(index=False))


def for_display(df):
    """The catalog's units as the other commands print them: sizes in
    KiB/MiB, page offsets in hex, whole-number counters without a decimal
    point (the tables keep bytes, integers and floats)."""
    out = df.copy()
    for c in out.columns:
        v = out[c]
        if c in SIZE_COLUMNS or c in OFFSET_COLUMNS:
            out[c] = [_in_units(c, x) for x in v]
        elif v.dtype.kind == "f" and v.notna().any() and \
                v.dropna().apply(float.is_integer).all():
            out[c] = [f"{int(x)}" if x == x else "-" for x in v]
    return out


def _in_units(col, x, missing="-"):
    """A size column's value in KiB/MiB, an offset column's in hex
    (``missing`` for none, or the value itself when ``missing`` is None);
    any other value as it is."""
    if col not in SIZE_COLUMNS and col not in OFFSET_COLUMNS:
        return x
    if x is None or x != x:
        return x if missing is None else missing
    return format_size(int(x)) if col in SIZE_COLUMNS else f"{int(x):#05x}"


def format_stat(value) -> str:
    """A stats-dump value: whole numbers in full, others to 6 digits."""
    f = float(value)
    return f"{int(f)}" if f.is_integer() and abs(f) < 2 ** 63 else f"{f:g}"


def _key_value(k, v) -> str:
    """A key statistic as people read it: a size or offset in its unit,
    a ratio in per cent, a whole number without a fraction, others to
    four significant digits."""
    import math
    v = _in_units(k, v, missing=None)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if math.isnan(v):
        return "-"
    if "ratio" in k:
        return f"{v:.2%}"
    if float(v).is_integer() and abs(v) < 2 ** 63:
        return f"{int(v)}"
    return f"{v:.4g}" if abs(v) < 1e4 else f"{v:.1f}"


def _run_directory(key: str):
    """A run directory named on the command line, read on its own (no
    catalog needed): its catalog row and its stats dumps, or None when
    ``key`` is not a run directory."""
    import pandas as pd
    from colorsim.results.rundata import load_run
    from colorsim.results.runrows import run_rows
    path = Path(key)
    if not (path / "config.json").is_file():
        return None
    full = path.resolve()
    rows = run_rows(load_run(full), full.parent)
    row = pd.Series(rows["runs"])
    row["path"] = str(path)
    return row, rows["stats"]


def cmd_show(a):
    direct = _run_directory(a.run) if a.runs is None else None
    if direct is not None:
        row, st = direct
    else:
        cat = Catalog(a.runs)
        row = cat.find(a.run)
    print(f"run {row['run']}  ({row['path']})")
    print(f"  id {row['run_id']}")
    for k in ("engine", "engine_version", "machine", "cpus", "l2_size",
              "l2_assoc", "line", "kernel", "colors", "tasks", "seed",
              "warmup", "roi", "burst", "source_commit", "source_dirty",
              "verified", "recorded"):
        print(f"  {k:22} {_in_units(k, row.get(k), missing=None)}")
    print("key statistics (region of interest):")
    for k in ("peak_offset", "peak_count", "colored_lines_sum",
              "other_lines_sum", "total", "rqloop_l2_miss_ratio",
              "l2_miss_ratio", "schedule_calls", "kinst",
              "colored_lines_sum_per_schedule", "total_per_schedule",
              "n_rq_len_mean", "n_rq_len_max",
              "timing", "workload_program", "workload_args", "accept", "work", "roi_requests",
              "roi_messages", "sched_share_basis", "sched_share_pct", "lock_held_pct",
              "lock_spin_pct", "kernel_lock_contention",
              "kernel_lock_hold_mean_us") + (TIMING_COLUMNS if row.get("timing") else ()):
        print(f"  {k:32} {_key_value(k, row.get(k))}")
    if direct is not None:
        _print_dumps(st)
        return
    if row["recorded"]:
        print(f"stats dumps: a recorded run; its stats.txt is in its folder, "
              f"{row['path']}")
        return
    recorded = is_recorded(cat.root)
    kept = not recorded or (cat.dir / "stats.parquet").is_file()
    st = cat.stats(row["run_id"]) if kept else None
    if recorded and (st is None or st.empty):
        print(f"stats dumps: not kept (recorded before the catalog kept them; "
              f"its sweep point runs it again: {cat.root / CATALOG / MARK})")
        return
    _print_dumps(st)


def _print_dumps(st):
    dumps = sorted(st["dump"].unique()) if len(st) else []
    print(f"stats dumps: {len(dumps)}")
    for d in dumps:
        block = st[st["dump"] == d]
        print(f"---------- dump {d}: {len(block)} stats ----------")
        for name, value in zip(block["name"], block["value"]):
            print(f"{name:60} {format_stat(value)}")


def add_parsers(subparsers):
    """Register ``runs`` and ``show``."""
    p = subparsers.add_parser("runs", help="list and filter catalogued runs")
    p.add_argument("--where", action="append", metavar="KEY=VALUE",
                   help="keep runs whose column KEY equals VALUE (repeatable)")
    p.add_argument("--columns", help="comma-separated columns to print")
    p.add_argument("--runs", type=directory, default=None,
                   help="runs folder holding the catalog (default runs/)")
    p.set_defaults(func=cmd_runs)

    s = subparsers.add_parser("show", help="one run's key stats and every "
                                           "stats dump")
    s.add_argument("run", help="run id (prefix), name or path; a run "
                               "directory's path needs no catalog")
    s.add_argument("--runs", type=directory, default=None,
                   help="runs folder holding the catalog (default runs/)")
    s.set_defaults(func=cmd_show)
