"""Where Linux 2.4's httpd wait at Figure 6's point, beside the testbed's
(colorsim/orchestrate/linux24waits.py): which runs it is made of, how the
table adds up, and that docs/linux24.md's block is what its recorded runs
give (default run, no Linux tree needed)."""

import os
import shutil
import subprocess
import sys

import pandas as pd

from colorsim import ROOT
from colorsim.orchestrate import linux24fig6, linux24waits


def test_its_runs_are_linux24_fig6s_at_one_l2_and_seed():
    runs = list(linux24waits.specs())
    fig6 = {s.default_name() for *_, s in linux24fig6.specs()}
    assert len(runs) == len(linux24fig6.ACCEPTS) * len(linux24fig6.KERNELS)
    assert {s.default_name() for *_, s in runs} <= fig6     # the same runs, not new ones
    for accept, kernel, spec in runs:
        assert spec.machine.caches.l2.size == 512 * 1024 and spec.workload.seed == linux24waits.SEED
        assert spec.workload.args.endswith(f"--accept,{accept}")
    assert {a for a, *_ in runs} == set(linux24fig6.ACCEPTS)


def _states(busy: float, herd: float) -> dict:
    return {"n_wait_running_mean": busy, "n_wait_runnable_mean": herd,
            "n_wait_lock_mean": 1000.0 - herd, "n_wait_accept_mean": 1.0,
            "n_wait_recv_accepted_mean": 2.0, "n_wait_tasks_mean": busy + 1003.0}


def test_the_table_gives_each_runs_states_and_the_testbeds_seed_mean(tmp_path):
    class Cat:
        root = tmp_path

        def table(self, name):
            return pd.DataFrame([{"run": s.default_name(), "throughput": 100.0,
                                  "n_rq_len_mean": 600.0, "n_counter_recalcs": 3.0,
                                  **_states(4.0, 500.0 if a == "fcntl" else 900.0)}
                                 for a, k, s in linux24waits.specs()])
    testbed = pd.DataFrame([{"l2": l2, "kernel": k, "seed": s, "throughput": 10.0 * s,
                             "n_rq_len_mean": 1023.0, "n_counter_recalcs": 0.0,
                             **_states(4.0, 1000.0 - s)}
                            for l2 in linux24fig6.L2S for k in ("vanilla", "c32")
                            for s in (1, 2)])
    rs = linux24waits.rows(Cat(), testbed)
    assert len(rs) == len(list(linux24waits.specs())) + 2
    text = linux24waits.render(rs)
    # running, runnable, lock, accept, reading; the queue, recalcs, rate
    assert "| Linux 2.4.37 i386, fcntl (wake-all), vanilla | 1007 | 4.0 | 500.0 | 500.0 | " \
           "1.0 | 2.0 | - | - | - | - | - | 600 | 3 | 100 |" in text, text
    assert "| Linux 2.4.37 i386, none (wake-one), c32 | 1007 | 4.0 | 900.0 | 100.0 |" in text
    # the testbed's seeds averaged, at the table's L2 only
    assert "| testbed (2 seeds), fcntl (wake-all), c32 | 1007 | 4.0 | 998.5 | 1.5 | " \
           "1.0 | 2.0 |" in text and text.rstrip().endswith("\"Where tasks wait\").")
    png = linux24waits.draw(rs, tmp_path / "w.png")
    assert png.stat().st_size > 1000


def test_the_docs_block_is_the_recorded_runs(tmp_path):
    """docs/linux24.md's block is what the command computes from the runs
    it was made from: linux24-fig6's, kept whole in recorded/linux24-fig6."""
    runs = tmp_path / "r"
    shutil.copytree(ROOT / "recorded" / "linux24-fig6", runs,
                    ignore=shutil.ignore_patterns("README.md"))
    names = {d.name for d in runs.iterdir()}
    assert {s.default_name() for *_, s in linux24waits.specs()} <= names
    p = subprocess.run([sys.executable, "-m", "colorsim", "catalog", "rebuild", "--runs",
                        str(runs)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([sys.executable, "-m", "colorsim.maintain", "linux24-waits", "--runs",
                        str(runs), "--check", str(ROOT / "docs" / "linux24.md")],
                       capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "LINUX24_SRC": ""})
    assert p.returncode == 0, p.stderr
