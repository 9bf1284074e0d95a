"""Recorded catalogs: paper-scale points and runs kept in the repository
(colorsim/results/record.py), added to from runs folders of other days,
never rebuilt into an empty catalog, written whole or not at all; and the
paper-scale results table (docs/results.md) is generated from the recorded one."""

import json
import re
import shutil

import pandas as pd
import pytest

from colorsim import ROOT
from colorsim.errors import ConfigError, ResultsError
from colorsim.results import record as rec
from colorsim.results.catalog import Catalog, rebuild

from sweeps import experiment, experiments_file, sweep_with

GRID = dict(machine="ppro4", l2=["512KiB"], cpus=[2], kernels=["vanilla", "c8"],
            workload="synthetic", tasks=[16])
TINY = experiments_file(experiment("small", {"fig1": ["counting"]}, GRID))


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A runs folder holding the paper-scale sweep of a two-point grid."""
    yield from sweep_with(tmp_path_factory, "record", TINY, "small")


def _ids(root):
    return set(Catalog(root).table("runs")["run_id"])


def test_record_keeps_the_points_and_runs_and_refuses_a_rebuild(swept, tmp_path):
    root, _ = swept
    to = tmp_path / "rec"
    info = rec.record(root, to)
    assert info["experiments"] == {"small-paper": {"points": 2, "done": 2}}
    assert info["runs"] == 2 and sum(info["runs_per_commit"].values()) == 2
    assert info.pop("skipped") == []
    assert json.loads((to / "catalog" / "recorded.json").read_text()) == info
    assert _ids(to) == _ids(root)
    pts = Catalog(to).points("small", "paper")
    assert list(pts["status"]) == ["done", "done"]
    with pytest.raises(ConfigError, match="recorded catalog, not run directories"):
        rebuild(to)
    with pytest.raises(ResultsError, match="recorded catalog: it holds the offsets"):
        Catalog(to).table("counters")
    # every run's stats dumps, so that show can print them
    kept_stats, full_stats = Catalog(to).stats(), Catalog(root).stats()
    keys = ["run_id", "dump", "name"]
    assert len(kept_stats) == len(full_stats) > 0
    assert kept_stats.sort_values(keys)["value"].tolist() == \
        full_stats.sort_values(keys)["value"].tolist()
    # the offsets, summed over the CPUs, as a figure sums them
    kept, full = Catalog(to).offsets(), Catalog(root).offsets()
    assert set(kept["cpu"]) == {-1}
    keys = ["run_id", "dump", "view", "mode", "kind", "offset"]
    assert kept.groupby(keys)["count"].sum().equals(full.groupby(keys)["count"].sum())
    assert len(Catalog(to).runs(recorded=True)) == 2


def test_show_prints_a_recorded_runs_stats_dumps(swept, tmp_path, capsys):
    """A recorded run is inspected as a run directory is: show prints its
    stats dumps from the recorded catalog; one recorded before the catalog
    kept them says they are not kept."""
    from colorsim.cli import main
    root, _ = swept
    to = tmp_path / "rec"
    rec.record(root, to)
    run = sorted(_ids(to))[0]
    assert main(["show", run[:12], "--runs", str(to)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^stats dumps: [1-9]", out, re.M), out[-2000:]
    assert re.search(r"^---------- dump \d+: [1-9]\d* stats", out, re.M)
    (to / "catalog" / "stats.parquet").unlink()
    assert main(["show", run[:12], "--runs", str(to)]) == 0
    assert "stats dumps: not kept" in capsys.readouterr().out


def test_a_fresh_folder_estimates_its_sweep_from_the_recorded_costs(swept, tmp_path):
    """recorded.json keeps the median wall time of each cost class it
    recorded; a dry run in a folder that never ran a point estimates from
    it, and says so."""
    from colorsim.orchestrate.sweep import dry_run
    root, _ = swept
    to = tmp_path / "rec"
    info = rec.record(root, to)
    costs = info[rec.COSTS]
    walls = [json.loads(p.read_text())["wall_s"]
             for p in (root / "by-id").glob("*/config.json")]
    import statistics
    assert len(costs) == 1 and list(costs.values())[0] == \
        pytest.approx(statistics.median(walls), abs=0.1)
    lines = []
    c = dry_run("small", jobs=1, root=tmp_path / "fresh", log=lines.append,
                recorded=to)
    assert c["unknown"] == 0 and c["from_recorded"] == c["distinct"] == 2, lines
    assert c["estimate_s"] == pytest.approx(2 * list(costs.values())[0])
    assert "2 from the recorded paper-scale runs" in lines[-1]
    c = dry_run("small", jobs=1, root=tmp_path / "fresh", log=lines.append,
                recorded=tmp_path / "none")
    assert c["unknown"] == 2 and c["estimate_s"] == 0


def test_a_point_done_on_another_day_stays_done(swept, tmp_path):
    """A runs folder that has not run a point (another day's) does not
    undo the recorded run of it; one that ran it again replaces it."""
    root, _ = swept
    to = tmp_path / "rec"
    rec.record(root, to)
    other = tmp_path / "other"
    shutil.copytree(root, other, ignore=shutil.ignore_patterns("catalog", ".catalog*"))
    first = sorted((other / "by-id").iterdir())[0]
    shutil.rmtree(first)
    rebuild(other)
    assert (Catalog(other).points()["status"] == "missing").sum() == 1
    info = rec.record(other, to)
    assert info["experiments"]["small-paper"] == {"points": 2, "done": 2}
    assert _ids(to) == _ids(root)


def test_a_quick_only_folder_is_refused_and_nothing_is_written(tmp_path,
                                                                monkeypatch):
    import os
    from colorsim.orchestrate.sweep import run_sweep
    f = tmp_path / "experiments.toml"
    f.write_text(experiments_file(experiment("small", {"fig1": ["counting"]}, GRID,
                                             quick={"kernels": ["vanilla"]})))
    monkeypatch.setenv("COLORSIM_EXPERIMENTS", str(f))
    runs = tmp_path / "runs"
    with open(os.devnull, "w") as quiet:
        run_sweep("small", quick=True, root=runs, log=lambda *_: None,
                  progress_stream=quiet)
    assert list(Catalog(runs).points()["scale"]) == ["quick"]
    with pytest.raises(ConfigError, match="no paper-scale sweep points"):
        rec.record(runs, tmp_path / "rec")
    assert not (tmp_path / "rec").exists()


def test_a_failed_write_leaves_the_recorded_catalog_whole(swept, tmp_path,
                                                          monkeypatch):
    root, _ = swept
    to = tmp_path / "rec"
    rec.record(root, to)
    before = {p.name: p.read_bytes() for p in (to / "catalog").iterdir()}

    def broken(table, path):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(rec, "_write_parquet", broken)
    with pytest.raises(OSError):
        rec.record(root, to)
    assert {p.name: p.read_bytes() for p in (to / "catalog").iterdir()} == before
    assert [p.name for p in to.iterdir()] == ["catalog"]


def test_a_record_killed_between_its_renames_is_put_back(swept, tmp_path):
    root, _ = swept
    to = tmp_path / "rec"
    rec.record(root, to)
    before = {p.name: p.read_bytes() for p in (to / "catalog").iterdir()}
    (to / "catalog").rename(to / ".catalog.old4242")      # killed right there
    rec.record(root, to)
    assert {p.name: p.read_bytes() for p in (to / "catalog").iterdir()} == before
    assert [p.name for p in to.iterdir()] == ["catalog"]


def _text_cells(root):
    """Every text cell of a catalog's tables."""
    cells = []
    for name in ("points", "runs"):
        df = pd.read_parquet(root / "catalog" / f"{name}.parquet")
        for col in df.columns:
            if df[col].dtype == object or "str" in str(df[col].dtype):
                cells += [(name, col, v) for v in df[col].dropna()
                          if isinstance(v, str)]
    return cells


def test_record_takes_only_the_named_experiments(swept, tmp_path):
    root, _ = swept
    with pytest.raises(ConfigError, match="has no paper-scale points of fig9 "
                                          r"\(it has: small\)"):
        rec.record(root, tmp_path / "rec", experiments=["fig9"])
    assert not (tmp_path / "rec").exists()
    info = rec.record(root, tmp_path / "rec", experiments=["small"])
    assert set(info["experiments"]) == {"small-paper"} and info["skipped"] == []


def test_a_truncated_run_is_skipped_named_and_no_host_path_is_kept(
        swept, tmp_path, capsys):
    """A folder with a damaged run: the point is recorded as not done,
    without its run; the command names it and exits 1; no cell of the
    recorded tables holds a path of this machine."""
    from colorsim.cli import main as cli_main
    root, _ = swept
    other = tmp_path / "other"
    shutil.copytree(root, other, ignore=shutil.ignore_patterns("catalog", ".catalog*"))
    run = sorted((other / "by-id").iterdir())[0]
    counters = run / "counters.csv"
    counters.write_bytes(counters.read_bytes()[:40])        # cut short
    to = tmp_path / "rec"
    rc = cli_main(["catalog", "record", "small", "--runs", str(other),
                   "--to", str(to)])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "skipped 1 points that are not done" in err
    assert "small point" in err
    pts = Catalog(to).points("small", "paper")
    assert sorted(pts["status"]) == ["damaged", "done"]
    assert len(Catalog(to).table("runs")) == 1
    host = [c for c in _text_cells(to)
            if str(tmp_path) in c[2] or str(ROOT) in c[2]
            or (c[2].startswith("/") and c[1] != "workload_program")]
    assert host == []
    assert any("<runs>" in c[2] for c in _text_cells(to)), _text_cells(to)


def _pts(rows):
    base = {k: "x" for k in rec.KEY}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_merge_replaces_keeps_and_drops_by_the_grid():
    old = _pts([{"experiment": "a", "seed": 1, "point": 0, "status": "done", "run_id": "r1"},
                {"experiment": "a", "seed": 2, "point": 1, "status": "done", "run_id": "r2"},
                {"experiment": "a", "seed": 3, "point": 2, "status": "done", "run_id": "r3"},
                {"experiment": "a", "seed": 5, "point": 3, "status": "done", "run_id": "r5"},
                {"experiment": "b", "seed": 1, "point": 0, "status": "done", "run_id": "q1"}])
    new = _pts([{"experiment": "a", "seed": 1, "point": 0, "status": "missing", "run_id": "n1"},
                {"experiment": "a", "seed": 2, "point": 1, "status": "done", "run_id": "n2"},
                {"experiment": "a", "seed": 4, "point": 2, "status": "missing", "run_id": "n4"},
                {"experiment": "a", "seed": 5, "point": 3, "status": "missing", "run_id": "n5",
                 "args": "--accept,pipe"}])
    m = rec.merge_points(old, new)
    got = {(r.experiment, r.seed): (r.status, r.run_id, r.point) for r in m.itertuples()}
    assert got == {("a", 1): ("done", "r1", 0),      # kept: not run here
                   ("a", 2): ("done", "n2", 1),      # replaced: run again
                   ("a", 4): ("missing", "n4", 2),   # the grid's new point
                   ("a", 5): ("missing", "n5", 3),   # other settings: not that run
                   ("b", 1): ("done", "q1", 0)}      # not swept here
    # ("a", 3) is gone: the grid no longer holds it


def test_the_paper_scale_table_is_the_recorded_catalogs(monkeypatch):
    """docs/results.md's paper-scale block is what `shapes --runs recorded/paper`
    prints: generated from the recorded rows, never typed."""
    monkeypatch.delenv("COLORSIM_EXPERIMENTS", raising=False)   # the suite's
    from colorsim.report import shapes
    from colorsim.report.markdown import markers
    text = (ROOT / "docs" / "results.md").read_text()
    begin, end = markers("shapes-paper")
    inside = text[text.index(begin) + len(begin):text.index(end)]
    assert inside.strip() == shapes.block(Catalog(rec.PAPER)).strip()


def test_points_from_two_engine_builds_are_refused_unless_asked():
    """A figure's points come from one engine build: the recorded points of
    an experiment must not mix QEMU patch sets or plugin builds."""
    points = pd.DataFrame([{"experiment": "fig9", "status": "done", "run_id": r}
                           for r in ("a", "b", "c")]
                          + [{"experiment": "fig6", "status": "done", "run_id": "d"}])
    runs = pd.DataFrame([
        {"run_id": "a", "engine_version": "q1", "plugin_sha256": "x" * 64},
        {"run_id": "b", "engine_version": "q1", "plugin_sha256": "x" * 64},
        {"run_id": "c", "engine_version": "q1", "plugin_sha256": "y" * 64},
        {"run_id": "d", "engine_version": "q2", "plugin_sha256": "y" * 64}])
    mixed = rec.mixed_builds(points, runs, {"fig9", "fig6"})
    assert list(mixed) == ["fig9"] and len(mixed["fig9"]) == 2
    assert rec.mixed_builds(points, runs.assign(plugin_sha256="x"), {"fig9"}) == {}


def test_a_record_that_would_mix_builds_writes_nothing(swept, tmp_path, monkeypatch):
    """The refusal comes before anything is written, and --mix-builds
    records anyway."""
    root, _ = swept
    to = tmp_path / "rec"
    rec.record(root, to)
    before = _ids(to)
    seen = []
    monkeypatch.setattr(rec, "mixed_builds", lambda pts, runs, exps: (
        seen.append(set(exps)) or {"small": ["q1; plugin x", "q1; plugin y"]}))
    with pytest.raises(ConfigError, match="small's recorded points would come "
                       "from 2 engine builds"):
        rec.record(root, to)
    assert seen == [{"small"}] and _ids(to) == before
    rec.record(root, to, mix_builds=True)
    assert len(seen) == 1 and _ids(to) == before
