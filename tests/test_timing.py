"""Modelled time in the bus monitor (issue 7 phase 2).

Small multiboot guests (built as in test_cache_model.py) with known miss
counts must give exactly the cycles the timing parameters imply, and a
two-CPU lock ping-pong must give the hold time of its critical section.
"""
import json

import pytest

from tests.test_cache_model import (build_guest, counters,
                                    needs_qemu, run_guest)

# Distinct primes, so that no two terms of the expected sum can trade places.
T = dict(inst=1, l2_hit=7, mem=41, hitm=29, inval=17, bus_line=13, bus_addr=5)
TIMING = "timing=" + ":".join(str(T[k]) for k in
                              ("inst", "l2_hit", "mem", "hitm", "inval",
                               "bus_line", "bus_addr"))


def expected_cycles(c, cpu=0, mode="kernel", dump=0):
    """What the model must charge for one CPU's counts."""
    g = lambda s: c[(dump, cpu, mode, s)]
    l2_hits = g("l2_accesses") - g("l2_misses")
    fills = g("bus_read") + g("bus_rfo")
    return (g("insts") * T["inst"] + l2_hits * T["l2_hit"]
            + (fills - g("hitm")) * T["mem"] + g("hitm") * T["hitm"]
            + g("bus_invalidate") * T["inval"] + g("bus_wait_cycles"))


@needs_qemu
def test_microbenchmark_exact_cycles(tmp_path):
    """Read 64 KiB twice (> L1, < L2): 2048 memory fills, then 2048 L1
    misses served by L2, and 4 instructions per line.  One CPU, no
    sharing: the cycles are exactly the sum.  SeaBIOS leaves the LRU way
    of each of these L2 sets dirty, so every fill also evicts a dirty line:
    its write-back is posted after the fill (no stall) and its request
    phase holds the address bus for bus_addr cycles; the next miss, one
    4-instruction TB later, queues for the rest: (bus_addr - 4 * inst)
    cycles, 2047 times.  (Its data phase, bus_line cycles right after,
    ends long before the next miss's data phase, at the end of mem.)"""
    elf, _ = build_guest(tmp_path, """
\tm5 0x40                       /* resetstats */
\tsweep "mov (%esi), %eax"
\tsweep "mov (%esi), %eax"
\tm5 0x41                       /* dumpstats */
""")
    out = run_guest(tmp_path, elf, TIMING)
    c = counters(out)
    k = lambda s: c[(0, 0, "kernel", s)]
    assert k("l2_misses") == 2048 and k("bus_read") == 2048
    assert k("l2_accesses") == 4096 and k("hitm") == 0
    assert k("l2_writebacks") == 2048
    assert k("bus_wait_cycles") == 2047 * (T["bus_addr"] - 4 * T["inst"])
    insts = k("insts")
    assert insts == 2 * (1 + 4 * 2048) + 1    # 2 x (mov; 4 per line) + m5
    assert k("cycles") == (insts * T["inst"] + 2048 * T["l2_hit"]
                           + 2048 * T["mem"] + k("bus_wait_cycles"))
    assert k("cycles") == expected_cycles(c)
    assert c[(0, 1, "kernel", "cycles")] == 0  # the AP is parked
    conf = json.loads((out / "busmon.json").read_text())
    assert conf["timing"] == T
    assert conf["bus"]["depth"] == 8 and conf["bus"]["late"] == 0
    assert "system.cpu0.numCycles::kernel" in (out / "stats.txt").read_text()


@needs_qemu
def test_counting_only_has_no_cycles(tmp_path):
    elf, _ = build_guest(tmp_path, "\tm5 0x40\n\tm5 0x41\n")
    c = counters(run_guest(tmp_path, elf))
    assert not any(k[3] in ("cycles", "bus_wait_cycles") or
                   k[3].startswith("lock_") for k in c)


# resetstats, then the AP started at the trampoline copied to 0x8000
# (INIT, then SIPI with vector 8): the two-CPU guests' common opening.
RESET_AND_START_AP = """
\tm5 0x40                       /* resetstats */
\tmov $tramp, %esi              /* AP trampoline to 0x8000 (vector 8) */
\tmov $0x8000, %edi
\tmov $(tramp_end - tramp), %ecx
\trep movsb
\tmovl $0, 0xFEE00310
\tmovl $0xC4500, 0xFEE00300     /* INIT, all excluding self */
\tmovl $0xC4608, 0xFEE00300     /* SIPI, vector 8 */
"""


