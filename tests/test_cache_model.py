"""Tests of the bus-monitor QEMU plugin (engine/qemu-plugin).

1. The C unit test of the cache/MESI model (build/engine/test_cache).
2. Option errors: QEMU must refuse to load the plugin, with our sentence.
3. A smoke boot of SeaBIOS alone, ended by SIGTERM.
4. Tiny multiboot guests built here in a temp dir, which drive the m5-op
   window and sweep a buffer, so the counters have exact expectations.
"""
import csv
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from children import run_child
from colorsim.run.engines.qemu import firmware_dirs, qemu_binary
from colorsim.errors import ConfigError
from colorsim.run.rundir import spawn, stop

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "build" / "engine" / "busmon.so"
TEST_CACHE = ROOT / "build" / "engine" / "test_cache"
TEST_BRANCH = ROOT / "build" / "engine" / "test_branch"


def _qemu():
    try:
        return qemu_binary()
    except ConfigError:
        return None


QEMU = _qemu()
needs_qemu = pytest.mark.skipif(QEMU is None, reason="QEMU >= 10.1 not "
                                "built (scripts/setup.sh)")


@pytest.fixture(scope="module", autouse=True)
def built():
    """Build the plugin and the unit test once (kernels skipped)."""
    r = subprocess.run(["scons", "-Q", "build/engine", "variants="],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert PLUGIN.exists() and TEST_CACHE.exists() and TEST_BRANCH.exists()


def qemu_cmd(plugin_args, *extra):
    fw = [a for d in firmware_dirs(QEMU) for a in ("-L", str(d))]
    return [str(QEMU), *fw, "-display", "none", "-nodefaults", "-machine", "pc",
            "-m", "64", "-serial", "null",
            "-accel", "tcg,thread=single", "-icount", "shift=3,sleep=off",
            *extra, "-plugin", ",".join([str(PLUGIN), *plugin_args])]


# ---- 1. the model's unit test ---------------------------------------------

def test_cache_model_unit():
    r = subprocess.run([str(TEST_CACHE)], capture_output=True, text=True,
                       timeout=60)
    last = r.stdout.strip().splitlines()[-1]
    assert r.returncode == 0, r.stdout
    assert last.endswith(" passed, 0 failed"), r.stdout
    assert int(last.split()[0]) > 100


def test_branch_model_unit():
    """The branch decoder and the BTB (engine/qemu-plugin/branch.h)."""
    r = subprocess.run([str(TEST_BRANCH)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout
    assert r.stdout.strip() == "test_branch: all passed", r.stdout


# ---- 2. option errors -------------------------------------------------------

@needs_qemu
@pytest.mark.parametrize("args, message", [
    (["out=/nonexistent"], "busmon: out=/nonexistent: directory does not exist"),
    ([], "busmon: the out=DIR option is required"),
    (["out=/tmp", "l2=1000:4:32"], "The L2 size (1000) must be a power of two."),
    (["out=/tmp", "l2=768:4:64"],
     "The L2 size (768) must be a power of two."),
    (["out=/tmp", "l1d=128:8:32"],
     "The L1D size (128) must be divisible by assoc x line (8 x 32 = 256)."),
    (["out=/tmp", "l1d=8192:2:24"], "The L1D line size (24) must be a power of two."),
    (["out=/tmp", "l2=524288:4:64"],
     "The L1D line size (32) and the L2 line size (64) must be equal."),
    (["out=/tmp", "l1d=8192:2"], "busmon: bad value in 'l1d=8192:2'"),
    (["out=/tmp", "cpus=0"], "busmon: bad value in 'cpus=0'"),
    (["out=/tmp", "user=0x2000-0x1000"], "busmon: bad value in 'user=0x2000-0x1000'"),
    (["out=/tmp", "rqloop=12"], "busmon: bad value in 'rqloop=12'"),
    (["out=/tmp", "colour=3"], "busmon: unknown option 'colour=3'"),
    (["out=/tmp", "publish=0x60004"], "busmon: bad value in 'publish=0x60004'"),
    (["out=/tmp", "l1i=8192:4:64"],
     "The L1I line size (64) and the L2 line size (32) must be equal."),
    (["out=/tmp", "l1i=0:4:32"], "busmon: bad value in 'l1i=0:4:32'"),
    (["out=/tmp", "l2repl=fifo"], "busmon: bad value in 'l2repl=fifo': expected lru or plru"),
    (["out=/tmp", "inclusive=2"], "busmon: bad value in 'inclusive=2'"),
])
def test_option_errors(args, message):
    r = run_child(qemu_cmd(args), stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE, text=True, timeout=20)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr


# ---- 3. SeaBIOS alone, killed by SIGTERM -----------------------------------

@needs_qemu
def test_smoke_sigterm(tmp_path):
    # spawn: the emulator dies with pytest, however pytest is stopped
    p = spawn(qemu_cmd([f"out={tmp_path}"], "-smp", "2"),
              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)
        assert p.poll() is None, p.communicate()
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=20)
    finally:
        stop(p, grace_s=0)
    # QEMU turns SIGTERM into an orderly shutdown (exit 0); a crash in
    # the plugin would show as SIGSEGV/SIGABRT instead.
    assert p.returncode in (0, -signal.SIGTERM), (p.returncode, err)
    conf = json.loads((tmp_path / "busmon.json").read_text())
    assert conf["cpus"] == 2
    assert conf["l1d"] == {"size": 8192, "assoc": 2, "line": 32, "sets": 128}
    assert conf["l2"] == {"size": 524288, "assoc": 4, "line": 32, "sets": 4096}
    assert conf["m5base"] == "0xffff0000"
    assert conf["replacement"] == {"l1": "LRU", "l2": "LRU"}
    assert conf["inclusive"] is True and conf["l1i"] is None
    assert conf["dumps"] == 0 and conf["m5_exit_seen"] is False
    assert not list(tmp_path.glob(".*"))       # no temp files left behind


@needs_qemu
def test_a_killed_pytest_leaves_no_emulator(tmp_path):
    """SIGKILL to a pytest running test_smoke_sigterm while its QEMU runs:
    the emulator dies with it (nothing can clean up after SIGKILL but the
    kernel's parent-death signal)."""
    import os
    import sys

    from test_integrity import emulators_using, wait_for
    base = tmp_path / "inner"
    p = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          f"--basetemp={base}",
                          f"{__file__}::test_smoke_sigterm"],
                         cwd=ROOT, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: emulators_using(base), timeout=60,
                 what="the inner test's QEMU")
        p.kill()
        p.wait()
        wait_for(lambda: not emulators_using(base), timeout=10,
                 what="the emulator to die with pytest")
    finally:
        p.kill()
        for pid in emulators_using(base):      # only if the test failed
            os.kill(pid, signal.SIGKILL)


