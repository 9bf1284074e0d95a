"""The results catalog: every run below runs/ as Parquet tables.

``runs/catalog/`` holds one Parquet file per table, rebuilt from the run
directories alone (:func:`rebuild`, ``colorsim catalog rebuild``):

* ``runs``      one row per complete run: every parameter and derived
                statistic as a column (peak offset, colored-line sums, the
                run-queue loop's miss ratio, schedule() calls, counts per
                schedule(), counter totals ``n_<stat>``);
* ``offsets``   long: run_id, dump, view, cpu, mode, kind, offset, count;
* ``counters``  long: run_id, dump, cpu, mode, stat, value (per CPU);
* ``stats``     long: run_id, dump, name, value: every stats.txt dump
                (gem5 appends one Begin/End block per dump; all are kept);
* ``points``    each sweep point (runs/sweeps/*.json) with its status:
                done (its run loads, verifies and is of the point's id),
                damaged or unverified (with the reason), failed (with the
                reason), missing, or lacks: ...;
* ``outputs``   each experiment's figures and tables and what they lack.

Why Parquet through pyarrow rather than DuckDB: the catalog must be
byte-identical for the same runs (a test compares an interrupted sweep's
catalog with an uninterrupted one's).  A Parquet file written from the same
sorted table is the same bytes; a DuckDB database file carries block
allocation and free-list state that depends on its write history.  Parquet
files are also plain files that pandas, pyarrow, DuckDB and Spark all read,
so a notebook needs nothing of ours.

Nothing non-deterministic goes in: no wall times, host names or dates, no
absolute paths; rows are sorted.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from pathlib import Path

from colorsim.errors import ConfigError, ResultsError

CATALOG = "catalog"
TABLES = ("runs", "offsets", "counters", "stats", "points", "outputs")
_SKIP_DIRS = {CATALOG, "sweeps"}


# -- finding runs -----------------------------------------------------------

def find_run_dirs(root: Path) -> tuple:
    """(complete-looking run dirs, failed dirs) below ``root``, sorted."""
    root = Path(root)
    found, failed, taken = [], [], []
    if not root.is_dir():
        return found, failed
    below = sorted((c.parent for c in root.rglob("config.json")),
                   key=lambda d: (len(d.parts), str(d)))
    for d in below:
        rel = d.relative_to(root)
        if rel.parts and (rel.parts[0] in _SKIP_DIRS
                          or rel.parts[0].startswith(".catalog")):
            continue
        if any(d.is_relative_to(t) for t in taken):
            continue
        taken.append(d)
        if any(p.startswith(".") for p in rel.parts):
            continue
        if d.name.endswith(".failed"):
            failed.append(d)
        else:
            found.append(d)
    return sorted(found, key=str), sorted(failed, key=str)


def _stats_file(run_dir: Path, config: dict):
    for rel in list((config.get("results") or {})) + ["stats.txt",
                                                       "gem5/stats.txt"]:
        if rel.endswith("stats.txt") and (run_dir / rel).is_file():
            return run_dir / rel
    return None


# -- one run's rows -----------------------------------------------------------

def run_rows(run, root: Path) -> dict:
    """The catalog rows of one loaded run (colorsim.results.rundata.Run)."""
    import pandas as pd
    from colorsim.results.rundata import (ROI_DUMP, hot_offsets, offset_histogram,
                                  work_units)
    from colorsim.run.statstxt import parse_stats, to_frame
    from colorsim.results.compare import colored_lines_span
    from colorsim.run.identity import identity_dict, run_id, short_id
    from colorsim.run.schedshare import scheduler_shares

    cfg = run.config
    rid = run_id(cfg)
    rel = str(run.path.relative_to(root))
    row = dict(run.config_row())
    w, v = cfg["workload"], cfg["variant"]
    row.update(run=run.path.name, path=rel, run_id=rid,
               engine_version=identity_dict(cfg)["engine_version"],
               warmup=w.get("warmup_ticks"), roi=w.get("roi_ticks"),
               buffer=w.get("buffer"), color_bits=v.get("color_bits"),
               build_id=v.get("build_id"),
               kernel_sha256=cfg.get("kernel_sha256"),
               plugin_sha256=cfg.get("plugin_sha256"),
               source_commit=(cfg.get("source") or {}).get("commit"),
               source_dirty=(cfg.get("source") or {}).get("dirty"),
               id_matches_name=(run.path.name == short_id(rid)
                                if run.path.parent.name == "by-id" else None))
    h = offset_histogram(run, "chunk")
    lo, hi = colored_lines_span(run.layout)
    colored = int(h[(h.index >= lo) & (h.index < hi)].sum()) if len(h) else 0
    total = int(h.sum()) if len(h) else 0
    hot = hot_offsets(run.layout)
    row.update(peak_offset=int(h.idxmax()) if len(h) else None,
               peak_count=int(h.max()) if len(h) else 0,
               first_touched=hot["first_touched"],
               hot_line_count=int(h[(h.index >= hot["line_offset"]) &
                                    (h.index < hot["line_offset"] + hot["line"])
                                    ].sum()) if len(h) else 0,
               colored_lo=lo, colored_hi=hi, colored_lines_sum=colored,
               other_lines_sum=total - colored, total=total)
    ct = run.counters
    roi = ct[ct["dump"] == ROI_DUMP]
    per_cpu = roi[roi["cpu"] >= 0].groupby("stat")["value"].sum()
    glob = roi[roi["cpu"] < 0].groupby("stat")["value"].sum()
    for name, val in sorted({**per_cpu.to_dict(), **glob.to_dict()}.items()):
        row[f"n_{name}"] = float(val)

    def ratio(miss, acc):
        a = per_cpu.get(acc, 0)
        return float(per_cpu.get(miss, 0) / a) if a else float("nan")
    row["rqloop_l2_miss_ratio"] = ratio("rqloop_l2_read_misses",
                                        "rqloop_l2_read_accesses")
    row["rqloop_l1d_miss_ratio"] = ratio("rqloop_l1d_read_misses",
                                         "rqloop_l1d_read_accesses")
    row["l2_miss_ratio"] = ratio("l2_misses", "l2_accesses")
    units = work_units(run)
    row["schedule_calls"] = units["schedule"]
    row["kinst"] = units["kinst"]
    row["sim_seconds"] = units["sim_second"]
    for per, div in (("schedule", units["schedule"]), ("kinst", units["kinst"])):
        for c in ("peak_count", "hot_line_count", "colored_lines_sum",
                  "other_lines_sum", "total"):
            row[f"{c}_per_{per}"] = (row[c] / div if div and div == div
                                     else float("nan"))

    off = run.offsets.copy()
    if "view" not in off.columns:
        off["view"] = "memory" if cfg.get("engine") == "gem5" else "bus"
    off.insert(0, "run_id", rid)
    off = off[["run_id", "dump", "view", "cpu", "mode", "kind", "offset",
               "count"]]
    cnt = run.counters.copy()
    cnt.insert(0, "run_id", rid)
    cnt = cnt[["run_id", "dump", "cpu", "mode", "stat", "value"]]
    cnt["value"] = cnt["value"].astype("float64")
    sf = _stats_file(run.path, cfg)
    if sf is not None:
        dumps = parse_stats(sf)
        st = to_frame(dumps)[["dump", "name", "value"]]
        row["dumps"] = len(dumps)
    else:
        st = pd.DataFrame(columns=["dump", "name", "value"])
        row["dumps"] = 0
    st.insert(0, "run_id", rid)
    row.update(timing_columns(cfg, run.counters, run.path / "console.log",
                              row["schedule_calls"]))
    # the scheduler's share of the region (colorsim/run/schedshare.py)
    sh = scheduler_shares(run.path)
    row.update(sched_share_basis=sh["basis"], sched_share_pct=sh["sched_pct"],
               lock_held_pct=sh["lock_held_pct"], lock_spin_pct=sh["lock_spin_pct"])
    return {"runs": row, "offsets": off, "counters": cnt, "stats": st}


# -- throughput and the lockmeter (--timing runs), user workloads ------------

WEB_ROI = re.compile(r"web: roi (\d+) requests \(completed \d+\.\.\d+\)")
CHAT_ROI = re.compile(r"chat: roi (\d+) messages \((\d+) sent, (\d+) received\)")
SIZE_ARGS = ("httpd", "clients", "requests", "rooms", "users", "messages")
TIMING_COLUMNS = ("modeled_seconds", "work_units", "work_per_modeled_second",
                  "requests_per_modeled_second",
                  "messages_per_modeled_second", "throughput",
                  "cycles_per_schedule", "lock_acquisitions",
                  "lock_contention", "lock_contention_pct",
                  "lock_hold_mean_us", "lock_hold_max_us", "lock_spin_us",
                  "cycles_spread", "busy_fraction", "max_skew_us")


def timing_columns(cfg: dict, counters, console: Path, sched) -> dict:
    """The catalog's workload, throughput and lockmeter columns of one run.

    ``workload_program`` ("" for the built-in workload), its ``args`` and
    sizes (``httpd`` ... ``messages``), web's ``accept`` mode, the requests or messages inside
    the region (``roi_requests``, ``roi_messages``, from the program's
    ``web: roi`` / ``chat: roi`` line).  With ``timing`` (a --timing
    run), as colorsim/timing.py computes them: ``modeled_seconds`` (the
    region's elapsed modelled time, idle included), work units (bursts of
    the built-in workload) and requests or messages per modelled second;
    ``throughput`` is whichever of those is the workload's;
    ``cycles_per_schedule`` (all CPUs); runqueue_lock's acquisitions,
    contention (fraction and %), mean and max hold and total spin in µs.
    NaN where a run has no such number (counting-only runs)."""
    nan = float("nan")
    w = cfg.get("workload", {})
    prog = w.get("program", "") or ""
    args = w.get("args", "") or ""
    out = {"timing": bool(cfg.get("timing")), "workload_program": prog,
           "workload_args": args, "roi_requests": nan, "roi_messages": nan}
    words = args.split(",") if args else []
    opts = {words[i][2:]: words[i + 1] for i in range(len(words) - 1)
            if words[i].startswith("--")}
    for k in SIZE_ARGS:
        v = opts.get(k)
        out[k] = float(v) if v is not None and v.isdigit() else nan
    # web's accept serialisation ("none" unless the run asked for another)
    out["accept"] = opts.get("accept", "none") if prog == "/bin/web" else ""
    text = console.read_text(errors="replace") if (
        prog and console.is_file()) else ""
    m = WEB_ROI.findall(text)
    if m:
        out["roi_requests"] = float(m[-1])
    m = CHAT_ROI.findall(text)
    if m:
        out["roi_messages"] = float(m[-1][0])
    out.update({k: nan for k in TIMING_COLUMNS})
    if not out["timing"]:
        return out
    hz = cfg["machine"]["processor"]["clock_hz"]
    roi = counters[(counters["dump"] == 0) & (counters["cpu"] >= 0)]
    per = roi.groupby(["cpu", "stat"])["value"].sum().unstack(fill_value=0)

    def col(name):
        return per[name] if name in per.columns else per.index.to_series() * 0

    cycles = col("cycles")
    if not len(cycles) or not cycles.sum():
        return out
    from colorsim.orchestrate.timing import modeled_seconds
    glob = counters[(counters["dump"] == 0) & (counters["cpu"] < 0)]
    el = glob[glob["stat"] == "elapsed_cycles"]["value"]
    seconds = modeled_seconds(float(el.iloc[-1]) if len(el) else None, hz)
    sk = glob[glob["stat"] == "max_skew_cycles"]["value"]
    acq = float(col("lock_acquisitions").sum())
    units = float(col("work_units").sum())
    if not units and not prog and sched == sched:  # runs made before
        units = float(sched or 0)   # work_units existed: schedule() calls
    us = lambda c: c / hz * 1e6
    out.update(
        modeled_seconds=seconds, work_units=units,
        work_per_modeled_second=units / seconds if units else nan,
        requests_per_modeled_second=out["roi_requests"] / seconds,
        messages_per_modeled_second=out["roi_messages"] / seconds,
        cycles_per_schedule=(float(cycles.sum()) / sched
                             if sched and sched == sched else nan),
        lock_acquisitions=acq,
        lock_contention=(float(col("lock_contended").sum()) / acq
                         if acq else nan),
        lock_hold_mean_us=(us(float(col("lock_hold_cycles").sum()) / acq)
                           if acq else nan),
        lock_hold_max_us=us(float(col("lock_hold_max_cycles").max())),
        lock_spin_us=us(float(col("lock_spin_cycles").sum())),
        cycles_spread=float((cycles.max() - cycles.min()) / cycles.max()),
        max_skew_us=us(float(sk.iloc[-1])) if len(sk) else nan,
        busy_fraction=(float(cycles.mean()) / hz / seconds
                       if seconds else nan))
    out["lock_contention_pct"] = out["lock_contention"] * 100
    out["throughput"] = {"/bin/web": out["requests_per_modeled_second"],
                         "/bin/chat": out["messages_per_modeled_second"]
                         }.get(prog, out["work_per_modeled_second"])
    return out


# -- sweep points -------------------------------------------------------------

POINT_KEYS = ("machine", "l2", "cpus", "kernel", "workload", "workload_run",
              "tasks", "seed", "warmup", "roi", "burst", "engine")


def _check_sweep_file(f: Path, data) -> None:
    """A sweep file (sweep.write_sweep_files) holds what point_rows reads:
    an edited or truncated one is named, not a crash."""
    def damaged(what):
        return ResultsError(f"{f} is damaged: {what}; run the sweep again "
                            f"to rewrite it")
    if not isinstance(data, dict):
        raise damaged("not a JSON object")
    for key, kind in (("experiment", str), ("scale", str), ("points", list),
                      ("outputs", dict)):
        if not isinstance(data.get(key), kind):
            raise damaged(f"no {kind.__name__} {key!r}")
    for oid, o in data["outputs"].items():
        if not isinstance(o, dict) or not all(k in o for k in ("what", "needs", "lacks")):
            raise damaged(f"output {oid!r} lacks what, needs or lacks")
    for i, p in enumerate(data["points"]):
        missing = ([k for k in POINT_KEYS if k not in p]
                   if isinstance(p, dict) else ["all keys"])
        if missing:
            raise damaged(f"point {i} has no {', '.join(missing)}")


def point_rows(root: Path, states: dict) -> tuple:
    """(points, outputs) from runs/sweeps/*.json, with each point's status.

    ``states`` maps a run directory to what loading it found: ("good",
    run id), ("unverified", why) or ("damaged", why) (:func:`build_tables`).
    A point is done only if its run is good and of the point's id, the
    same test the runs table and the figures use."""
    from colorsim.run.identity import short_id
    points, outputs = [], []
    d = Path(root) / "sweeps"
    for f in sorted(d.glob("*.json")) if d.is_dir() else []:
        try:
            data = json.loads(f.read_text())
        except ValueError as e:
            raise ResultsError(f"{f} is damaged: not JSON ({e})") from None
        _check_sweep_file(f, data)
        exp, scale = data["experiment"], data["scale"]
        for oid, o in sorted(data.get("outputs", {}).items()):
            outputs.append({"experiment": exp, "scale": scale, "output": oid,
                            "what": o["what"], "needs": ", ".join(o["needs"]),
                            "lacks": ", ".join(o["lacks"])})
        for i, p in enumerate(data["points"]):
            rec = {"experiment": exp, "scale": scale, "point": i,
                   **{k: p[k] for k in POINT_KEYS},
                   "stand_in": bool(p.get("stand_in")),
                   "timing": bool(p.get("timing")),
                   "args": p.get("args") or "",
                   "run_id": p.get("run_id"),
                   "lacks": ", ".join(p.get("lacks") or [])}
            status, reason = "lacks", ""
            if p.get("refused"):        # the runner refused the point
                status = "missing"
                reason = f"refused by the runner: {p['refused']}"
            elif p.get("run_id"):
                name = short_id(p["run_id"])
                status = "missing"
                run_dir = Path(root) / "by-id" / name
                failed = Path(root) / "by-id" / f"{name}.failed"
                state, what = states.get(run_dir, (None, None))
                if state == "good" and what == p["run_id"]:
                    status = "done"
                elif state == "good":
                    status, reason = "damaged", (
                        f"its configuration is of another run "
                        f"({short_id(what)})")
                elif state in ("damaged", "unverified"):
                    status, reason = state, what
                elif failed.is_dir():
                    status = "failed"
                    ft = failed / "failure.txt"
                    reason = (ft.read_text(errors="replace").splitlines()
                              or [""])[0] if ft.is_file() else "no failure.txt"
            rec.update(status=status, reason=reason)
            points.append(rec)
    return points, outputs


# -- building and writing -----------------------------------------------------

def build_tables(root: Path, notice=None) -> dict:
    """Every catalog table as a pandas DataFrame, sorted."""
    import pandas as pd
    from colorsim.results.rundata import load_run
    root = Path(root)
    dirs, failed = find_run_dirs(root)
    rows, offs, cnts, stats = [], [], [], []
    bad, states = [], {}
    for d in dirs:
        try:
            run = load_run(d)
        except ResultsError as e:
            bad.append(f"{d.relative_to(root)}: {e}")
            states[d] = ("damaged", str(e))
            continue
        try:
            r = run_rows(run, root)
        except (ArithmeticError, KeyError, TypeError, ValueError) as e:
            # a configuration no run could have had (0 Hz clock, a field of
            # the wrong type): one such run must not stop the catalog
            why = f"{d / 'config.json'} is damaged: cannot use it ({type(e).__name__}: {e})"
            bad.append(f"{d.relative_to(root)}: {why}")
            states[d] = ("damaged", why)
            continue
        states[d] = (("good", r["runs"]["run_id"]) if run.verified
                     else ("unverified", run.unverified))
        rows.append(r["runs"])
        offs.append(r["offsets"])
        cnts.append(r["counters"])
        stats.append(r["stats"])
    if bad and notice:
        notice(f"colorsim: catalog: left out {len(bad)} damaged or "
               f"incomplete run(s): {bad[0]}" + (" ..." if len(bad) > 1 else ""))
    unverified = sorted(str(d.relative_to(root)) for d, (st, _) in states.items()
                        if st == "unverified")
    if unverified and notice:
        notice(f"colorsim: catalog: {len(unverified)} run(s) without a manifest "
               f"are marked verified=False: {unverified[0]}"
               + (" ..." if len(unverified) > 1 else ""))
    runs = pd.DataFrame(rows)
    if len(runs):
        first = ["run_id", "run", "path", "engine", "engine_version",
                 "machine", "cpus", "l2_size", "l2_assoc", "line", "kernel",
                 "colors", "tasks", "burst", "buffer", "warmup", "roi", "seed"]
        runs = runs[first + sorted(c for c in runs.columns if c not in first)]
        runs = runs.sort_values(["run_id", "path"], kind="stable")
    empty = {"offsets": ["run_id", "dump", "view", "cpu", "mode", "kind",
                         "offset", "count"],
             "counters": ["run_id", "dump", "cpu", "mode", "stat", "value"],
             "stats": ["run_id", "dump", "name", "value"]}

    def cat(parts, name, keys):
        if not parts:
            return pd.DataFrame(columns=empty[name])
        df = pd.concat(parts, ignore_index=True)
        df = df.drop_duplicates()
        return df.sort_values(keys, kind="stable")

    points, outputs = point_rows(root, states)
    tables = {
        "runs": runs,
        "offsets": cat(offs, "offsets", ["run_id", "dump", "view", "cpu",
                                         "mode", "kind", "offset"]),
        "counters": cat(cnts, "counters", ["run_id", "dump", "cpu", "mode",
                                           "stat"]),
        "stats": cat(stats, "stats", ["run_id", "dump", "name"]),
        "points": pd.DataFrame(points, columns=None if points else
                               ["experiment", "scale", "point", "run_id",
                                "status"]),
        "outputs": pd.DataFrame(outputs, columns=None if outputs else
                                ["experiment", "scale", "output", "what",
                                 "needs", "lacks"]),
    }
    if len(tables["points"]):
        tables["points"] = tables["points"].sort_values(
            ["experiment", "scale", "point"], kind="stable")
    return {k: v.reset_index(drop=True) for k, v in tables.items()}


def _write_parquet(df, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(table, path, compression="zstd", write_statistics=True)


class _Lock:
    def __init__(self, root: Path):
        self.path = Path(root) / ".catalog.lock"

    def __enter__(self):
        # The catalog is written beside its lock: a folder we cannot
        # write in is refused here, before any run is read.
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise ConfigError(f"cannot write the catalog in {self.path.parent}: "
                              f"{e.strerror}") from None
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def rebuild(root=None, notice=None) -> Path:
    """Rebuild ``root/catalog`` from the run directories below ``root``;
    the old catalog is replaced in one step once the new one is written."""
    from colorsim.run.rundir import runs_root
    root = runs_root(root)
    if not root.is_dir():
        raise ConfigError(f"{root} does not exist: no runs to catalog")
    with _Lock(root):
        tables = build_tables(root, notice)
        new = root / f".catalog.new{os.getpid()}"
        old = root / f".catalog.old{os.getpid()}"
        if new.exists():
            shutil.rmtree(new)
        new.mkdir()
        for name, df in tables.items():
            _write_parquet(df, new / f"{name}.parquet")
        final = root / CATALOG
        if final.exists():
            final.rename(old)
        new.rename(final)
        if old.exists():
            shutil.rmtree(old)
        for stale in root.glob(".catalog.*[0-9]"):   # a killed rebuild's
            shutil.rmtree(stale, ignore_errors=True)
    return final


# -- reading: the Python API --------------------------------------------------

class Catalog:
    """``Catalog("runs").runs()`` etc.: the catalog's tables as pandas
    DataFrames (for notebooks)."""

    def __init__(self, root=None):
        from colorsim.run.rundir import runs_root
        self.root = runs_root(root)
        self.dir = self.root / CATALOG

    def table(self, name: str):
        import pandas as pd
        if name not in TABLES:
            raise ConfigError(f"unknown catalog table {name!r}; known: "
                              f"{', '.join(TABLES)}")
        path = self.dir / f"{name}.parquet"
        if not path.is_file():
            raise ResultsError(f"no catalog in {self.root} (missing {path}): "
                               f"run 'python3 -m colorsim catalog rebuild "
                               f"--runs {self.root}'")
        try:
            return pd.read_parquet(path)
        except Exception as e:          # pyarrow's many error types
            raise ResultsError(f"{path} is damaged: {e}".splitlines()[0]) from None

    def runs(self, **where):
        return filter_frame(self.table("runs"), where)

    def offsets(self, run_id=None):
        df = self.table("offsets")
        return df if run_id is None else df[df["run_id"] == run_id]

    def counters(self, run_id=None):
        df = self.table("counters")
        return df if run_id is None else df[df["run_id"] == run_id]

    def stats(self, run_id=None):
        df = self.table("stats")
        return df if run_id is None else df[df["run_id"] == run_id]

    def points(self, experiment=None, scale=None):
        df = self.table("points")
        if experiment is not None:
            df = df[df["experiment"] == experiment]
        if scale is not None:
            df = df[df["scale"] == scale]
        return df

    def outputs(self):
        return self.table("outputs")

    def find(self, key: str):
        """One run's catalog row by id prefix, run name or path."""
        df = self.table("runs")
        key = str(key).rstrip("/")
        hit = df[(df["run_id"].str.startswith(key)) | (df["run"] == key) |
                 (df["path"] == key)]
        if len(hit) == 0:
            p = Path(key)
            try:
                rel = str(p.resolve().relative_to(self.root.resolve()))
                hit = df[df["path"] == rel]
            except ValueError:
                pass
        if len(hit) == 0:
            raise ConfigError(f"no run {key!r} in the catalog of {self.root}")
        if hit["run_id"].nunique() > 1:
            raise ConfigError(f"run {key!r} is ambiguous: "
                              f"{', '.join(hit['run'].head(5))} ...")
        return hit.iloc[0]


def filter_frame(df, where: dict):
    """Rows whose columns equal the given values (compared as text, sizes
    such as 512KiB accepted for byte columns)."""
    from colorsim.units import parse_size
    for key, want in where.items():
        if key not in df.columns:
            raise ConfigError(f"--where {key}: no such column; columns: "
                              f"{', '.join(df.columns[:40])} ...")
        col = df[key]
        want = str(want)
        if key in ("l2_size",) and not want.isdigit():
            try:
                want = str(parse_size(want))
            except ConfigError as e:
                raise ConfigError(f"--where {key}={want}: {e}") from None
        text = col.map(lambda x: "" if x is None else
                       (str(int(x)) if isinstance(x, float) and x == x
                        and x == int(x) else str(x)))
        df = df[text == want]
    return df


def parse_where(items) -> dict:
    out = {}
    for it in items or []:
        if "=" not in it or not it.split("=", 1)[0]:
            raise ConfigError(f"--where {it!r}: use key=value")
        k, v = it.split("=", 1)
        out[k] = v
    return out


# -- commands -----------------------------------------------------------------

RUN_COLUMNS = ["run", "machine", "cpus", "l2_size", "kernel", "tasks", "seed",
               "roi", "engine", "peak_offset", "colored_lines_sum",
               "rqloop_l2_miss_ratio", "schedule_calls", "verified"]


def cmd_catalog(a):
    import sys
    path = rebuild(a.runs, notice=lambda m: print(m, file=sys.stderr))
    cat = Catalog(a.runs)
    n = len(cat.table("runs"))
    size = sum(f.stat().st_size for f in path.glob("*.parquet"))
    print(f"catalog: {n} runs, {size} bytes in {path}")


def cmd_runs(a):
    import pandas as pd
    cat = Catalog(a.runs)
    df = cat.runs(**parse_where(a.where))
    cols = [c for c in RUN_COLUMNS if c in df.columns]
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
        print(df[cols].to_string(index=False))


def cmd_show(a):
    import math
    cat = Catalog(a.runs)
    row = cat.find(a.run)
    print(f"run {row['run']}  ({row['path']})")
    print(f"  id {row['run_id']}")
    for k in ("engine", "engine_version", "machine", "cpus", "l2_size",
              "l2_assoc", "line", "kernel", "colors", "tasks", "seed",
              "warmup", "roi", "burst", "source_commit", "source_dirty",
              "verified"):
        print(f"  {k:22} {row[k]}")
    print("key statistics (region of interest):")
    for k in ("peak_offset", "peak_count", "colored_lines_sum",
              "other_lines_sum", "total", "rqloop_l2_miss_ratio",
              "l2_miss_ratio", "schedule_calls", "kinst",
              "colored_lines_sum_per_schedule", "total_per_schedule",
              "timing", "workload_program", "workload_args", "accept", "roi_requests",
              "roi_messages", "sched_share_basis", "sched_share_pct", "lock_held_pct",
              "lock_spin_pct") + (TIMING_COLUMNS if row.get("timing") else ()):
        v = row.get(k)
        if k == "peak_offset" and v is not None and v == v:
            v = f"{int(v):#05x}"
        elif isinstance(v, float) and not math.isnan(v) and "ratio" in k:
            v = f"{v:.2%}"
        print(f"  {k:32} {v}")
    st = cat.stats(row["run_id"])
    dumps = sorted(st["dump"].unique())
    print(f"stats dumps: {len(dumps)}")
    for d in dumps:
        block = st[st["dump"] == d]
        print(f"---------- dump {d}: {len(block)} stats ----------")
        for name, value in zip(block["name"], block["value"]):
            print(f"{name:60} {value:g}")


def add_parsers(subparsers):
    """Register ``catalog``, ``runs`` and ``show``."""
    c = subparsers.add_parser("catalog", help="the results catalog")
    csub = c.add_subparsers(dest="catalog_command", required=True,
                            parser_class=subparsers._parser_class)
    r = csub.add_parser("rebuild", help="rebuild runs/catalog from the run "
                                        "directories")
    r.add_argument("--runs", type=Path, default=None)
    r.set_defaults(func=cmd_catalog)

    p = subparsers.add_parser("runs", help="list and filter catalogued runs")
    p.add_argument("--where", action="append", metavar="KEY=VALUE",
                   help="keep runs whose column KEY equals VALUE (repeatable)")
    p.add_argument("--columns", help="comma-separated columns to print")
    p.add_argument("--runs", type=Path, default=None)
    p.set_defaults(func=cmd_runs)

    s = subparsers.add_parser("show", help="one run's key stats and every "
                                           "stats dump")
    s.add_argument("run", help="run id (prefix), name or path")
    s.add_argument("--runs", type=Path, default=None)
    s.set_defaults(func=cmd_show)