@needs_qemu
def test_throughput_is_over_elapsed_time(tmp_path):
    """The AP works about half the region, then halts; CPU 0 works all of
    it.  busmon's elapsed_cycles is CPU 0's clock from resetstats to
    dumpstats, idle included (exactly CPU 0's cycles: it never idles),
    and the work per modelled second is the work over that, not over the
    mean CPU's busy cycles (0.75 of it here: 1.33x too high)."""
    from colorsim.orchestrate.timing import timing_summary
    elf, syms = build_guest(tmp_path, RESET_AND_START_AP + """\tmov $20000, %ecx
work:\tdec %ecx                   /* a unit of work per iteration */
\tpause                         /* round-robin: let the AP run too */
\tjnz work
\tm5 0x41                       /* dumpstats */
""", after="""
\t.code16
tramp:                          /* AP in real mode: half the work, then idle */
\tmov $10000, %ecx
4:\tdec %ecx
\tpause
\tjnz 4b
5:\thlt
\tjmp 5b
tramp_end:
""")
    out = run_guest(tmp_path, elf, TIMING, "lock=0x50000",
                    f"unit={syms['work']:#x}")
    c = counters(out)
    busy = [sum(c[(0, cpu, m, "cycles")] for m in ("kernel", "user"))
            for cpu in (0, 1)]
    elapsed = c[(0, -1, "all", "elapsed_cycles")]
    assert elapsed == busy[0]
    assert 0.4 < busy[1] / elapsed < 0.6, (busy, elapsed)
    assert "system.elapsedCycles" in (out / "stats.txt").read_text()
    assert (0, -1, "all", "max_skew_cycles") in c      # reported per run
    assert c[(0, -1, "all", "bus_max_lag_cycles")] >= 0
    hz = 200_000_000
    (out / "config.json").write_text(json.dumps({
        "timing": True, "variant": {"name": "guest"},
        "machine": {"name": "guest", "processor": {"clock_hz": hz},
                    "caches": {"l2": {"size": 524288}}}}))
    t = timing_summary(out)
    units = t["work_units"]     # the first iteration starts mid-TB
    assert units in (19999, 20000)
    assert t["modeled_seconds"] == elapsed / hz
    assert t["work_per_modeled_second"] == units * hz / elapsed
    assert 0.7 < t["busy_fraction"] < 0.8
    # the catalog's columns (figures and report read those) say the same
    import pandas as pd
    from colorsim.results.runrows import timing_columns
    cat = timing_columns(json.loads((out / "config.json").read_text()),
                         pd.read_csv(out / "counters.csv"),
                         out / "console.log", float("nan"))
    assert cat["modeled_seconds"] == t["modeled_seconds"]
    assert cat["throughput"] == t["work_per_modeled_second"]


def pingpong_guest(tmp_path, crit, outside=200, rounds=50,
                   lock_arg="lock=0x50000"):
    """Both CPUs take the lock word at 0x50000 `rounds` times, the i386
    2.4 way (lock subl; spin reading with pause), hold it for `crit`
    iterations of (dec; jnz), release it with a plain store of 1, and work
    `outside` iterations with a pause (a round-robin turn ends there)."""
    def loop(addr, flag_done):
        return f"""\tmov ${rounds}, %edi
10:\tlock subl $1, {addr}
\tjz 12f
11:\tpause
\tcmpl $0, {addr}
\tjle 11b
\tjmp 10b
12:\tmov ${crit}, %ecx
13:\tdec %ecx
\tjnz 13b
\tmovl $1, {addr}
\tmov ${outside}, %ecx
14:\tdec %ecx
\tjnz 14b
\tpause
\tdec %edi
\tjnz 10b
{flag_done}"""
    body = """
\tmovl $1, 0x50000             /* the lock, free */
""" + RESET_AND_START_AP + loop("0x50000", "") + """
20:\tpause
\tcmpl $1, 0x50800              /* the AP is done */
\tjne 20b
\tm5 0x41                       /* dumpstats */
"""
    after = """
\t.code16
tramp:                          /* AP in real mode at 0800:0000 */
\tmov $0x5000, %ax
\tmov %ax, %ds
""" + loop("0x0", "\tmovl $1, 0x800\n") + """5:\thlt
\tjmp 5b
tramp_end:
"""
    elf, _ = build_guest(tmp_path, body, after=after)
    out = run_guest(tmp_path, elf, TIMING, lock_arg)
    c = counters(out)
    lk = lambda s: sum(c[(0, cpu, "kernel", "lock_" + s)] for cpu in (0, 1))
    return {s: lk(s) for s in ("acquisitions", "contended", "spin_cycles",
                               "hold_cycles")} | {
        "hold_max": max(c[(0, cpu, "kernel", "lock_hold_max_cycles")]
                        for cpu in (0, 1))}


