"""The user's Linux 2.4 on gem5 (colorsim/run/linux24gem5.py,
kernels/linux24/gem5-entry.S): the boot image gem5's X86 loader starts.

Without a Linux tree the image's ELF handling and the gem5 spec are checked
on inputs made here; with one (requires_linux24) the image boots on QEMU
through kernels/tools/gem5-loader, which enters it as gem5's loader does;
with gem5 too (requires_gem5) it runs the tasks workload on gem5."""

import csv
import json
import struct
import subprocess

import pytest

from colorsim import ROOT
from colorsim.describe import linux24 as described
from colorsim.describe.machine import get_machine
from colorsim.describe.runspec import RunSpec, Workload
from colorsim.errors import ConfigError, RunError
from colorsim.run import linux24, linux24gem5
from colorsim.run.engines.gem5 import Gem5Engine

KMAP = linux24.START_KERNEL_MAP


def _elf(path, segs, entry=KMAP + 0x100000):
    """A small ELF64 with ``segs`` [(vaddr, data, memsz)] as a linker
    would write it (paddr = vaddr, as 2.4's vmlinux.lds does)."""
    linux24gem5.write_elf(path, entry, [(a, d, m, 7) for a, d, m in segs])
    return path


def test_elf_segments_round_trip(tmp_path):
    segs = [(0x100000, b"\x90" * 100, 4096), (0x3f0000, b"ab", 2)]
    f = _elf(tmp_path / "k", segs, entry=0x100000)
    entry, back = linux24gem5.load_segments(f.read_bytes())
    assert entry == 0x100000
    assert [(a, d, m) for a, d, m, _ in back] == segs
    raw = f.read_bytes()
    for a, d, _, _ in back:        # each segment's bytes at offset = address mod 4 KiB
        off = raw.index(d)
        assert off % 4096 == a % 4096


def test_the_stub_carries_the_initrds_place_and_size():
    code = linux24gem5.entry_stub(0x200000)
    assert code[8:16] == linux24gem5.ENTRY_MAGIC
    assert struct.unpack_from("<QQ", code, 16) == (linux24gem5.INITRD_BASE, 0x200000)
    assert code[0] == 0xEB and code[1] + 2 >= 32     # a short jump over the slots


def test_boot_image_puts_the_kernel_at_its_physical_address(tmp_path):
    fake = type("B", (), {"dir": tmp_path, "build_id": "fake", "arch": "x86_64"})()
    _elf(tmp_path / "vmlinux", [(KMAP + 0x100000, b"K" * 64, 8192)])
    rd = tmp_path / "initrd.ext2"
    rd.write_bytes(b"R" * 1000)
    img = linux24gem5.boot_image(fake, rd, progress=lambda *_: None)
    assert img == linux24gem5.image_path(fake, rd) and img.name == "gem5-boot-initrd.elf"
    entry, segs = linux24gem5.load_segments(img.read_bytes())
    assert entry == linux24gem5.ENTRY_BASE
    assert [(a, m) for a, _, m, _ in segs] == [
        (linux24gem5.ENTRY_BASE, len(segs[0][1])), (0x100000, 8192),
        (linux24gem5.INITRD_BASE, 1000)]
    assert segs[1][1] == b"K" * 64 and segs[2][1] == b"R" * 1000
    mtime = img.stat().st_mtime_ns
    assert linux24gem5.boot_image(fake, rd, progress=lambda *_: None) == img
    assert img.stat().st_mtime_ns == mtime           # made once
    rd.write_bytes(b"S" * 1000)                       # a new initrd: made again
    linux24gem5.boot_image(fake, rd, progress=lambda *_: None)
    assert linux24gem5.load_segments(img.read_bytes())[1][2][1] == b"S" * 1000


def test_boot_image_refuses_what_is_not_a_24_kernel(tmp_path):
    fake = type("B", (), {"dir": tmp_path, "build_id": "fake", "arch": "x86_64"})()
    _elf(tmp_path / "vmlinux", [(0x100000, b"x", 1)])          # not in the kernel map
    (tmp_path / "rd").write_bytes(b"r")
    with pytest.raises(RunError, match="outside 2.4's kernel map"):
        linux24gem5.boot_image(fake, tmp_path / "rd", progress=lambda *_: None)
    assert not linux24gem5.image_path(fake, tmp_path / "rd").exists()
    (tmp_path / "vmlinux").write_bytes(b"not an elf")
    with pytest.raises(RunError, match="little-endian ELF64 or ELF32"):
        linux24gem5.boot_image(fake, tmp_path / "rd", progress=lambda *_: None)


