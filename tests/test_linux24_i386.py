"""Real Linux 2.4 for i386, the paper's architecture (``linux24-i386:``):
its own patches and configs, built from the user's tree, run on QEMU.

The tests marked requires_linux24 build from $LINUX24_SRC and skip by
name without it; the others check how the i386 kernels are described."""

import json
import re

import pytest

from colorsim import BUILD

from colorsim.describe import linux24 as described
from colorsim.describe.machine import get_machine
from colorsim.describe.runspec import RunSpec, Workload
from colorsim.describe.variants import parse_variant
from colorsim.errors import ConfigError
from colorsim.run import linux24


def test_i386_kernels_are_named_and_built_apart_from_x86_64():
    m = get_machine("ppro4")
    v, x = parse_variant("linux24-i386:c32", m), parse_variant("linux24:c32", m)
    assert described.is_linux24(v) and v.is_i386 and not x.is_i386
    assert v.name == "linux24-i386-c32" and v.build_id == "i386-ppro4-c32-b17"
    assert v.dir != x.dir and v.rootfs_image("") != x.rootfs_image("")
    assert all(p.parent.name == "i386" and p.is_file() for p in v.patches)
    assert v.config_file.is_file() and v.config_file != x.config_file
    args = v.make_args()
    assert "ARCH=i386" in args and any(a.startswith("CC=gcc -m32 ") for a in args)
    assert "COLORSIM_COLOR_SHIFT=12" in args        # eq. (1) as on x86_64
    # the x86_64 runs keep their identity: no arch in it
    assert "arch" not in RunSpec(m, x).to_dict()["variant"]
    assert RunSpec(m, v).to_dict()["variant"]["arch"] == "i386"
    assert RunSpec(m, v).default_name() != RunSpec(m, x).default_name()


def test_each_config_names_its_machines_cpu_and_cpu_count():
    for machine, cpu, cpus in (("ppro4", "M686", 4), ("piii8", "MPENTIUMIII", 8)):
        v = parse_variant("linux24-i386:vanilla", get_machine(machine))
        text = v.config_file.read_text()
        assert f"CONFIG_{cpu}=y" in text and f"CONFIG_NR_CPUS={cpus}" in text
        assert "CONFIG_SMP=y" in text and "CONFIG_NOHIGHMEM=y" in text
        assert "CONFIG_X86_64" not in text


def test_what_an_i386_run_cannot_be_is_refused_by_name():
    m = get_machine("ppro4")
    v = parse_variant("linux24-i386:c32", m)
    with pytest.raises(ConfigError, match="gem5 v24 runs no 32-bit protected-mode kernel"):
        RunSpec(m, v, engine="gem5")
    with pytest.raises(ConfigError, match="gem5 v24 runs no 32-bit protected-mode kernel"):
        RunSpec(m, v, Workload(program=described.WEB_PROGRAM, client_cpus=0),
                engine="gem5")
    with pytest.raises(ConfigError, match="unknown linux24-i386 kernel"):
        parse_variant("linux24-i386:mq", m)


def test_an_i386_web_run_boots_its_own_32_bit_image():
    """--workload web on the i386 images: its own RAM disk, whose init and
    /bin/web are 32-bit i386 programs (musl for i386, from the same
    sources), and the command line's noapic as for the tasks workload."""
    from colorsim.run import linux24web
    m = get_machine("ppro4")
    w = Workload(program=described.WEB_PROGRAM, args="--httpd,32,--accept,fcntl",
                 client_cpus=0)
    s = RunSpec(m, parse_variant("linux24-i386:c32", m), w)
    x = RunSpec(m, parse_variant("linux24:c32", m), w)
    assert s.rootfs_image == described.web_image("i386") != x.rootfs_image
    line = s.kernel_cmdline(0).split()
    assert "webargs=--httpd,32,--accept,fcntl" in line and "noapic" in line
    assert "noapic" not in x.kernel_cmdline(0).split()
    image = linux24web.web_initrd(lambda *_: None, "i386")
    assert image == s.rootfs_image and image.is_file()
    stage = image.with_suffix(".d")
    for prog in (stage / "init", stage / "bin" / "web"):
        head = prog.read_bytes()[:20]
        # ELF, 32-bit (EI_CLASS 1), machine EM_386 (3)
        assert head[:4] == b"\x7fELF" and head[4] == 1 and head[18] == 3, prog