@needs_qemu
def test_lock_pingpong(tmp_path):
    """Hold time is the critical section's modelled cycles, exactly: the
    acquiring TB (lock subl; jz) is charged before the acquire, then
    (mov; dec; jnz), K - 1 times (dec; jnz), and the releasing TB (movl;
    mov; dec; jnz) is charged before its store: 2K + 5 instructions at
    inst clocks each, with the lock line still M in the holder.  With a
    critical section shorter than the work outside it the two CPUs rarely
    meet; longer, nearly every acquisition waits, and the wait grows."""
    runs = {}
    for crit in (100, 400, 2000):
        d = tmp_path / f"k{crit}"
        d.mkdir()
        m = runs[crit] = pingpong_guest(d, crit, outside=200)
        assert m["acquisitions"] == 100
        assert m["hold_max"] == (2 * crit + 5) * T["inst"]
        assert m["hold_cycles"] == 100 * (2 * crit + 5) * T["inst"]
    frac = {k: m["contended"] / m["acquisitions"] for k, m in runs.items()}
    spin = {k: m["spin_cycles"] / m["acquisitions"] for k, m in runs.items()}
    assert frac[100] < 0.1 and frac[400] > 0.5 and frac[2000] >= frac[400]
    assert spin[100] < spin[400] < spin[2000]
    # A contended acquire waits at most the holder's whole section plus
    # the lock line's transfer.
    assert spin[2000] <= (2 * 2000 + 5 + T["hitm"]) * T["inst"] + T["mem"]


# ---- end to end: guest time follows modelled time ----------------------------

def _timing_spec(kernel, tasks=256):
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    m = get_machine("ppro4")
    return RunSpec(m, parse_variant(kernel, m),
                   Workload(tasks=tasks, warmup_ticks=5, roi_ticks=5),
                   timeout_s=120, timing=True)


def _qemu_run(spec, layout, run_dir):
    import subprocess
    from colorsim.run.engines.qemu import QemuEngine
    eng = QemuEngine()
    run_dir.mkdir()
    rc = subprocess.run(eng.command(spec, run_dir, layout),
                        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                        timeout=spec.timeout_s).returncode
    assert eng.judge_exit(rc) is None, rc
    return run_dir


