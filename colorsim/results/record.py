"""Recorded catalogs: the paper-scale results kept in the repository.

A paper-scale sweep takes from half an hour (Figure 6) to days (Figure 10,
an hour per point), more than one sitting and more than a scratch machine
keeps.  ``colorsim catalog record NAME --runs DIR`` copies the catalog rows of
DIR's paper-scale points (the ``points`` and ``runs`` tables, each run with
its full configuration and the suite's commit it was made at) into
``recorded/paper/catalog/``, so the paper-scale results table (docs/results.md) is generated
from, and checked against, rows anyone can read, and points swept on
different days add up:

* a point (experiment, scale and its grid values) that is done in DIR
  replaces the recorded one;
* a recorded done point stays where DIR has the same point not done (DIR
  is another day's folder that never ran it);
* a recorded point of an experiment DIR has swept at paper scale but whose
  grid no longer holds it is dropped (the grid changed);
* experiments DIR has not swept stay as recorded.

Beside the points and runs, each recorded run's transactions per page
offset (the ``offsets`` table, which Figures 1 and 3 read) are kept summed
over the CPUs (``cpu`` = -1): a figure sums them anyway, and per CPU they
would be most of the bytes.

Each recorded run's stats dumps (the ``stats`` table: every dump's every
statistic, the rows ``colorsim show`` prints) are kept too, in the
catalog's compressed Parquet, so a recorded run can be inspected as a run
directory can.  Runs recorded before the table existed have none; ``show``
says so.

A recorded catalog holds no run directories, so ``catalog rebuild`` refuses
it rather than replacing it with an empty one.  Its ``recorded.json`` says
what it holds: the experiments' done and total points, the commits the
runs were made at, and the host seconds a point of each cost class took
(``host_seconds_per_cost_class``: the median wall time of the recorded
runs of the class, as their run directories said; a fresh clone's sweep
estimates its time from them).  Nothing else about the recording host
goes in.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from colorsim.errors import ConfigError
from colorsim.results.catalog import (CATALOG, MARK, POINT_KEYS, Catalog,
                                      _write_parquet, is_recorded, rebuild)
from colorsim.results.runrows import ROOT
from colorsim.results.schema import conform

PAPER = ROOT / "recorded" / "paper"
TABLES = ("points", "runs", "offsets", "stats")   # what a recorded catalog holds
ALL_CPUS = -1                   # the cpu of an offsets row summed over CPUs
# a point is the same point only with all its settings the same
KEY = ("experiment", "scale") + POINT_KEYS + ("timing", "args", "client_cpus")
# an offsets row of a run, the CPUs summed
OFFSET_KEYS = ["run_id", "dump", "view", "mode", "kind", "offset"]
# a stats row of a run
STATS_KEYS = ["run_id", "dump", "name"]
COSTS = "host_seconds_per_cost_class"      # recorded.json's key


def merge_points(old, new):
    """The recorded points after adding ``new`` (DIR's paper-scale points)
    to ``old`` (the recorded ones), by the rules in the module's text."""
    import pandas as pd
    if old is None or old.empty:
        return new.reset_index(drop=True)
    swept = set(new["experiment"])
    kept = old[~old["experiment"].isin(swept)]
    done_before = {tuple(r[k] for k in KEY): r
                   for _, r in old[old["status"] == "done"].iterrows()}
    rows = []
    for _, r in new.iterrows():
        before = done_before.get(tuple(r[k] for k in KEY))
        if r["status"] != "done" and before is not None:
            point = r["point"]                  # the grid's numbering today
            r = before.copy()
            r["point"] = point
        rows.append(r)
    merged = pd.DataFrame(rows, columns=new.columns) if rows else new.iloc[:0]
    return pd.concat([kept, merged], ignore_index=True).sort_values(
        ["experiment", "scale", "point"]).reset_index(drop=True)


def engine_build(engine_version, plugin_sha256) -> str:
    """One engine build, as a figure's points must share it: the engine's
    version (for QEMU its patch set) and the bus-monitor plugin's SHA-256
    (its first 12 digits)."""
    return (f"{engine_version or 'unknown'}; "
            f"plugin {str(plugin_sha256 or 'unknown')[:12]}")


def mixed_builds(points, runs, experiments) -> dict:
    """{experiment: [engine build, ...]} for each of ``experiments`` whose
    done points' runs come from more than one engine build."""
    done = points[(points["status"] == "done")
                  & points["experiment"].isin(list(experiments))]
    rows = done[["experiment", "run_id"]].merge(runs, on="run_id", how="inner")
    out = {}
    for exp, g in rows.groupby("experiment"):
        builds = sorted({engine_build(v, p)
                         for v, p in zip(g.get("engine_version", [None] * len(g)),
                                         g.get("plugin_sha256", [None] * len(g)))})
        if len(builds) > 1:
            out[exp] = builds
    return out


def summed_offsets(offsets, run_ids):
    """The offsets rows of ``run_ids``, summed over the CPUs."""
    df = offsets[offsets["run_id"].isin(run_ids)]
    return df.groupby(OFFSET_KEYS, as_index=False)["count"].sum().assign(cpu=ALL_CPUS)


def summary(points, runs) -> dict:
    """recorded.json: per experiment its done and total points, and the
    commits (with uncommitted changes or not) the runs were made at."""
    exps = {}
    for (exp, scale), g in points.groupby(["experiment", "scale"]):
        exps[f"{exp}-{scale}"] = {"points": int(len(g)),
                                  "done": int((g["status"] == "done").sum())}
    commits = {}
    for c, d in zip(runs["source_commit"], runs["source_dirty"]):
        key = f"{c or 'unknown'}{' (uncommitted changes)' if d else ''}"
        commits[key] = commits.get(key, 0) + 1
    return {"what": "paper-scale points and runs recorded by "
                    "'python3 -m colorsim catalog record'",
            "experiments": exps, "runs": int(len(runs)),
            "runs_per_commit": dict(sorted(commits.items()))}


# A host path in a recorded catalog says where one machine kept its runs:
# meaningless anywhere else, and not the repository's business.
_HOST_PATH = re.compile(r"(?<![\w.<])/(?:tmp|home|root|work|var|mnt|srv|scratch|"
                        r"users?|opt|data|private)/[^\s'\",;:)]*")


def strip_paths(df, runs_dir: Path):
    """``df`` with every host path in its text columns made relative: the
    runs folder as <runs>, the checkout as <repo>, any other as <path>."""
    df = df.copy()
    for col in df.columns:
        if col == "workload_program":       # a path inside the guest's image
            continue
        if not (df[col].dtype == object or "str" in str(df[col].dtype)):
            continue
        def clean(v):
            if not isinstance(v, str) or "/" not in v:
                return v
            v = v.replace(str(runs_dir), "<runs>").replace(str(ROOT), "<repo>")
            return _HOST_PATH.sub("<path>", v)
        df[col] = df[col].map(clean)
    return df


def record(runs_dir, to=None, notice=None, experiments=None,
           mix_builds=False) -> dict:
    """Add ``runs_dir``'s paper-scale points of ``experiments`` (names; None:
    every experiment it swept) and their verified runs to the recorded
    catalog ``to`` (default recorded/paper); returns its summary, with
    ``skipped``: the points of those experiments that are not done (a
    missing, failed, damaged or unverified run), each with its reason.
    A figure's points come from one engine build: an experiment whose
    recorded points would mix builds (a point kept from an earlier record
    beside new ones) is refused, before anything is written, unless
    ``mix_builds``."""
    import pandas as pd
    from colorsim.run.rundir import runs_root
    to = Path(to) if to else PAPER
    runs_dir = runs_root(runs_dir)
    if is_recorded(runs_dir):
        raise ConfigError(f"{runs_dir} is a recorded catalog, not a runs folder")
    if (to / CATALOG).exists() and not is_recorded(to):
        raise ConfigError(f"{to / CATALOG} exists and is not a recorded catalog "
                          f"(no {MARK}); record into another folder")
    rebuild(runs_dir, notice)
    cat = Catalog(runs_dir)
    pts = cat.points()
    new = pts[pts["scale"] == "paper"]
    if experiments is not None:
        unknown = sorted(set(experiments) - set(new["experiment"]))
        if unknown:
            have = sorted(set(new["experiment"])) or ["none"]
            raise ConfigError(f"{runs_dir} has no paper-scale points of "
                              f"{', '.join(unknown)} (it has: {', '.join(have)})")
        new = new[new["experiment"].isin(experiments)]
    if new.empty:
        raise ConfigError(f"{runs_dir} has no paper-scale sweep points: run "
                          f"'python3 -m colorsim sweep NAME --runs {runs_dir}' "
                          f"first")
    new = strip_paths(new, runs_dir)
    skipped = [f"{r.experiment} point {r.point}: {r.status}"
               + (f" ({r.reason})" if r.reason else "")
               for r in new.itertuples() if r.status != "done"]
    _recover(to)
    old_pts = old_runs = old_offs = old_stats = None
    old_costs = {}
    if is_recorded(to):
        old = Catalog(to)
        old_costs = json.loads((to / CATALOG / MARK).read_text()).get(COSTS, {})
        old_pts, old_runs = old.table("points"), old.table("runs")
        old_offs = old.table("offsets")
        if (old.dir / "stats.parquet").is_file():   # older records have none
            old_stats = old.table("stats")
    points = merge_points(old_pts, new)
    runs = pd.concat([cat.table("runs")] + ([old_runs] if old_runs is not None else []),
                     ignore_index=True).drop_duplicates("run_id")
    done = set(points.loc[points["status"] == "done", "run_id"])
    runs = runs[runs["run_id"].isin(done)].sort_values("run_id").reset_index(drop=True)
    runs = strip_paths(runs, runs_dir)
    mixed = {} if mix_builds else mixed_builds(points, runs, set(new["experiment"]))
    if mixed:
        exp, builds = sorted(mixed.items())[0]
        raise ConfigError(f"{exp}'s recorded points would come from "
                          f"{len(builds)} engine builds ({' | '.join(builds)}): "
                          f"sweep its points again in one build, or record "
                          f"with --mix-builds")
    offs = pd.concat([summed_offsets(cat.table("offsets"), done)]
                     + ([old_offs] if old_offs is not None else []), ignore_index=True)
    offs = offs[offs["run_id"].isin(done)].drop_duplicates(OFFSET_KEYS)
    offs = offs.sort_values(OFFSET_KEYS)
    stats = pd.concat([cat.table("stats")]
                      + ([old_stats] if old_stats is not None else []), ignore_index=True)
    stats = stats[stats["run_id"].isin(done)].drop_duplicates(STATS_KEYS)
    stats = stats.sort_values(STATS_KEYS).reset_index(drop=True)
    costs = dict(old_costs)
    costs.update(host_seconds(new[new["status"] == "done"], cat, runs_dir))
    info = dict(summary(points, runs), **{COSTS: dict(sorted(costs.items()))})
    _write(to, {"points": points, "runs": runs, "offsets": offs,
                "stats": stats}, info)
    return dict(info, skipped=skipped)


def host_seconds(done_points, cat, runs_dir: Path) -> dict:
    """{cost class key: median wall seconds} of the runs behind
    ``done_points`` (their config.json's ``wall_s``)."""
    import statistics
    from colorsim.describe.experiments import cost_key
    runs = cat.table("runs")
    paths = dict(zip(runs["run_id"], runs["path"]))
    by = {}
    for r in done_points.to_dict("records"):
        try:
            cfg = json.loads((Path(runs_dir) / paths[r["run_id"]] / "config.json")
                             .read_text())
            by.setdefault(cost_key(r), []).append(float(cfg["wall_s"]))
        except (KeyError, OSError, ValueError, TypeError):
            continue                    # a run without its wall time
    return {k: round(statistics.median(v), 1) for k, v in by.items()}


def _recover(to: Path) -> None:
    """A record killed between its two renames (:func:`_write`) left the
    recorded catalog only as ``.catalog.old<pid>``: put it back."""
    olds = sorted(to.glob(f".{CATALOG}.old*")) if to.is_dir() else []
    if olds and not (to / CATALOG).exists() and (olds[-1] / MARK).is_file():
        olds[-1].rename(to / CATALOG)


def _write(to: Path, frames: dict, info: dict) -> None:
    """Write the tables and recorded.json beside each other, then put the
    folder in place in one step: a failure leaves the old one whole."""
    to.mkdir(parents=True, exist_ok=True)
    new = to / f".{CATALOG}.new{os.getpid()}"
    old = to / f".{CATALOG}.old{os.getpid()}"
    shutil.rmtree(new, ignore_errors=True)
    new.mkdir()
    try:
        for name in TABLES:
            _write_parquet(conform(name, frames[name]), new / f"{name}.parquet")
        (new / MARK).write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    final = to / CATALOG
    if final.exists():
        final.rename(old)
    new.rename(final)
    shutil.rmtree(old, ignore_errors=True)


SKIPPED_STATUS = 1      # recorded, but some asked-for points are not done


def cmd_record(a):
    import sys
    from colorsim.describe.experiments import load_experiments, select
    to = Path(a.to) if a.to else PAPER
    exps = load_experiments(check_points=False)
    names = (None if "all" in a.experiments else      # every one DIR swept
             sorted({e.name for n in a.experiments for e in select(exps, n)}))
    info = record(a.runs, to, notice=lambda m: print(m, file=sys.stderr),
                  experiments=names, mix_builds=a.mix_builds)
    print(f"record: {info['runs']} runs in {to / CATALOG}")
    for name, e in info["experiments"].items():
        print(f"  {name:14} {e['done']:4} of {e['points']} points done")
    for c, n in info["runs_per_commit"].items():
        print(f"  {n:4} runs made at {c}")
    if info["skipped"]:
        print(f"record: skipped {len(info['skipped'])} points that are not "
              f"done (recorded as not done, without runs):", file=sys.stderr)
        for line in info["skipped"]:
            print(f"  {line}", file=sys.stderr)
        return SKIPPED_STATUS
    return 0


def add_parser(csub):
    """``catalog record``, beside ``catalog rebuild`` (catalog.add_parsers)."""
    from colorsim.argtypes import directory
    rec = csub.add_parser("record", help="add a runs folder's paper-scale "
                          "points and verified runs of the named experiments "
                          "to the recorded catalog in the repository "
                          "(recorded/paper); exit status 1 when some of their "
                          "points are not done")
    rec.add_argument("experiments", nargs="+", metavar="NAME",
                     help="experiments to record (configs/experiments.toml), "
                          "or all")
    rec.add_argument("--runs", type=directory, default=None,
                     help="runs folder whose paper-scale sweeps to record "
                          "(default runs/)")
    rec.add_argument("--to", default=None,
                     help="recorded catalog folder (default recorded/paper)")
    rec.add_argument("--mix-builds", action="store_true",
                     help="record even where an experiment's points would "
                          "come from more than one engine build (the report "
                          "flags such a figure)")
    rec.set_defaults(func=cmd_record)
