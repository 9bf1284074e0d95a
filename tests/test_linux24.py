"""Real Linux 2.4 from the user's source tree (colorsim/describe/linux24.py, colorsim/run/linux24.py).

The tests marked requires_linux24 build from $LINUX24_SRC and skip by
name without it (CI has no Linux source); the others check the wrapper's
own logic on inputs they make."""

import subprocess

import pytest

from colorsim import BUILD, ROOT

from colorsim.describe import linux24 as described
from colorsim.run import linux24
from colorsim.errors import ConfigError
from colorsim.describe.machine import get_machine


def _tree(tmp_path, version, extra):
    (tmp_path / "arch" / "x86_64").mkdir(parents=True)
    (tmp_path / "Makefile").write_text(
        f"VERSION = 2\nPATCHLEVEL = 4\nSUBLEVEL = {version}\n"
        f"EXTRAVERSION = {extra}\nNAME=x\n")
    return tmp_path


def test_other_versions_are_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("LINUX24_SRC", str(_tree(tmp_path, 4, "")))
    with pytest.raises(ConfigError) as e:
        described.source_tree()
    assert "is Linux 2.4.4" in str(e.value) and "2.4.37.x" in str(e.value)
    assert "\n" not in str(e.value)


def test_2_4_37_x_is_accepted(tmp_path, monkeypatch):
    monkeypatch.setenv("LINUX24_SRC", str(_tree(tmp_path, 37, ".11")))
    assert described.source_tree() == tmp_path.resolve()


def test_unset_source_is_one_clear_line(monkeypatch):
    monkeypatch.delenv("LINUX24_SRC", raising=False)
    with pytest.raises(ConfigError, match="LINUX24_SRC is not set"):
        described.source_tree()


SIBLING = """
ffffffff80120000 <sys_foo>:
ffffffff80120000:	mov    %rdi,%rax
ffffffff80120003:	jmp    ffffffff80120040 <do_foo>

ffffffff80120010 <sys_bar>:
ffffffff80120010:	test   %rdi,%rdi
ffffffff80120013:	jne    ffffffff80120018 <sys_bar+0x8>
ffffffff80120015:	jmp    ffffffff80120018 <sys_bar+0x8>
ffffffff80120018:	ret
ffffffff80120019:	ud2
ffffffff8012001b:	jmp    ffffffff7fa25912 <_text-0x6da6ee>
ffffffff8012001d:	ud2
ffffffff8012001f:	jmp    830370f9 <VM_MASK+0x830170f9>

ffffffff80120040 <do_foo>:
ffffffff80120040:	jmp    ffffffff80120010 <sys_bar>
"""


def test_tail_call_check_finds_sys_sibling_calls_only():
    # sys_foo's jump into do_foo is a sibling call; sys_bar's jumps stay
    # inside sys_bar; do_foo is not a system call.
    assert linux24.sys_tail_calls(SIBLING) == ["sys_foo -> do_foo"]


def test_coloring_follows_eq1():
    b = described.variant_for(get_machine("ppro4"), "c32")   # 512 KiB 4-way
    assert (b.way_bits, b.color_shift, b.color_mask) == (17, 12, 0x3e0)
    assert b.color_offset(0x3f2000) == 0x3e0
    assert b.color_offset(0x12000) == 0x0 and b.color_offset(0x20000) == 0x20
    v = described.variant_for(get_machine("ppro4"), "vanilla")
    assert v.patches == [described.PATCHES / described.BUILD_FIXES,
                         described.PATCHES / described.REPRODUCIBLE,
                         described.PATCHES / described.XAPIC]
    with pytest.raises(ConfigError, match="power of two"):
        described.variant_for(get_machine("ppro4"), "c12")


@pytest.mark.requires_linux24
def test_our_patches_apply_to_the_users_tree(tmp_path):
    """Every x86_64 patch applies, in the order a build applies them (the
    client CPUs' patches build on one another), to a copy of the tree."""
    from colorsim.describe.variants import parse_variant
    v = parse_variant("linux24:c32", get_machine("ppro4")).for_run(True, client_cpus=1)
    assert set(v.patches) == set(described.PATCHES.glob("*.patch"))   # none untried
    tree = tmp_path / "tree"
    linux24._copy_tree(described.source_tree(), tree, "x86_64")
    linux24.apply_patches(tree, v.patches)
    assert "colorsim_dma_bell" in (tree / "drivers/net/loopback.c").read_text()