@needs_qemu
def test_timing_runs_follow_modelled_time_and_repeat(tmp_path):
    """--timing: the region of interest lasts its ticks of modelled time on
    every CPU (each ticks when its own clock crosses 10 ms), so the CPU
    that misses more (vanilla) runs fewer instructions in it; the same
    run repeats byte for byte, also beside two busy loops."""
    import subprocess
    import sys
    from colorsim.run import runner
    from tests.test_repeat_under_load import BUSY
    runs = {}
    for kernel in ("vanilla", "c32"):
        spec = _timing_spec(kernel)
        layout = runner.prepare(spec, progress=lambda *_: None)
        runs[kernel] = _qemu_run(spec, layout, tmp_path / kernel)
    hogs = [subprocess.Popen([sys.executable, "-c", BUSY.format(s=60)])
            for _ in range(2)]
    try:
        again = _qemu_run(spec, layout, tmp_path / "c32-again")   # c32
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    for f in ("counters.csv", "bus_offsets.csv"):
        assert (again / f).read_bytes() == (runs["c32"] / f).read_bytes(), f
    hz = spec.machine.processor.clock_hz
    per_tick = hz // 100
    insts, units = {}, {}
    for kernel, d in runs.items():
        c = counters(d)
        for cpu in range(4):
            cyc = sum(c[(0, cpu, m, "cycles")] for m in ("kernel", "user"))
            # 5 ticks of this CPU's clock, give or take the poll interval
            # (and the ticks' own phase on each CPU): within one tick.
            assert abs(cyc - 5 * per_tick) <= per_tick, (kernel, cpu, cyc)
        insts[kernel] = sum(c[(0, cpu, m, "insts")] for cpu in range(4)
                            for m in ("kernel", "user"))
        conf = json.loads((d / "busmon.json").read_text())
        assert conf["publish_errors"] == 0 and conf["sync_polls"] > 0
        # a word already holding its value is not written again: most
        # polls are the free hold loop, whose values stay the same
        assert 0 < conf["publish_writes"] < conf["sync_polls"], conf
        # Units of work: one per burst; each burst ends in one schedule(),
        # and tick preemption adds a few schedule() calls of its own.
        units[kernel] = sum(c[(0, cpu, "user", "work_units")] for cpu in range(4))
        from colorsim.run.console import roi_counters
        sched = roi_counters(d / "console.log")["schedule_calls"]
        assert 0.8 * sched <= units[kernel] <= sched + 4, (units, sched)
    assert insts["c32"] > 1.2 * insts["vanilla"], insts
    assert units["c32"] > units["vanilla"], units


@needs_qemu
def test_the_modelled_time_poll_does_not_wake_qemus_main_loop(tmp_path):
    """A timing run's guest polls modelled time with a local APIC timer
    every 200 us of virtual time on every CPU: thousands of expiries in
    this run.  Our QEMU patch 0003 (scripts/qemu-patches/README.md) keeps
    them from waking QEMU's main-loop thread through its empty timer
    list; without it QEMU blocked about once per expiry (voluntary context
    switches, which host load does not add: a thread preempted is
    involuntary)."""
    import resource
    from colorsim.run import runner
    spec = _timing_spec("vanilla")
    layout = runner.prepare(spec, progress=lambda *_: None)
    # QEMU is the only child waited for in between (env -C execs it)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_nvcsw
    d = _qemu_run(spec, layout, tmp_path / "run")
    switches = resource.getrusage(resource.RUSAGE_CHILDREN).ru_nvcsw - before
    # the guest's virtual time: 2**shift ns per instruction (-icount)
    insts = json.loads((d / "busmon.json").read_text())["insts_since_start"]
    ns = 2 ** spec.machine.emulation.icount_shift
    poll_hz = 5000                  # POLL_HZ, kernels/kernel/lapic.c
    expiries = insts * ns * 1e-9 * poll_hz * spec.machine.processor.cpus
    assert expiries > 1000, expiries
    assert switches < expiries / 10, (switches, expiries)


# ---- refusals -----------------------------------------------------------------

@pytest.mark.parametrize("args,expect", [
    (["--engine", "gem5"], "--timing is the QEMU engine's"),
    (["--machine", "notiming"], "has no [timing] table"),
    (["--machine", "badtiming"], "timing.mem must be a whole number"),
    (["--machine", "oddtiming"], "[oddtiming.timing]: unknown key 'latency'"),
])
def test_timing_refusals(args, expect, capsys, tmp_path, monkeypatch):
    """Bad timing input: one line, exit status 2, nothing written."""
    from colorsim.describe.machine import MACHINES_ENV
    from tests.test_cli_errors import MACHINES, RUN, check_refused
    ppro = MACHINES[MACHINES.index("[ppro4]"):MACHINES.index("[piii8]")]
    untimed = ppro[:ppro.index("[ppro4.timing]")].split("# Modelled time")[0]
    text = MACHINES
    for name, extra in (("notiming", ""),
                        ("badtiming", "[ppro4.timing]\ninst = 1\nl2_hit = 6\nmem = -1\n"
                         "hitm = 30\ninval = 18\nbus_line = 12\nbus_addr = 6\n"),
                        ("oddtiming", "[ppro4.timing]\nlatency = 3\n")):
        text += "\n" + untimed.replace("ppro4", name) + extra.replace("ppro4", name)
    f = tmp_path / "machines.toml"
    f.write_text(text)
    monkeypatch.setenv(MACHINES_ENV, str(f))
    out = tmp_path / "runs"
    out.mkdir()
    check_refused(RUN + ["--kernel", "c32", "--timing", "--dry-run", *args,
                         "--out", str(out)], expect, capsys, out)


