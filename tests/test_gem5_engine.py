"""Host side of the gem5 engine: availability, commands, dry run, collect."""

import csv
import json
import os
import shutil
from pathlib import Path

import pytest

from colorsim.run.engines import ENGINES
from colorsim.run.engines.gem5 import Gem5Engine
from colorsim.run.engines.gem5stats import (BUS_HEADER, COUNTER_HEADER,
                                           bus_rows, counter_rows, global_rows)
from colorsim.errors import ConfigError, RunError
from colorsim.describe.machine import load_machines
from colorsim.describe.runspec import RunSpec, Workload
from colorsim.describe.variants import parse_variant
from colorsim.run.statstxt import parse_stats

SAMPLE = Path(__file__).parent / "data" / "gem5" / "stats_two_dumps.txt"


def _spec(name="ppro4", l2=None, kernel="c32"):
    m = load_machines()[name]
    if l2:
        m = m.with_l2(l2)
    return RunSpec(m, parse_variant(kernel, m), Workload(), engine="gem5")


def test_registry():
    assert ENGINES["gem5"] is Gem5Engine


def test_check_available_without_gem5(monkeypatch, tmp_path):
    monkeypatch.delenv("GEM5", raising=False)
    monkeypatch.setenv("COLORSIM_GEM5_CACHE", str(tmp_path))   # no build there
    with pytest.raises(ConfigError, match="GEM5") as e:
        Gem5Engine().check_available()
    assert "gem5 is missing" in str(e.value)
    assert "scripts/build-gem5.sh" in str(e.value)


def test_the_cached_build_is_the_default(monkeypatch, tmp_path):
    """Without $GEM5 the build scripts/build-gem5.sh named last is used."""
    monkeypatch.delenv("GEM5", raising=False)
    monkeypatch.setenv("COLORSIM_GEM5_CACHE", str(tmp_path))
    name = "gem5-24.0.0.1-gabc-p123"
    binary = tmp_path / name / "src" / "build" / "X86C" / "gem5.fast"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    (tmp_path / "current-gem5").write_text(name + "\n")
    assert Gem5Engine().check_available() == binary
    assert Gem5Engine().binary() == str(binary)
    (tmp_path / "current-gem5").write_text("gem5-gone\n")
    with pytest.raises(ConfigError, match="no build is cached"):
        Gem5Engine().check_available()


def test_check_available_not_executable(monkeypatch, tmp_path):
    fake = tmp_path / "gem5.opt"
    fake.write_text("")
    monkeypatch.setenv("GEM5", str(fake))
    with pytest.raises(ConfigError, match="not an executable"):
        Gem5Engine().check_available()
    fake.chmod(0o755)
    assert Gem5Engine().check_available() == fake


def test_bad_cpu_is_config_error():
    with pytest.raises(ConfigError, match="timing"):
        Gem5Engine(cpu="minor")