# ---- 4. multiboot guests -----------------------------------------------------

GUEST_HEAD = """
\t.section .text
\t.globl _start
\t.align 4
\t.long 0x1BADB002, 0, -0x1BADB002   /* multiboot v1, flags 0 */
/* An m5 op is an 8-byte load from 0xFFFF0000 + (func << 8); MMX gives
 * a 32-bit guest an 8-byte load without enabling SSE. */
\t.macro m5 func
\tmovq 0xFFFF0000 + (\\func << 8), %mm0
\t.endm
/* Read (or write) one word per 32-byte line of 64 KiB at 0x200000. */
\t.macro sweep insn
\tmov $0x200000, %esi
1:\t\\insn
\tadd $32, %esi
\tcmp $0x210000, %esi
\tjb 1b
\t.endm
_start:
"""

GUEST_TAIL = """
\tm5 0x21                       /* exit (noted only) */
\temms
\tmov $0xf4, %dx
\txor %eax, %eax
\tout %eax, %dx                  /* isa-debug-exit: QEMU exits 1 */
2:\thlt
\tjmp 2b
"""


def build_guest(tmp_path, body, after=""):
    src = tmp_path / "guest.S"
    src.write_text(GUEST_HEAD + body + GUEST_TAIL + after)
    obj, elf = tmp_path / "guest.o", tmp_path / "guest.elf"
    for cmd in (["gcc", "-m32", "-c", str(src), "-o", str(obj)],
                ["ld", "-m", "elf_i386", "-Ttext", "0x100000", "-e", "_start",
                 "-o", str(elf), str(obj)]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot build the 32-bit guest: {r.stderr}")
    syms = {}
    for line in subprocess.run(["nm", str(elf)], capture_output=True,
                               text=True).stdout.splitlines():
        addr, _, name = line.split()
        syms[name] = int(addr, 16)
    return elf, syms


def run_guest(tmp_path, elf, *plugin_args, qemu_args=()):
    out = tmp_path / "out"
    out.mkdir()
    cmd = qemu_cmd([f"out={out}", *plugin_args], "-smp", "2",
                   "-kernel", str(elf),
                   "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
                   *qemu_args)
    r = run_child(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  text=True, timeout=20)
    assert r.returncode == 1, (r.returncode, r.stderr)   # (0 << 1) | 1
    return out


def counters(out):
    """{(dump, cpu, mode, stat): value} from counters.csv."""
    with open(out / "counters.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and list(rows[0]) == ["dump", "cpu", "mode", "stat", "value"]
    return {(int(r["dump"]), int(r["cpu"]), r["mode"], r["stat"]):
            int(r["value"]) for r in rows}


def bus_rows(out):
    with open(out / "bus_offsets.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["dump", "cpu", "mode", "kind", "offset", "count"]
    return rows


@needs_qemu
def test_guest_sweep(tmp_path):
    """resetstats; read 64 KiB twice (> L1, < L2); dumpstats; exit."""
    elf, _ = build_guest(tmp_path, """
\tm5 0x40                       /* resetstats */
\tsweep "mov (%esi), %eax"
\tsweep "mov (%esi), %eax"
\tm5 0x41                       /* dumpstats */
""")
    out = run_guest(tmp_path, elf)
    stats = (out / "stats.txt").read_text()
    assert stats.count("---------- Begin Simulation Statistics ----------") == 1
    assert stats.count("---------- End Simulation Statistics   ----------") == 1
    c = counters(out)
    # 2048 lines per pass; the L1 (8 KiB) holds none of them next pass.
    assert c[(0, 0, "kernel", "l1d_read_misses")] >= 2 * 2048
    assert 2048 <= c[(0, 0, "kernel", "bus_read")] < 2200
    assert c[(0, 1, "kernel", "l1d_read_accesses")] == 0   # the AP is parked
    reads = sum(int(r["count"]) for r in bus_rows(out) if r["kind"] == "read")
    assert reads == c[(0, 0, "kernel", "bus_read")]
    # stats.txt agrees with the CSV.
    line = next(l for l in stats.splitlines()
                if l.startswith("system.bus.transactions::read "))
    assert int(line.split()[1]) == reads
    conf = json.loads((out / "busmon.json").read_text())
    assert conf["dumps"] == 1 and conf["m5_exit_seen"] is True


@needs_qemu
def test_guest_modes_rqloop_dumpreset(tmp_path):
    """PC ranges classify accesses; dumpresetstats starts a second dump."""
    elf, s = build_guest(tmp_path, """
\tm5 0x40                       /* resetstats */
rq_start:
\tsweep "mov (%esi), %eax"
\tsweep "mov (%esi), %eax"
rq_end:
\tm5 0x42                       /* dumpresetstats */
\tsweep "mov (%esi), %eax"      /* all L2 hits now */
user_start:
\tsweep "movl $1, (%esi)"       /* E lines: silent upgrade, no bus */
user_end:
\tm5 0x41                       /* dumpstats */
""")
    out = run_guest(tmp_path, elf,
                    f"rqloop={s['rq_start']:#x}-{s['rq_end']:#x}",
                    f"user={s['user_start']:#x}-{s['user_end']:#x}")
    stats = (out / "stats.txt").read_text()
    assert stats.count("---------- Begin Simulation Statistics ----------") == 2
    c = counters(out)
    # Dump 0: the two read passes ran inside the "run-queue loop".
    assert c[(0, 0, "kernel", "rqloop_l1d_read_accesses")] == 4096
    assert c[(0, 0, "kernel", "rqloop_l2_read_accesses")] == 4096
    assert 2048 <= c[(0, 0, "kernel", "rqloop_l2_read_misses")] <= 2048 + 8
    # Dump 1: reads hit L2; the user-range stores miss L1, hit L2 in E.
    assert c[(1, 0, "kernel", "rqloop_l1d_read_accesses")] == 0
    assert c[(1, 0, "kernel", "l1d_read_misses")] == 2048
    assert c[(1, 0, "kernel", "l2_misses")] == 0
    assert c[(1, 0, "user", "l1d_write_accesses")] == 2048
    assert c[(1, 0, "user", "l1d_write_misses")] == 2048
    assert c[(1, 0, "user", "bus_rfo")] == 0
    assert c[(1, 0, "user", "bus_invalidate")] == 0
    assert c[(1, 0, "user", "insts")] == 1 + 4 * 2048   # mov; 4 per line
    assert c[(1, 0, "user", "l1d_read_accesses")] == 0
    assert "system.cpu0.rqloop.l2ReadMissRatio" in stats
    conf = json.loads((out / "busmon.json").read_text())
    assert conf["rqloop"] == [[f"{s['rq_start']:#x}", f"{s['rq_end']:#x}"]]
    assert conf["dumps"] == 2


# CPU0 copies the AP's real-mode code (tramp..tramp_end) to 0x8000, starts
# it with INIT-SIPI, and waits (with pause) for the flag at 0x50800.
START_AP_AND_WAIT = """\tmov $tramp, %esi              /* AP trampoline to 0x8000 (vector 8) */
\tmov $0x8000, %edi
\tmov $(tramp_end - tramp), %ecx
\trep movsb
\tmovl $0, 0xFEE00310
\tmovl $0xC4500, 0xFEE00300     /* INIT, all excluding self */
\tmovl $0xC4608, 0xFEE00300     /* SIPI, vector 8 */
2:\tpause                        /* round-robin: let the AP run */
\tcmpl $1, 0x50800
\tjne 2b"""


@needs_qemu
def test_guest_smp_hitm(tmp_path):
    """CPU0 dirties 32 lines, wakes the AP, which reads them: 32 HITMs."""
    elf, _ = build_guest(tmp_path, """
\tm5 0x40                       /* resetstats */
\tmov $0x50000, %esi            /* CPU0 holds 32 lines in M */
1:\tmovl $1, (%esi)
\tadd $32, %esi
\tcmp $0x50400, %esi
\tjb 1b
""" + START_AP_AND_WAIT + """
\tm5 0x41                       /* dumpstats */
""", after="""
\t.code16
tramp:                          /* AP in real mode at 0800:0000 */
\tmov $0x5000, %ax
\tmov %ax, %ds
\txor %si, %si
4:\tmov (%si), %eax             /* one read per dirty line */
\tadd $32, %si
\tcmp $0x400, %si
\tjb 4b
\tmovl $1, 0x800               /* flag at 0x50800 */
5:\thlt
\tjmp 5b
tramp_end:
""")
    out = run_guest(tmp_path, elf)
    c = counters(out)
    assert c[(0, 1, "kernel", "l1d_read_misses")] == 32
    assert c[(0, 1, "kernel", "bus_read")] == 32
    assert c[(0, 1, "kernel", "hitm")] >= 32       # + the flag's RFO, maybe
    assert c[(0, 1, "kernel", "bus_rfo")] == 1     # the flag
    assert c[(0, 0, "kernel", "hitm")] >= 1        # CPU0 re-reads the flag
    ap_reads = sorted(int(r["offset"]) for r in bus_rows(out)
                      if r["cpu"] == "1" and r["kind"] == "read")
    assert ap_reads == list(range(0, 0x400, 32))


@needs_qemu
def test_guest_smp_locked_rmw(tmp_path):
    """The AP takes three lines CPU0 holds M: a locked RMW (LOCK prefix,
    and XCHG with memory) is one RFO although round-robin TCG reports it
    as a load then a store; a plain RMW is a READ then an INVALIDATE."""
    elf, _ = build_guest(tmp_path, """
\tm5 0x40                       /* resetstats */
\tmovl $1, 0x50000              /* CPU0 holds three lines in M */
\tmovl $1, 0x50020
\tmovl $1, 0x50040
""" + START_AP_AND_WAIT + """
\tm5 0x41                       /* dumpstats */
""", after="""
\t.code16
tramp:                          /* AP in real mode at 0800:0000 */
\tmov $0x5000, %ax
\tmov %ax, %ds
\tlock incl 0x0                 /* locked RMW: one RFO */
\txchg %eax, 0x20               /* implicitly locked: one RFO */
\taddl $1, 0x40                 /* plain RMW: READ, then INVALIDATE */
\tmovl $1, 0x800               /* flag at 0x50800: RFO */
5:\thlt
\tjmp 5b
tramp_end:
""")
    out = run_guest(tmp_path, elf)
    c = counters(out)
    assert c[(0, 1, "kernel", "bus_rfo")] == 3
    assert c[(0, 1, "kernel", "bus_read")] == 1
    assert c[(0, 1, "kernel", "bus_invalidate")] == 1
    assert c[(0, 1, "kernel", "hitm")] in (3, 4)   # + the flag's, if BIOS
                                                    # left that line dirty
    assert c[(0, 1, "kernel", "l1d_read_accesses")] == 3    # the R halves
    assert c[(0, 1, "kernel", "l1d_write_accesses")] == 4
    assert c[(0, 1, "kernel", "l1d_write_misses")] == 1     # the flag only
    ap = sorted((r["kind"], int(r["offset"])) for r in bus_rows(out)
                if r["cpu"] == "1")
    assert ap == [("invalidate", 0x40), ("read", 0x40),
                  ("rfo", 0x0), ("rfo", 0x20), ("rfo", 0x800)]


@needs_qemu
def test_guest_reads_what_the_plugin_writes(tmp_path):
    """publish=ADDR: at every TB start the plugin writes the CPU's
    instruction count into guest RAM (qemu_plugin_write_memory_hwaddr, API
    version 5), under round-robin -icount.  The guest overwrites the slot
    with a sentinel, reads it back at the next TB, spins 99 two-instruction
    TBs, reads again, and sends both values out through port 0xe9."""
    elf, _ = build_guest(tmp_path, """
\t.macro emit reg               /* 4 raw bytes of reg to port 0xe9 */
\tmov \\reg, %eax
\tmov $0xe9, %dx
\t.rept 4
\toutb %al, %dx
\tshr $8, %eax
\t.endr
\t.endm
\tmovl $0xdeadbeef, 0x60000    /* CPU0's slot: low word */
\tjmp 1f
1:\tmov 0x60000, %ebx            /* TB A: 4 instructions */
\tmov $100, %ecx
2:\tdec %ecx                      /* TB B: 2 instructions, 99 times */
\tjnz 2b
\tmov 0x60000, %esi            /* TB C: 2 instructions */
\tjmp 3f
3:\temit %ebx
\temit %esi
""")
    con = tmp_path / "debugcon.bin"
    out = run_guest(tmp_path, elf, "publish=0x60000",
                    qemu_args=("-debugcon", f"file:{con}"))
    raw = con.read_bytes()
    assert len(raw) == 8, raw
    v1, v2 = int.from_bytes(raw[:4], "little"), int.from_bytes(raw[4:], "little")
    assert v1 != 0xdeadbeef and v1 > 0           # the plugin's write arrived
    # Counts are added at TB start, before the write: v2 includes TB B's
    # 99 runs and TB C itself.  The run is deterministic, so this is exact.
    assert v2 - v1 == 99 * 2 + 2, (v1, v2)
    conf = json.loads((out / "busmon.json").read_text())
    assert conf["publish"] == "0x60000" and conf["publish_errors"] == 0
    assert conf["qemu_plugin_api"] == 5
    assert v2 < conf["insts_since_start"]


@needs_qemu
def test_guest_instruction_fetches(tmp_path):
    """l1i=: every TB execution fetches the lines its code touches.  After
    resetstats the guest runs, in one 32-byte line, a TB (mov; dec; jnz)
    once, the loop TB (dec; jnz) 999 times and a jmp TB once, then a TB in
    the next line holding dumpstats.  Without l1i= nothing is fetched."""
    body = """
\tm5 0x40                       /* resetstats */
\tjmp 3f
\t.balign 32
3:\tmov $1000, %ecx              /* line A: TB (mov; dec; jnz), once */
4:\tdec %ecx                      /* TB (dec; jnz), 999 times */
\tjnz 4b
\tjmp 5f                       /* TB (jmp), once */
\t.balign 32
5:\tm5 0x41                       /* line B: TB (dumpstats; jmp) */
\tjmp 6f
6:
"""
    elf, s = build_guest(tmp_path, body)
    out = run_guest(tmp_path, elf, "l1i=8192:4:32")
    c = counters(out)
    assert c[(0, 0, "kernel", "l1i_accesses")] == 1 + 999 + 1 + 1
    assert c[(0, 0, "kernel", "l1i_misses")] == 2
    # The two code misses reach the unified L2 like data misses.
    assert c[(0, 0, "kernel", "l2_accesses")] == 2 + c[(0, 0, "kernel", "l1d_read_misses")] \
        + c[(0, 0, "kernel", "l1d_write_misses")]
    assert json.loads((out / "busmon.json").read_text())["l1i"] == \
        {"size": 8192, "assoc": 4, "line": 32, "sets": 64}
    assert "system.cpu0.l1i.misses::kernel" in (out / "stats.txt").read_text()
    (tmp_path / "out").rename(tmp_path / "out-l1i")
    plain = counters(run_guest(tmp_path, elf))
    assert not any(k[3].startswith("l1i") for k in plain)