@pytest.fixture(scope="module")
def built():
    out = {}
    for k in ("vanilla", "c32"):
        b = described.variant_for(get_machine("ppro4"), k)
        linux24.build(b, progress=lambda *_: None)
        out[k] = b
    return out


def _symbols(b):
    syms = {}
    for line in (b.dir / "System.map").read_text().splitlines():
        addr, _, name = line.split()
        syms[name] = int(addr, 16)
    return syms


@pytest.mark.requires_linux24
def test_build_has_no_sys_tail_calls(built):
    for b in built.values():
        assert b.bzimage.is_file()
        assert linux24.sys_tail_calls(linux24.disassemble(b.dir / "vmlinux")) == []


@pytest.mark.requires_linux24
def test_init_task_sits_at_its_color(built):
    for k, b in built.items():
        init = _symbols(b)["init_task_union"]
        block = init & ~(linux24.THREAD_SIZE - 1)
        want = b.color_offset(block) if b.colors > 1 else 0
        assert init - block == want, k
    assert init - block != 0     # c32's init block has a nonzero color


def _boot(b, machine, out, tasks=16):
    """One deterministic boot of ``b`` with busmon; returns the run dir."""
    from colorsim.run.build import PLUGIN, ensure_built
    from colorsim.run.engines.qemu import firmware_dirs, qemu_binary
    ensure_built([], plugin=True, progress=lambda *_: None)
    out.mkdir()
    rd = linux24.initrd(progress=lambda *_: None)
    c = machine.caches
    plugin = (f"{PLUGIN},out={out},l1d={c.l1d.size}:{c.l1d.assoc}:{c.l1d.line},"
              f"l2={c.l2.size}:{c.l2.assoc}:{c.l2.line},cpus={machine.processor.cpus},"
              f"user=0x0-0x800000000000")
    q = qemu_binary()
    cmd = ["env", "-C", str(b.dir), str(q)]
    for d in firmware_dirs(q):
        cmd += ["-L", str(d)]
    cmd += linux24.qemu_args(b, machine, rd, out / "console.log",
                             described.cmdline(tasks, 2000, 5, 5))
    cmd += ["-plugin", plugin]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, (r.returncode, r.stderr[-500:])   # debug-exit 0
    return out


@pytest.mark.requires_linux24
def test_boot_is_deterministic_with_all_cpus(built, tmp_path):
    """Two boots of the vanilla image under -icount with busmon: every CPU
    comes up, init marks its region, and the runs repeat byte for byte."""
    m = get_machine("ppro4")
    runs = [_boot(built["vanilla"], m, tmp_path / f"r{i}") for i in (1, 2)]
    text = (runs[0] / "console.log").read_text()
    assert "Total of 4 processors activated" in text
    assert "roi: exit requested by pid 1" in text
    for f in ("console.log", "stats.txt", "bus_offsets.csv", "counters.csv"):
        assert (runs[0] / f).read_bytes() == (runs[1] / f).read_bytes(), f


def test_linux24_kernels_are_a_family_on_the_command_line():
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    m = get_machine("ppro4")
    v = parse_variant("linux24:c32", m)
    assert described.is_linux24(v) and v.name == "linux24-c32"
    assert RunSpec(m, v).kernel_dir == BUILD / "linux24" / "ppro4-c32-b17"
    assert RunSpec(m, v, engine="gem5").engine == "gem5"   # its tasks workload
    with pytest.raises(ConfigError, match="no other --workload"):
        RunSpec(m, v, Workload(program="/bin/roitest"))
    with pytest.raises(ConfigError, match="power of two"):
        parse_variant("linux24:c3", m)
    with pytest.raises(ConfigError, match="unknown linux24 kernel"):
        parse_variant("linux24:mq", m)


FAKE_SCHED = """\
#define can_schedule(p,cpu) \\
	((p)->cpus_runnable & (1UL << cpu))
static inline int goodness(struct task_struct * p)
{
	return p->counter;
}
void schedule(void)
{
	list_for_each(tmp, &runqueue_head) {
		p = list_entry(tmp, struct task_struct, run_list);
	}
	done();
}
"""

DECODED = """\
sched.c                                        8  0x1000               x
sched.c                                        9  0x1004               x
sched.c                                       10  0x1010               x
sched.c                                        5  0x1020               x
list.h                                        40  0x1028               x
sched.c                                       12  0x1030               x
"""