def test_a_timed_i386_image_takes_its_own_modelled_time_patch_and_base():
    """--timing on i386: the image gets i386's modelled-time patch (its own
    build folder), the command line the timing options, and busmon the
    clock array's physical address below i386's 3 GiB kernel mapping."""
    m = get_machine("ppro4")
    counted = RunSpec(m, parse_variant("linux24-i386:c32", m), Workload(tasks=64))
    timed = RunSpec(m, parse_variant("linux24-i386:c32", m), Workload(tasks=64),
                    timing=True)
    names = [p.name for p in timed.variant.patches]
    assert names[-1] == "0004-modelled-time.patch"
    assert all(p.parent.name == "i386" and p.is_file() for p in timed.variant.patches)
    assert "0004-modelled-time.patch" not in [p.name for p in counted.variant.patches]
    assert timed.variant.dir.name == "i386-ppro4-c32-b17-timing"
    assert " timing_hz=" in timed.kernel_cmdline(0)
    assert timed.kernel_cmdline(0).endswith(" noapic")
    syms = {"colorsim_clock": {"addr": 0xC028C600, "size": 528},
            "colorsim_timing_check": {"addr": 0xC0116540, "size": 0x157}}
    lay = linux24.timing_layout(syms, linux24.ARCH["i386"].kernel_base)
    assert lay == {"publish": 0x28C600, "publish_bytes": 528, "free": [0xC0116540, 0xC0116697]}
    with pytest.raises(linux24.RunError, match="not in the kernel's mapping"):
        linux24.timing_layout(syms, linux24.ARCH["x86_64"].kernel_base)


def test_the_i386_command_line_routes_interrupts_around_the_io_apic():
    m = get_machine("ppro4")
    spec = RunSpec(m, parse_variant("linux24-i386:vanilla", m), Workload(tasks=64))
    line = spec.kernel_cmdline(0)
    assert line.endswith(" noapic") and "tasks=64" in line
    x = RunSpec(m, parse_variant("linux24:vanilla", m), Workload(tasks=64))
    assert "noapic" not in x.kernel_cmdline(0)


def test_the_layouts_m5_base_reaches_the_bus_monitor():
    """The i386 init maps the m5-op page below the kernel's 3 GiB; the
    layout says where, and busmon is told (m5base=); x86_64 layouts keep
    busmon's default."""
    from colorsim.run.engines.qemu import QemuEngine
    m = get_machine("ppro4")
    spec = RunSpec(m, parse_variant("linux24-i386:vanilla", m), Workload(tasks=8))
    lay = {"ranges": {"rqloop": [[0x1000, 0x1010]], "user": [[0, 0xC0000000]],
                      "schedule": [0x1000, 0x2000]}, "symbols": {}}
    args = QemuEngine().plugin_args(spec, BUILD, lay).split(",")
    assert "m5base" not in ",".join(args)
    base = linux24.ARCH["i386"].m5base
    lay["m5base"] = base
    args = QemuEngine().plugin_args(spec, BUILD, lay).split(",")
    assert f"m5base={base:#x}" in args
    src = linux24.INIT_SOURCE.read_text()
    assert re.search(rf"M5_VADDR {base:#X}ul".replace("0X", "0x"), src)


# ---- with the user's tree ----------------------------------------------

# Where the i386 kernel finds current by masking the stack pointer.  The
# coloring patch must reach every one, or that code would take the block's
# base for the task structure (an exec from the first init failed with
# EFAULT while getuser.S still did).  Left alone: debugging output only.
STACK_MASK = re.compile(r"(andl\s+\$(-8192|0xffffe000)|~8191|& ?~\(THREAD_SIZE-1\))")
DEBUG_ONLY = {"arch/i386/kernel/irq.c", "arch/i386/kernel/traps.c",
              "include/asm-i386/hw_irq.h"}


