"""User processes: ring-3 programs from the root-file-system image.

Each guest boots the vanilla kernel with ``init=/bin/<program>`` and the
image as QEMU's -initrd (no bus monitor: these are functional tests).  A
program prints "<name>: ok" and exits 0 when every check passed; the
kernel prints init's exit status and stops the machine, with QEMU status 1
for init status 0 and 7 otherwise.  The same programs also run natively
on the host (they are ordinary static C programs), as their own
functional tests.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from colorsim import BUILD, ROOT
from colorsim.run.build import ensure_built
from colorsim.run.engines.qemu import firmware_dirs, qemu_binary
from colorsim.cli import main as cli_main
from colorsim.describe.runspec import parse_workload

KERNEL = "vanilla-l32"
BIN = BUILD / "workloads" / "bin"
IMAGE = BUILD / "disk-images" / "rootfs.img"
MKROOTFS = ROOT / "disk-images" / "mkrootfs.py"
PROGRAMS = ["forktest", "exectest", "isolation", "threads", "memtest",
            "filetest", "misctest", "faulttest", "pipetest", "socktest",
            "fputest", "semtest"]


COLORED = "c32-b17-l32"


@pytest.fixture(scope="module")
def built():
    ensure_built([KERNEL, COLORED], plugin=False, image=True,
                 progress=lambda *_: None)
    return BUILD / "kernels" / KERNEL / "kernel.mb.elf"


def qemu_base():
    """The suite's QEMU with its firmware directories, as the engine runs it."""
    binary = qemu_binary()
    return [str(binary)] + [a for d in firmware_dirs(binary) for a in ("-L", str(d))]


def boot(kernel, init, cpus=2, extra="", timeout=90):
    """Boot init; (QEMU exit status, console text).  As the engine does,
    QEMU runs in the kernel's directory with file names relative to it:
    the guest sees the kernel's and the image's paths on its command lines,
    and a checkout elsewhere would otherwise boot a different guest."""
    kernel = Path(kernel)
    cmd = qemu_base() + ["-display", "none", "-nodefaults",
           "-machine", "pc", "-m", "256M", "-smp", str(cpus),
           "-accel", "tcg,thread=single", "-icount", "shift=3,sleep=off",
           "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
           "-serial", "stdio", "-kernel", kernel.name,
           "-initrd", os.path.relpath(IMAGE, kernel.parent),
           "-append", f"init={init} lapic_hz=1000000000 {extra}".strip()]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       errors="replace", cwd=kernel.parent)
    return p.returncode, p.stdout.replace("\r", "")


def assert_passed(rc, out, name):
    assert f"{name}: ok" in out, out[-3000:]
    assert "init: exited with status 0" in out, out[-3000:]
    assert rc == 1, out[-3000:]


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_in_the_guest(built, name):
    rc, out = boot(built, f"/bin/{name}")
    assert_passed(rc, out, name)
    assert "Kernel panic" not in out


@pytest.mark.parametrize("cpus", [1, 4])
def test_threads_on_one_and_four_cpus(built, cpus):
    rc, out = boot(built, "/bin/threads", cpus=cpus)
    assert_passed(rc, out, "threads")


@pytest.mark.parametrize("kernel", [KERNEL, COLORED])
def test_init_runs_every_program_on_four_cpus(built, kernel):
    # every process and thread is a colored task_union on c32
    rc, out = boot(BUILD / "kernels" / kernel / "kernel.mb.elf", "/init", cpus=4)
    assert "init: all tests passed" in out, out[-3000:]
    assert rc == 1


@pytest.mark.parametrize("kernel", [KERNEL, COLORED])
def test_each_process_keeps_its_sse_registers_on_four_cpus(built, kernel):
    # 8 processes hold their own xmm0-14 and MXCSR across yields and
    # preemption: the context switch saves and restores the FPU state (a
    # kernel that does not hands one process another's registers, and
    # compiled code keeps variables there: web clients wrote their
    # progress to fd 0, the console, instead of a pipe)
    rc, out = boot(BUILD / "kernels" / kernel / "kernel.mb.elf", "/bin/fputest",
                   cpus=4)
    assert_passed(rc, out, "fputest")