def test_loop_pcs_come_from_the_walks_lines():
    lines = linux24.walk_lines(FAKE_SCHED)
    assert lines == {1, 2, 3, 4, 5, 6, 9, 10, 11}
    # line 8 (schedule's brace) and 12 (done) are not the walk; list.h's
    # row at 0x1028 breaks the range
    assert linux24.loop_ranges(DECODED, lines, 0x1000, 0x1040) == [
        [0x1004, 0x1028]]


@pytest.mark.requires_linux24
def test_layout_names_the_walk_and_the_lock(built):
    import json
    for k, b in built.items():
        linux24.prepare(b, progress=lambda *_: None)
        lay = json.loads((b.dir / "layout.json").read_text())
        lo, hi = lay["ranges"]["schedule"]
        rq = lay["ranges"]["rqloop"]
        assert 1 <= len(rq) <= 16 and all(lo <= a < z <= hi for a, z in rq)
        assert lay["symbols"]["runqueue_lock"]["addr"] == _symbols(b)["runqueue_lock"]
        hot = lay["scheduler_hot"]
        assert hot["first_touched_offset"] == lay["task_struct"]["fields"]["run_list"]["offset"]
        assert hot["line_offset"] <= hot["first_touched_offset"] < \
            hot["line_offset"] + hot["lines_per_task"] * 32
        assert lay["variant"]["colors"] == b.colors


@pytest.mark.slow
@pytest.mark.requires_linux24
def test_measured_c32_below_vanilla(tmp_path):
    """Figure 1 on real Linux: the vanilla peak is on a word the walk reads;
    c32 spreads the hot lines: fewer bus transactions on them and fewer
    L2 misses in the run-queue loop."""
    from colorsim.results.rundata import load_run, offset_summary
    from colorsim.run import runner
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    m = get_machine("ppro4")
    runs = []
    for k in ("linux24:vanilla", "linux24:c32"):
        spec = RunSpec(m, parse_variant(k, m), Workload(tasks=128, warmup_ticks=5,
                                                        roi_ticks=5))
        runs.append(load_run(runner.run(spec, out=tmp_path, progress=lambda *_: None)))
    df = offset_summary(runs)
    v, c = df.iloc[0], df.iloc[1]
    fields = runs[0].layout["task_struct"]["fields"]
    walk = runs[0].layout["scheduler_hot"]["fields_read_per_task"]
    assert any(fields[f]["offset"] <= v.peak_offset < fields[f]["offset"] + fields[f]["size"]
               for f in walk), hex(v.peak_offset)
    assert c.colored_lines_sum < v.colored_lines_sum / 4
    assert c.rqloop_l2_miss_ratio < v.rqloop_l2_miss_ratio / 2
    assert v.rqloop_l2_miss_ratio > 0.9


@pytest.mark.slow
@pytest.mark.requires_linux24
def test_two_builds_give_the_same_image(tmp_path, monkeypatch):
    """The same tree and kernel built twice, at different times and in
    different build directories, give byte-identical images: no date, build
    count, user, host or directory in them (patch 0003), so the kernel's
    hash in a run's identity names the tree and the kernel alone."""
    import hashlib
    images = []
    for i in (1, 2):
        monkeypatch.setattr(described, "BUILD", tmp_path / f"build{i}")
        b = described.variant_for(get_machine("ppro4"), "vanilla")
        linux24.build(b, progress=lambda *_: None)
        images.append({f: hashlib.sha256((b.dir / f).read_bytes()).hexdigest()
                       for f in ("bzImage", "vmlinux")})
    assert images[0] == images[1]


@pytest.mark.slow
@pytest.mark.requires_linux24
def test_piii8_boots_eight_cpus_deterministically(tmp_path):
    m = get_machine("piii8")
    b = described.variant_for(m, "vanilla")
    linux24.build(b, progress=lambda *_: None)
    runs = [_boot(b, m, tmp_path / f"r{i}") for i in (1, 2)]
    assert "Total of 8 processors activated" in (runs[0] / "console.log").read_text()
    for f in ("console.log", "stats.txt", "bus_offsets.csv"):
        assert (runs[0] / f).read_bytes() == (runs[1] / f).read_bytes(), f


