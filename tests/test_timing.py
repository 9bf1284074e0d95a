"""Modelled time in the bus monitor (issue 7 phase 2).

Small multiboot guests (built as in test_cache_model.py) with known miss
counts must give exactly the cycles the timing parameters imply, and a
two-CPU lock ping-pong must give the hold time of its critical section.
"""
import json

import pytest

from tests.test_cache_model import (START_AP_AND_WAIT, build_guest, counters,
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
    its write-back is posted after the fill (no stall) but holds the bus
    for bus_line cycles, and the next miss, one 4-instruction TB later,
    queues for the rest: (bus_line - 4 * inst) cycles, 2047 times."""
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
    assert k("bus_wait_cycles") == 2047 * (T["bus_line"] - 4 * T["inst"])
    insts = k("insts")
    assert insts == 2 * (1 + 4 * 2048) + 1    # 2 x (mov; 4 per line) + m5
    assert k("cycles") == (insts * T["inst"] + 2048 * T["l2_hit"]
                           + 2048 * T["mem"] + k("bus_wait_cycles"))
    assert k("cycles") == expected_cycles(c)
    assert c[(0, 1, "kernel", "cycles")] == 0  # the AP is parked
    conf = json.loads((out / "busmon.json").read_text())
    assert conf["timing"] == T
    assert "system.cpu0.numCycles::kernel" in (out / "stats.txt").read_text()


@needs_qemu
def test_counting_only_has_no_cycles(tmp_path):
    elf, _ = build_guest(tmp_path, "\tm5 0x40\n\tm5 0x41\n")
    c = counters(run_guest(tmp_path, elf))
    assert not any(k[3] in ("cycles", "bus_wait_cycles") or
                   k[3].startswith("lock_") for k in c)