def test_processes_spread_over_the_cpus(built):
    # reschedule_idle wakes idle CPUs for forked children (and the pause
    # on the way back to user mode lets QEMU's round-robin run them)
    rc, out = boot(built, "/bin/roitest", cpus=4, extra="strace=1")
    cpus = {line.split()[0] for line in out.splitlines() if line.startswith("[cpu")}
    assert rc == 1 and cpus == {"[cpu0", "[cpu1", "[cpu2", "[cpu3"}, cpus


def test_faults_kill_the_process_and_unknown_calls_are_noted_once(built):
    rc, out = boot(built, "/bin/faulttest")
    assert_passed(rc, out, "faulttest")
    assert out.count("killed (signal 11)") == 1
    assert out.count("syscall: 1000 is not implemented (-ENOSYS)") == 1


def test_a_failing_init_stops_the_machine_with_its_status(built):
    rc, out = boot(built, "/bin/hello")          # exits with 7
    assert "init: exited with status 1792" in out  # 7 << 8
    assert rc == 7


def test_a_missing_init_is_a_kernel_panic(built):
    rc, out = boot(built, "/no/such/program")
    assert "Kernel panic: init: cannot run /no/such/program (error 2)" in out
    assert rc == 5


def test_init_without_an_image_is_a_kernel_panic(built):
    cmd = qemu_base() + ["-display", "none", "-nodefaults", "-m", "128M",
           "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
           "-serial", "stdio", "-kernel", str(built), "-append", "init=/init"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert "no root file system image" in p.stdout
    assert p.returncode == 5


# ---- the image ----------------------------------------------------------

def test_image_lists_sorted_entries_with_fixed_mtimes(built):
    data = IMAGE.read_bytes()
    assert data[:8] == b"CSRFS\0\0\1"
    n = int.from_bytes(data[8:12], "little")
    names, mtimes = [], set()
    for i in range(n):
        e = data[16 + 128 * i: 16 + 128 * (i + 1)]
        names.append(e[:96].rstrip(b"\0").decode())
        mtimes.add(int.from_bytes(e[120:128], "little"))
        assert int.from_bytes(e[112:120], "little") % 4096 == 0
    assert names == sorted(names) and "/init" in names
    assert {f"/bin/{p}" for p in PROGRAMS} <= set(names)
    assert mtimes == {1023667200}


def _compile_hello(out: Path):
    """workloads/SConscript's compile and static-pie link, by hand."""
    musl = "/usr/lib/x86_64-linux-musl"
    crt = lambda f: subprocess.run(["gcc", f"-print-file-name={f}"], check=True,
                                   capture_output=True, text=True).stdout.strip()
    obj = out / "hello.o"
    subprocess.run(["musl-gcc", "-O2", "-std=gnu11", "-fPIE",
                    f"-ffile-prefix-map={ROOT}=.", "-c", "-o", str(obj),
                    str(ROOT / "workloads/tests/hello.c")], check=True, cwd=ROOT)
    subprocess.run(["musl-gcc", "-o", str(out / "hello"), "-nostartfiles",
                    "-static", "-Wl,-pie", "-Wl,--no-dynamic-linker",
                    "-Wl,-z,text", "-Wl,--build-id=none", f"{musl}/rcrt1.o",
                    f"{musl}/crti.o", crt("crtbeginS.o"), str(obj), "-lpthread",
                    crt("crtendS.o"), f"{musl}/crtn.o"], check=True)
    return out / "hello"


def test_two_builds_of_the_image_are_identical(built, tmp_path):
    images = []
    for k in range(2):
        d = tmp_path / f"b{k}"
        d.mkdir()
        hello = _compile_hello(d)
        (d / "motd").write_text("colorsim root file system\n")
        img = d / "rootfs.img"
        # different argument order and file times: the same bytes
        args = [f"/bin/hello={hello}", f"/etc/motd={d / 'motd'}"]
        if k:
            args.reverse()
        subprocess.run(["python3", str(MKROOTFS), "-o", str(img),
                        "--pattern", "/data/pattern.bin:10000"] + args, check=True)
        images.append(img.read_bytes())
    assert images[0] == images[1]
    # and the scons-built image is what mkrootfs makes of the same inputs
    entries = [f"/init={BIN / 'init'}"] + [
        f"/bin/{p.name}={p}" for p in sorted(BIN.iterdir()) if p.name != "init"]
    entries.append(f"/etc/motd={ROOT / 'disk-images/files/etc/motd'}")
    entries.append(f"/etc/accept.lock={ROOT / 'disk-images/files/etc/accept.lock'}")
    www = BUILD / "disk-images" / "www"
    entries += [f"/www/{p.name}={p}" for p in sorted(www.iterdir())]
    again = tmp_path / "again.img"
    subprocess.run(["python3", str(MKROOTFS), "-o", str(again), "--pattern",
                    "/data/pattern.bin:10000"] + entries, check=True)
    assert again.read_bytes() == IMAGE.read_bytes()


@pytest.mark.parametrize("args", [[], ["/bin/x"], ["bin/x=/etc/hostname"],
                                  ["/x=/no/such/file"], ["--pattern", "/p:abc", "/x=/etc/hostname"],
                                  ["/x=/etc/hostname", "/x=/etc/hostname"]])
def test_mkrootfs_refuses_bad_input(tmp_path, args):
    p = subprocess.run(["python3", str(MKROOTFS), "-o", str(tmp_path / "i")] + args,
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert not (tmp_path / "i").exists()


# ---- the same programs on the host --------------------------------------

@pytest.mark.parametrize("name", PROGRAMS + ["roitest"])
def test_program_runs_natively(built, name, tmp_path):
    args = []
    if name in ("exectest", "pipetest"):
        args = [str(BIN)]
    elif name == "filetest":
        (tmp_path / "etc").mkdir()
        (tmp_path / "data").mkdir()
        shutil.copy(ROOT / "disk-images/files/etc/motd", tmp_path / "etc/motd")
        (tmp_path / "data/pattern.bin").write_bytes(
            bytes((i * 7 + 3) & 0xff for i in range(10000)))
        args = [str(tmp_path)]
    p = subprocess.run([str(BIN / name)] + args, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"{name}: ok" in p.stdout


# ---- colorsim run --workload --------------------------------------------

def test_colorsim_run_of_a_user_program_has_stats(built, tmp_path):
    rc = cli_main(["run", "--machine", "ppro4", "--kernel", "vanilla", "--cpus", "2",
                   "--workload", "roitest", "--out", str(tmp_path), "--name", "u"])
    assert rc in (0, None)
    run = tmp_path / "u"
    cfg = json.loads((run / "config.json").read_text())
    assert cfg["complete"] and cfg["workload"]["program"] == "/bin/roitest"
    assert len(cfg["rootfs_sha256"]) == 64
    assert "-initrd" in cfg["command"] and "init=/bin/roitest" in cfg["kernel_cmdline"]
    rows = [l.split(",") for l in (run / "counters.csv").read_text().splitlines()[1:]]
    insts = {(r[1], r[2]): int(r[4]) for r in rows if r[3] == "insts"}
    assert insts[("0", "user")] > 0 and insts[("0", "kernel")] > 0
    sched = [int(r[4]) for r in rows if r[3] == "schedule_calls"]
    assert sched and sched[0] > 100
    assert "roitest: ok (8 processes, region measured)" in (run / "console.log").read_text()


def test_builtin_workload_command_line_is_unchanged():
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    m = get_machine("ppro4")
    s = RunSpec(m, parse_variant("vanilla", m), Workload())
    assert s.kernel_cmdline(10**9) == ("tasks=1024 burst=2000 buffer=256 warmup=10 "
                                       "roi=10 seed=1 lapic_hz=1000000000")
    assert "program" not in s.to_dict()["workload"]      # old runs still match
    assert s.default_name().startswith("ppro4-4cpu-l2_512k-vanilla-t1024-s1-w10-r10-b2000-qemu-")


@pytest.mark.parametrize("text,path", [("tasks", ""), ("roitest", "/bin/roitest"),
                                       ("init:/init", "/init"),
                                       ("init:/bin/threads", "/bin/threads")])
def test_workload_option_parses(text, path):
    assert parse_workload(text) == path


@pytest.mark.parametrize("argv", [["--workload", "init:bin/x"], ["--workload", "../x"],
                                  ["--workload", "init:/a b"], ["--workload", ""],
                                  ["--workload", "tasks", "--client-cpus", "2"]])
def test_bad_workload_is_refused(argv, capsys, tmp_path):
    rc = cli_main(["run", "--kernel", "vanilla", "--out", str(tmp_path)] + argv)
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert not any(tmp_path.iterdir())
