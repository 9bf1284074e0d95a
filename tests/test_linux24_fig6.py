"""Figure 6 on Linux 2.4 i386 beside the testbed and the paper
(colorsim/orchestrate/linux24fig6.py): which runs it is made of, the
testbed's side from the recorded catalog, how the table is written, and
that docs/linux24.md's block is what its recorded runs give (default run,
no Linux tree needed)."""

import os
import shutil
import subprocess
import sys

import pandas as pd

from colorsim import ROOT
from colorsim.describe.experiments import expand, load_experiments
from colorsim.orchestrate import linux24fig6


def test_its_runs_are_fig6s_largest_point_on_i386_with_client_cpus():
    runs = list(linux24fig6.specs())
    assert len(runs) == 6 * len(linux24fig6.SEEDS) * len(linux24fig6.ACCEPTS)
    paper = [p for p in expand(load_experiments()["fig6"])
             if p.tasks == linux24fig6.HTTPD and p.seed == 1]
    assert {p.args for p in paper} == {linux24fig6.ARGS}        # the same load
    assert {p.l2 for p in paper} == set(linux24fig6.L2S)
    assert {s.workload.args for *_, s in runs} == {linux24fig6.ARGS,
                                                   linux24fig6.ARGS.replace("fcntl", "none")}
    for accept, l2, kernel, seed, spec in runs:
        assert spec.workload.args.endswith(f"--accept,{accept}")
        assert spec.timing and spec.variant.is_i386 and spec.variant.clients
        assert spec.workload.client_cpus == 2 and spec.vcpus == 6
        assert spec.machine.name == "ppro4"
    names = [s.default_name() for *_, s in runs]
    assert len(set(names)) == len(runs)


def test_the_testbed_side_is_the_recorded_fig6_at_1024_httpd():
    df = linux24fig6.testbed_runs()
    assert set(df["kernel"]) == {"vanilla", "c32"} and set(df["tasks"]) == {1024}
    assert set(df["l2"]) == set(linux24fig6.L2S)
    assert df.groupby(["l2", "kernel"]).size().min() >= 3     # several seeds each


def test_the_table_sets_the_three_side_by_side(tmp_path):
    class Cat:
        root = tmp_path

        def table(self, name):
            rows = []
            for accept, l2, k, seed, spec in linux24fig6.specs():
                c32 = k.endswith("c32") and accept == "fcntl"
                rows.append({"run": spec.default_name(),
                             "throughput": 150.0 if c32 else 100.0,
                             "rqloop_l2_miss_ratio": 0.1 if c32 else 0.99,
                             "lock_held_pct": 90.0, "lock_hold_mean_us": 20.0,
                             "n_lock_acquisitions": 2048.0, "roi_requests": 1024.0,
                             "n_rq_len_mean": 1000.0 if accept == "fcntl" else 600.0,
                             "n_schedule_calls": 4096.0,
                             "roi_late": not k.endswith("c32") and l2 == "512KiB"
                             and accept == "fcntl"})
            return pd.DataFrame(rows)
    testbed = pd.DataFrame([{"l2": l2, "kernel": k, "seed": s,
                             "throughput": 100.0 * (1 + 0.1 * s * (k == "c32")),
                             "rqloop_l2_miss_ratio": 0.5, "lock_held_pct": 50.0,
                             "lock_hold_mean_us": 10.0, "n_lock_acquisitions": 3.0,
                             "roi_requests": 1.0, "n_rq_len_mean": 1023.0,
                             "n_schedule_calls": 2.0}
                            for l2 in linux24fig6.L2S for k in ("vanilla", "c32")
                            for s in (1, 2)])
    paper = {"fig6": {"improvement": {"256KiB": "little or none", "1MiB": 42.3}},
             "table2": {"l2": ["1MiB"], "vanilla": [99.5], "c32": [8.2]}}
    rs = linux24fig6.rows(Cat(), testbed, paper)
    text = linux24fig6.render(rs)
    assert "| fcntl (wake-all), 1 MiB | +50.0 % / +15.0 % [+10.0..+20.0] / +42.3 % | 100 / 150 " \
           "| 99.0 % / 10.0 %; 50.0 % / 50.0 %; 99.5 % / 8.2 % | 90 % / 90 %; 50 % / 50 % " \
           "| 2.0 / 2.0; 3.0 / 3.0 | 20.0 µs / 20.0 µs; 10.0 µs / 10.0 µs " \
           "| 1000 / 1000; 1023 / 1023 | 4.0 / 4.0; 2.0 / 2.0 |" in text, text
    assert "| fcntl (wake-all), 256 KiB | +50.0 % / +15.0 % [+10.0..+20.0] / little or none |" \
        in text
    assert "| fcntl (wake-all), 512 KiB | +50.0 % / +15.0 % [+10.0..+20.0] / - " \
           "| 100 (late) / 150 |" in text
    # the wake-one runs: their own gain, no testbed beside them
    assert "| none (wake-one), 1 MiB | +0.0 % / - / +42.3 % | 100 / 100 | 99.0 % / 99.0 %; " \
           "- / -; 99.5 % / 8.2 % |" in text, text
    assert "it is the run's tail" in text
    png = linux24fig6.draw(rs, tmp_path / "f.png")
    assert png.stat().st_size > 1000
    # each seed's pair against the queue its walks went over
    pts = linux24fig6.seed_points(Cat(), testbed)
    # Linux: L2 x seeds x accept; the testbed: L2 x its seeds
    assert len(pts) == 3 * len(linux24fig6.SEEDS) * 2 + 3 * 2
    fc = pts[pts["source"].str.contains("Linux") & pts["source"].str.contains("fcntl")]
    assert set(fc["gain"].round(6)) == {50.0} and set(fc["rq"]) == {1000.0}
    assert set(pts[pts["source"].str.contains("wake-one")]["c32_miss"]) == {99.0}
    tb = pts[pts["source"].str.startswith("testbed")]
    assert sorted(tb["gain"].round(6).unique()) == [10.0, 20.0]
    wide = linux24fig6.draw(rs, tmp_path / "g.png", pts)
    assert wide.stat().st_size > png.stat().st_size


def test_the_docs_block_is_the_recorded_runs(tmp_path):
    """docs/linux24.md's block is what the command computes from the runs
    it was made from, kept whole in recorded/linux24-fig6."""
    runs = tmp_path / "r"
    shutil.copytree(ROOT / "recorded" / "linux24-fig6", runs,
                    ignore=shutil.ignore_patterns("README.md"))
    assert sum((d / "config.json").is_file() for d in runs.iterdir()) == \
        len(list(linux24fig6.specs()))
    p = subprocess.run([sys.executable, "-m", "colorsim", "catalog", "rebuild", "--runs",
                        str(runs)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([sys.executable, "-m", "colorsim.maintain", "linux24-fig6", "--runs",
                        str(runs), "--check", str(ROOT / "docs" / "linux24.md")],
                       capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "LINUX24_SRC": ""})
    assert p.returncode == 0, p.stderr
