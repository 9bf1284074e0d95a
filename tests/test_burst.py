"""The built-in workload's burst length as a sweep axis (configs/
experiments.toml [burst]) and the table that shows how Figure 6's and
Table 6's shapes change across it (colorsim/report/burst.py)."""

import pandas as pd
import pytest

from colorsim.describe.experiments import load_experiments
from colorsim.errors import ConfigError
from colorsim.report.burst import burst_rows
from colorsim.report.common import paper_results

TINY = """
[tiny]
title = "burst axis"
needs = ["counting", "synthetic"]
outputs.burst = { needs = ["timing"], what = "x" }
[tiny.grid]
machine = "ppro4"
l2 = ["512KiB"]
cpus = [2]
kernels = ["vanilla"]
workload = "WORKLOAD"
tasks = [TASKS]
seeds = [1]
burst = [300, 5000]
"""


def _tiny(workload, tasks):
    return TINY.replace("WORKLOAD", workload).replace("TASKS", str(tasks))


def _load(tmp_path, text):
    f = tmp_path / "experiments.toml"
    f.write_text(text)
    return load_experiments(f)


def test_a_list_of_bursts_is_an_axis_of_runs(tmp_path):
    exp = _load(tmp_path, _tiny("synthetic", 64))["tiny"]
    pts = exp.points()
    assert [p.burst for p in pts] == [300, 5000]
    # each point runs its own burst length: two runs, two names
    specs = [p.spec() for p in pts]
    assert [s.workload.burst for s in specs] == [300, 5000]
    assert specs[0].default_name() != specs[1].default_name()


def test_the_shipped_burst_experiment_keeps_two_bursts_at_quick_scale():
    exp = load_experiments()["burst"]
    for quick in (False, True):
        pts = exp.points(quick)
        assert len({p.burst for p in pts}) >= 2
        assert {p.workload for p in pts} == {"synthetic"}
        assert {p.kernel for p in pts} == {"vanilla", "c32"}
        assert len({p.l2 for p in pts}) >= 2 and len({p.cpus for p in pts}) >= 2


@pytest.mark.parametrize("bad,msg", [
    ("burst = [300, 300]", "distinct"),
    ("burst = [300, 0]", "positive integer"),
    ("burst = []", "distinct"),
])
def test_bad_burst_lists_are_one_line(tmp_path, bad, msg):
    text = _tiny("synthetic", 64).replace(
        "burst = [300, 5000]", bad)
    with pytest.raises(ConfigError, match=msg):
        _load(tmp_path, text)


def test_a_burst_list_for_a_user_program_is_refused(tmp_path):
    # a user program takes no burst: two bursts would be two names for one run
    with pytest.raises(ConfigError, match="synthetic workload only"):
        _load(tmp_path, _tiny("web", 16))


def _runs():
    rows = []
    for b, c32_gain in ((500, 0.10), (8000, 0.01)):
        for l2 in (256 * 1024, 1024 * 1024):
            for cpus in (2, 4):
                for seed in (1, 2):
                    for k in ("vanilla", "c32"):
                        base = 100.0 * cpus / b
                        col = k == "c32"
                        rows.append({
                            "burst": b, "l2_size": l2, "cpus": cpus, "seed": seed,
                            "kernel": k,
                            "throughput": base * (1 + c32_gain * (l2 > 256 * 1024)
                                                  if col else 1),
                            "sched_share_pct": 40.0 if b == 500 else 5.0,
                            "lock_held_pct": 99.0 if b == 500 else 20.0,
                            "lock_contention_pct": (10.0 * cpus if b == 500 else cpus)
                                                   / (2 if col else 1),
                            "lock_hold_mean_us": 40.0 if not col else 12.0})
    return pd.DataFrame(rows)


def test_the_burst_table_has_a_row_per_burst_and_the_papers_row():
    t = burst_rows(_runs(), paper_results()).set_index("burst")
    assert list(t.index) == ["500", "8000", "paper (web)"]
    # Figure 6's shape: the gain per L2 size, at the most CPUs
    assert t.loc["500", "c32 gain % L2 1MiB"] == "10.0"
    assert t.loc["500", "c32 gain % L2 256KiB"] == "0.0"
    assert t.loc["8000", "c32 gain % L2 1MiB"] == "1.0"
    # Table 6's shape: contention per CPU count, vanilla / c32
    assert t.loc["500", "contention % 2 CPU v / c32"] == "20.0 / 10.0"
    assert t.loc["8000", "contention % 4 CPU v / c32"] == "4.0 / 2.0"
    assert t.loc["500", "hold mean µs 4 CPU v / c32"] == "40.0 / 12.0"
    assert t.loc["500", "schedule() % (vanilla, 4 CPU)"] == "40.0"
    # the paper's numbers in the same cells
    assert t.loc["paper (web)", "c32 gain % L2 1MiB"] == "42.3"
    assert t.loc["paper (web)", "contention % 2 CPU v / c32"] == "9.2 / 2.3"
