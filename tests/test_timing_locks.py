"""The lockmeter over a set of lock words (busmon lock=ADDR:STRIDE:COUNT):
the multi-queue kernels' per-CPU run-queue locks.

Small guests check exact hold times of nested holds of two metered locks by
one CPU (what mq's load balancer and steal do: its own queue's lock, then a
trylock of another's) and that a lock set leaves the one-lock numbers as
they were; real mq and mq-c32 runs with --timing check that every CPU's
lock is metered, that holds of each lock never overlap in modelled time,
and that the vanilla kernel's numbers do not depend on the lock-set path.
"""
import json
import re
import subprocess

import pytest

from tests.test_cache_model import (START_AP_AND_WAIT, build_guest, counters,
                                    needs_qemu, run_guest)
from tests.test_timing import TIMING, T, _qemu_run, _timing_spec, pingpong_guest


NAMES = {"acquisitions": "acquisitions", "contended": "contended",
         "spinCycles": "spin_cycles", "holdCycles": "hold_cycles",
         "holdMaxCycles": "hold_max_cycles", "trylockFailures": "trylock_failures",
         "holdOverlaps": "hold_overlaps"}


def lock_totals(out, dump=0):
    """Each metered lock's totals in stats.txt's dump `dump` (busmon.json
    has them too, as of its last rewrite, which may be after the dump)."""
    block = (out / "stats.txt").read_text().split("Begin Simulation")[dump + 1]
    locks = {}
    for i, name, v in re.findall(r"^system\.lock(\d+)\.(\w+)\s+(\d+)", block, re.M):
        locks.setdefault(int(i), {})[NAMES[name]] = int(v)
    return [locks[i] for i in range(len(locks))]


def nested_guest(tmp_path, k, m):
    """CPU 0 alone: takes A (lock subl) at 0x50000, trylocks B (xchg of 0)
    at 0x50040, holds both for k iterations, releases B, trylocks A again
    (it is held: a failed trylock), holds A alone for m iterations,
    releases A.  Every lock operation ends its TB, so the holds are exact:
    B is (mov; dec; jnz), k - 1 times (dec; jnz), and the releasing TB
    (movl; xor; xchg; jmp): 2k + 5 instructions; A adds the trylock TB
    before (mov; xchg; test; jz: 4), the second loop (2m + 1) and its
    releasing TB (movl; jmp: 2): 2k + 2m + 12."""
    body = f"""
\tmovl $1, 0x50000             /* A, free (its line in L1, M) */
\tmovl $1, 0x50040             /* B, free */
\tm5 0x40                       /* resetstats */
\tlock subl $1, 0x50000
\tjnz 99f
\tmov $0, %eax
\txchg %eax, 0x50040            /* trylock B */
\ttest %eax, %eax
\tjz 99f
\tmov ${k}, %ecx
13:\tdec %ecx
\tjnz 13b
\tmovl $1, 0x50040             /* release B */
\txor %eax, %eax
\txchg %eax, 0x50000            /* trylock A: held by this CPU, fails */
\tjmp 14f
14:\tmov ${m}, %ecx
15:\tdec %ecx
\tjnz 15b
\tmovl $1, 0x50000             /* release A */
\tjmp 16f
99:\tud2
16:\tm5 0x41                       /* dumpstats */
"""
    elf, _ = build_guest(tmp_path, body)
    out = run_guest(tmp_path, elf, TIMING, "lock=0x50000:0x40:2")
    conf = json.loads((out / "busmon.json").read_text())
    return out, counters(out), conf, lock_totals(out)


