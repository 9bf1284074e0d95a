"""The run-queue-length report: the kernel's histogram of nr_running at
each schedule() in the region (kernels/kernel/rqstat.c), parsed into
counters.csv by the collect step (colorsim/console.py)."""

import json
import re

import pytest

from colorsim.cli import main as cli_main
from colorsim.run.console import parse_roi
from tests.test_userproc import built  # noqa: F401

LINE = ("roi: begin at jiffies 24, nr_running 6\n"
        "roi: end at jiffies 74: schedules 734 switches 731 recalcs 5 nr_running 10\n"
        "rq: samples 734 sum 5496 max 13 hist 0:0 1:0 2:0 3-4:30 5-8:504 9-16:200 "
        "17-32:0 4097+:0\n")


def test_the_rq_line_becomes_counters():
    roi = parse_roi(LINE)
    assert roi["rq_samples"] == 734 and roi["rq_len_sum"] == 5496
    assert roi["rq_len_max"] == 13 and roi["rq_len_mean"] == pytest.approx(7.488)
    assert roi["rq_len_3_4"] == 30 and roi["rq_len_5_8"] == 504
    assert roi["rq_len_4097_up"] == 0
    # an rq line before the region's end is not the region's
    assert "rq_samples" not in parse_roi(LINE.split("\n", 2)[2] + LINE.rsplit("\n", 2)[0])


MARKED = ("roi: begin at jiffies 100, nr_running 6\n"
          "roi: mark at jiffies 110: schedules 100 switches 99 recalcs 0 nr_running 9 "
          "cycles 1000\n"
          "rq: mark samples 100 sum 1000 max 12\n"
          "web: mark 1 of 2: 50 requests in 0.100000 s\n"
          "roi: mark at jiffies 130: schedules 400 switches 399 recalcs 2 nr_running 9 "
          "cycles 3000\n"
          "rq: mark samples 400 sum 7000 max 30\n"
          "web: mark 2 of 2: 100 requests in 0.300000 s\n"
          "roi: end at jiffies 140: schedules 500 switches 498 recalcs 2 nr_running 9 "
          "cycles 5000\n"
          "rq: samples 500 sum 8000 max 30 hist 0:0 1:0 2:0 3-4:0 5-8:0 9-16:500\n"
          "web: roi 150 requests (completed 10..160) in 0.400000 s\n")


def test_the_regions_marks_become_each_quarters_least_and_most():
    """Three parts of 50 requests: queue means 10, 20, 10; schedule() per
    request 2, 6, 2; 1000, 2000 and 2000 modelled cycles, so rates 1.67,
    0.83 and 0.83 of the region's 150 per 5000; one part recalculated."""
    roi = parse_roi(MARKED)
    assert roi["window_quarters"] == 3 and roi["quarters_recalculated"] == 1
    assert (roi["quarter_rq_mean_lo"], roi["quarter_rq_mean_hi"]) == (10, 20)
    assert (roi["quarter_sched_per_request_lo"], roi["quarter_sched_per_request_hi"]) == (2, 6)
    assert (roi["quarter_rate_lo"], roi["quarter_rate_hi"]) == (0.833, 1.667)
    assert roi["rq_len_mean"] == 16       # the region's own, as before
    # a counted run keeps no cycles: the program's clock (0.1, 0.2, 0.1 s)
    counted = parse_roi(re.sub(r" cycles \d+", " cycles 0", MARKED))
    assert (counted["quarter_rate_lo"], counted["quarter_rate_hi"]) == (0.667, 1.333)
    # Linux 2.4's web program prints the kernel's counts with no cycles at
    # all (workloads/include/m5roi.h): the same quarters, the program's clock
    linux24 = parse_roi(re.sub(r" cycles \d+", "", MARKED))
    assert {k: linux24[k] for k in counted} == counted
    # without the program's lines the kernel's still give the queue
    kernel_only = parse_roi("\n".join(l for l in MARKED.splitlines()
                                      if not l.startswith("web:")))
    assert kernel_only["quarter_rq_mean_hi"] == 20
    assert "quarter_rate_lo" not in kernel_only
    assert "window_quarters" not in parse_roi(LINE)


def counters(run):
    rows = [l.split(",") for l in (run / "counters.csv").read_text().splitlines()[1:]]
    return {r[3]: float(r[4]) for r in rows if r[1] == "-1"}


def hist_total(c):
    return sum(v for k, v in c.items() if k.startswith("rq_len_") and
               k not in ("rq_len_sum", "rq_len_max", "rq_len_mean"))


def test_builtin_workload_reports_its_long_queue(tmp_path):
    rc = cli_main(["run", "--machine", "ppro4", "--kernel", "vanilla", "--cpus", "2",
                   "--tasks", "96", "--out", str(tmp_path), "--name", "b"])
    assert rc in (0, None)
    c = counters(tmp_path / "b")
    # sampled where schedule() counts itself; other CPUs may schedule
    # between the two snapshots at the region's edges
    assert abs(c["rq_samples"] - c["schedule_calls"]) <= 4 and c["rq_samples"] > 0
    assert hist_total(c) == c["rq_samples"]
    # 96 tasks compute, sleep briefly, wake: most of them are runnable
    assert 60 <= c["rq_len_mean"] <= 97 and c["rq_len_max"] <= 97
    assert c["rq_len_65_128"] > c["rq_samples"] / 2


def test_web_reports_its_queue(built, tmp_path):
    rc = cli_main(["run", "--machine", "ppro4", "--kernel", "vanilla", "--cpus", "2",
                   "--workload", "web", "--httpd", "64", "--clients", "8",
                   "--requests", "6", "--out", str(tmp_path), "--name", "w"])
    assert rc in (0, None)
    c = counters(tmp_path / "w")
    assert abs(c["rq_samples"] - c["schedule_calls"]) <= 4
    assert hist_total(c) == c["rq_samples"]
    # idle servers sleep in accept: the queue is far shorter than 64 + 8
    assert 1 <= c["rq_len_mean"] < 40
    # the server marks its region's quarters: the region's mean lies
    # between the quarters' least and most
    assert c["window_quarters"] == 4
    assert c["quarter_rq_mean_lo"] <= c["rq_len_mean"] <= c["quarter_rq_mean_hi"]
    assert 0 < c["quarter_rate_lo"] <= 1 <= c["quarter_rate_hi"]
    assert c["quarter_sched_per_request_lo"] > 0
    assert json.loads((tmp_path / "w" / "config.json").read_text())["complete"]
