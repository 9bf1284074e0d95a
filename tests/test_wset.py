"""The web server's working set per request (colorsim working-set): the
bus monitor's working-set windows, one per connection (web --wset 1),
count the distinct lines of each kind; the table in workloads/README.md is
what the runs give, and Apache's per-request work touches more user lines
and runs more user instructions than the system calls alone."""

import subprocess
import sys

from colorsim import ROOT
from tests.test_cache_model import needs_qemu


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "colorsim", *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)


def _docs(*args):
    """The maintainer's command line (it writes and checks the docs' tables)."""
    return subprocess.run([sys.executable, "-m", "colorsim.maintain", *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)


@needs_qemu
def test_readme_working_set_table_is_what_the_runs_give(tmp_path):
    p = _docs("working-set", "--run", "--out", tmp_path, "--check",
             ROOT / "workloads" / "README.md")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


@needs_qemu
def test_apache_work_has_a_larger_user_working_set(tmp_path):
    from colorsim.orchestrate import wset
    got = dict(wset.kernel_rows(wset.ROWS, wset.spec_for, wset.summary, tmp_path,
                                True, False, None, (wset.KERNEL,)))
    a, m = got["apache"][wset.KERNEL], got["minimal"][wset.KERNEL]
    assert a["windows"] == m["windows"] == wset.REQUESTS // 2
    assert a["user_data"] > m["user_data"] > 0
    assert a["user_code"] > m["user_code"] > 0
    assert a["user_insts"] > 2 * m["user_insts"]
    # the same requests: the kernel's data (files, packets) about the same
    assert abs(a["kernel_data"] - m["kernel_data"]) < 0.2 * m["kernel_data"]
    assert a["left_out"] == m["left_out"] == 0
