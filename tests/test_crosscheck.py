"""`colorsim crosscheck`: the recorded gem5 runs against QEMU runs of the
same configurations, made in the test (counting and --timing)."""

import csv

import pytest

from colorsim.cli import main as cli_main
from colorsim.maintain import main as docs_main
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


def noted_schedules(folder):
    """schedule() calls noted when the gem5 run was recorded."""
    with open(RECORDED / "recordings.csv", newline="") as f:
        return {r["run_folder"]: int(r["schedule_calls"])
                for r in csv.DictReader(f)}[folder]


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
    assert int(by(rows, "vanilla", "gem5", "modelled")["schedule_calls"]) == \
        noted_schedules(PAIR[0])
    assert int(by(rows, "c32", "gem5", "modelled")["schedule_calls"]) == \
        noted_schedules(PAIR[1])
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
    assert gain[("gem5", "modelled")] == pytest.approx(
        noted_schedules(PAIR[1]) / noted_schedules(PAIR[0]))
    assert gain[("gem5", "modelled")] > 1.1
    # our timing model: the same direction as gem5's timing CPUs
    assert gain[("qemu", "modelled")] > 1.1
    # icount time counts instructions: the same work whatever misses (up to
    # chance: a region of a few hundred schedule() calls varies by ~1/sqrt(n),
    # about 7 %, with any change of the kernel's code; the modelled gain is
    # well beyond it)
    assert abs(gain[("qemu", "icount")] - 1) < 0.1
    assert gain[("qemu", "modelled")] - 1 > 2 * abs(gain[("qemu", "icount")] - 1)


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


@needs_recordings
def test_write_puts_the_table_and_the_figure_beside_the_markdown(crossed, tmp_path, capsys):
    """--write FILE: the block is the CSV's runs (reused, not re-made), the
    figure beside FILE is the one drawn from the same rows; --check passes
    on it and fails, in one line, once the block differs."""
    out, rows = crossed
    md = tmp_path / "doc" / "E.md"
    md.parent.mkdir()
    md.write_text("a\n<!-- crosscheck:begin -->\nold\n<!-- crosscheck:end -->\nb\n")
    args = ["crosscheck", *(str(RECORDED / p) for p in PAIR), "--out", str(out)]
    assert docs_main(args + ["--write", str(md)]) in (0, None)
    text = md.read_text()
    assert text.startswith("a\n") and text.endswith("b\n") and "old" not in text
    c32 = by(rows, "c32", "qemu", "modelled")
    share = f"{float(c32['hitm_per_bus_read']) * 100:.0f} %"
    assert (f"| ppro4 4 CPUs L2 256KiB 1024 tasks | c32 | qemu, modelled (--timing) "
            f"| {c32['schedule_calls']} | {float(c32['colored_per_schedule']):.1f} | ") in text
    assert f"| {share} |" in text
    g32, g0 = noted_schedules(PAIR[1]), noted_schedules(PAIR[0])
    gain = (g32 / g0 - 1) * 100
    assert f"| {g32} | {float(by(rows, 'c32', 'gem5', 'modelled')['colored_per_schedule']):.1f}" \
           f" | {gain:+.0f} % |  |" in text
    assert "| ppro4 | 180 ns | 39 cycles (195 ns) |" in text   # the runs' configs
    assert (md.parent / "crosscheck.png").read_bytes() == (out / "crosscheck.png").read_bytes()
    capsys.readouterr()
    assert docs_main(args + ["--check", str(md)]) in (0, None)
    md.write_text(text.replace(f"| {c32['schedule_calls']} |", "| 1 |"))
    rc = docs_main(args + ["--check", str(md)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and "crosscheck table is not what" in err[-1], err


def test_a_write_file_without_the_block_is_refused_before_any_run(tmp_path, capsys):
    # the gem5 folder is empty too: the Markdown is refused first
    (tmp_path / "empty").mkdir()
    md = tmp_path / "E.md"
    md.write_text("no markers\n")
    rc = docs_main(["crosscheck", str(tmp_path / "empty"), "--out", str(tmp_path / "o"),
                    "--write", str(md)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "no <!-- crosscheck:begin -->" in err[0], err
    assert not (tmp_path / "o").exists() and md.read_text() == "no markers\n"


def test_hitm_share_counts_the_region_of_every_cpu(tmp_path):
    from colorsim.orchestrate.crosscheck import hitm_share
    (tmp_path / "counters.csv").write_text(
        "dump,cpu,mode,stat,value\n"
        "0,0,kernel,bus_read,30\n0,0,kernel,hitm,10\n0,1,user,bus_read,10\n"
        "0,1,user,hitm,5\n1,0,kernel,hitm,99\n0,-1,all,hitm,99\n0,1,kernel,insts,7\n")
    assert hitm_share(tmp_path) == pytest.approx(15 / 40)


@pytest.mark.slow
@needs_recordings
def test_the_docs_crosscheck_block_is_what_the_recorded_runs_give(tmp_path):
    """docs/engines.md's block, remade from every recorded gem5 run (16
    QEMU runs: minutes)."""
    from colorsim import ROOT
    rc = docs_main(["crosscheck", "--out", str(tmp_path / "o"),
                    "--check", str(ROOT / "docs" / "engines.md")])
    assert rc in (0, None)