@needs_qemu
def test_nested_holds_are_timed_per_lock(tmp_path):
    k, m = 300, 100
    out, c, conf, locks = nested_guest(tmp_path, k, m)
    assert [l["addr"] for l in conf["locks"]] == ["0x50000", "0x50040"]
    a, b = locks
    assert a["acquisitions"] == b["acquisitions"] == 1
    assert b["hold_cycles"] == b["hold_max_cycles"] == (2 * k + 5) * T["inst"]
    assert a["hold_cycles"] == (2 * k + 2 * m + 12) * T["inst"]
    assert (a["trylock_failures"], b["trylock_failures"]) == (1, 0)
    assert a["contended"] == b["contended"] == 0
    assert a["hold_overlaps"] == b["hold_overlaps"] == 0
    # per acquiring CPU: both holds, each from its own acquire
    g = lambda s: c[(0, 0, "kernel", "lock_" + s)]
    assert g("acquisitions") == 2 and g("contended") == 0
    assert g("hold_cycles") == a["hold_cycles"] + b["hold_cycles"]
    assert g("hold_max_cycles") == a["hold_cycles"]
    assert c[(0, 1, "kernel", "lock_acquisitions")] == 0
    stats = (out / "stats.txt").read_text()
    assert "system.lock1.holdCycles" in stats and "system.lock2." not in stats


@needs_qemu
def test_lock_set_leaves_one_lock_numbers_unchanged(tmp_path):
    """The ping-pong's lock metered alone, and as the second word of a set
    whose other word nothing stores to: the same counters, byte for byte,
    and that word has no acquisitions."""
    outs = {}
    for name, arg in (("one", "lock=0x50000"), ("set", "lock=0x4ffc0:64:3")):
        d = tmp_path / name
        d.mkdir()
        pingpong_guest(d, 400, outside=200, lock_arg=arg)
        outs[name] = d / "out"
    assert ((outs["one"] / "counters.csv").read_bytes()
            == (outs["set"] / "counters.csv").read_bytes())
    conf = json.loads((outs["set"] / "busmon.json").read_text())
    assert [l["addr"] for l in conf["locks"]] == ["0x4ffc0", "0x50000", "0x50040"]
    locks = lock_totals(outs["set"])
    assert [l["acquisitions"] for l in locks] == [0, 100, 0]
    assert locks[1]["contended"] > 50 and locks[1]["hold_overlaps"] == 0
    assert lock_totals(outs["one"]) == [locks[1]]


def order_guest(tmp_path, crit, ap_holds=1, retry=False):
    """The AP runs ahead in modelled time (2048 line fills at 0x60000 in
    few instructions), takes the lock at 0x50000, holds it for 20
    iterations, releases it and sets a flag; CPU 0 (behind: it only spins
    on the flag) then takes the lock and holds it for `crit` iterations.
    In execution order the AP's hold comes first; in modelled time CPU 0
    asked before the AP's hold began.  With ap_holds > 1 the AP takes and
    releases the lock that many times before setting the flag.  With
    retry, the AP then asks again while CPU 0 holds the lock in guest
    memory and spins (2.4's spin_lock: lock subl, then reads until the
    word is positive); CPU 0 ends the region once the AP has released.
    Returns g(cpu, stat) (a lock_ counter, or another, such as cycles) and
    the lock's totals."""
    ap_hold = """\tlock subl $1, 0
\tmov $20, %ecx
6:\tdec %ecx
\tjnz 6b
\tmovl $1, 0                   /* release */
"""
    elf, _ = build_guest(tmp_path, """
\tmovl $1, 0x50000             /* the lock, free */
\tm5 0x40                       /* resetstats */
""" + START_AP_AND_WAIT + f"""
\tlock subl $1, 0x50000
\tjnz 99f
\tmovl $1, 0x50804             /* tell the AP: held */
\tmov ${crit}, %ecx
13:\tdec %ecx
\tjnz 13b
\tmovl $1, 0x50000             /* release */
""" + ("""17:\tpause
\tcmpl $1, 0x50808             /* the AP is done */
\tjne 17b
""" if retry else "") + """\tjmp 16f
99:\tud2
16:\tm5 0x41                       /* dumpstats */
""", after="""
\t.code16
tramp:                          /* AP in real mode at 0800:0000 */
\tmov $0x5000, %ax
\tmov %ax, %ds
\tmov $0x6000, %ax
\tmov %ax, %es
\txor %si, %si
3:\tmov %es:(%si), %eax          /* 2048 fills: far ahead of CPU 0 */
\tadd $32, %si
\tjnz 3b
""" + ap_hold * ap_holds + """\tmovl $1, 0x800               /* flag at 0x50800 */
""" + ("""7:\tcmpl $1, 0x804             /* wait until CPU 0 holds the lock */
\tjne 7b
8:\tlock subl $1, 0             /* held: spin */
\tjz 10f
9:\tpause
\tcmpl $0, 0
\tjle 9b
\tjmp 8b
10:\tmov $20, %ecx
11:\tdec %ecx
\tjnz 11b
\tmovl $1, 0                   /* release */
\tmovl $1, 0x808               /* done */
""" if retry else "") + """5:\thlt
\tjmp 5b
tramp_end:
""")
    out = run_guest(tmp_path, elf, TIMING, "lock=0x50000")
    c = counters(out)
    g = lambda cpu, s: c.get((0, cpu, "kernel", "lock_" + s), c.get((0, cpu, "kernel", s)))
    return g, lock_totals(out)[0]


