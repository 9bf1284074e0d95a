"""End-to-end runs: the real kernel on QEMU with the bus-monitor plugin.

Each run boots the testbed kernel, forks the workload, measures a short
region of interest and exits; with 1024 tasks that takes a few seconds.
"""

import dataclasses
import json
import subprocess

import pytest

from children import run_child
from colorsim.report.plots import plot_offsets
from colorsim.results.rundata import (ResultsError, counter_totals, load_run,
                              offset_histogram, offset_summary, offsets_table)
from colorsim.run import runner
from colorsim.cli import main as cli_main
from colorsim.errors import ConfigError, RunError
from colorsim.describe.machine import get_machine
from colorsim.describe.runspec import RunSpec, Workload
from colorsim.describe.variants import parse_variant

QUIET = dict(progress=lambda *_: None)


def spec(kernel, machine="ppro4", l2=None, cpus=None, **work):
    m = get_machine(machine)
    if l2:
        m = m.with_l2(l2)
    if cpus:
        m = m.with_cpus(cpus)
    w = dict(tasks=1024, warmup_ticks=5, roi_ticks=6)
    w.update(work)
    return RunSpec(m, parse_variant(kernel, m), Workload(**w), timeout_s=300)


def assert_cpus_share_the_time(run, cpus):
    # Every CPU gets its share.  Under -icount round-robin a vCPU's turn
    # ends at a timer deadline or when the guest yields (pause, hlt); the
    # workload yields every 64 iterations (workload/tasks.c), which is what
    # makes the shares even (docs/running.md, "Interleaving").
    per_cpu = run.counters.query("stat == 'insts'").groupby("cpu")["value"].sum()
    assert list(per_cpu.index) == list(range(cpus))
    assert per_cpu.min() > 0.7 * per_cpu.max(), per_cpu.to_dict()