def _setup_packages():
    """The Debian packages scripts/setup.sh installs (its packages=(...))."""
    import re
    from colorsim import ROOT
    text = (ROOT / "scripts" / "setup.sh").read_text()
    m = re.search(r"^packages=\((.*?)\)", text, re.S | re.M)
    return set(m.group(1).split())


def test_setup_installs_what_the_linux24_path_runs():
    """Every program the wrapper runs comes from a package set-up installs,
    so a fresh machine that ran scripts/setup.sh can build a user's tree."""
    pkgs = _setup_packages()
    assert {"make", "patch", "gdb", "e2fsprogs"} <= pkgs
    assert set(described.TOOLS.values()) <= pkgs, \
        set(described.TOOLS.values()) - pkgs


def test_a_missing_tool_names_its_package(monkeypatch):
    import shutil
    real = shutil.which
    monkeypatch.setattr(shutil, "which",
                        lambda t, *a, **k: None if t == "gdb" else real(t, *a, **k))
    with pytest.raises(ConfigError) as e:
        described.check_tools(["make", "gdb"])
    assert "apt-get install gdb" in str(e.value) and "\n" not in str(e.value)


SWEEP = """
[defaults]
engine = "qemu"
warmup = 2
roi = 2
burst = 2000
timeout = 600
seeds = [1]

[l24]
title = "the testbed and real Linux 2.4"
needs = ["counting"]
outputs.fig1 = { needs = ["counting"], what = "offsets" }
[l24.grid]
machine = "ppro4"
l2 = ["512KiB"]
cpus = [4]
kernels = ["vanilla", "linux24:vanilla", "linux24:c32"]
workload = "synthetic"
tasks = [16]
"""


@pytest.fixture
def sweep_file(tmp_path, monkeypatch):
    f = tmp_path / "experiments.toml"
    f.write_text(SWEEP)
    monkeypatch.setenv("COLORSIM_EXPERIMENTS", str(f))
    return f


def test_sweep_without_source_marks_linux24_points_not_runnable(sweep_file,
                                                                tmp_path,
                                                                monkeypatch):
    """A linux24 kernel is a value of the kernels axis; without the user's
    tree its points are recorded as lacking it, not built or run."""
    from colorsim.orchestrate.sweep import dry_run, plan
    from colorsim.describe.experiments import load_experiments
    monkeypatch.delenv("LINUX24_SRC", raising=False)
    lines = []
    c = dry_run("l24", jobs=1, root=tmp_path / "runs", log=lines.append)
    assert c["lacks"] == 2 and c["run"] + c["unbuilt"] == 1, lines
    _, records = plan(list(load_experiments().values()), False,
                      tmp_path / "runs", progress=lambda *_: None, build=False)
    lacks = {r["kernel"]: r["lacks"] for r in records["l24"]}
    assert lacks == {"vanilla": [], "linux24:vanilla": ["linux24"],
                     "linux24:c32": ["linux24"]}
    assert not (tmp_path / "runs").exists()


@pytest.mark.requires_linux24
def test_sweep_names_linux24_points_by_the_users_tree(built, sweep_file,
                                                      tmp_path):
    """With the tree, the points get run ids that cover the tree's content
    hash (source.json of the build), so another tree is another run."""
    from colorsim.orchestrate.sweep import plan
    from colorsim.describe.experiments import load_experiments
    from colorsim.run.identity import run_id
    from colorsim.run.runner import identity
    tasks, records = plan(list(load_experiments().values()), False,
                          tmp_path / "runs", progress=lambda *_: None)
    ids = {r["kernel"]: r["run_id"] for r in records["l24"]}
    assert all(ids.values()) and len(set(ids.values())) == 3
    src = described.source_tree()
    want = linux24.source_sha256(src)
    assert linux24.source_record(built["c32"])["sha256"] == want
    p = next(t for t in tasks.values() if t.params["kernel"] == "linux24:c32")
    from colorsim.describe.experiments import Point
    spec = Point(experiment="", scale="", lacks=(), **p.params).spec()
    ident = identity(spec)
    assert ident["linux24_source_sha256"] == want
    assert run_id({**spec.to_dict(), **ident}) == p.run_id
    other = {**ident, "linux24_source_sha256": "0" * 64}
    assert run_id({**spec.to_dict(), **other}) != p.run_id