def _elf32(path, segs, entry):
    """A small ELF32 as 2.4's i386 vmlinux is: segments [(vaddr, data,
    memsz)] in the 3 GiB kernel map, paddr = vaddr."""
    ph = struct.calcsize("<IIIIIIII")
    off = 52 + ph * len(segs)
    heads, body = [], b""
    for a, d, m in segs:
        heads.append(struct.pack("<IIIIIIII", 1, off + len(body), a, a, len(d), m, 7, 4096))
        body += d
    eh = struct.pack("<4sBBBBB7sHHIIIIIHHHHHH", b"\x7fELF", 1, 1, 1, 0, 0, bytes(7),
                     2, 3, 1, entry, 52, 0, 0, 52, ph, len(segs), 40, 0, 0)
    path.write_bytes(eh + b"".join(heads) + body)
    return path


def test_an_i386_kernel_goes_to_its_physical_address_behind_the_i386_stub(tmp_path):
    fake = type("B", (), {"dir": tmp_path, "build_id": "fake", "arch": "i386"})()
    _elf32(tmp_path / "vmlinux", [(0xC0100000, b"K" * 64, 8192),
                                  (0xC0236000, b"D" * 16, 4096)], 0xC0100000)
    rd = tmp_path / "initrd.ext2"
    rd.write_bytes(b"R" * 1000)
    img = linux24gem5.boot_image(fake, rd, progress=lambda *_: None)
    entry, segs = linux24gem5.load_segments(img.read_bytes())
    assert entry == linux24gem5.ENTRY_BASE and img.read_bytes()[4] == 2   # gem5 loads ELF64
    assert [(a, m) for a, _, m, _ in segs[1:]] == [
        (0x100000, 8192), (0x236000, 4096), (linux24gem5.INITRD_BASE, 1000)]
    # the i386 stub is another program than the x86_64 one, its slots alike
    stub = segs[0][1]
    assert stub != linux24gem5.entry_stub(1000, "x86_64")
    assert stub == linux24gem5.entry_stub(1000, "i386")
    assert struct.unpack_from("<QQ", stub, 16) == (linux24gem5.INITRD_BASE, 1000)
    # an x86_64 build given a 32-bit vmlinux (or the reverse) is refused
    x64 = type("B", (), {"dir": tmp_path / "x", "build_id": "x", "arch": "x86_64"})()
    x64.dir.mkdir()
    (x64.dir / "vmlinux").write_bytes((tmp_path / "vmlinux").read_bytes())
    with pytest.raises(RunError, match="ELF32: not an x86_64 vmlinux"):
        linux24gem5.boot_image(x64, rd, progress=lambda *_: None)
    assert not linux24gem5.image_path(x64, rd).exists()


def _spec(kernel="vanilla", arch="x86_64", **workload):
    m = get_machine("ppro4")
    return RunSpec(m, described.variant_for(m, kernel, arch=arch),
                   Workload(tasks=64, **workload), engine="gem5")


def test_gem5_spec_of_a_linux24_run_boots_its_image():
    d = Gem5Engine().spec_dict(_spec("c32"))
    k = d["kernel"]
    assert k["path"].endswith("ppro4-c32-b17/gem5-boot-initrd.elf")
    assert "rootfs" not in k                      # the initrd is inside the image
    assert "fpu_eager" not in k["cmdline"] and "tasks=64" in k["cmdline"]


def test_web_on_a_linux24_kernel_is_refused_on_gem5():
    with pytest.raises(ConfigError, match="run on QEMU only"):
        _spec(program="/bin/web", args="--httpd,4")


