"""Sweeps: experiments as data, run identity, kill-and-resume, failures,
retries, the catalog.

The grids here are tiny (16 tasks, a 2-tick region) through a test
experiments file (COLORSIM_EXPERIMENTS), so every sweep takes seconds.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from colorsim.results.rundata import load_run
from colorsim import ROOT
from colorsim.results.catalog import TABLES, Catalog, find_run_dirs, rebuild
from colorsim.describe.experiments import load_experiments
from colorsim.run.identity import run_id, short_id
from colorsim.orchestrate.sweep import run_sweep

from test_integrity import emulators_using, wait_for

TINY = """
[defaults]
engine = "qemu"
warmup = 2
roi = 2
burst = 2000
timeout = 120
seeds = [1, 2]

[tiny]
title = "a tiny grid"
needs = ["counting"]
stand_in = "synthetic"
outputs.fig1 = {{ needs = ["counting"], what = "offsets" }}
outputs.fig6 = {{ needs = ["timing"], what = "throughput" }}
[tiny.grid]
machine = "ppro4"
l2 = ["512KiB"]
cpus = [2]
kernels = ["vanilla", "c8"]
workload = "web"
tasks = [16, 24]
[tiny.quick]
tasks = [16]
seeds = [1]
{extra}
"""

HUNG = """
[hung]
title = "runs that cannot finish in time"
needs = ["counting"]
outputs.x = {{ needs = ["counting"], what = "x" }}
[hung.grid]
machine = "ppro4"
l2 = ["512KiB"]
cpus = [2]
kernels = ["vanilla"]
workload = "synthetic"
tasks = [16]
seeds = [1]
roi = 100000
timeout = {timeout}
"""


@pytest.fixture
def exps(tmp_path, monkeypatch):
    def write(extra=""):
        f = tmp_path / "experiments.toml"
        f.write_text(TINY.format(extra=extra))
        monkeypatch.setenv("COLORSIM_EXPERIMENTS", str(f))
        return f
    return write


QUIET = dict(log=lambda *_: None, progress_stream=open(os.devnull, "w"))


def catalog_bytes(root: Path) -> dict:
    return {f.name: f.read_bytes() for f in sorted((root / "catalog").glob("*"))}


def test_paper_experiments_are_all_there_and_quick_keeps_the_shape():
    exps = load_experiments()
    outputs = {o for e in exps.values() for o in e.outputs}
    for want in ("fig1", "fig3", "fig6", "fig7", "fig8", "table2", "fig9",
                 "table4", "table5", "table6", "fig10", "table7", "table8"):
        assert want in outputs, want
    for e in exps.values():
        paper, quick = e.points(False), e.points(True)
        assert 0 < len(quick) <= len(paper), e.name
        for axis in ("l2", "kernel", "machine"):
            assert ({getattr(p, axis) for p in quick} ==
                    {getattr(p, axis) for p in paper}) or axis == "kernel", (e.name, axis)
        # several placement seeds at every point, at both scales
        assert len({p.seed for p in quick}) >= 2 and len({p.seed for p in paper}) >= 2
    # the paper's workloads run: no stand-ins, nothing lacking; the
    # experiments whose outputs need timing or the lockmeter run --timing
    beyond = {"eq3", "burst"}  # beyond the paper: the built-in workload on purpose
    assert beyond <= set(exps)
    for e in exps.values():
        for p in e.points(True) + e.points(False):
            assert p.runnable and not p.stand_in, (e.name, p.lacks)
            assert p.workload_run == p.workload in (
                ("synthetic",) if e.name in beyond else ("web", "chat")), e.name
            # every web experiment runs in modelled time (its operating
            # point needs it), the herd and the built-in workload's count
            assert p.timing == (e.name in ("fig1", "fig3", "fig6", "fig7",
                                           "fig8", "fig9", "fig10", "table2",
                                           "burst")), e.name
    # fig7's and table2's points are fig6's at its largest queue
    six = {(p.l2, p.kernel, p.seed) for p in exps["fig6"].points(True)}
    for name in ("fig7", "table2"):
        pts = exps[name].points(True)
        assert {(p.l2, p.kernel, p.seed) for p in pts} == six
        assert {p.spec().default_name() for p in pts} == \
            {p.spec().default_name() for p in exps["fig6"].points(True)}
    fig9 = exps["fig9"].points(True)
    assert {p.kernel for p in fig9} == {"vanilla", "c32", "mq", "mq-c32"}
    # web: tasks = httpd; chat: tasks = threads = rooms x users x 4
    assert all(p.args.startswith(f"--httpd,{p.tasks},") for p in fig9)
    fig10 = exps["fig10"].points(False)
    # the paper's 300 messages per user: fewer were not steady
    assert {p.args for p in fig10} == {"--rooms,30,--users,20,--messages,300"}
    # Figure 10 at 1-8 CPUs; the quick scale keeps the knee (vanilla peaks
    # at 4 CPUs in the paper, c32 at 6), so it has CPU counts past 4
    assert {p.cpus for p in fig10} == set(range(1, 9))
    knee = {p.cpus for p in exps["fig10"].points(True)}
    assert {1, 4, 8} <= knee and knee & {5, 6, 7}


def test_identity_covers_what_determines_a_result(exps, tmp_path):
    exps()
    root = tmp_path / "runs"
    c = run_sweep("tiny", quick=True, jobs=2, root=root, **QUIET)
    assert c["done"] == 2 and c["lacks"] == 0 and c["failed"] == 0
    for d in find_run_dirs(root)[0]:
        cfg = json.loads((d / "config.json").read_text())
        assert d.name == short_id(run_id(cfg))
        for key, new in (("workload", {**cfg["workload"], "seed": 99}),
                         ("kernel_sha256", "0" * 64),
                         ("plugin_sha256", "1" * 64),
                         ("engine_version", "qemu 99"),
                         ("machine", {**cfg["machine"], "name": "other"})):
            assert run_id({**cfg, key: new}) != run_id(cfg), key
        # what does not determine the result does not change the identity
        assert run_id({**cfg, "wall_s": 1, "host": "x", "started": "y"}) == run_id(cfg)
    # the same sweep again runs nothing
    again = run_sweep("tiny", quick=True, jobs=2, root=root, **QUIET)
    assert again["ran"] == 0 and again["skipped"] == 2 and again["done"] == 2


def _partial_free(root: Path):
    """Every run directory named like a run is complete and verified."""
    for d in (root / "by-id").iterdir():
        if d.name.startswith(".") or d.name.endswith(".failed"):
            continue
        load_run(d)


@pytest.mark.parametrize("when", ["planning", "mid-sweep"])
def test_killed_sweep_resumes_to_the_same_catalog(exps, tmp_path, when):
    exps()
    ref = tmp_path / "ref"
    c = run_sweep("tiny", jobs=2, root=ref, **QUIET)
    assert c["done"] == 8 and c["failed"] == c["missing"] == 0
    want = catalog_bytes(ref)
    assert set(want) == {f"{t}.parquet" for t in TABLES}

    root = tmp_path / "killed"
    p = subprocess.Popen([sys.executable, "-m", "colorsim", "sweep", "tiny",
                          "--jobs", "2", "--runs", str(root)], cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if when == "planning":
        time.sleep(0.4)
    else:
        wait_for(lambda: len([d for d in (root / "by-id").glob("*")
                              if not d.name.startswith(".")]) >= 3
                 if (root / "by-id").is_dir() else False, 60, "3 runs")
    p.send_signal(signal.SIGKILL)
    p.wait()
    # nothing outlives the sweep, and nothing partial looks complete
    wait_for(lambda: not emulators_using(root), 10, "emulators to die")
    if (root / "by-id").is_dir():
        _partial_free(root)
    done_before = len(find_run_dirs(root)[0])
    assert done_before < 8 or when == "mid-sweep"
    r = subprocess.run([sys.executable, "-m", "colorsim", "sweep", "tiny",
                        "--jobs", "2", "--runs", str(root)], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"{8 - done_before} ran now, {done_before} already complete" in r.stdout
    assert f"{8 - done_before} done, 0 failed, 0 remaining" in r.stderr  # the bar
    got = catalog_bytes(root)
    assert got == want, [k for k in want if got.get(k) != want[k]]
    assert not list((root / "by-id").glob(".*partial"))


def test_failures_are_recorded_and_never_stop_the_others(exps, tmp_path):
    exps(HUNG.format(timeout=1))
    root = tmp_path / "runs"
    lines = []
    c = run_sweep("all", quick=True, jobs=2, root=root, log=lines.append,
                  progress_stream=open(os.devnull, "w"))
    assert c["done"] == 2 and c["failed"] == 1 and c["missing"] == 0
    assert c["retried"] == 0                      # a timeout is not retried
    (name, kind, reason), = c["failures"]
    assert kind == "timeout" and "no result after 1 s" in reason
    failed = root / "by-id" / f"{name}.failed"
    assert "console tail" in (failed / "failure.txt").read_text()
    assert any("hung: 1 points: 0 done, 1 failed" in l for l in lines)
    pts = Catalog(root).points()
    row = pts[pts["experiment"] == "hung"].iloc[0]
    assert row["status"] == "failed" and "no result after" in row["reason"]
    assert set(pts[pts["experiment"] == "tiny"]["status"]) == {"done"}
    # through the command line: status 1 and the count of failed points
    r = subprocess.run([sys.executable, "-m", "colorsim", "sweep", "all",
                        "--quick", "--runs", str(root)], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 1 and "1 points failed" in r.stdout


def test_a_crashed_run_is_retried(exps, tmp_path):
    exps(HUNG.format(timeout=120).replace("roi = 100000", "roi = 400"))
    root = tmp_path / "runs"
    killed = []

    def killer():
        wait_for(lambda: emulators_using(root / "by-id"), 60, "an emulator")
        pid = emulators_using(root / "by-id")[0]
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    import threading
    t = threading.Thread(target=killer)
    t.start()
    c = run_sweep("hung", quick=True, jobs=1, root=root, **QUIET)
    t.join()
    assert killed and c["retried"] == 1 and c["done"] == 1 and c["failed"] == 0


def test_catalog_rebuilds_from_run_directories_alone(exps, tmp_path):
    exps()
    root = tmp_path / "runs"
    run_sweep("tiny", quick=True, jobs=2, root=root, **QUIET)
    before = catalog_bytes(root)
    import shutil
    shutil.rmtree(root / "catalog")
    rebuild(root)
    assert catalog_bytes(root) == before
    cat = Catalog(root)
    runs = cat.runs()
    assert len(runs) == 2 and runs["run_id"].is_unique
    for col in ("peak_offset", "colored_lines_sum", "rqloop_l2_miss_ratio",
                "schedule_calls", "colored_lines_sum_per_schedule",
                "n_insts", "source_commit", "source_dirty", "kernel_sha256"):
        assert col in runs.columns and runs[col].notna().all(), col
    r = runs.iloc[0]
    assert (cat.offsets(r.run_id)["count"].sum() >= r.total > 0)
    assert set(cat.counters(r.run_id)["cpu"]) >= {0, 1}
    assert (cat.stats(r.run_id)["dump"] == 0).any()
    assert isinstance(cat.runs(kernel="c8"), pd.DataFrame)
    assert len(cat.runs(kernel="c8")) == 1 and len(cat.runs(l2_size="512KiB")) == 2


GEM5_SHARED = ROOT / "recorded" / "gem5"


@pytest.mark.skipif(not GEM5_SHARED.is_dir(), reason="no recorded/gem5 recordings")
def test_catalog_parses_every_gem5_dump(tmp_path):
    import shutil
    src = sorted(d for d in GEM5_SHARED.iterdir() if (d / "config.json").is_file())[0]
    root = tmp_path / "runs"
    shutil.copytree(src, root / "gem5" / src.name)
    rebuild(root)
    cat = Catalog(root)
    row = cat.runs().iloc[0]
    text = (src / "gem5" / "stats.txt").read_text()
    blocks = text.count("Begin Simulation Statistics")
    assert blocks >= 2 and row["dumps"] == blocks
    st = cat.stats(row["run_id"])
    assert sorted(st["dump"].unique()) == list(range(blocks))
    assert row["schedule_calls"] > 0 and row["engine"] == "gem5"
    # the coloring's way bits as config.json records them (eq. (1)'s b)
    cfg = json.loads((src / "config.json").read_text())
    assert row["way_bits"] == cfg["variant"]["way_bits"] > 0


def test_dask_executor_on_a_real_local_cluster(exps, tmp_path):
    """A LocalCluster with a real scheduler and worker processes."""
    import dask.distributed  # noqa: F401  (scripts/setup.sh installs it)
    exps()
    root = tmp_path / "runs"
    c = run_sweep("tiny", quick=True, jobs=2, executor="dask", root=root, **QUIET)
    assert c["done"] == 2 and c["failed"] == 0 and c["ran"] == 2
    # the runs were started by the cluster's worker processes, not by us
    assert c["executor_pids"] and os.getpid() not in c["executor_pids"]
    ref = tmp_path / "ref"
    run_sweep("tiny", quick=True, jobs=2, root=ref, **QUIET)
    assert catalog_bytes(root) == catalog_bytes(ref)     # same runs, same catalog


def test_dry_run_says_what_would_run_and_runs_nothing(exps, tmp_path):
    from colorsim.orchestrate.sweep import dry_run
    exps()
    root = tmp_path / "runs"
    lines = []
    c = dry_run("tiny", quick=True, jobs=2, root=root, log=lines.append)
    assert c["done"] == 0 and c["run"] + c["unbuilt"] == 2 and c["unknown"] == 2
    assert not root.exists(), "a dry run writes nothing"
    assert any("cost unknown" in l for l in lines), lines
    run_sweep("tiny", quick=True, jobs=2, root=root, **QUIET)
    lines = []
    c = dry_run("tiny", quick=False, jobs=2, root=root, log=lines.append)
    # the quick points are the paper grid's 16-task, seed-1 points: done;
    # the rest cost what the runs of their class cost
    assert c["done"] == 2 and c["run"] == 6 and c["unknown"] == 4, lines
    assert c["estimate_s"] > 0


def test_sweep_list_and_dry_run_on_the_command_line(exps, tmp_path):
    exps()
    cli = [sys.executable, "-m", "colorsim", "sweep"]
    p = subprocess.run(cli + ["--list"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("tiny ")
    assert "a tiny grid" in p.stdout and "[fig1, fig6]" in p.stdout
    p = subprocess.run(cli + ["tiny", "--quick", "--dry-run", "--runs",
                              str(tmp_path / "r")], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "tiny (quick): 2 points" in p.stdout
    assert not (tmp_path / "r").exists()
    p = subprocess.run(cli, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--list" in p.stderr


def test_only_runs_the_points_it_names_and_the_rest_stay_to_run(exps, tmp_path):
    from colorsim.orchestrate.sweep import dry_run, parse_only
    exps()
    root = tmp_path / "runs"
    lines = []
    c = run_sweep("tiny", jobs=2, root=root, log=lines.append,
                  progress_stream=open(os.devnull, "w"),
                  only=parse_only(["kernels=c8", "seeds=1"]))
    # the paper grid: 2 kernels x 2 task counts x 2 seeds; c8 at seed 1 is 2
    assert c["ran"] == 2 and c["done"] == 2, lines
    assert c["left_out"] == 6 and c["missing"] == 0 and c["failed"] == 0
    assert any("6 left out by --only" in l for l in lines), lines
    ran = [json.loads((d / "config.json").read_text())
           for d in (root / "by-id").iterdir()]
    assert sorted((r["variant"]["colors"], r["workload"]["seed"]) for r in ran) \
        == [(8, 1), (8, 1)]
    # the sweep's record still holds every point; the rest are what is left
    rec = json.loads((root / "sweeps" / "tiny-paper.json").read_text())
    assert len(rec["points"]) == 8
    c = dry_run("tiny", jobs=2, root=root, log=lambda *_: None)
    assert c["done"] == 2 and c["run"] == 6


@pytest.mark.parametrize("bad, words", [
    (["colour=3"], "AXIS one of"),
    (["kernels"], "AXIS=VALUE"),
    (["kernels="], "AXIS=VALUE"),
    (["kernels=c9"], "no point of tiny has kernel c9; its values: c8, vanilla"),
    (["tasks=16,17"], "has tasks 17"),
])
def test_only_refuses_what_selects_nothing_before_anything_runs(exps, tmp_path,
                                                                bad, words):
    exps()
    cli = [sys.executable, "-m", "colorsim", "sweep", "tiny", "--runs",
           str(tmp_path / "r")]
    for b in bad:
        cli += ["--only", b]
    p = subprocess.run(cli, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and words in p.stderr, p.stderr
    assert not (tmp_path / "r").exists()


def test_a_sweep_builds_only_the_kernels_its_selected_points_use(exps, tmp_path,
                                                                 monkeypatch):
    """--only kernels=c8 builds c8, never vanilla (every executor runs the
    points plan() built); the points left out get no id unless built."""
    from colorsim.describe.experiments import load_experiments, select
    from colorsim.orchestrate import sweep
    exps()
    built = []
    monkeypatch.setattr(sweep, "_build_all",
                        lambda specs, progress: built.extend(specs))
    monkeypatch.setattr(sweep, "_built", lambda s: False)     # nothing made yet
    tasks, records = sweep.plan(select(load_experiments(), "tiny"), False,
                                tmp_path, progress=lambda *_: None,
                                only=sweep.parse_only(["kernels=c8"]))
    assert {s.variant.name for s in built} == {"c8"}
    pts = records["tiny"]
    assert sorted(bool(r.get("unbuilt")) for r in pts) == [False] * 4 + [True] * 4
    assert all(r["kernel"] == "vanilla" for r in pts if r.get("unbuilt"))


def test_the_dry_runs_counts_agree(exps, tmp_path):
    """Per experiment: done + would run + missing + not runnable + left out
    is every point; the total counts distinct runs, and says how many points
    they are when experiments share them."""
    from colorsim.orchestrate.sweep import dry_run, parse_only
    exps()
    lines = []
    c = dry_run("tiny", jobs=1, root=tmp_path / "r", log=lines.append,
                only=parse_only(["kernels=c8"]))
    assert (c["done"] + c["run"] + c["unbuilt"] + c["missing"] + c["lacks"]
            + c["left_out"]) == 8, lines
    assert c["left_out"] == 4 and c["run"] + c["unbuilt"] == 4, lines
    assert c["distinct"] == c["points_to_run"] == 4
    assert lines[-1].startswith("would run 4 distinct runs with 1 job:"), lines


def test_a_sweep_after_a_rebuild_counts_no_earlier_builds_run(exps, tmp_path, monkeypatch):
    """A point's run id hashes its builds: with another plugin every point
    of the grid gets a new id, so a sweep's points (and a figure drawn from
    one runs folder) never mix builds; the earlier build's runs stay in
    by-id, no point's."""
    from colorsim.describe.experiments import load_experiments, select
    from colorsim.orchestrate import sweep
    from colorsim.run import runner
    exps()
    monkeypatch.setattr(sweep, "_build_all", lambda specs, progress: None)
    monkeypatch.setattr(sweep, "_built", lambda s: True)
    ids = []
    for plugin in ("a" * 64, "b" * 64):
        monkeypatch.setattr(runner, "identity",
                            lambda s, p=plugin: {"kernel_sha256": s.variant.name,
                                                 "plugin_sha256": p, "engine_version": "x"})
        _, records = sweep.plan(select(load_experiments(), "tiny"), False, tmp_path,
                                progress=lambda *_: None)
        ids.append([r["run_id"] for r in records["tiny"]])
    assert all(ids[0]) and all(ids[1]) and len(ids[0]) == 8
    assert not set(ids[0]) & set(ids[1])
