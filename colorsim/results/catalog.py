"""The results catalog: every run below runs/ as Parquet tables.

``runs/catalog/`` holds one Parquet file per table, rebuilt from the run
directories alone (:func:`rebuild`, ``colorsim catalog rebuild``):

* ``runs``      one row per complete run: every parameter and derived
                statistic as a column (peak offset, colored-line sums, the
                run-queue loop's miss ratio, schedule() calls, counts per
                schedule(), counter totals ``n_<stat>``);
* ``offsets``   long: run_id, dump, view, cpu, mode, kind, offset, count;
* ``counters``  long: run_id, dump, cpu, mode, stat, value (per CPU);
* ``recorded``  the gem5 runs recorded in the repository (recorded/gem5)
                and in ../shared/gem5, with the columns of ``runs``;
* ``stats``     long: run_id, dump, name, value, unit, desc: every
                stats.txt dump (gem5 appends one Begin/End block per dump;
                all are kept);
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

Every table has its declared columns and types whatever runs are present
(colorsim/results/schema.py).

Nothing non-deterministic goes in: no wall times, host names or dates, no
absolute paths; rows are sorted.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path

from colorsim.errors import ConfigError, ResultsError
from colorsim.argtypes import directory
from colorsim.results import runrows
from colorsim.results.runrows import (CATALOG, find_run_dirs,
                                      run_rows)
from colorsim.results.schema import conform

TABLES = ("runs", "recorded", "offsets", "counters", "stats", "points",
          "outputs")
# In a catalog folder: the catalog was recorded (colorsim/results/record.py),
# not built from run directories, and holds only some tables.
MARK = "recorded.json"


def is_recorded(root) -> bool:
    """``root``'s catalog was recorded (it has MARK), not built from runs."""
    return (Path(root) / CATALOG / MARK).is_file()


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


# a point's labels that its run's row must carry too (the run's
# configuration, read by runrows): (point key, runs column).  Not warmup,
# roi or burst: a user workload's region is its own (web counts requests),
# so a web point's ticks are not its run's, and its args say the region.
LABELS = (("machine", "machine"), ("cpus", "cpus"), ("kernel", "kernel"),
          ("tasks", "tasks"), ("seed", "seed"), ("engine", "engine"),
          ("timing", "timing"), ("l2", "l2_size"), ("args", "workload_args"))


def run_labels(row: dict) -> dict:
    """The columns of a run's row that LABELS compares."""
    return {col: row.get(col) for _, col in LABELS}


def relabelled(point: dict, labels: dict) -> list:
    """Where a sweep file's point says other than its run's configuration
    ("kernel c32, its run vanilla"): a hand-edited sweep file must not
    relabel a run that the run id alone would accept."""
    from colorsim.units import parse_size
    out = []
    for key, col in LABELS:
        want, have = point.get(key), labels.get(col)
        if key == "l2":
            want = parse_size(want) if isinstance(want, str) else want
        elif key == "args" and not want:
            continue                     # the workload's defaults
        elif key == "timing":
            want, have = bool(want), bool(have)
        if want != have:
            out.append(f"{key} {point.get(key)}, its run {have}")
    return out


def point_rows(root: Path, states: dict) -> tuple:
    """(points, outputs) from runs/sweeps/*.json, with each point's status.

    ``states`` maps a run directory to what loading it found: ("good",
    run id, run_labels), ("unverified", why) or ("damaged", why)
    (:func:`build_tables`).  A point is done only if its run is good, of
    the point's id and of the point's labels: the same test the runs
    table and the figures use, and no edited sweep file relabels a run."""
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
                            "what": o["what"], "needs": list(o["needs"]),
                            "lacks": list(o["lacks"])})
        for i, p in enumerate(data["points"]):
            rec = {"experiment": exp, "scale": scale, "point": i,
                   **{k: p[k] for k in POINT_KEYS},
                   "stand_in": bool(p.get("stand_in")),
                   "timing": bool(p.get("timing")),
                   "args": p.get("args") or "",
                   "client_cpus": int(p.get("client_cpus", -1)),
                   "run_id": p.get("run_id"),
                   "lacks": list(p.get("lacks") or [])}
            status, reason = "lacks", ""
            if p.get("refused"):        # the runner refused the point
                status = "missing"
                reason = f"refused by the runner: {p['refused']}"
            elif p.get("unbuilt"):      # left out by sweep --only, unbuilt
                status = "missing"
                reason = "not run: its builds are not made (left out by --only)"
            elif p.get("run_id"):
                name = short_id(p["run_id"])
                status = "missing"
                run_dir = Path(root) / "by-id" / name
                failed = Path(root) / "by-id" / f"{name}.failed"
                state, what, *labels = states.get(run_dir, (None, None))
                ours = state == "good" and what == p["run_id"]
                wrong = relabelled(p, labels[0]) if ours else []
                if ours and not wrong:
                    status = "done"
                elif wrong:
                    status, reason = "damaged", (
                        f"its sweep file's labels are not its run's: "
                        f"{'; '.join(wrong)}")
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