def test_source_hash_covers_the_files_the_build_reads(tmp_path):
    t = _tree(tmp_path / "t", 37, ".11")
    (t / "kernel").mkdir()
    (t / "kernel" / "sched.c").write_text("a\n")
    (t / "arch" / "i386").mkdir()
    (t / "arch" / "i386" / "x.c").write_text("i386\n")
    h = linux24.source_sha256(t)
    f = linux24.source_fingerprint(t)
    (t / "arch" / "i386" / "x.c").write_text("other arch\n")
    assert linux24.source_sha256(t) == h          # not copied, not covered
    (t / "kernel" / "sched.c").write_text("b\n")
    assert linux24.source_sha256(t) != h
    assert linux24.source_fingerprint(t) != f


def _cli(*args, env=None, module="colorsim"):
    import os
    import sys
    from colorsim import ROOT
    e = dict(os.environ, **(env or {}))
    if env and env.get("LINUX24_SRC") is None:
        e.pop("LINUX24_SRC", None)
    return subprocess.run([sys.executable, "-m", module, *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=7200,
                          env={k: v for k, v in e.items() if v is not None})


def _docs(*args, env=None):
    """The maintainer's command line (it writes and checks the docs' tables)."""
    return _cli(*args, env=env, module="colorsim.maintain")


def test_linux24_table_without_source_runs_nothing(tmp_path):
    p = _docs("linux24-table", "--run", "--runs", tmp_path / "r",
             env={"LINUX24_SRC": None})
    assert p.returncode == 2 and "LINUX24_SRC is not set" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert not any((tmp_path / "r").glob("ppro4-*")), "no testbed run either"


def test_linux24_table_without_runs_says_how_to_make_them(tmp_path):
    p = _docs("linux24-table", "--runs", tmp_path / "empty")
    assert p.returncode == 2 and "linux24-table --run" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_linux24_table_renders_both_kernels_and_the_fields():
    from colorsim.orchestrate import linux24table as lt
    pair = {"peak": 0x78, "c32_peak_share": 0.1, "colored_change": -0.5,
            "miss_vanilla": 0.99, "miss_c32": 0.2}
    rows = [{"l2": "512KiB", "linux": pair, "i386": {**pair, "peak": 0x30,
                                                      "colored_change": -0.8},
             "testbed": {**pair, "peak": 0x30}, "paper_peak": 0x30,
             "paper_colored": -33.3, "paper_miss": (99.6, 35.8)}]
    walk = lambda peak, field, first, lines: {
        "peak": peak, "peak_field": field, "first": first, "lines": lines}
    f = {"fields": [("has_cpu", {"offset": 0x30, "size": 4}, "cpus_runnable",
                     {"offset": 0x34, "size": 4}, {"offset": 0x58, "size": 8})],
         "testbed_first": "has_cpu",
         "x86_64": walk(0x78, "run_list", "run_list",
                        [(0x40, ["counter", "policy"], 0.485),
                         (0x60, ["cpus_runnable", "run_list"], 0.488)]),
         "i386": walk(0x30, "processor", "run_list",
                      [(0x20, ["counter", "run_list"], 0.92)])}
    text = lt.render(rows, f)
    assert ("| 512 KiB | 0x030 / 0x078 / 0x030 / 0x030 "
            "| -80.0 % / -50.0 % / -50.0 % / -33.3 % |") in text
    assert "| `has_cpu` | 0x030, 4 B | `cpus_runnable` | 0x034, 4 B | 0x058, 8 B |" in text
    assert "x86_64's vanilla peak (512 KiB): 0x078, in `run_list`" in text
    assert "i386's vanilla peak (512 KiB): 0x030, in `processor`" in text
    # every line each walk reads is named, with vanilla's share there
    assert ("0x040 (`counter`, `policy`): 48.5 %; 0x060 (`cpus_runnable`, "
            "`run_list`): 48.8 %." in text)
    assert "0x020 (`counter`, `run_list`): 92.0 %." in text


def test_readme_linux24_table_is_the_recorded_runs(tmp_path):
    """The real-Linux table (docs/results.md) is what the command computes from the
    runs it was made from, kept in recorded/linux24 (the six testbed and
    twelve Linux runs, six per architecture, on the PPro, beside the engines
    table's runs): a block no
    run gives fails without a Linux tree.  (The slow test below makes the
    runs afresh from the user's tree.)"""
    import shutil
    from colorsim import ROOT
    runs = tmp_path / "r"
    shutil.copytree(ROOT / "recorded" / "linux24", runs,
                    ignore=shutil.ignore_patterns("README.md"))
    made = [d.name for d in runs.iterdir() if (d / "config.json").is_file()]
    assert sum("-qemu-" in n and n.startswith("ppro4-") for n in made) == 18
    p = _cli("catalog", "rebuild", "--runs", runs, env={"LINUX24_SRC": None})
    assert p.returncode == 0, p.stderr
    p = _docs("linux24-table", "--runs", runs, "--check", ROOT / "docs" / "results.md",
             env={"LINUX24_SRC": None})
    assert p.returncode == 0, p.stderr
    # the HTML report of that catalog has the same table as a section
    p = _cli("figures", "all", "--runs", runs, "--out", tmp_path / "fig",
             env={"LINUX24_SRC": None})
    assert p.returncode == 0, p.stderr
    page = (tmp_path / "fig" / "report.html").read_text()
    assert "Real Linux 2.4 beside the testbed" in page and "linux24.png" in page
    from colorsim.report.linux24 import section
    from colorsim.results.catalog import Catalog
    (it,), used = section(Catalog(runs), tmp_path)
    assert len(used) == 18 and f"The {len(used)} runs behind this report" in page
    pairs = it.tables[0][1]
    block = (ROOT / "docs" / "results.md").read_text().split("<!-- linux24:begin -->")[1]
    for l2, size in (("256KiB", "256 KiB"), ("512KiB", "512 KiB"), ("1MiB", "1 MiB")):
        row = [l for l in block.splitlines() if l.startswith(f"| {size} |")][0]
        got = pairs[(pairs["L2"] == l2) & (pairs["kernel"] == "Linux 2.4.37 i386")].iloc[0]
        assert (f"{got['walk L2 miss, vanilla (%)']:.1f} % / "
                f"{got['walk L2 miss, c32 (%)']:.1f} %") in row, (row, got)


@pytest.mark.slow
@pytest.mark.requires_linux24
def test_readme_linux24_table_is_the_catalogs(tmp_path):
    """The real-Linux table (docs/results.md) is what the command computes from
    fresh runs (the six testbed and twelve Linux runs)."""
    from colorsim import ROOT
    p = _docs("linux24-table", "--run", "--runs", tmp_path / "r")
    assert p.returncode == 0, p.stderr[-2000:]
    p = _docs("linux24-table", "--runs", tmp_path / "r", "--check",
             ROOT / "docs" / "results.md")
    assert p.returncode == 0, p.stderr


def _fake_layout():
    return {"ranges": {"rqloop": [[0x1000, 0x1040]], "user": [[0, 0x800000000000]],
                       "schedule": [0x1000, 0x2000]},
            "symbols": {"runqueue_lock": {"addr": 0xffffffff803ee480},
                        "compute": {"addr": 0x4013a0}},
            "lockmeter": {"addr": 0xffffffff803ee480, "stride": 4, "count": 1,
                          "bytes": 1}}


def test_timing_meters_linux24s_byte_wide_runqueue_lock():
    """--timing on a linux24 kernel: the lockmeter on runqueue_lock as a
    byte-wide lock (2.4's x86_64 lock decb / movb $1), units of work at
    init's compute(); the clocks are published only where the layout says
    (a --timing image's, below)."""
    from pathlib import Path
    from colorsim.describe.runspec import RunSpec
    from colorsim.describe.variants import parse_variant
    from colorsim.run.engines.qemu import QemuEngine
    m = get_machine("ppro4")
    spec = RunSpec(m, parse_variant("linux24:c32", m), timing=True)
    args = QemuEngine().plugin_args(spec, Path("/r"), _fake_layout()).split(",")
    assert "lock=0xffffffff803ee480" in args and "lockbytes=1" in args
    assert "unit=0x4013a0" in args
    assert not any(a.startswith(("publish=", "free=")) for a in args)
    assert any(a.startswith("timing=") for a in args)


def test_a_timing_run_boots_the_modelled_time_image():
    """--timing on a linux24 kernel boots its own image (patch 0004 on
    top, its own build directory), tells it the machine's clock and
    quantum, and has busmon publish the clocks at the physical address of
    the image's colorsim_clock and treat colorsim_timing_check as free; a
    counting run's image, variant and id are what they were."""
    from pathlib import Path
    from colorsim.describe.runspec import RunSpec
    from colorsim.describe.variants import parse_variant
    from colorsim.run.engines.qemu import QemuEngine
    m = get_machine("ppro4")
    counted = RunSpec(m, parse_variant("linux24:c32", m))
    timed = RunSpec(m, parse_variant("linux24:c32", m), timing=True)
    assert not counted.variant.timing and "timing" not in counted.to_dict()["variant"]
    assert described.MODELLED_TIME not in [p.name for p in counted.variant.patches]
    assert timed.variant.timing and timed.to_dict()["variant"]["timing"] is True
    assert timed.variant.patches[-1].name == described.MODELLED_TIME
    assert timed.kernel_dir.name == "ppro4-c32-b17-timing" != counted.kernel_dir.name
    hz = m.processor.clock_hz
    assert f" timing_hz={hz} timing_quantum=" in timed.kernel_cmdline(0)
    assert "timing_hz" not in counted.kernel_cmdline(0)
    syms = {"colorsim_clock": {"addr": 0xffffffff80345000, "size": 528},
            "colorsim_timing_check": {"addr": 0xffffffff80110000, "size": 0x60}}
    lay = {**_fake_layout(), "timing": linux24.timing_layout(syms, linux24.START_KERNEL_MAP)}
    args = QemuEngine().plugin_args(timed, Path("/r"), lay).split(",")
    assert "publish=0x345000" in args
    assert "free=0xffffffff80110000-0xffffffff80110060" in args
    # an image whose array ends at the floor is refused: the monitor's
    # machine time would land on the tick length after it
    short = {**syms, "colorsim_clock": {**syms["colorsim_clock"], "size": 520}}
    lay["timing"] = linux24.timing_layout(short, linux24.START_KERNEL_MAP)
    with pytest.raises(ConfigError, match="holds 65 clock slots"):
        QemuEngine().plugin_args(timed, Path("/r"), lay)
    with pytest.raises(linux24.RunError, match="patch 0004"):
        linux24.timing_layout({"colorsim_clock": syms["colorsim_clock"]},
                              linux24.START_KERNEL_MAP)


@pytest.mark.slow
@pytest.mark.requires_linux24
def test_linux24_timing_meters_runqueue_lock_repeatably(tmp_path):
    """Two --timing runs of linux24:c32: the lockmeter sees 2.4's own
    runqueue_lock taken and contended, and the runs repeat byte for byte,
    their consoles too (init prints nothing once it has asked QEMU to stop,
    which happens a host-dependent moment later)."""
    import json
    from colorsim.run import runner
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    m = get_machine("ppro4")
    spec = RunSpec(m, parse_variant("linux24:c32", m),
                   Workload(tasks=32, warmup_ticks=3, roi_ticks=3), timing=True)
    runs = [runner.run(spec, name=f"t{i}", out=tmp_path, progress=lambda *_: None)
            for i in (1, 2)]
    lay = json.loads((runs[0] / "layout.json").read_text())
    bm = json.loads((runs[0] / "busmon.json").read_text())
    assert int(bm["lock"], 16) == _symbols(spec.variant)["runqueue_lock"]
    assert bm["lock_bytes"] == 1 and lay["lockmeter"]["bytes"] == 1
    lock = bm["locks"][0]
    assert lock["acquisitions"] > 100 and 0 < lock["contended"] < lock["acquisitions"]
    assert lock["hold_cycles"] > 0 and lock["hold_overlaps"] == 0
    for f in ("stats.txt", "counters.csv", "bus_offsets.csv", "busmon.json",
              "console.log"):
        a, b = ((r / f).read_bytes() for r in runs)
        if f == "busmon.json":      # it names its own output folder
            a, b = (x.replace(f"/.{r.name}.partial".encode(), b"/R")
                    for x, r in zip((a, b), runs))
        assert a == b, f


def test_a_ram_disk_made_twice_is_the_same_bytes(tmp_path):
    """The same files staged at another moment (another change time, which
    no system call can set) pack into the same image, so the root file
    system's hash, part of every run's identity, does not move."""
    import hashlib
    import time
    from colorsim.run.linux24 import pack_ext2
    digests = []
    for i in (1, 2):
        stage = tmp_path / f"s{i}"
        (stage / "bin").mkdir(parents=True)
        (stage / "bin" / "web").write_bytes(b"\x7fELF" + bytes(100))
        (stage / "init").write_text("init\n")
        out = tmp_path / f"i{i}.ext2"
        pack_ext2(stage, out, 256)
        digests.append(hashlib.sha256(out.read_bytes()).hexdigest())
        time.sleep(1.1)                 # the next stage's ctimes differ
    assert digests[0] == digests[1]


def _elapsed_cycles(run) -> int:
    """busmon's modelled cycles of the region, idle included."""
    for line in (run / "counters.csv").read_text().splitlines():
        f = line.split(",")
        if f[1:4] == ["-1", "all", "elapsed_cycles"]:
            return int(f[4])
    raise AssertionError(f"no elapsed_cycles in {run}/counters.csv")


@pytest.mark.slow
@pytest.mark.requires_linux24
def test_linux24_ticks_follow_modelled_time(tmp_path):
    """--timing: init sleeps the region's ticks (nanosleep on 2.4's jiffies
    timers); with patch 0004 a tick is a modelled 1/HZ, so the region's
    elapsed modelled time is its ticks' worth of the machine's clock
    (nanosleep rounds up by one tick; init's wake-ups wait for a CPU: few
    tasks, so that wait is short against a tick).  Ticks on QEMU's own
    time (-icount, shared by the CPUs in turn) would make the region a
    fraction of that in modelled cycles on ppro4's 200 MHz."""
    import json
    from colorsim.run import runner
    from colorsim.describe.runspec import HZ, RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    m = get_machine("ppro4")
    roi = 5
    spec = RunSpec(m, parse_variant("linux24:vanilla", m),
                   Workload(tasks=32, warmup_ticks=3, roi_ticks=roi), timing=True)
    run = runner.run(spec, out=tmp_path, progress=lambda *_: None)
    tick = m.processor.clock_hz // HZ
    assert roi * tick <= _elapsed_cycles(run) < (roi + 2) * tick
    assert json.loads((run / "busmon.json").read_text())["publish_errors"] == 0


def test_the_build_entry_point_refuses_and_leaves_nothing_half_made(tmp_path, monkeypatch):
    """`python3 -m colorsim.run.linux24 build` as the docs give it: without
    a tree one line and exit 2; with a tree our patches do not fit, the
    attempt is kept as <build>.failed and no half-made build is left where
    runs look for one.  (It once stopped with a NameError, its __main__
    block above definitions it needs.)"""
    import subprocess
    import sys
    from colorsim import ROOT
    from colorsim.describe import linux24 as d
    from colorsim.run import linux24 as r
    env = {k: v for k, v in __import__("os").environ.items() if k != "LINUX24_SRC"}
    p = subprocess.run([sys.executable, "-m", "colorsim.run.linux24", "build",
                        "--machine", "ppro4", "--kernel", "vanilla"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "LINUX24_SRC is not set" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    tree = tmp_path / "linux-2.4.37.11"
    (tree / "arch" / "x86_64").mkdir(parents=True)
    (tree / "Makefile").write_text("VERSION = 2\nPATCHLEVEL = 4\nSUBLEVEL = 37\n"
                                   "EXTRAVERSION = .11\n")
    monkeypatch.setattr(d, "BUILD", tmp_path / "build")
    monkeypatch.setenv("LINUX24_SRC", str(tree))
    monkeypatch.setattr(r, "check_tools", lambda tools: None)
    assert r.main(["build", "--machine", "ppro4", "--kernel", "vanilla"]) == 2
    built = tmp_path / "build" / "linux24"
    assert sorted(p.name for p in built.iterdir()) == ["ppro4-vanilla.failed"]



def test_one_process_at_a_time_builds_linux24_images():
    """Two runs needing the same image (a sweep's two workers) must not
    build it into one folder at once: the second waits, and says so."""
    import sys
    import time
    hold = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from colorsim.run.build import build_lock\n"
         "with build_lock('linux24'):\n"
         "    print('held', flush=True); time.sleep(1.5)\n"],
        stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert hold.stdout.readline().strip() == "held"
    from colorsim.run.build import build_lock
    said, t0 = [], time.monotonic()
    with build_lock("linux24", said.append):
        waited = time.monotonic() - t0
    hold.wait(timeout=30)
    assert said == ["build: waiting for another process's linux24 build"]
    assert waited > 0.5 and hold.returncode == 0
