#!/usr/bin/env python3
"""Engine speed: guest MIPS with and without the bus monitor, in counting-only
and timing mode (--timing), the cost of synchronisation and the skew
observed, and the wall time of the README's first command.

Usage:  python3 benchmarks/bench_engine.py [--repeat 3] [--tasks 1024]

The runs are deterministic (round-robin TCG, -icount), so the guest executes
the same instructions with and without the plugin; the plugin's
never-reset counter (busmon.json: insts_since_start) gives that count.  Peak
memory is the largest resident set of any QEMU child.
"""

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from colorsim.run import runner  # noqa: E402
from colorsim.run.engines.qemu import EXIT_OK, QemuEngine, qemu_version  # noqa: E402
from colorsim.describe.machine import get_machine  # noqa: E402
from colorsim.describe.runspec import RunSpec, Workload  # noqa: E402
from colorsim.describe.variants import parse_variant  # noqa: E402


def timed(cmd, cwd=None):
    t = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    return time.monotonic() - t, p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=1024)
    ap.add_argument("--kernel", default="vanilla")
    a = ap.parse_args()
    m = get_machine("ppro4")
    spec = RunSpec(m, parse_variant(a.kernel, m), Workload(tasks=a.tasks))
    layout = runner.prepare(spec, progress=lambda *_: None)
    eng = QemuEngine()
    tspec = RunSpec(m, parse_variant(a.kernel, m), Workload(tasks=a.tasks),
                    timing=True)
    tlayout = runner.prepare(tspec, progress=lambda *_: None)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        insts = None
        ttimes = []
        for i in range(a.repeat):
            d = tmp / f"timing-{i}"
            d.mkdir()
            wall, p = timed(eng.command(tspec, d, tlayout))
            if p.returncode != EXIT_OK:
                sys.exit(f"QEMU (timing) failed ({p.returncode}): {p.stderr[-500:]}")
            ttimes.append(wall)
            tjson = json.loads((d / "busmon.json").read_text())
        for plugin in (False, True):
            times = []
            for _ in range(a.repeat):
                d = tmp / f"p{int(plugin)}-{len(times)}"
                d.mkdir()
                wall, p = timed(eng.command(spec, d, layout, plugin=plugin))
                if p.returncode != EXIT_OK:
                    sys.exit(f"QEMU failed ({p.returncode}): {p.stderr[-500:]}")
                times.append(wall)
                if plugin:
                    insts = json.loads((d / "busmon.json").read_text())["insts_since_start"]
            rows[plugin] = min(times)
        fig_wall, p = timed([sys.executable, "-m", "colorsim", "figure1",
                             "--out", str(tmp / "fig1"), "--force"], cwd=ROOT)
        if p.returncode:
            sys.exit(f"figure1 failed: {p.stderr[-800:]}")
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"machine: {platform.node()} ({platform.processor() or platform.machine()}), "
          f"{__import__('os').cpu_count()} host CPUs; QEMU {qemu_version()}")
    print(f"workload: ppro4, 4 vCPUs, {a.kernel}, {a.tasks} tasks, boot + warmup "
          f"+ region of interest; {insts / 1e6:.1f} M guest instructions")
    print(f"{'configuration':32} {'wall s (best of ' + str(a.repeat) + ')':>22} {'guest MIPS':>11}")
    for plugin, label in ((False, "QEMU, no plugin"), (True, "QEMU + busmon (caches, MESI)")):
        print(f"{label:32} {rows[plugin]:22.2f} {insts / rows[plugin] / 1e6:11.1f}")
    tinsts = tjson["insts_since_start"]
    print(f"{'QEMU + busmon --timing':32} {min(ttimes):22.2f} "
          f"{tinsts / min(ttimes) / 1e6:11.1f}   ({tinsts / 1e6:.1f} M instructions)")
    print(f"plugin slowdown: {rows[True] / rows[False]:.1f}x; timing mode over "
          f"counting mode: {min(ttimes) / rows[True]:.2f}x")
    hz = m.processor.clock_hz
    print(f"timing mode: {tjson['sync_polls']} clock publications (free poll TBs, "
          f"{tjson['sync_polls'] / tinsts * 1e3:.2f} per kinst), "
          f"{tjson['idle_catchups']} idle catch-ups; largest lead over the slowest "
          f"running CPU in the region: {tjson['max_skew_cycles']} cycles "
          f"({tjson['max_skew_cycles'] / hz * 1e6:.0f} us modelled)")
    sync = tjson["sync"]
    print(f"synchronisation: {tjson['sync_insts']} guest instructions in the "
          f"kernel's free poll and hold loop ({tjson['sync_insts'] / tinsts:.1%} "
          f"of the timing run's); quantum {sync['quantum_cycles']} cycles: "
          f"{sum(sync['held_turns'])} round-robin turns cut short by busmon in "
          f"the region (no guest instructions)")
    print(f"README first command (figure1, 2 runs + plot, kernels built): {fig_wall:.1f} s")
    print(f"peak QEMU resident memory: {peak_mib:.0f} MiB")


if __name__ == "__main__":
    main()
