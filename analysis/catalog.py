"""Where a catalog's tables are: the one thing the scripts here share.

A catalog is a folder of Parquet tables (`runs`, `points`, `offsets`, ...)
that `colorsim catalog rebuild` or `catalog record` wrote; a recorded one
(`recorded/paper`) holds the paper-scale runs.  Each script reads it with
pandas alone.
"""

import argparse
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
DEFAULT = REPO / "recorded" / "paper"


def args(what: str):
    """--runs FOLDER (default recorded/paper) and --plot FILE."""
    p = argparse.ArgumentParser(description=what)
    p.add_argument("--runs", type=Path, default=DEFAULT,
                   help="a runs folder or recorded catalog (default recorded/paper)")
    p.add_argument("--plot", type=Path, help="also draw the result into this PNG")
    return p.parse_args()


def table(runs: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(Path(runs) / "catalog" / f"{name}.parquet")


def experiment(runs: Path, name: str) -> pd.DataFrame:
    """The done points of a paper-scale experiment, each with its run's row."""
    pts = table(runs, "points")
    pts = pts[(pts["experiment"] == name) & (pts["scale"] == "paper")
              & (pts["status"] == "done")]
    runs_t = table(runs, "runs").drop(columns=["kernel", "seed", "tasks", "cpus",
                                               "machine", "timing"], errors="ignore")
    return pts.merge(runs_t, on="run_id")


def gain(df: pd.DataFrame, by: list, value: str) -> pd.DataFrame:
    """c32's gain over vanilla in ``value`` per ``by`` group: the mean over
    seeds (seed by seed, then averaged) with the seeds' lowest and highest."""
    wide = df.pivot_table(index=by + ["seed"], columns="kernel", values=value)
    g = (wide["c32"] / wide["vanilla"] - 1) * 100
    return g.groupby(level=by).agg(["mean", "min", "max", "count"])