@pytest.mark.parametrize("name", ["ppro4", "piii8"])
def test_describe_dry_run(monkeypatch, tmp_path, name):
    monkeypatch.delenv("GEM5", raising=False)
    monkeypatch.setenv("COLORSIM_GEM5_CACHE", str(tmp_path / "no-build"))
    spec = _spec(name)
    text = Gem5Engine(checkpoint_root=tmp_path).describe(spec, tmp_path)
    assert "$GEM5 --outdir=" in text
    assert "--phase boot" in text and "--phase measure" in text
    c = spec.machine.caches
    for level, geom in (("l1i", c.l1i), ("l1d", c.l1d), ("l2", c.l2)):
        line = next(ln for ln in text.splitlines()
                    if ln.strip().startswith(level + " "))
        assert f"{geom.assoc}-way 32 B lines" in line
        assert "prefetcher=none" in line
    assert f"{spec.cpus} x timing" in text
    assert "read_addr_mask=0xfe0" in text and "write_addr_mask=0xfe0" in text
    assert str(spec.kernel_elf64) in text
    assert spec.kernel_cmdline(spec.machine.processor.clock_hz // 16) in text
    assert f"(load-to-use {spec.machine.memory.latency_ns:g}ns less" in text
    assert "p6 bus" in text and "one response layer" in text


def test_describe_full_mode_o3():
    text = Gem5Engine(cpu="o3", checkpoint=False).describe(_spec())
    assert "--phase full --cpu o3" in text
    assert "fetchBufferSize=32" in text
    assert "--phase boot" not in text


def test_commands(tmp_path):
    eng = Gem5Engine(checkpoint_root=tmp_path / "ck")
    spec = _spec()
    cmd = eng.command(spec, tmp_path / "run")
    assert cmd[1] == f"--outdir={tmp_path / 'run' / 'gem5'}"
    assert cmd[3].endswith("configs/gem5/run_fs.py")
    assert cmd[cmd.index("--spec") + 1] == str(tmp_path / "run" /
                                                "gem5_spec.json")
    assert cmd[cmd.index("--checkpoint-dir") + 1] == \
        str(eng.checkpoint_dir(spec))
    assert len(eng.commands(spec, tmp_path / "run")) == 2
    (eng.checkpoint_dir(spec)).mkdir(parents=True)
    (eng.checkpoint_dir(spec) / "m5.cpt").write_text("")
    assert eng.commands(spec, tmp_path / "run") == [cmd]


def test_checkpoint_shared_across_l2_choices(tmp_path):
    """One image (vanilla) boots once for every L2; a colored kernel's image
    depends on the L2 (bit b), so it gets its own checkpoint."""
    eng = Gem5Engine(checkpoint_root=tmp_path)
    keys = {eng.checkpoint_key(_spec(l2=l2, kernel="vanilla"))
            for l2 in ("256KiB", "512KiB", "1MiB")}
    assert len(keys) == 1
    colored = {eng.checkpoint_key(_spec(l2=l2))
               for l2 in ("256KiB", "512KiB", "1MiB")}
    assert len(colored) == 3 and not colored & keys


def test_write_inputs(tmp_path):
    path = Gem5Engine().write_inputs(_spec(l2="1MiB"), tmp_path)
    d = json.loads(path.read_text())
    assert d["machine"]["caches"]["l2"] == {"size": 1 << 20, "assoc": 4,
                                            "line": 32}
    assert (tmp_path / "gem5").is_dir()


def test_bus_rows_from_sample():
    rows = bus_rows(parse_stats(SAMPLE))
    assert [0, -1, "all", "read", 1664, 20500, "memory"] in rows
    assert [0, -1, "all", "writeback", 4032, 200, "memory"] in rows
    assert [1, -1, "all", "read", 1664, 3, "memory"] in rows
    assert all(r[4] % 32 == 0 and 0 <= r[4] <= 0xFE0 for r in rows)
    assert sum(r[5] for r in rows if r[0] == 0 and r[3] == "read") == 27230


def test_bus_rows_refuse_inexact_keys():
    text = SAMPLE.read_text().replace("readAddrDist::4064 ",
                                      "readAddrDist::1.04864e+06 ")
    with pytest.raises(RunError, match="inexactly"):
        bus_rows(parse_stats(text))


def test_counter_rows_from_sample():
    rows = {(r[0], r[1], r[3]): r[4] for r in counter_rows(
        parse_stats(SAMPLE))}
    assert rows[(0, 0, "insts")] == 4123456
    assert rows[(0, 1, "insts")] == 3987654
    assert rows[(0, 0, "l1d_read_misses")] == 45000
    assert rows[(0, 1, "l1d_write_misses")] == 0       # nozero: absent
    assert rows[(0, 0, "l2_read_misses")] == 20300     # Shared + Clean
    assert rows[(0, 1, "l2_write_misses")] == 4900     # ReadEx + Upgrade
    assert rows[(0, 0, "l2_writebacks")] == 7000
    assert (1, 1, "l2_misses") not in rows or rows[(1, 1, "l2_misses")] == 0
    assert all(r[2] == "all" for r in counter_rows(parse_stats(SAMPLE)))


def test_the_loop_probes_give_each_cpus_walk_reads_and_misses():
    """The suite's probe (gem5 patch 0002) on each measured L2: its two
    stats become the plugin's rqloop_l2_read_* counters of that CPU; a
    client CPU's (beyond the measured ones) are left out."""
    lines = SAMPLE.read_text().splitlines()
    end = lines.index(next(x for x in lines if x.startswith("---------- End")))
    probe = [f"board.cache_hierarchy.rqloop_probes{i}.{stat} {v} # (Count)"
             for i, (a, m) in enumerate([(1000, 900), (800, 100), (7, 7)])
             for stat, v in (("readAccesses", a), ("readMisses", m))]
    text = "\n".join(lines[:end] + probe + lines[end:]) + "\n"
    rows = {(r[0], r[1], r[3]): r[4]
            for r in counter_rows(parse_stats(text), cpus=2)}
    assert rows[(0, 0, "rqloop_l2_read_accesses")] == 1000
    assert rows[(0, 0, "rqloop_l2_read_misses")] == 900
    assert rows[(0, 1, "rqloop_l2_read_misses")] == 100
    assert not any(cpu == 2 for _, cpu, _ in rows)


def test_bus_kinds_are_the_p6_buses_own_requests():
    """With P6 buses, a bus's requests by kind are its transDist less the
    snoops the chipset sent it (snoopDist, gem5 patch 0003), summed over
    the buses; the membus's count is left aside.  Without them, the
    membus's transDist as before."""
    lines = SAMPLE.read_text().splitlines()
    end = lines.index(next(x for x in lines if x.startswith("---------- End")))

    def glob(extra):
        text = "\n".join(lines[:end] + extra + lines[end:]) + "\n"
        return {r[3]: r[4] for r in global_rows(parse_stats(text))
                if r[0] == 0}
    hc = "board.cache_hierarchy."
    membus = [f"{hc}membus.transDist::ReadSharedReq 50 # (Count)",
              f"{hc}membus.transDist::ReadExReq 9 # (Count)"]
    assert glob(membus)["bus_read"] == 50
    buses = [f"{hc}p6buses0.transDist::ReadSharedReq 70 # (Count)",
             f"{hc}p6buses0.snoopDist::ReadSharedReq 20 # (Count)",
             f"{hc}p6buses1.transDist::ReadSharedReq 40 # (Count)",
             f"{hc}p6buses1.transDist::UpgradeReq 6 # (Count)",
             f"{hc}p6buses1.snoopDist::UpgradeReq 1 # (Count)"]
    g = glob(membus + buses)
    assert (g["bus_read"], g["bus_invalidate"], g["bus_rfo"]) == (90, 5, 0)


def test_the_spec_carries_the_built_kernels_loop_ranges(tmp_path):
    """gem5_spec.json's kernel entry names the run-queue loop's ranges from
    the built kernel's layout.json, one range or several; none before the
    kernel is built (a dry run)."""
    from colorsim.run.engines.gem5 import rqloop_ranges
    assert rqloop_ranges(None) == [] and rqloop_ranges(tmp_path / "no") == []
    lay = tmp_path / "layout.json"
    lay.write_text(json.dumps({"ranges": {"rqloop": [16, 32]}}))
    assert rqloop_ranges(lay) == [[16, 32]]
    lay.write_text(json.dumps({"ranges": {"rqloop": [[16, 32], [48, 64]]}}))
    assert rqloop_ranges(lay) == [[16, 32], [48, 64]]
    spec = _spec()
    d = Gem5Engine().spec_dict(spec)
    assert d["kernel"]["rqloop"] == rqloop_ranges(spec.layout_file)


def test_collect_writes_engine_tables(tmp_path):
    eng = Gem5Engine()
    eng.write_inputs(_spec(), tmp_path)
    shutil.copy(SAMPLE, tmp_path / "gem5" / "stats.txt")
    (tmp_path / "gem5" / "board.pc.com_1.device").write_text("boot ok\n")
    summary = eng.collect(tmp_path)
    assert summary["dumps"] == 2 and summary["roi_dump"] == 0
    with open(tmp_path / "bus_offsets.csv") as f:
        bus = list(csv.reader(f))
    assert bus[0] == BUS_HEADER == ["dump", "cpu", "mode", "kind", "offset",
                                    "count", "view"]
    assert ["0", "-1", "all", "read", "1664", "20500", "memory"] in bus
    with open(tmp_path / "counters.csv") as f:
        ctr = list(csv.reader(f))
    assert ctr[0] == COUNTER_HEADER == ["dump", "cpu", "mode", "stat",
                                        "value"]
    assert ["0", "0", "all", "insts", "4123456"] in ctr
    assert (tmp_path / "console.log").read_text() == "boot ok\n"


def test_collect_missing_stats(tmp_path):
    with pytest.raises(RunError, match="stats.txt"):
        Gem5Engine().collect(tmp_path)


@pytest.mark.requires_gem5
def test_gem5_run_ppro4_end_to_end(tmp_path):
    """Boot, checkpoint, restore and collect one short run on gem5."""
    spec = _spec()
    if not spec.kernel_elf64.is_file():
        pytest.skip(f"kernel image {spec.kernel_elf64} not built")
    eng = Gem5Engine(checkpoint_root=tmp_path / "ck")
    summary = eng.run(spec, tmp_path / "run", timeout_s=3600)
    assert summary["bus_rows"] > 0
    assert summary["config_checks"] == ["config.json matches the spec"]
    assert os.path.getsize(tmp_path / "run" / "console.log") > 0
    # the loop probe on every measured L2 (gem5 patch 0002) saw the walk
    with open(tmp_path / "run" / "counters.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["dump"] == "0"]
    reads = {r["cpu"]: float(r["value"]) for r in rows
             if r["stat"] == "rqloop_l2_read_accesses"}
    misses = {r["cpu"]: float(r["value"]) for r in rows
              if r["stat"] == "rqloop_l2_read_misses"}
    assert len(reads) == spec.cpus and min(reads.values()) > 0, reads
    assert all(0 <= misses[c] <= reads[c] for c in reads), (reads, misses)


@pytest.mark.requires_gem5
def test_a_user_program_ends_its_gem5_run(tmp_path):
    """A program run as init on gem5 ends its run with the program, not at
    its timeout (the kernel's m5 exit when the program asks or init exits),
    and its region of interest lands in the run directory."""
    import time
    from colorsim.run import runner
    m = load_machines()["ppro4"]
    spec = RunSpec(m, parse_variant("vanilla", m),
                   Workload(program="/bin/roitest"), engine="gem5", timeout_s=1800)
    t0 = time.monotonic()
    run = runner.run(spec, out=tmp_path, progress=lambda *_: None)
    assert time.monotonic() - t0 < 600, "the run waited for its timeout"
    console = (run / "console.log").read_text()
    assert "roitest: ok" in console, console[-2000:]
    assert (run / "gem5" / "stats.txt").is_file() and (run / "counters.csv").is_file()


@pytest.mark.requires_gem5
def test_web_runs_on_gem5_with_its_clients_outside_the_measured_machine(tmp_path):
    """The web workload on gem5 with two client CPUs (one runs the clients,
    one drives the wire): every byte verified, requests per modelled
    second from gem5's clock, and counters and bus-view rows only for the
    measured CPU."""
    from colorsim.results.rundata import load_run
    from colorsim.results.runrows import run_rows
    from colorsim.run import runner
    m = load_machines()["ppro4"].with_cpus(1)
    spec = RunSpec(m, parse_variant("vanilla", m),
                   Workload(program="/bin/web", args="--httpd,4,--clients,4,--requests,2",
                            client_cpus=2),
                   engine="gem5", timeout_s=1800)
    run = runner.run(spec, out=tmp_path, progress=lambda *_: None)
    console = (run / "console.log").read_text()
    assert "web: ok" in console, console[-2000:]
    with open(run / "counters.csv") as f:
        cpus = {int(r["cpu"]) for r in csv.DictReader(f)}
    with open(run / "bus_offsets.csv") as f:
        bus_cpus = {int(r["cpu"]) for r in csv.DictReader(f) if r["view"] == "bus"}
    assert cpus == {-1, 0} and bus_cpus == {0}
    row = run_rows(load_run(run), tmp_path)["runs"]
    assert row["roi_requests"] > 0 and row["requests_per_modeled_second"] > 0
    # runqueue_lock as the kernel counted it, its hold in gem5's clock
    assert 0 <= row["kernel_lock_contention"] < 1
    assert 0 < row["kernel_lock_hold_mean_us"] < 1000
    # the client cores at the client model's clock, their timers and every
    # TSC as the kernel's (config.json: what gem5 built)
    import json
    cores = json.loads((run / "gem5" / "config.json").read_text())[
        "board"]["processor"]["cores"]
    from colorsim.run.engines.gem5 import TSC_PERIOD_PS
    period = round(1e12 / spec.client_core_hz)
    # a gem5 without patch 0004: each core's own cycles, every core at
    # the board's clock
    tsc = TSC_PERIOD_PS if Gem5Engine().has_constant_tsc() else 0
    for i, c in enumerate(core["core"] for core in cores):
        if i == 0 or not tsc:          # the measured CPU: the board's clock
            assert c["clk_domain"] == "board.clk_domain"
        else:
            assert c["clk_domain"]["clock"] == [period]
        assert c["interrupts"][0]["clk_domain"]["clk_domain"] == "board.clk_domain"
        assert c["isa"][0]["tsc_period"] == tsc


def test_gem5_run_directory_feeds_the_same_analysis(tmp_path):
    # A gem5 run directory, as the runner leaves it, through load_run and
    # the Figure 1 functions: the region of interest is dump 0, not gem5's
    # final exit dump.
    import json

    from colorsim.report.plots import plot_offsets
    from colorsim.results.rundata import load_run, offset_histogram, offsets_table
    from colorsim.run.build import ensure_built

    spec = _spec()
    ensure_built([spec.variant.build_id], plugin=False, progress=lambda *_: None)
    eng = Gem5Engine()
    eng.write_inputs(spec, tmp_path)
    shutil.copy(SAMPLE, tmp_path / "gem5" / "stats.txt")
    (tmp_path / "gem5" / "board.pc.com_1.device").write_text("boot ok\n")
    eng.collect(tmp_path)
    shutil.copy(spec.layout_file, tmp_path / "layout.json")
    cfg = spec.to_dict()
    cfg.update(name="g", complete=True)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    run = load_run(tmp_path)
    h = offset_histogram(run)
    rows = run.offsets[run.offsets["offset"] == 1664]
    dump0 = rows[rows["dump"] == 0]["count"].sum()
    assert h[1664] == dump0 and dump0 != rows[rows["dump"] == 1]["count"].sum()
    assert 20500 in set(rows[(rows["dump"] == 0) & (rows["kind"] == "read")]["count"])
    assert set(offsets_table([run])["engine"]) == {"gem5"}
    assert plot_offsets([run], tmp_path / "g.png").stat().st_size > 10000


def test_bus_rows_bus_view_per_cpu():
    """Per-CPU monitors between each L2 and the bus give view 'bus' rows."""
    extra = "".join(
        f"board.cache_hierarchy.l2_monitors{cpu}.{kind}AddrDist::{key} "
        f"{n} 1.0% 1.0% # x (Count)\n"
        for cpu, kind, key, n in ((0, "read", 32, 700), (1, "read", 32, 300),
                                  (1, "write", 4064, 9)))
    extra += ("board.cache_hierarchy.l2_monitors1.readAddrDist::samples 300 "
              "# x (Count)\n")
    text = SAMPLE.read_text()
    first_end = text.index("---------- End Simulation Statistics")
    rows = bus_rows(parse_stats(text[:first_end] + extra + text[first_end:]))
    bus = [r for r in rows if r[6] == "bus"]
    assert bus == [[0, 0, "all", "read", 32, 700, "bus"],
                   [0, 1, "all", "read", 32, 300, "bus"],
                   [0, 1, "all", "writeback", 4064, 9, "bus"]]
    memory = [r for r in rows if r[6] == "memory"]
    assert memory == [r for r in bus_rows(parse_stats(SAMPLE))]


def test_dry_run_lists_bus_view(capsys):
    from colorsim.cli import main
    assert main(["run", "--machine", "ppro4", "--l2", "512KiB", "--kernel",
                 "c32", "--engine", "gem5", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "bus view   4 x CommMonitor l2_monitors[i]" in out
    assert "read_addr_mask=0xfe0" in out
    assert "mem view   CommMonitor mem_monitor" in out


def test_analysis_prefers_bus_view_and_normalizes(tmp_path):
    """A gem5 run with both views: the figures' histogram is the bus view
    (per-CPU rows summed); per-schedule columns divide by the console's
    schedule() count, which collect put into counters.csv."""
    import json

    from colorsim.results.rundata import (bus_views, counters_table_per, load_run,
                                  offset_histogram, offset_histogram_per,
                                  offset_summary_per, work_units)
    from colorsim.run.build import ensure_built

    spec = _spec()
    ensure_built([spec.variant.build_id], plugin=False, progress=lambda *_: None)
    eng = Gem5Engine()
    eng.write_inputs(spec, tmp_path)
    text = SAMPLE.read_text()
    end = text.index("---------- End Simulation Statistics")
    extra = ("board.cache_hierarchy.l2_monitors0.readAddrDist::1664 7000 "
             "1% 1% # x (Count)\n"
             "board.cache_hierarchy.l2_monitors1.readAddrDist::1664 9000 "
             "1% 1% # x (Count)\n")
    (tmp_path / "gem5" / "stats.txt").write_text(text[:end] + extra +
                                                 text[end:])
    (tmp_path / "gem5" / "board.pc.com_1.device").write_text(
        "roi: begin at jiffies 19, nr_running 1022\n"
        "roi: end at jiffies 29: schedules 400 switches 401 recalcs 0 "
        "nr_running 1022\n")
    summary = eng.collect(tmp_path)
    assert summary["views"] == ["bus", "memory"]
    assert summary["schedule_calls"] == 400
    shutil.copy(spec.layout_file, tmp_path / "layout.json")
    cfg = spec.to_dict()
    cfg.update(name="g", complete=True)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    run = load_run(tmp_path)
    assert bus_views(run) == ["bus", "memory"]
    h = offset_histogram(run)
    assert h[1664] == 16000 and h.sum() == 16000       # bus view only
    o = run.offsets
    mem = o[(o["view"] == "memory") & (o["dump"] == 0) & (o["offset"] == 1664)]
    assert 20500 in set(mem["count"])
    assert offset_histogram_per(run, which="memory")[1664] == \
        mem["count"].sum() / 400
    assert offset_histogram_per(run)[1664] == 16000 / 400
    u = work_units(run)
    assert u["schedule"] == 400 and u["kinst"] == (4123456 + 3987654) / 1000
    s = offset_summary_per([run], view="line").iloc[0]
    assert s["total_per_schedule"] == 16000 / 400 and s["schedules"] == 400
    c = counters_table_per([run], per="kinst")
    row = c[(c["stat"] == "insts") & (c["cpu"] == 0) & (c["dump"] == 0)]
    assert float(row["value_per_kinst"].iloc[0]) == pytest.approx(
        4123456 / u["kinst"])
    from colorsim.results.rundata import ResultsError
    with pytest.raises(ResultsError, match="per must be"):
        counters_table_per([run], per="tick")


def test_failed_boot_leaves_no_checkpoint_tmp(tmp_path, monkeypatch):
    """A gem5 that fails while booting leaves no <key>.tmp<pid> folder."""
    fake = tmp_path / "gem5.opt"
    fake.write_text("#!/bin/sh\necho 'fatal: boot failed' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("GEM5", str(fake))
    root = tmp_path / "ckpt"
    eng = Gem5Engine(checkpoint_root=root)
    spec = _spec(kernel="vanilla")
    if not spec.kernel_elf64.is_file():
        pytest.skip("kernel not built")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(RunError, match="exited with status 1"):
        eng.run(spec, run_dir, timeout_s=30)
    assert not root.exists() or not any(root.iterdir()), list(root.rglob("*"))


def test_dry_run_writes_a_spec_run_fs_reads_on_its_own(tmp_path, capsys):
    """--dry-run --gem5-dir DIR writes the spec the printed commands name;
    configs/gem5/run_fs.py reads it by itself (--print-params needs no
    gem5), as gem5 users run stdlib scripts."""
    import json
    import subprocess
    import sys
    from colorsim import ROOT
    from colorsim.cli import main as cli_main
    d = tmp_path / "by-hand"
    rc = cli_main(["run", "--engine", "gem5", "--kernel", "c32", "--tasks", "64",
                   "--dry-run", "--gem5-dir", str(d)])
    out = capsys.readouterr().out
    assert rc == 0
    spec = d / "gem5_spec.json"
    assert spec.is_file() and f"--spec {spec}" in out
    p = subprocess.run([sys.executable, str(ROOT / "configs" / "gem5" / "run_fs.py"),
                        "--spec", str(spec), "--print-params"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    params = json.loads(p.stdout)
    assert params["processor"]["num_cores"] == 4
    assert params["caches"]["l2"]["size"] == 512 << 10
    rc = cli_main(["run", "--kernel", "c32", "--dry-run", "--gem5-dir", str(d)])
    assert rc == 2 and "--gem5-dir is for --engine gem5" in capsys.readouterr().err


def test_build_writes_gem5_resources_for_what_it_built(tmp_path, capsys):
    """build --resources FILE: gem5-resources entries (category, id, X86,
    md5sum, file:// url) for the kernels and the image, each md5 the
    file's own."""
    import hashlib
    import json
    from urllib.parse import urlparse
    from colorsim.cli import main as cli_main
    f = tmp_path / "resources.json"
    assert cli_main(["build", "--kernel", "vanilla", "c32", "--resources", str(f)]) == 0
    entries = json.loads(f.read_text())
    assert {e["id"] for e in entries} == {"colorsim-kernel-vanilla-l32",
                                          "colorsim-kernel-c32-b17-l32",
                                          "colorsim-rootfs"}
    for e in entries:
        assert e["architecture"] == "X86" and e["category"] in ("kernel", "disk-image")
        path = urlparse(e["url"]).path
        assert hashlib.md5(open(path, "rb").read()).hexdigest() == e["md5sum"]
        assert e["gem5_versions"] == ["24.0"] and e["is_zipped"] is False


@pytest.mark.requires_gem5
def test_gem5_finds_the_suites_resources(tmp_path):
    """gem5's own obtain_resource() reads the list (GEM5_RESOURCE_JSON)."""
    import os
    import subprocess
    from colorsim.cli import main as cli_main
    f = tmp_path / "resources.json"
    assert cli_main(["build", "--kernel", "c32", "--resources", str(f)]) == 0
    script = tmp_path / "find.py"
    script.write_text(
        "from gem5.resources.resource import obtain_resource\n"
        "r = obtain_resource('colorsim-kernel-c32-b17-l32', resource_version='1.0.0')\n"
        "print('PATH', r.get_local_path())\n")
    binary = Gem5Engine().check_available()
    p = subprocess.run([str(binary), "--outdir", str(tmp_path / "m5out"), str(script)],
                       env={**os.environ, "GEM5_RESOURCE_JSON": str(f)},
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    got = [l.split(" ", 1)[1] for l in p.stdout.splitlines() if l.startswith("PATH ")]
    assert got, p.stdout[-2000:]
    from pathlib import Path
    from colorsim import BUILD
    kernel = BUILD / "kernels" / "c32-b17-l32" / "kernel.elf"
    assert Path(got[0]).read_bytes() == kernel.read_bytes()   # fetched or in place