# -- recorded runs ------------------------------------------------------------

def recorded_rows(have: set, notice=None) -> list:
    """The ``recorded`` table's rows: every run below the folders of
    ``runrows.RECORDED`` that is there, with ``path`` as the folder's label
    and the run's place in it.  A run whose id is in ``have`` (a runs-table
    run, or an earlier folder's copy: the repository's trimmed copies come
    before the full recordings they were made from) is listed once.  Only
    the runs-table row is kept; the run's folder holds the rest."""
    from colorsim.results.rundata import load_run
    from colorsim.run.identity import run_id
    from colorsim.run.rundir import read_config
    rows, have, bad = [], set(have), []
    for label, folder in runrows.RECORDED:
        dirs, _ = find_run_dirs(folder)
        for d in dirs:
            try:
                if run_id(read_config(d)) in have:
                    continue
                r = run_rows(load_run(d), folder)["runs"]
            except (ResultsError, ArithmeticError, KeyError, TypeError,
                    ValueError) as e:
                bad.append(f"{label}/{d.relative_to(folder)}: {e}")
                continue
            r.update(path=f"{label}/{r['path']}", recorded=True,
                     id_matches_name=None)
            have.add(r["run_id"])
            rows.append(r)
    if bad and notice:
        notice(f"colorsim: catalog: left out {len(bad)} damaged recorded "
               f"run(s): {bad[0]}" + (" ..." if len(bad) > 1 else ""))
    return rows


# -- building and writing -----------------------------------------------------

def build_tables(root: Path, notice=None) -> dict:
    """Every catalog table as a pandas DataFrame, sorted."""
    return {k: t.to_pandas() for k, t in build_arrow(root, notice).items()}


def build_arrow(root: Path, notice=None) -> dict:
    """Every catalog table as a pyarrow Table of its declared schema
    (colorsim/results/schema.py), sorted."""
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
        states[d] = (("good", r["runs"]["run_id"], run_labels(r["runs"]))
                     if run.verified
                     else ("unverified", run.unverified))
        rows.append(r["runs"])
        offs.append(r["offsets"])
        cnts.append(r["counters"])
        stats.append(r["stats"])
    if bad and notice:
        notice(f"colorsim: catalog: left out {len(bad)} damaged or "
               f"incomplete run(s): {bad[0]}" + (" ..." if len(bad) > 1 else ""))
    unverified = sorted(str(d.relative_to(root)) for d, (st, *_) in states.items()
                        if st == "unverified")
    if unverified and notice:
        notice(f"colorsim: catalog: {len(unverified)} run(s) without a manifest "
               f"are marked verified=False: {unverified[0]}"
               + (" ..." if len(unverified) > 1 else ""))
    runs = pd.DataFrame(rows)
    if len(runs):
        runs = runs.sort_values(["run_id", "path"], kind="stable")
    recorded = pd.DataFrame(recorded_rows(set(runs.get("run_id", ())), notice))
    if len(recorded):
        recorded = recorded.sort_values(["run_id", "path"], kind="stable")

    def cat(parts, keys):
        if not parts:
            return pd.DataFrame()
        df = pd.concat(parts, ignore_index=True)
        df = df.drop_duplicates()
        return df.sort_values(keys, kind="stable")

    points, outputs = point_rows(root, states)
    points = pd.DataFrame(points)
    if len(points):
        points = points.sort_values(["experiment", "scale", "point"],
                                    kind="stable")
    tables = {
        "runs": runs,
        "recorded": recorded,
        "offsets": cat(offs, ["run_id", "dump", "view", "cpu", "mode", "kind",
                              "offset"]),
        "counters": cat(cnts, ["run_id", "dump", "cpu", "mode", "stat"]),
        "stats": cat(stats, ["run_id", "dump", "name"]),
        "points": points,
        "outputs": pd.DataFrame(outputs),
    }
    # every table with its declared columns and types (results/schema.py),
    # whatever runs are present
    return {k: conform(k, v.reset_index(drop=True))
            for k, v in tables.items()}