def _loader_boot(image, machine, console, cmdline):
    """QEMU through the gem5-loader stand-in: gem5's entry state."""
    from colorsim.run.engines.qemu import firmware_dirs, qemu_binary
    subprocess.run(["scons", "-Q", "build/tools"], cwd=ROOT, check=True,
                   capture_output=True)
    q = qemu_binary()
    cmd = [str(q)]
    for d in firmware_dirs(q):
        cmd += ["-L", str(d)]
    n = machine.processor.cpus
    cmd += ["-display", "none", "-nodefaults", "-machine", "pc,acpi=off",
            "-cpu", linux24.ARCH["x86_64"].qemu_cpu, "-m", f"{machine.memory.size // 2**20}M",
            "-smp", f"{n},sockets={n}", "-accel", "tcg,thread=single",
            "-icount", "shift=3,sleep=off", "-no-reboot",
            "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
            "-serial", f"file:{console}",
            "-kernel", str(ROOT / "build/tools/gem5-loader/loader.elf"),
            "-initrd", str(image), "-append", cmdline]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@pytest.mark.requires_linux24
@pytest.mark.parametrize("arch", ["x86_64", "i386"])
def test_linux24_boots_through_gem5s_entry_on_the_loader_stand_in(tmp_path, arch):
    """The boot image, entered in long mode as gem5's loader enters it (no
    real-mode setup, RSP = 0, gem5's page tables): every CPU comes up, the
    initrd is found where the stub said, and init marks its region.  The
    i386 image's stub leaves long mode for startup_32 first."""
    m = get_machine("ppro4")
    b = described.variant_for(m, "vanilla", arch=arch)
    linux24.prepare(b, progress=lambda *_: None)
    img = linux24gem5.boot_image(b, linux24.initrd(lambda *_: None, arch),
                                 progress=lambda *_: None)
    line = described.cmdline(16, 2000, 2, 2) + (" noapic" if arch == "i386" else "")
    r = _loader_boot(img, m, tmp_path / "console.log", line)
    text = (tmp_path / "console.log").read_text()
    assert r.returncode == 1, (r.returncode, text[-1500:])
    assert (f"Bootdata ok (command line is {line})" if arch == "x86_64"
            else f"Kernel command line: {line}") in text
    assert "Total of 4 processors activated" in text
    assert "RAMDISK: ext2 filesystem found" in text
    assert "workload: 16 tasks" in text and "roi: exit requested by pid 1" in text


@pytest.mark.requires_gem5
@pytest.mark.requires_linux24
def test_linux24_runs_its_workload_on_gem5(tmp_path):
    """vanilla and c32 2.4 on gem5 (boot, checkpoint at init's m5 op,
    restore into timing CPUs): the bus view's transactions land on the
    walk's line, and c32 spreads them."""
    from colorsim.run import runner
    runs = {}
    for k in ("vanilla", "c32"):
        s = _spec(k, warmup_ticks=2, roi_ticks=2)
        runs[k] = runner.run(s, out=tmp_path, progress=lambda *_: None)
        # the console after the restore; gem5 ends at init's m5 exit, before
        # the serial line has sent init's last lines
        text = (runs[k] / "console.log").read_text()
        assert "roi: resetstats" in text, text[-1500:]
        assert (runs[k] / "gem5" / "stats.txt").read_text().count(
            "Begin Simulation Statistics") >= 1
    peak = {}
    for k, run in runs.items():
        with open(run / "bus_offsets.csv") as f:
            rows = [r for r in csv.DictReader(f) if r["view"] == "bus"]
        assert rows, k
        by = {}
        for r in rows:
            by[int(r["offset"])] = by.get(int(r["offset"]), 0) + int(r["count"])
        peak[k] = max(by.values()) / sum(by.values())
    assert peak["c32"] < peak["vanilla"]
    # the loop probe on each L2 (gem5 patch 0002): every CPU's walk reached
    # its L2; c32's walk misses less often than vanilla's
    miss = {}
    for k, run in runs.items():
        with open(run / "counters.csv") as f:
            rows = [r for r in csv.DictReader(f) if r["dump"] == "0"]
        acc = {r["cpu"]: float(r["value"]) for r in rows
               if r["stat"] == "rqloop_l2_read_accesses"}
        assert sorted(acc) == ["0", "1", "2", "3"] and min(acc.values()) > 0, acc
        misses = sum(float(r["value"]) for r in rows
                     if r["stat"] == "rqloop_l2_read_misses")
        miss[k] = misses / sum(acc.values())
    assert miss["c32"] < miss["vanilla"] <= 1, miss