@needs_qemu
@pytest.mark.parametrize("args, message", [
    (["timing=1:2:3"], "busmon: bad value in 'timing=1:2:3': expected INST:L2"),
    (["timing=1:2:3:4:5:6:7:8"], "busmon: bad value in 'timing=1:2:3:4:5:6:7:8'"),
    (["timing=1:2:3:4:5:6:2000000"], "each at most 1000000"),
    (["lock=0x1000"], "busmon: lock= needs timing="),
    (["timing=1:2:3:4:5:6:7", "lock=0x1002"], "busmon: bad value in 'lock=0x1002'"),
    (["unit=0"], "busmon: bad value in 'unit=0'"),
    (["busdepth=0"], "busmon: bad value in 'busdepth=0'"),
    (["locked=2000000"], "busmon: bad value in 'locked=2000000'"),
    (["buscpus=2000"], "busmon: bad value in 'buscpus=2000'"),
    (["timing=1:2:3:4:5:6:7", "cpus=8", "buscpus=2"], "need more than 2 buses"),
    (["busdepth=65"], "busmon: bad value in 'busdepth=65'"),
    (["storebuf=65"], "busmon: bad value in 'storebuf=65'"),
    (["dtlb=6"], "busmon: bad value in 'dtlb=6'"),
    (["overlap=65"], "busmon: bad value in 'overlap=65'"),
    (["free=0x20-0x10"], "busmon: bad value in 'free=0x20-0x10'"),
    (["quantum=20000"], "busmon: quantum= needs timing="),
    (["quantum=2000000000"], "busmon: bad value in 'quantum=2000000000'"),
    (["clienthold=1"], "busmon: clienthold= needs timing="),
    (["clienthold=2"], "busmon: bad value in 'clienthold=2'"),
    (["clients=100:2000"], "busmon: clients= needs timing= and measured="),
    (["clients=0:2000"], "busmon: bad value in 'clients=0:2000'"),
    (["clients=100"], "busmon: bad value in 'clients=100'"),
    (["clients=100:x"], "busmon: bad value in 'clients=100:x'"),
    (["branch=15:512"], "busmon: branch= needs timing="),
    (["branch=15"], "busmon: bad value in 'branch=15'"),
    (["timing=1:2:3:4:5:6:7", "branch=15:500"], "the BTB's entries must be a power of two"),
])
def test_timing_option_errors(args, message, tmp_path):
    import subprocess
    from tests.test_cache_model import qemu_cmd
    r = subprocess.run(qemu_cmd([f"out={tmp_path}", *args]), capture_output=True,
                       text=True, timeout=20)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr


def test_machine_costs_reach_the_plugin():
    """Each [x.timing] cost is a busmon option, with its source's value."""
    from colorsim.describe.machine import get_machine
    for name in ("ppro4", "piii8"):
        args = get_machine(name).timing.plugin_args()
        assert args[0].startswith("timing=")
        assert "busdepth=8" in args and "locked=12" in args, args
        assert "buscpus=4" in args and "storebuf=12" in args, args
        assert "dtlb=64" in args and "dtlblarge=8" in args, args
        assert "itlb=32" in args and "itlblarge=2" in args, args
        assert "clienthold=0" in args, args      # a simulation setting, off
    assert "crossbus=11" in get_machine("piii8").timing.plugin_args()
    # instruction fetches: on with --timing (timing.fetch), off without
    from colorsim.run.engines.qemu import QemuEngine
    timed, counted = _timing_spec("c32"), _timing_spec("c32")
    counted = type(counted)(counted.machine, counted.variant, counted.workload)
    assert QemuEngine.fetches(timed) and not QemuEngine.fetches(counted)
