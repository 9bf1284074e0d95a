"""The scheduler's share of a run: busmon's sched= ranges count the
instructions (and, with --timing, the modelled cycles) of the scheduler's
code, and every run reports its share beside the run-queue lock's hold and
spin shares (colorsim/schedshare.py).  The built-in workload's burst
length is the knob that moves it."""

import csv
import math

import pytest

from colorsim.run import runner
from colorsim.run.schedshare import describe, scheduler_shares

from test_runs import spec

HEADER = "dump,cpu,mode,stat,value\n"


def write(tmp_path, rows):
    (tmp_path / "counters.csv").write_text(HEADER + "".join(f"{r}\n" for r in rows))
    return tmp_path


def test_shares_from_counters(tmp_path):
    timed = write(tmp_path, [
        "0,0,kernel,insts,900", "0,0,user,insts,100", "0,0,kernel,cycles,3000",
        "0,0,user,cycles,1000", "0,1,kernel,cycles,4000", "0,1,kernel,insts,800",
        "0,0,kernel,sched_insts,300", "0,1,kernel,sched_insts,100",
        "0,0,kernel,sched_cycles,1600", "0,1,kernel,sched_cycles,400",
        "0,0,kernel,lock_hold_cycles,3000", "0,1,kernel,lock_hold_cycles,1000",
        "0,0,kernel,lock_spin_cycles,0", "0,1,kernel,lock_spin_cycles,2000",
        "0,-1,all,rq_len_mean,7.5",          # region-wide rows are not summed
        "1,0,kernel,sched_cycles,99999"])    # nor later dumps
    s = scheduler_shares(timed)
    assert s["basis"] == "cycles" and s["sched_pct"] == pytest.approx(25.0)
    assert s["lock_held_pct"] == pytest.approx(100.0)   # 4000 of a 4000-cycle region
    assert s["lock_spin_pct"] == pytest.approx(25.0)
    assert describe(s) == ("schedule() 25.0 % of cycles; runqueue_lock held 100.0 % "
                           "of the time, spinning 25.0 % of cycles")


@pytest.mark.parametrize("busmon, spin", [(None, 25.0), ('{"version": "2.3.0"}', 25.0),
                                           ('{"version": "2.10.1"}', 25.0),
                                           ('{"version": "2.2.0"}', None),
                                           ('{"plugin": "busmon"}', None), ("{", None)])
def test_spin_only_from_a_plugin_that_books_it_once(tmp_path, busmon, spin):
    """busmon before 2.3.0 could book one wait twice: no spin share from
    its runs (nor from a busmon.json that names no version); the other
    shares stay."""
    run = write(tmp_path, ["0,0,kernel,cycles,4000", "0,0,kernel,sched_cycles,1000",
                           "0,0,kernel,lock_hold_cycles,2000",
                           "0,0,kernel,lock_spin_cycles,1000"])
    if busmon is not None:
        (run / "busmon.json").write_text(busmon)
    s = scheduler_shares(run)
    assert s["sched_pct"] == 25.0 and s["lock_held_pct"] == 50.0
    if spin is None:
        assert math.isnan(s["lock_spin_pct"])
        assert describe(s) == ("schedule() 25.0 % of cycles; runqueue_lock held 50.0 % "
                               "of the time")
    else:
        assert s["lock_spin_pct"] == spin and describe(s).endswith("spinning 25.0 % of cycles")


def test_counting_runs_use_instructions_and_old_runs_have_none(tmp_path):
    a = tmp_path / "a"
    a.mkdir()
    s = scheduler_shares(write(a, ["0,0,kernel,insts,1000", "0,0,kernel,sched_insts,250"]))
    assert s["basis"] == "instructions" and s["sched_pct"] == 25.0
    assert math.isnan(s["lock_held_pct"])
    assert describe(s) == "schedule() 25.0 % of instructions"
    b = tmp_path / "b"
    b.mkdir()
    s = scheduler_shares(write(b, ["0,0,kernel,insts,1000"]))
    assert s["basis"] == "" and math.isnan(s["sched_pct"]) and describe(s) == ""


def per_cpu(run, stat):
    with open(run / "counters.csv", newline="") as f:
        return {int(r["cpu"]): int(r["value"]) for r in csv.DictReader(f)
                if r["dump"] == "0" and r["stat"] == stat}


def test_every_run_reports_its_share_and_burst_moves_it(tmp_path):
    lines, shares = [], {}
    for burst in (500, 8000):
        run = runner.run(spec("vanilla", cpus=2, tasks=128, warmup_ticks=2, roi_ticks=3,
                              burst=burst), name=f"b{burst}", out=tmp_path,
                         progress=lines.append)
        assert per_cpu(run, "sched_insts")[0] > 0
        assert "sched_cycles" not in (run / "counters.csv").read_text()   # counting
        shares[burst] = scheduler_shares(run)["sched_pct"]
    assert sum("schedule() " in l and "% of instructions" in l for l in lines) == 2
    # every burst ends in a schedule() that walks ~128 tasks: a burst 16
    # times longer leaves the scheduler a much smaller share
    assert 0 < shares[8000] < shares[500] / 3 < 100


def test_timing_run_reports_cycles_and_the_lock(tmp_path):
    s = spec("vanilla", cpus=2, tasks=128, warmup_ticks=2, roi_ticks=3)
    s = type(s)(s.machine, s.variant, s.workload, timeout_s=s.timeout_s, timing=True)
    lines = []
    run = runner.run(s, out=tmp_path, progress=lines.append)
    sc, cyc = per_cpu(run, "sched_cycles"), per_cpu(run, "cycles")
    assert all(0 < sc[c] < cyc[c] for c in (0, 1)), (sc, cyc)
    sh = scheduler_shares(run)
    assert sh["basis"] == "cycles" and 0 < sh["sched_pct"] < 100
    assert 0 < sh["lock_held_pct"] <= 100.5 and 0 <= sh["lock_spin_pct"] < 100
    assert any("runqueue_lock held" in l for l in lines), lines
    assert "system.cpu0.sched.cycles" in (run / "stats.txt").read_text()