def test_engines_table_puts_gem5_beside_qemu():
    from colorsim.orchestrate import linux24table as lt
    q = {"peak": 0x78, "c32_peak_share": 0.1, "colored_change": -0.5,
         "miss_vanilla": 1.0, "miss_c32": 0.093}
    g = {"peak": 0x60, "c32_peak_share": 0.25, "colored_change": -0.125,
         "miss_vanilla": 0.999, "miss_c32": float("nan")}
    row = {"machine": "ppro4", "l2": "1MiB", "arch": "x86_64", "qemu": q, "gem5": g,
           "bus": (200000, 100000, 8000, 7000), "paper_peak": 0x30,
           "paper_colored": -85.0, "paper_miss": (99.5, 8.2)}
    xeon = {**row, "machine": "piii8", "paper_peak": None,
            "paper_colored": None, "paper_miss": None}
    text = lt.render_engines([row, xeon])
    # a gem5 run made before its loop probe has no miss ratio: a dash
    assert ("| x86_64, ppro4, 1 MiB | 0x060 / 0x060 / 0x020 "
            "| 200,000 and 100,000 / 8,000 and 7,000 "
            "| -50.0 % / -12.5 % / -85.0 % "
            "| 100.0 % / 9.3 %; 99.9 % / —; 99.5 % / 8.2 % |") in text
    # the paper measured these on the Pentium Pro only: dashes on the Xeon
    assert ("| x86_64, piii8, 1 MiB | 0x060 / 0x060 / — "
            "| 200,000 and 100,000 / 8,000 and 7,000 "
            "| -50.0 % / -12.5 % / — "
            "| 100.0 % / 9.3 %; 99.9 % / —; — |") in text


def test_engines_table_without_gem5_runs_names_the_command(tmp_path, capsys):
    """A catalog with the QEMU runs only (the recorded Linux runs) and no
    gem5 twins: one line that says how to make them."""
    import shutil
    from colorsim.cli import main as cli_main
    from colorsim.maintain import main as docs_main
    runs = tmp_path / "r"
    shutil.copytree(ROOT / "recorded" / "linux24", runs,
                    ignore=shutil.ignore_patterns("README.md", "*-gem5-*"))
    assert cli_main(["catalog", "rebuild", "--runs", str(runs)]) == 0
    capsys.readouterr()
    assert docs_main(["linux24-engines", "--runs", str(runs)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "on gem5" in err and "colorsim.maintain linux24-engines --run" in err


def test_engines_block_is_the_recorded_runs(tmp_path):
    """docs/linux24.md's engines table is what the command computes from
    the runs kept in recorded/linux24 (the PPro's six Linux runs and the
    Xeon's pair, on both engines), on a clone without gem5 or a Linux
    tree; the gem5 runs are one build."""
    import shutil
    from colorsim.cli import main as cli_main
    from colorsim.maintain import main as docs_main
    runs = tmp_path / "r"
    shutil.copytree(ROOT / "recorded" / "linux24", runs,
                    ignore=shutil.ignore_patterns("README.md"))
    gem5 = [d for d in runs.iterdir() if "-gem5-" in d.name]
    assert len(gem5) == 8
    assert len({json.loads((d / "config.json").read_text())["engine_sha256"]
                for d in gem5}) == 1
    assert cli_main(["catalog", "rebuild", "--runs", str(runs)]) == 0
    png = tmp_path / "engines.png"
    assert docs_main(["linux24-engines", "--runs", str(runs),
                      "--check", str(ROOT / "docs" / "linux24.md"),
                      "--figure", str(png)]) == 0
    # docs/linux24-engines.png is what --figure draws from the same runs
    from matplotlib.testing.compare import compare_images
    assert compare_images(str(ROOT / "docs" / "linux24-engines.png"), str(png),
                          tol=2.0) is None


@pytest.mark.requires_gem5
@pytest.mark.requires_linux24
@pytest.mark.slow
def test_linux24_engines_runs_on_both(tmp_path):
    """The engines table from fresh runs matches the recorded block."""
    from colorsim.maintain import main as docs_main
    assert docs_main(["linux24-engines", "--run", "--runs", str(tmp_path / "r"),
                      "--check", str(ROOT / "docs" / "linux24.md")]) == 0