@pytest.mark.requires_linux24
def test_the_i386_patches_apply_and_color_every_stack_mask(tmp_path):
    src = described.source_tree()
    tree = tmp_path / "tree"
    linux24._copy_tree(src, tree, "i386")
    v = parse_variant("linux24-i386:c32", get_machine("ppro4"))
    linux24.apply_patches(tree, v.patches)
    left = []
    for d in ("arch/i386", "include/asm-i386"):
        for p in sorted((tree / d).rglob("*")):
            rel = str(p.relative_to(tree))
            if p.suffix not in (".c", ".h", ".S") or "/boot/" in rel or rel in DEBUG_ONLY:
                continue
            lines = p.read_text(errors="replace").splitlines()
            for i, line in enumerate(lines):
                # a mask the color is added to within the next lines is colored
                after = " ".join(lines[i:i + 5])
                if STACK_MASK.search(line) and not re.search(r"COLOR|task_color", after):
                    left.append(f"{rel}:{i + 1}: {line.strip()}")
    assert left == [], left


@pytest.fixture(scope="module")
def built_i386():
    out = {}
    for k in ("vanilla", "c32"):
        b = described.variant_for(get_machine("ppro4"), k, "i386")
        linux24.build(b, progress=lambda *_: None)
        out[k] = b
    return out


@pytest.mark.requires_linux24
def test_i386_init_task_sits_at_its_color_and_no_sys_tail_calls(built_i386):
    for k, b in built_i386.items():
        syms = {n: int(a, 16) for a, _, n in
                (l.split() for l in (b.dir / "System.map").read_text().splitlines())}
        init = syms["init_task_union"]
        block = init & ~(linux24.THREAD_SIZE - 1)
        assert init - block == (b.color_offset(block - 0xC0000000) if b.colors > 1 else 0), k
        assert linux24.sys_tail_calls(linux24.disassemble(b.dir / "vmlinux")) == []
    assert init - block != 0     # c32's init block has a nonzero color


def _run(kernel, out, name, timing=False):
    from colorsim.run import runner
    m = get_machine("ppro4")
    spec = RunSpec(m, parse_variant(kernel, m), Workload(tasks=64), timing=timing)
    return runner.run(spec, name=name, out=out, progress=lambda *_: None)


def _offsets(run):
    import csv
    import collections
    c = collections.Counter()
    with open(run / "bus_offsets.csv") as f:
        for r in csv.DictReader(f):
            c[int(r["offset"])] += int(r["count"])
    return c


@pytest.mark.requires_linux24
def test_i386_runs_put_vanillas_peak_in_the_walks_one_line(tmp_path):
    """vanilla and c32 at 64 tasks (about 10 s each): every CPU comes up,
    the walk reads one 32-byte line per task, vanilla's most-used page
    offset lies in it, and coloring spreads that line (c32's count at
    vanilla's peak offset falls tenfold)."""
    van = _run("linux24-i386:vanilla", tmp_path, "v")
    c32 = _run("linux24-i386:c32", tmp_path, "c")
    assert "Total of 4 processors activated" in (van / "console.log").read_text()
    hot = json.loads((van / "layout.json").read_text())["scheduler_hot"]
    assert hot["lines_per_task"] == 1
    ov, oc = _offsets(van), _offsets(c32)
    peak, n = ov.most_common(1)[0]
    assert hot["line_offset"] <= peak < hot["line_offset"] + 32, hex(peak)
    assert oc[peak] * 10 < n, (hex(peak), n, oc[peak])
    # deterministic: the same run again gives the same bytes
    again = _run("linux24-i386:vanilla", tmp_path, "v2")
    for f in ("console.log", "bus_offsets.csv", "counters.csv"):
        assert (van / f).read_bytes() == (again / f).read_bytes(), f