def _write_parquet(table, path: Path) -> None:
    import pyarrow.parquet as pq
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
    if is_recorded(root):
        raise ConfigError(f"{root} holds a recorded catalog, not run directories: "
                          f"it is not rebuilt (add runs to it with 'python3 -m "
                          f"colorsim catalog record NAME --runs DIR --to {root}')")
    with _Lock(root):
        tables = build_arrow(root, notice)
        new = root / f".catalog.new{os.getpid()}"
        old = root / f".catalog.old{os.getpid()}"
        if new.exists():
            shutil.rmtree(new)
        new.mkdir()
        for name, table in tables.items():
            _write_parquet(table, new / f"{name}.parquet")
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
        if not path.is_file() and is_recorded(self.root):
            held = sorted(q.stem for q in self.dir.glob("*.parquet"))
            raise ResultsError(f"{self.root} is a recorded catalog: it holds the "
                               f"{', '.join(held)} tables, not {name!r}")
        if not path.is_file():
            raise ResultsError(f"no catalog in {self.root} (missing {path}): "
                               f"run 'python3 -m colorsim catalog rebuild "
                               f"--runs {self.root}'")
        try:
            return pd.read_parquet(path)
        except Exception as e:          # pyarrow's many error types
            raise ResultsError(f"{path} is damaged: {e}".splitlines()[0]) from None

    def runs(self, recorded=False, **where):
        """The runs table filtered by ``where``; with ``recorded`` the
        recorded runs (gem5's in recorded/gem5 and ../shared/gem5) too."""
        df = self.table("runs")
        if recorded and not is_recorded(self.root):   # a recorded
            # catalog has no recorded table: its runs are all recorded
            import pandas as pd
            rec = self.table("recorded")
            df = pd.concat([df, rec], ignore_index=True) if len(rec) else df
        return filter_frame(df, where)

    def recorded(self, **where):
        return filter_frame(self.table("recorded"), where)

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
        """One run's catalog row (a recorded run's too) by id prefix, run
        name or path."""
        key = str(key).rstrip("/")
        if not key.strip():             # "" and "/" would match every run
            raise ConfigError("no run named: give a run id (or its first "
                              "digits), a run name or a run directory")
        df = self.runs(recorded=True)
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
        if _numeric(col) and not _is_number(want):
            raise ConfigError(f"--where {key}={want}: {key} holds numbers")
        text = col.map(lambda x: "" if x is None else
                       (str(int(x)) if isinstance(x, float) and x == x
                        and x == int(x) else str(x)))
        df = df[text == want]
    return df


def _numeric(col) -> bool:
    from pandas.api.types import is_bool_dtype, is_numeric_dtype
    return is_numeric_dtype(col) and not is_bool_dtype(col)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def parse_where(items) -> dict:
    out = {}
    for it in items or []:
        if "=" not in it or not it.split("=", 1)[0]:
            raise ConfigError(f"--where {it!r}: use key=value")
        k, v = it.split("=", 1)
        out[k] = v
    return out


# -- commands -----------------------------------------------------------------

def cmd_catalog(a):
    import sys
    path = rebuild(a.runs, notice=lambda m: print(m, file=sys.stderr))
    cat = Catalog(a.runs)
    n = len(cat.table("runs"))
    size = sum(f.stat().st_size for f in path.glob("*.parquet"))
    print(f"catalog: {n} runs, {size} bytes in {path}")


def add_parsers(subparsers):
    """Register ``catalog``; returns its own subparsers (``catalog record``
    joins them: record.add_parser).  ``runs`` and ``show``:
    colorsim.results.show.add_parsers."""
    c = subparsers.add_parser("catalog", help="the results catalog")
    csub = c.add_subparsers(dest="catalog_command", required=True,
                            parser_class=subparsers._parser_class)
    r = csub.add_parser("rebuild", help="rebuild runs/catalog from the run "
                                        "directories")
    r.add_argument("--runs", type=directory, default=None,
                   help="runs folder holding the catalog (default runs/)")
    r.set_defaults(func=cmd_catalog)

    return csub