@needs_qemu
def test_an_earlier_request_goes_first(tmp_path):
    """Acquisitions follow modelled time, not round-robin order: CPU 0,
    which asked before the AP's hold began, does not wait for it (before,
    it waited from its request to the AP's release: longer than the hold).
    With a short hold CPU 0 is done before the AP asks and no one waits;
    with a long one the AP waits for it, at most that hold plus the lock
    line's transfer."""
    for crit in (10, 100000):
        d = tmp_path / f"k{crit}"
        d.mkdir()
        g, lock = order_guest(d, crit)
        assert g(0, "acquisitions") == g(1, "acquisitions") == 1
        assert g(0, "contended") == 0 and g(0, "spin_cycles") == 0, crit
        assert lock["hold_overlaps"] == 0
        if crit == 10:
            assert g(1, "contended") == 0 and lock["contended"] == 0
        else:
            assert g(1, "contended") == 1 and lock["contended"] == 1
            assert 0 < g(1, "spin_cycles") <= g(0, "hold_cycles") + T["hitm"]
            assert lock["spin_cycles"] == g(1, "spin_cycles")


@needs_qemu
def test_an_earlier_request_goes_before_several_holds(tmp_path):
    """CPU 0 asked before all three of the AP's holds began, though
    round-robin ran them first: it goes before all three and does not wait
    (with the reordering one hold deep it waited for the first two).  Its
    long hold pushes the AP's first hold back (one wait, at most that hold
    plus the lock line's transfer); the AP's later holds move with its
    clock, uncharged."""
    d = tmp_path / "deep"
    d.mkdir()
    g, lock = order_guest(d, 100000, ap_holds=3)
    assert g(0, "acquisitions") == 1 and g(1, "acquisitions") == 3
    assert g(0, "contended") == 0 and g(0, "spin_cycles") == 0
    assert lock["hold_overlaps"] == 0
    conf = json.loads((d / "out" / "busmon.json").read_text())["locks"][0]
    assert conf["reordered"] == 1 and conf["max_depth"] == 3
    assert g(1, "contended") == 1 and lock["contended"] == 1
    assert 0 < g(1, "spin_cycles") <= g(0, "hold_cycles") + T["hitm"]


@needs_qemu
def test_a_wait_pushed_into_a_spin_is_booked_once(tmp_path):
    """The AP waits once in modelled time: from its first hold's request
    to CPU 0's release (its first hold pushed back behind CPU 0's), then
    its second hold follows at once.  That wait is booked when the first
    hold is pushed; the second acquire must not book it again from the
    spin's start.  Before, the AP's spin came to twice CPU 0's hold, more
    than the AP's whole region (cycles, which this does not change)."""
    g, lock = order_guest(tmp_path, 1000000, retry=True)
    hold0 = g(0, "hold_cycles")
    ap = lambda s: g(1, s)
    assert ap("acquisitions") == 2 and ap("contended") == 2
    assert lock["hold_overlaps"] == 0
    assert 0.9 * hold0 < ap("spin_cycles") <= hold0 + 2 * T["hitm"]
    assert ap("spin_cycles") < g(1, "cycles")
    assert lock["spin_cycles"] == ap("spin_cycles")


