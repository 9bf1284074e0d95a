"""Runs repeat bit for bit while the host is busy.

QEMU 10.2's call_rcu thread, when it waits for a grace period, used to kick
the running round-robin vCPU at a host-time-dependent moment; the slice then
ended after a host-dependent number of guest instructions, and about one run
in eight under host load came out different (same console, other counts).
scripts/qemu-patches/0002-rr-icount-no-rcu-kick.patch removes that kick under
-icount (engine/qemu-plugin/README.md, "Repeatability under host load").

This test makes the load itself: two busy-loop children, plus two QEMUs at a
time, on this 2-core machine.  It runs the same small configuration 48 times
(11-21 s here; no new run starts after 45 s) and requires every
bus_offsets.csv and counters.csv, as the plugin wrote them, to be
byte-identical.  Without the patch 4 to 6 of the 48 runs differed, and the
test failed 6 times out of 6; with it, it passed 12 times out of 12.
"""

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from colorsim.run import runner
from colorsim.run.engines.qemu import QemuEngine
from colorsim.describe.machine import get_machine
from colorsim.describe.runspec import RunSpec, Workload
from colorsim.describe.variants import parse_variant

RUNS = 48           # at most; two at a time
PARALLEL = 2
BUDGET_S = 45       # no new run starts after this
MIN_RUNS = 8
HOGS = 2
HOG_S = 120         # a hog stops by itself even if this process dies
BUSY = ("import time\nend = time.monotonic() + {s}\n"
        "while time.monotonic() < end:\n    pass\n")
FILES = ("bus_offsets.csv", "counters.csv")


def small_spec():
    m = get_machine("ppro4")
    return RunSpec(m, parse_variant("c4", m),
                   Workload(tasks=128, warmup_ticks=5, roi_ticks=3), timeout_s=120)


def one_run(engine, spec, layout, run_dir):
    run_dir.mkdir()
    cmd = engine.command(spec, run_dir, layout)
    with open(run_dir / "qemu.log", "w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, timeout=spec.timeout_s).returncode
    reason = engine.judge_exit(rc)
    assert reason is None, f"{run_dir.name}: {reason}: {(run_dir / 'qemu.log').read_text()[-500:]}"
    return tuple((run_dir / f).read_bytes() for f in FILES)


def test_runs_repeat_exactly_under_host_load(tmp_path):
    spec = small_spec()
    layout = runner.prepare(spec, progress=lambda *_: None)   # builds, once
    engine = QemuEngine()
    hogs = [subprocess.Popen([sys.executable, "-c", BUSY.format(s=HOG_S)])
            for _ in range(HOGS)]
    results = {}
    try:
        t0 = time.monotonic()
        with ThreadPoolExecutor(PARALLEL) as pool:
            def job(i):
                if time.monotonic() - t0 > BUDGET_S:
                    return
                results[i] = one_run(engine, spec, layout, tmp_path / f"r{i:02d}")
            list(pool.map(job, range(RUNS)))
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert len(results) >= MIN_RUNS, f"only {len(results)} runs in {BUDGET_S} s"
    groups = {}
    for i, out in sorted(results.items()):
        groups.setdefault(out, []).append(f"r{i:02d}")
    assert len(groups) == 1, (
        f"{len(results)} runs under host load gave {len(groups)} different "
        f"results: " + "; ".join(", ".join(g) for g in groups.values()))