@pytest.mark.requires_linux24
def test_a_timed_i386_run_ticks_in_modelled_time_and_meters_its_fenced_lock(tmp_path):
    """c32 at 64 tasks under --timing (about 40 s): the region is reached
    with every CPU up, and the lockmeter sees runqueue_lock taken and given
    back.  The Pentium Pro build (M686) fences its unlock with an xchg of 1;
    a meter that took that for a try saw the lock held for ever, and the
    boot hung at the APIC timer's calibration."""
    from colorsim.run.statstxt import parse_stats
    run = _run("linux24-i386:c32", tmp_path, "t", timing=True)
    console = (run / "console.log").read_text()
    assert "Total of 4 processors activated" in console and "roi: dumpstats" in console
    roi = parse_stats(run / "stats.txt")[-1].as_dict()
    acq, held = roi["system.lock0.acquisitions"], roi["system.lock0.holdCycles"]
    assert acq > 0 and roi["system.lock0.holdOverlaps"] == 0
    # every hold ends: the mean is a walk of 64 tasks, not the region
    assert held / acq < roi["system.elapsedCycles"] / 100, (acq, held)
    # the fence the meter has to read: the image's unlocks are xchg of 1
    m = get_machine("ppro4")
    image = RunSpec(m, parse_variant("linux24-i386:c32", m), timing=True).variant.dir
    text = linux24.disassemble(image / "vmlinux")
    lock = next(l.split()[0] for l in (image / "System.map").read_text().splitlines()
                if l.endswith(" runqueue_lock"))
    assert re.search(rf"xchg\s+%al,0x{lock}\b", text), "no fenced unlock"


def _timed_i386_c32(tmp_path, program, args):
    """A timed i386 c32 run of ``program``, its console text, its region's
    stats (metered lock checked: taken, no overlapping holds) and the
    region's modelled seconds."""
    from colorsim.run import runner
    from colorsim.run.statstxt import parse_stats
    m = get_machine("ppro4")
    w = Workload(program=program, args=args, client_cpus=0)
    spec = RunSpec(m, parse_variant("linux24-i386:c32", m), w, timing=True)
    run = runner.run(spec, name="r", out=tmp_path, progress=lambda *_: None)
    roi = parse_stats(run / "stats.txt")[-1].as_dict()
    assert roi["system.lock0.acquisitions"] > 0 and roi["system.lock0.holdOverlaps"] == 0
    return ((run / "console.log").read_text(), roi,
            roi["system.elapsedCycles"] / m.processor.clock_hz)


@pytest.mark.requires_linux24
def test_web_runs_on_i386_behind_2_4s_own_fcntl_accept_lock(tmp_path):
    """The web image on i386 c32 under --timing, its httpd serialised by
    2.4's own fcntl lock (about 35 s): every response verified, the
    access log written (init remounts the RAM disk read-write, as a
    distribution boots), the region's m5 ops seen by the bus monitor
    through the page init maps below i386's 3 GiB, and the program's own
    clock in modelled time."""
    from colorsim.run import linux24web
    text, roi, elapsed = _timed_i386_c32(
        tmp_path, described.WEB_PROGRAM, "--httpd,32,--clients,8,--requests,2,--accept,fcntl")
    assert "accept fcntl lock (wake-all)" in text and "init: exited with status 0" in text
    assert re.search(r"access log [1-9]\d* bytes", text), text[-600:]
    # web's own clock (gettimeofday) runs in modelled time: the TSC counts
    # the emulator's time, and its offset sent the region's time negative
    secs = float(linux24web.WEB_ROI.findall(text)[-1][3])
    assert abs(secs - elapsed) <= 0.1 * elapsed, (secs, elapsed)


@pytest.mark.requires_linux24
def test_chat_runs_on_i386_with_clone_threads_in_modelled_time(tmp_path):
    """Chat on i386 c32 under --timing (about 40 s): 40 threads made as
    LinuxThreads made them, every message verified, the region's time by
    the program's clock (the time of day) the modelled elapsed time."""
    text, roi, elapsed = _timed_i386_c32(
        tmp_path, described.CHAT_PROGRAM, "--rooms,2,--users,5,--messages,10")
    assert "chat: ok (2 rooms x 5 users x 10 messages" in text, text[-600:]
    secs = float(re.search(r"^chat: roi 500 messages .* in ([0-9.]+) s$", text, re.M)[1])
    # chat prints its time to 10 ms
    assert abs(secs - elapsed) <= 0.1 * elapsed + 0.005, (secs, elapsed)