# ---- the multi-queue kernels with --timing -----------------------------------

def _run(tmp_path, kernel, cpus=4, tasks=256):
    from colorsim.run import runner
    spec = _timing_spec(kernel, tasks=tasks)
    if cpus != spec.cpus:
        from dataclasses import replace
        spec = replace(spec, machine=spec.machine.with_cpus(cpus))
    layout = runner.prepare(spec, progress=lambda *_: None)
    d = _qemu_run(spec, layout, tmp_path / kernel)
    return spec, layout, d


def check_mq_lockmeter(spec, layout, d):
    from colorsim.run.engines.qemu import QemuEngine
    cpus = spec.cpus
    lm = layout["lockmeter"]
    locks = [l["addr"] for l in layout["scheduler"]["runqueue_locks"]][:cpus]
    assert lm["addr"] == locks[0] and lm["stride"] == 32
    assert QemuEngine.lock_arg(spec, layout) == f"lock={locks[0]:#x}:32:{cpus}"
    c = counters(d)
    conf = json.loads((d / "busmon.json").read_text())
    assert [int(l["addr"], 16) for l in conf["locks"]] == locks
    region = [sum(c[(0, cpu, md, "cycles")] for md in ("kernel", "user"))
              for cpu in range(cpus)]
    for cpu in range(cpus):
        g = lambda s: c[(0, cpu, "kernel", "lock_" + s)]
        assert g("acquisitions") > 0 and g("hold_cycles") > 0, cpu
        assert g("hold_max_cycles") <= g("hold_cycles")
    for i, l in enumerate(lock_totals(d)):
        # every CPU's queue lock is taken, by its CPU at least
        assert l["acquisitions"] > 0 and l["hold_cycles"] > 0, i
        # holds of one lock never overlap in modelled time: checked at
        # every acquire, and so together they fit in the region
        assert l["hold_overlaps"] == 0, i
        assert l["hold_cycles"] <= max(region), (i, l, region)
    # the per-lock totals and the per-CPU counters count the same events
    for k, s in (("acquisitions", "acquisitions"), ("contended", "contended"),
                 ("spin_cycles", "spin_cycles"), ("hold_cycles", "hold_cycles")):
        assert (sum(l[k] for l in lock_totals(d))
                == sum(c[(0, cpu, "kernel", "lock_" + s)] for cpu in range(cpus))), k
    assert conf["publish_errors"] == 0 and conf["sync_polls"] > 0
    return conf


@needs_qemu
@pytest.mark.parametrize("kernel, cpus", [("mq", 4), ("mq-c32", 2)])
def test_mq_timing_meters_every_cpus_lock(kernel, cpus, tmp_path):
    spec, layout, d = _run(tmp_path, kernel, cpus=cpus)
    check_mq_lockmeter(spec, layout, d)
    # the CPUs' clocks cover the region (5 ticks each, within one tick)
    c = counters(d)
    per_tick = spec.machine.processor.clock_hz // 100
    for cpu in range(cpus):
        cyc = sum(c[(0, cpu, md, "cycles")] for md in ("kernel", "user"))
        assert abs(cyc - 5 * per_tick) <= per_tick, (cpu, cyc)
        assert c[(0, cpu, "user", "work_units")] > 0


