"""`colorsim crosscheck`: the recorded gem5 runs against QEMU runs of the
same configurations, made in the test (counting and --timing)."""

import csv

import pytest

from colorsim.cli import main as cli_main
from colorsim.orchestrate.crosscheck import RECORDED, crosscheck, gains

PAIR = ["ppro4-l2_256k-vanilla-t1024", "ppro4-l2_256k-c32-t1024"]
needs_recordings = pytest.mark.skipif(
    not all((RECORDED / p / "config.json").is_file() for p in PAIR),
    reason=f"recorded gem5 runs {PAIR} are not in {RECORDED}")


@pytest.fixture(scope="module")
def crossed(tmp_path_factory):
    out = tmp_path_factory.mktemp("cross")
    rc = cli_main(["crosscheck", *(str(RECORDED / p) for p in PAIR), "--out", str(out)])
    assert rc in (0, None)
    with open(out / "crosscheck.csv", newline="") as f:
        return out, list(csv.DictReader(f))


def by(rows, kernel, engine, clock):
    [r] = [r for r in rows if r["kernel"] == kernel and r["engine"] == engine
           and r["clock"].startswith(clock)]
    return r


@needs_recordings
def test_one_row_per_run_both_engines(crossed):
    out, rows = crossed
    assert len(rows) == 6 and (out / "crosscheck.png").stat().st_size > 20_000
    assert {r["config"] for r in rows} == {"ppro4 4 CPUs L2 256KiB 1024 tasks"}
    # gem5's recorded counts come through unchanged
    assert int(by(rows, "vanilla", "gem5", "modelled")["schedule_calls"]) == 201
    assert int(by(rows, "c32", "gem5", "modelled")["schedule_calls"]) == 247
    # the recordings have no manifest: their rows say so, QEMU's are verified
    assert {r["verified"] for r in rows if r["engine"] == "gem5"} == {"False"}
    assert {r["verified"] for r in rows if r["engine"] == "qemu"} == {"True"}


@needs_recordings
def test_the_engines_agree_on_vanilla_traffic_per_schedule(crossed):
    _, rows = crossed
    g = float(by(rows, "vanilla", "gem5", "modelled")["colored_per_schedule"])
    for clock in ("icount", "modelled (--timing)"):
        q = float(by(rows, "vanilla", "qemu", clock)["colored_per_schedule"])
        assert abs(q / g - 1) < 0.05, (clock, q, g)


@needs_recordings
def test_coloring_buys_work_only_in_modelled_time(crossed):
    _, rows = crossed
    num = lambda r: {**r, "schedule_calls": int(r["schedule_calls"])}
    gain = {(x["engine"], x["clock"].split()[0]): x["gain"]
            for x in gains([num(r) for r in rows])}
    assert gain[("gem5", "modelled")] == pytest.approx(247 / 201)
    # our timing model: the same direction as gem5's timing CPUs
    assert gain[("qemu", "modelled")] > 1.1
    # icount time counts instructions: the same work whatever misses
    assert abs(gain[("qemu", "icount")] - 1) < 0.05


def test_crosscheck_refuses_what_is_not_a_gem5_run(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    rc = cli_main(["crosscheck", str(tmp_path / "empty"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "no gem5 run directory there" in err[0], err
    q = tmp_path / "qemu-run"
    q.mkdir()
    (q / "config.json").write_text('{"engine": "qemu", "complete": true}')
    rc = cli_main(["crosscheck", str(q), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "no complete gem5 runs" in err[0], err
    assert not (tmp_path / "o" / "crosscheck.csv").exists()


def test_crosscheck_rows_need_gem5_runs():
    with pytest.raises(Exception, match="no complete gem5 runs"):
        crosscheck([], out=None)