@pytest.fixture(scope="module")
def figure1(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    return [load_run(runner.run(spec(k), out=out, **QUIET)) for k in ("vanilla", "c32")]


def test_vanilla_peak_is_the_scheduler_line(figure1):
    van, _ = figure1
    h = offset_histogram(van)
    first = van.layout["scheduler_hot"]["first_touched_offset"]
    assert h.idxmax() == first == 0x30
    # a dominant peak: every other offset is far lower
    assert h.drop(first).max() * 10 < h[first]


def test_coloring_spreads_and_lowers_the_peak(figure1):
    df = offset_summary(figure1)
    van, col = df.iloc[0], df.iloc[1]
    assert col.peak_count * 4 < van.peak_count
    assert col.colored_lines_sum < van.colored_lines_sum
    # the colored hot lines really are spread over many offsets
    h = offset_histogram(figure1[1])
    hot = h[(h.index >= 0x20) & (h.index < 0x420) & (h.index % 32 == 0x10)]
    assert (hot > 0).sum() >= 16


def test_runqueue_loop_miss_ratio_table2_shape(figure1):
    van, col = (counter_totals(r) for r in figure1)
    ratio = lambda c: c["rqloop_l2_read_misses"] / c["rqloop_l2_read_accesses"]
    assert ratio(van) > 0.9          # paper: 99.6 % at 512 KB
    assert ratio(col) < 0.5 * ratio(van)


def test_runqueue_loop_misses_by_cause(figure1):
    """The loop's misses split by fill (HITM, clean copy) and by cause.

    With the built-in workload's long queue the walked lines compete for
    the few L2 sets of one page offset: in vanilla most loop misses are
    lines another loop line pushed out; coloring removes most of those.
    """
    causes = ("first", "invalidated", "evicted_loop", "evicted_kernel",
              "evicted_user")
    for r in figure1:
        roi = r.counters.query("dump == 0 and cpu >= 0")
        per = roi.pivot_table(index=["cpu", "mode"], columns="stat",
                              values="value", aggfunc="sum")
        miss = per["rqloop_l2_read_misses"]
        assert (per["rqloop_l2_read_hitm"] + per["rqloop_l2_read_shared"]
                <= miss).all()
        assert (per["rqloop_l2_read_hitm"]
                <= per["rqloop_l2_read_invalidated"]).all()
        assert (sum(per[f"rqloop_l2_read_{c}"] for c in causes) == miss).all()
        conf = json.loads((r.path / "busmon.json").read_text())
        assert conf["rqloop_lines_full"] == [0, 0, 0, 0]
        assert min(conf["rqloop_lines"]) > 0
        stats = (r.path / "stats.txt").read_text()
        assert "system.cpu0.rqloop.l2ReadHitm" in stats
    van, col = (counter_totals(r) for r in figure1)
    assert van["rqloop_l2_read_evicted_loop"] > 0.8 * van["rqloop_l2_read_misses"]
    assert col["rqloop_l2_read_evicted_loop"] < 0.2 * van["rqloop_l2_read_evicted_loop"]


def test_every_cpu_works(figure1):
    for r in figure1:
        assert_cpus_share_the_time(r, 4)


def test_run_directory_is_complete(figure1):
    r = figure1[0]
    cfg = r.config
    assert cfg["complete"] and len(cfg["kernel_sha256"]) == 64
    assert cfg["emulation"]["deterministic"] and cfg["emulation"]["accel"] == "tcg,thread=single"
    assert cfg["machine"]["caches"]["l2"]["size"] == 512 << 10
    for f in ("stats.txt", "console.log", "layout.json", "bus_offsets.csv", "counters.csv"):
        assert (r.path / f).is_file(), f
    stats = (r.path / "stats.txt").read_text()
    assert stats.count("Begin Simulation Statistics") == 1
    log = (r.path / "console.log").read_text()
    assert "cpus: 4 from ACPI MADT" in log and "roi: end" in log
    table = offsets_table(figure1)
    assert set(table["kernel"]) == {"vanilla", "c32"}
    assert {"kernel", "user"} >= set(table["mode"])


def test_plot(figure1, tmp_path):
    png = plot_offsets(figure1, tmp_path / "f.png")
    assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 20000


def test_runs_repeat_exactly(tmp_path):
    s = spec("c4", tasks=128, roi_ticks=3)
    a = runner.run(s, name="a", out=tmp_path, **QUIET)
    b = runner.run(s, name="b", out=tmp_path, **QUIET)
    assert (a / "bus_offsets.csv").read_bytes() == (b / "bus_offsets.csv").read_bytes()
    assert (a / "counters.csv").read_bytes() == (b / "counters.csv").read_bytes()


def test_eight_cpus_come_online(tmp_path):
    r = runner.run(spec("vanilla", machine="piii8", tasks=256, roi_ticks=3),
                   out=tmp_path, **QUIET)
    log = (r / "console.log").read_text()
    assert "cpus: 8 from ACPI MADT" in log
    assert all(f"cpu{i}: online" in log for i in range(1, 8))
    assert_cpus_share_the_time(load_run(r), 8)


def qemu_command_without_acpi(s, run_dir):
    # gem5's board has an MP table and no MADT: QEMU without ACPI, with one
    # socket per CPU so SeaBIOS lists them all, exercises the same path.
    from colorsim.run.engines.qemu import QemuEngine
    layout = runner.prepare(s, **QUIET)
    cmd = QemuEngine().command(s, run_dir, layout, plugin=False)
    cmd[cmd.index("pc")] = "pc,acpi=off"
    cmd[cmd.index("-smp") + 1] = f"{s.cpus},sockets={s.cpus}"
    return cmd


def test_mp_table_discovery(tmp_path):
    s = spec("vanilla", tasks=32, roi_ticks=2)
    cmd = qemu_command_without_acpi(s, tmp_path)
    p = run_child(cmd, timeout=120)      # QEMU dies with pytest
    log = (tmp_path / "console.log").read_text()
    assert p.returncode == 1, log
    assert "cpus: 4 from MP table" in log and "cpu3: online" in log


@dataclasses.dataclass(frozen=True)
class PanickingSpec(RunSpec):
    def kernel_cmdline(self, lapic_hz):
        return super().kernel_cmdline(lapic_hz) + " panic_test=1"


def test_guest_panic_is_reported_and_not_complete(tmp_path):
    s = spec("vanilla", tasks=16)
    bad = PanickingSpec(s.machine, s.variant, s.workload, timeout_s=120)
    with pytest.raises(RunError, match="panicked") as e:
        runner.run(bad, name="p", out=tmp_path, **QUIET)
    assert "panic_test requested" in str(e.value)       # the console tail
    assert not (tmp_path / "p").exists()
    assert (tmp_path / "p.failed" / "failure.txt").is_file()
    with pytest.raises(ResultsError, match="failed run"):
        load_run(tmp_path / "p.failed")


def test_hung_guest_times_out(tmp_path):
    s = dataclasses.replace(spec("vanilla", tasks=16, roi_ticks=10**9), timeout_s=4)
    with pytest.raises(RunError, match="no result after 4 s"):
        runner.run(s, name="h", out=tmp_path, **QUIET)
    assert not (tmp_path / "h").exists() and (tmp_path / "h.failed").is_dir()
    assert not list(tmp_path.glob(".*partial"))


def test_complete_runs_are_reused(tmp_path, capsys):
    s = spec("vanilla", tasks=16, roi_ticks=2)
    first = runner.run(s, name="r", out=tmp_path, **QUIET)
    mtime = (first / "config.json").stat().st_mtime
    msgs = []
    again = runner.run(s, name="r", out=tmp_path, progress=msgs.append)
    assert again == first and any("already complete" in m for m in msgs)
    assert (first / "config.json").stat().st_mtime == mtime


@pytest.mark.parametrize("argv,msg", [
    (["run", "--kernel", "c7"], "power of two"),
    (["run", "--kernel", "c32", "--cpus", "9"], "cannot run with 9"),
    (["run", "--kernel", "c2048"], "past the end of its 8192 B block"),
    (["run", "--kernel", "c128"], "leaving 2464 B of kernel stack"),
    (["run", "--machine", "vax", "--kernel", "c32"], "unknown machine"),
    (["run", "--kernel", "c32", "--l2", "384KiB"], "power of two"),
])
def test_cli_refuses_bad_input_before_running(argv, msg, capsys, tmp_path):
    assert cli_main(argv + ["--out", str(tmp_path)]) == 2
    assert msg in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_cli_without_qemu_is_refused(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("COLORSIM_QEMU", str(tmp_path / "no-qemu"))
    assert cli_main(["run", "--kernel", "c32", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "run scripts/setup.sh" in err, err
    assert not any(p.name != "no-qemu" for p in tmp_path.iterdir())


def test_cli_dry_run_prints_the_command(capsys):
    assert cli_main(["run", "--kernel", "c32", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "qemu-system-x86_64" in out and "-icount shift=3,sleep=off" in out
    assert "l2=524288:4:32" in out


def test_gem5_entry_path_on_qemu(tmp_path):
    # kernels/tools/gem5-loader does what gem5's X86 loader does (ELF64
    # segments at p_paddr, zero page at 0x90200, gem5's page tables and GDT,
    # long mode, RSP = 0) and jumps to the ELF64 entry; no ACPI, so CPUs come
    # from the MP table, as on gem5's X86Board.
    from colorsim import ROOT
    subprocess.run(["scons", "-Q", "build/tools"], cwd=ROOT, check=True,
                   capture_output=True)
    s = spec("c32", tasks=128, roi_ticks=2)
    cmd = qemu_command_without_acpi(s, tmp_path)
    k = cmd.index("-kernel") + 1
    cmd[k:k + 1] = [str(ROOT / "build/tools/gem5-loader/loader.elf"),
                    "-initrd", str(s.kernel_elf64)]
    p = run_child(cmd, timeout=120)      # QEMU dies with pytest
    text = (tmp_path / "console.log").read_text()
    assert p.returncode == 1, text
    assert "boot: gem5-zero-page" in text and "tasks=128" in text
    assert "cpus: 4 from MP table" in text and "cpu3: online" in text
    assert "roi: end" in text


def test_runs_of_other_builds_are_refused_then_forced(tmp_path):
    from colorsim.run.rundir import config_digest
    s = spec("vanilla", tasks=16, roi_ticks=2)
    d = runner.run(s, name="s", out=tmp_path, **QUIET)
    cfg = json.loads((d / "config.json").read_text())
    cfg["kernel_sha256"] = "0" * 64          # as if the kernel had changed
    cfg["config_sha256"] = config_digest(cfg)  # (and the run was made so)
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ConfigError, match="kernel image changed since.*--force"):
        runner.run(s, name="s", out=tmp_path, **QUIET)
    assert json.loads((d / "config.json").read_text())["kernel_sha256"] == "0" * 64
    runner.run(s, name="s", out=tmp_path, force=True, **QUIET)
    assert json.loads((d / "config.json").read_text())["kernel_sha256"] != "0" * 64
    cfg = json.loads((d / "config.json").read_text())
    cfg["engine_version"] = "7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)"
    cfg["config_sha256"] = config_digest(cfg)
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ConfigError, match="made by QEMU 7.2.22"):
        runner.run(s, name="s", out=tmp_path, **QUIET)


@pytest.mark.parametrize("cpus", [1, 2])
def test_small_smp_configurations(cpus, tmp_path):
    r = load_run(runner.run(spec("c8", cpus=cpus, tasks=128, roi_ticks=3),
                            out=tmp_path, **QUIET))
    log = (r.path / "console.log").read_text()
    assert f"cpus: {cpus} from ACPI MADT" in log and "roi: end" in log
    assert_cpus_share_the_time(r, cpus)
    assert offset_histogram(r).sum() > 0


def test_the_widest_coloring_the_rule_allows_runs(tmp_path):
    # c64 is the most colors whose shifted task_struct keeps 4 KiB of stack
    # with 32 B lines (colorsim/variants.py max_colors); the guest's own
    # task_selfcheck would panic if the rule were too generous.
    r = load_run(runner.run(spec("c64", tasks=128, roi_ticks=2), out=tmp_path, **QUIET))
    assert "roi: end" in (r.path / "console.log").read_text()
    assert r.layout["variant"]["colors"] == 64


L2_SIZES = ("256KiB", "512KiB", "1MiB")


@pytest.fixture(scope="module")
def figure1_runs(tmp_path_factory):
    """The README's Results runs: python3 -m colorsim figure1 --l2 SIZE
    (1024 tasks, 10 warm-up ticks, 10 measured), vanilla and c32."""
    out = tmp_path_factory.mktemp("fig1")
    runs = {}
    for l2 in L2_SIZES:
        m = get_machine("ppro4").with_l2(l2)
        for k in ("vanilla", "c32"):
            s = RunSpec(m, parse_variant(k, m), Workload(tasks=1024), timeout_s=300)
            runs[l2, k] = load_run(runner.run(s, out=out, **QUIET))
    return runs


def test_table2_shape_across_l2_sizes(figure1_runs):
    # The paper's Table 2: vanilla misses ~always in the run-queue loop;
    # 32 colors miss less and less as the L2 grows (82.7, 35.8, 8.2 %).
    ratios = {}
    for (l2, k), r in figure1_runs.items():
        c = counter_totals(r)
        ratios[l2, k] = c["rqloop_l2_read_misses"] / c["rqloop_l2_read_accesses"]
    assert all(ratios[l2, "vanilla"] > 0.98 for l2 in ("256KiB", "512KiB", "1MiB"))
    c32 = [ratios[l2, "c32"] for l2 in ("256KiB", "512KiB", "1MiB")]
    assert c32[0] > c32[1] > c32[2]
    assert c32[0] < ratios["256KiB", "vanilla"]


def test_cli_table_exports_tidy_rows(figure1, tmp_path, capsys):
    out = tmp_path / "t.csv"
    assert cli_main(["table", *(str(r.path) for r in figure1), "--what",
                     "offsets", "-o", str(out)]) == 0
    import pandas as pd
    df = pd.read_csv(out)
    assert {"run", "machine", "l2_size", "kernel", "colors", "tasks", "offset",
            "count"} <= set(df.columns)
    assert set(df["kernel"]) == {"vanilla", "c32"}
    assert cli_main(["table", str(tmp_path)]) == 2
    assert "holds no run directories" in capsys.readouterr().err


@pytest.mark.parametrize("machine", ["ppro4", "piii8"])
def test_cli_gem5_dry_run_without_gem5(machine, monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("GEM5", raising=False)
    monkeypatch.setenv("COLORSIM_GEM5_CACHE", str(tmp_path / "no-build"))
    assert cli_main(["run", "--machine", machine, "--kernel", "c32",
                     "--engine", "gem5", "--dry-run"]) == 0
    out = capsys.readouterr().out
    m = get_machine(machine)
    assert "$GEM5" in out and "configs/gem5/run_fs.py" in out
    assert f"{m.processor.cpus} x timing" in out
    assert f"{m.caches.l2.size // 1024}KiB" in out or f"{m.caches.l2.size >> 20}MiB" in out
    assert "prefetcher=none" in out and "0xfe0" in out


def test_cli_gem5_without_gem5_is_refused(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("GEM5", raising=False)
    monkeypatch.setenv("COLORSIM_GEM5_CACHE", str(tmp_path / "no-build"))
    assert cli_main(["run", "--kernel", "c32", "--engine", "gem5",
                     "--out", str(tmp_path)]) == 2
    assert "GEM5" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_figure1_runs_record_the_engine_version(figure1_runs):
    from colorsim.run.engines.qemu import qemu_version
    for r in figure1_runs.values():
        assert r.config["engine_version"] == qemu_version()
        assert r.config["engine_version"].startswith("10.")


def test_a_run_does_not_depend_on_where_the_checkout_lives(tmp_path, monkeypatch):
    """The same build copied to two directories whose paths differ in
    length gives byte-identical results.  (QEMU passes the -kernel path to
    the guest in the multiboot command line: with an absolute path a
    longer checkout path meant a few more boot instructions and other
    numbers.)  And the images carry no checkout path."""
    import shutil
    from colorsim import ROOT
    from colorsim.run.engines.qemu import QemuEngine
    s = spec("vanilla", tasks=128, warmup_ticks=2, roi_ticks=3)
    layout = runner.prepare(s, **QUIET)
    for f in ("kernel.elf", "kernel.mb.elf"):
        assert str(ROOT).encode() not in (s.kernel_dir / f).read_bytes(), f
    # nor does the plugin, whose SHA-256 is part of every run's id: the
    # same sources give the same run ids in every checkout
    from colorsim.run.build import PLUGIN
    assert str(ROOT).encode() not in PLUGIN.read_bytes()
    outs = []
    for where in ("k", "a-much-longer-directory-name/kernel-copy"):
        kdir = tmp_path / where
        shutil.copytree(s.kernel_dir, kdir)
        monkeypatch.setattr(RunSpec, "kernel_dir", property(lambda self, d=kdir: d))
        run_dir = tmp_path / f"run-{len(outs)}"
        run_dir.mkdir()
        cmd = QemuEngine().command(s, run_dir, layout)
        assert str(kdir) not in " ".join(cmd[3:]), cmd     # only env -C names it
        p = subprocess.run(cmd, timeout=120, capture_output=True)
        assert p.returncode == 1, p.stderr[-500:]
        outs.append(run_dir)
    for f in ("counters.csv", "bus_offsets.csv"):
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes(), f
