"""The run-queue-length report: the kernel's histogram of nr_running at
each schedule() in the region (kernels/kernel/rqstat.c), parsed into
counters.csv by the collect step (colorsim/console.py)."""

import json

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
    assert json.loads((tmp_path / "w" / "config.json").read_text())["complete"]