@needs_qemu
def test_vanilla_lockmeter_same_through_a_lock_set(tmp_path):
    """vanilla --timing: runqueue_lock as lock=ADDR (what colorsim passes)
    and as the one word of lock=ADDR:4:1 give the same files byte for
    byte, and the lock's totals equal the per-CPU sums."""
    from colorsim.run.engines.qemu import QemuEngine
    spec, layout, d = _run(tmp_path, "vanilla")
    addr = layout["symbols"]["runqueue_lock"]["addr"]
    assert layout["lockmeter"]["addr"] == addr and layout["lockmeter"]["count"] == 1
    assert QemuEngine.lock_arg(spec, layout) == f"lock={addr:#x}"
    cmd = QemuEngine().command(spec, tmp_path / "set", layout)
    assert f",lock={addr:#x}," in cmd[-1]
    cmd[-1] = cmd[-1].replace(f",lock={addr:#x},", f",lock={addr:#x}:4:1,")
    (tmp_path / "set").mkdir()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                        timeout=spec.timeout_s).returncode
    assert QemuEngine().judge_exit(rc) is None, rc
    for f in ("counters.csv", "bus_offsets.csv"):
        assert (d / f).read_bytes() == (tmp_path / "set" / f).read_bytes(), f
    c = counters(d)
    (lock,) = lock_totals(d)
    assert lock["acquisitions"] == sum(c[(0, cpu, "kernel", "lock_acquisitions")]
                                       for cpu in range(4)) > 0
    assert lock["hold_overlaps"] == 0
    # the kernel counts the same acquisitions itself (lockstat.c), but for
    # the few at the region's edges (its counters reset just before the
    # monitor's, and freeze just after); whether the first try found the
    # lock held is the guest's own order of events
    from colorsim.run.console import parse_roi
    k = parse_roi((d / "console.log").read_text())
    assert abs(k["kernel_lock_acquisitions"] - lock["acquisitions"]) <= 4, (k, lock)
    assert 0 < k["kernel_lock_contended"] <= k["kernel_lock_acquisitions"]
    assert 0 < k["kernel_lock_hold_tsc"] < 4 * k["kernel_region_tsc"]


@pytest.mark.parametrize("kernel", ["mq", "mq-c32"])
def test_mq_timing_is_no_longer_refused(kernel, capsys, tmp_path):
    """--timing with a multi-queue kernel was refused in one line until
    the lockmeter metered every CPU's lock; now it runs, with the per-CPU
    lock words passed as a set."""
    from colorsim.cli import main as cli_main
    rc = cli_main(["run", "--kernel", kernel, "--timing", "--tasks", "16",
                   "--dry-run", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "not supported" not in err
    assert re.search(r",lock=0x[0-9a-f]+:32:4,", out), out


def test_lock_arg_from_layouts():
    """lock= from layout.json: one word as before, the per-CPU words as
    ADDR:STRIDE:COUNT limited to the run's CPUs, and old layouts without
    the lockmeter key fall back to runqueue_lock."""
    from colorsim.run.engines.qemu import QemuEngine
    spec = _timing_spec("mq")
    lay = {"lockmeter": {"addr": 0x260fdc, "stride": 32, "count": 8}}
    assert QemuEngine.lock_arg(spec, lay) == "lock=0x260fdc:32:4"
    one = {"lockmeter": {"addr": 0x1000, "stride": 4, "count": 1}}
    assert QemuEngine.lock_arg(spec, one) == "lock=0x1000"
    old = {"symbols": {"runqueue_lock": {"addr": 0x2000}}}
    assert QemuEngine.lock_arg(spec, old) == "lock=0x2000"


@needs_qemu
@pytest.mark.parametrize("arg", [
    "lock=0x1000:32", "lock=0x1000:32:0", "lock=0x1000:30:4", "lock=0x1000:0:4",
    "lock=0x1000:32:65", "lock=0x1000:32:4:1", "lock=0x1000:32:x",
    "lock=0x1000:2097152:2", "lock=0x1002:32:2",
])
def test_bad_lock_sets_are_one_line(arg, tmp_path):
    from tests.test_cache_model import qemu_cmd
    r = subprocess.run(qemu_cmd([f"out={tmp_path}", TIMING, arg]),
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 1
    lines = [l for l in r.stderr.splitlines() if l.startswith("busmon:")]
    assert len(lines) == 1 and lines[0].startswith(f"busmon: bad value in '{arg}'"), r.stderr
