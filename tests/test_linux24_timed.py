"""Linux 2.4 in modelled time beside the testbed (colorsim/orchestrate/
linux24timed.py): which runs the table is made of, how it is written, and
that docs/linux24.md's block is what its recorded runs give (default run,
no Linux tree needed) and what fresh runs give (slow, requires_linux24)."""

import shutil
import subprocess
import sys

import pandas as pd
import pytest

from colorsim import ROOT
from colorsim.orchestrate import linux24timed


def test_its_runs_are_timed_pairs_with_the_clients_on_the_measured_cpus_or_their_own():
    runs = list(linux24timed.specs())
    assert len(runs) == len(linux24timed.LOADS) * len(linux24timed.FAMILIES) * 2
    off = [s for load, *_, s in runs if "of their own" in load]
    assert len(off) == 6 and all(s.workload.client_cpus == 1 and s.vcpus == 5 for s in off)
    assert {s.variant.clients for s in off if s.variant.name.startswith("linux24")} == {True}
    for load, fam, kernel, spec in runs:
        assert spec.timing and spec.workload.client_cpus == (spec in off)
        assert spec.machine.name == "ppro4" and spec.machine.caches.l2.size == 512 * 1024
        assert kernel.endswith(("vanilla", "c32"))
    names = [s.default_name() for *_, s in runs]
    assert len(set(names)) == len(names)
    assert {s.variant.name for *_, s in runs} >= {"linux24-i386-c32", "linux24-vanilla", "c32"}


def _row(thr, miss, cont, hold, share=None, spin=None):
    return pd.Series({"throughput": thr, "rqloop_l2_miss_ratio": miss,
                      "lock_contention": cont, "lock_hold_mean_us": hold,
                      "sched_share_pct": share, "lock_spin_pct": spin})


def test_the_table_gives_each_pair_and_c32s_gain():
    text = linux24timed.render([
        {"load": "web", "family": "testbed", "vanilla": _row(1000.0, 0.99, 0.5, 12.3, 20.0, 5.5),
         "c32": _row(1250.0, 0.125, 0.25, 4.0)},
        {"load": "Chat", "family": "Linux 2.4.37 i386", "vanilla": _row(200.0, None, 0.1, 1.0),
         "c32": _row(190.0, 0.5, 0.1, 1.0)}])
    assert "| web | testbed | 1000 / 1250 | +25.0 % | 99.0 % / 12.5 % | 50 % / 25 % | " \
           "12.3 µs / 4.0 µs | 20.0 % / 5.5 % |" in text, text
    assert "| Chat | Linux 2.4.37 i386 | 200 / 190 | -5.0 % | - / 50.0 % |" in text
    assert "- / - |" in text          # no scheduler shares given


def _docs(*args):
    return subprocess.run([sys.executable, "-m", "colorsim.maintain", *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT,
                          env={**__import__("os").environ, "LINUX24_SRC": ""})


def test_the_docs_block_is_the_recorded_runs(tmp_path):
    """docs/linux24.md's block is what the command computes from the runs
    it was made from, kept whole in recorded/linux24-timed: a block no run
    gives fails without a Linux tree."""
    runs = tmp_path / "r"
    shutil.copytree(ROOT / "recorded" / "linux24-timed", runs,
                    ignore=shutil.ignore_patterns("README.md"))
    assert sum((d / "config.json").is_file() for d in runs.iterdir()) == len(list(linux24timed.specs()))
    p = subprocess.run([sys.executable, "-m", "colorsim", "catalog", "rebuild", "--runs",
                        str(runs)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    p = _docs("linux24-timed", "--runs", runs, "--check", ROOT / "docs" / "linux24.md")
    assert p.returncode == 0, p.stderr


def test_without_runs_it_says_how_to_make_them(tmp_path):
    p = _docs("linux24-timed", "--runs", tmp_path / "none")
    assert p.returncode != 0 and "linux24-timed --run" in p.stderr


@pytest.mark.slow
@pytest.mark.requires_linux24
def test_the_docs_block_is_what_fresh_runs_give(tmp_path):
    import os
    p = subprocess.run([sys.executable, "-m", "colorsim.maintain", "linux24-timed", "--run",
                        "--runs", str(tmp_path / "r"), "--check",
                        str(ROOT / "docs" / "linux24.md")],
                       capture_output=True, text=True, cwd=ROOT, env=os.environ.copy())
    assert p.returncode == 0, p.stderr[-2000:]


def test_a_web_region_that_began_past_its_window_is_marked_late(tmp_path):
    """web's controller marks the region when it wakes: a region whose
    first request came after the asked window is the run's tail, and the
    table says so."""
    from colorsim.results import runrows
    console = tmp_path / "console.log"
    cfg = {"workload": {"program": "/bin/web", "args": "--httpd,256,--clients,64"}}
    asked = "web: 256 httpd, 64 clients x 4 requests, seed 1; measure requests 64..192\n"
    for roi, late in (("completed 200..256", True), ("completed 67..197", False)):
        console.write_text(asked + f"web: roi 56 requests ({roi}) in 0.6 s\n")
        out = runrows.timing_columns(cfg, None, console, None)
        assert out["roi_late"] is late and out["roi_first_request"] == int(roi[10:13].strip("."))
    row = _row(100.0, 0.9, 0.5, 10.0)
    text = linux24timed.render([{"load": "web", "family": "testbed",
                                 "vanilla": pd.concat([row, pd.Series({"roi_late": True})]),
                                 "c32": row}])
    assert "| 100 (late) / 100 |" in text and "it is the run's tail" in text
    assert "(late)" not in linux24timed.render([{"load": "web", "family": "testbed",
                                                 "vanilla": row, "c32": row}])
