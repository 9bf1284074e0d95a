#!/usr/bin/env python3
"""Engine speed: guest MIPS with and without the bus monitor, in counting-only
and timing mode (--timing), in the timing mode with every clock held within
the convergence table's finest skew bound (the modelled-time order), the
cost of synchronisation and the skew observed, and the wall time of the
README's first command.

Usage:  python3 benchmarks/bench_engine.py [--repeat 3] [--tasks 1024] [--costs]
                                           [--rr-slice-min N]

The runs are deterministic (round-robin TCG, -icount), so the guest executes
the same instructions with and without the plugin; the plugin's
never-reset counter (busmon.json: insts_since_start) gives that count.  Peak
memory is the largest resident set of any QEMU child.

Wall times on a shared host: the three configurations run in turn (no
plugin, counting, timing, then again), so a stretch of host load falls on
all of them alike rather than on whichever ran then.  Each is reported as
the best (minimum) of its runs: the guest's work is the same every run, so
anything above the minimum is time the host gave to other processes, and
the minimum is the closest estimate of the configuration's own cost.  The
host's load average before and after is printed beside them, and QEMU's
own CPU time (user + system, also best of each), which waiting for a busy
host's cores does not inflate.
"""

import argparse
import dataclasses
import json
import os
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
from colorsim.run.rundir import spawn  # noqa: E402
from colorsim.run.engines.qemu import EXIT_OK, QemuEngine, qemu_version  # noqa: E402
from colorsim.describe.machine import TIMING_ADDITIONS, get_machine  # noqa: E402
from colorsim.describe.runspec import RunSpec, Workload  # noqa: E402
from colorsim.describe.variants import parse_variant  # noqa: E402
from colorsim.errors import ConfigError  # noqa: E402


def timed(cmd, cwd=None):
    t = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    return time.monotonic() - t, p


def timed_cpu(cmd):
    """Wall time, the child's own CPU time (user + system), its voluntary
    context switches (its threads blocking, e.g. on QEMU's main-loop
    lock) and its return code.  env -C execs QEMU, so the child is QEMU itself; stderr goes to
    a file so that a chatty run cannot fill a pipe and stall.  Started as
    runs start it (rundir.spawn, no transparent huge pages)."""
    with tempfile.TemporaryFile() as err:
        t = time.monotonic()
        p = spawn(cmd, huge_pages=False, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return (wall, ru.ru_utime + ru.ru_stime, ru.ru_nvcsw, p.returncode,
                err.read().decode(errors="replace"))


def load_average():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_modes(modes, repeat, tmp):
    """Each mode's wall times and its last busmon.json, the modes taking
    turns (A, B, C, A, B, C, ...) so host load falls on all alike."""
    times = {name: [] for name in modes}
    cpu = {name: [] for name in modes}
    switches = {}
    stats = {}
    for i in range(repeat):
        for name, (cmd_of, plugin) in modes.items():
            # no commas or spaces: the directory goes into QEMU's -plugin
            d = tmp / f"{len(times[name])}-{list(modes).index(name)}"
            d.mkdir()
            wall, used, switches[name], rc, err = timed_cpu(cmd_of(d))
            if rc != EXIT_OK:
                sys.exit(f"QEMU ({name}) failed ({rc}): {err[-500:]}")
            times[name].append(wall)
            cpu[name].append(used)
            if plugin:
                stats[name] = json.loads((d / "busmon.json").read_text())
    return times, cpu, switches, stats


# machines.toml [x.timing] costs that --timing-off can switch off on ppro4
# (two_buses is piii8's)
SWITCHABLE = ("fetch", "itlb", "dtlb", "store_buffer", "locked_rmw")


def print_costs(best, stats):
    """Host time per guest instruction of the timing mode with each cost
    off (and each what-if on), beside the full timing mode and the
    counting mode: what each cost adds.  A cost switched off also changes what the guest does (its
    modelled time, so its ticks), hence per instruction."""
    def per_insn(name):
        return best[name] / stats[name]["insts_since_start"] * 1e9
    full, counting = per_insn("timing"), per_insn("counting")
    print(f"host time per guest instruction: counting {counting:.1f} ns, "
          f"timing {full:.1f} ns ({full - counting:+.1f} ns)")
    print(f"{'timing mode with':32} {'wall s':>8} {'M insts':>8} {'ns/insn':>8} "
          f"{'saves':>8}")
    for name in best:
        if not name.startswith("timing, "):
            continue
        ns = per_insn(name)
        print(f"{name[len('timing, '):]:32} {best[name]:8.2f} "
              f"{stats[name]['insts_since_start'] / 1e6:8.1f} {ns:8.1f} "
              f"{full - ns:+8.1f}")


def converged(machine):
    """The machine with every CPU's clock held within the convergence
    table's finest skew bound (colorsim convergence: busmon's quantum)."""
    q = machine.processor.clock_hz * converged_us() // 1_000_000
    return dataclasses.replace(
        machine, timing=dataclasses.replace(machine.timing, quantum=q))


def converged_us():
    from colorsim.orchestrate.convergence import QS_US
    return QS_US[-1]


def with_slice(machine, n):
    """The machine with QEMU's smallest round-robin slice set to n."""
    return dataclasses.replace(
        machine, emulation=dataclasses.replace(machine.emulation, rr_slice_min=n))


def print_slices(best, stats, n):
    """Both modes with the smallest round-robin slice n beside the
    machine's own: host time, guest instructions, and the timing mode over
    the counting mode per run and per instruction.  The slice changes the
    interleaving, so the guest's instructions differ too."""
    def row(label, name):
        insts = stats[name]["insts_since_start"]
        print(f"{label:32} {best[name]:8.2f} {insts / 1e6:8.1f} "
              f"{best[name] / insts * 1e9:8.1f}")
    print(f"{'smallest round-robin slice':32} {'wall s':>8} {'M insts':>8} {'ns/insn':>8}")
    for name, label in (("counting", "counting, the machine's"),
                        ("timing", "timing, the machine's"),
                        ("counting with slice", f"counting, {n} instructions"),
                        ("timing with slice", f"timing, {n} instructions")):
        row(label, name)
    c, t = stats["counting with slice"], stats["timing with slice"]
    per_insn = (best["timing with slice"] / t["insts_since_start"]) / \
        (best["counting with slice"] / c["insts_since_start"])
    print(f"with a slice of at least {n} instructions: timing mode over counting "
          f"mode {best['timing with slice'] / best['counting with slice']:.2f}x "
          f"(ratio of the bests), per guest instruction {per_insn:.2f}x")


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3,
                    help="rounds; each runs every configuration once (default 3)")
    ap.add_argument("--tasks", type=int, default=1024)
    ap.add_argument("--kernel", default="vanilla")
    ap.add_argument("--no-figure1", action="store_true",
                    help="skip timing the README's first command")
    ap.add_argument("--costs", action="store_true",
                    help="also time the timing mode with each switchable cost "
                         "off in turn, and all of them off: where its host "
                         "time goes; and with each what-if cost on")
    ap.add_argument("--rr-slice-min", type=int, metavar="N",
                    help="also run both modes with QEMU's smallest round-robin "
                         "slice set to N instructions (machines.toml "
                         "[x.emulation] rr_slice_min; it changes the "
                         "interleaving, so the guest's work)")
    a = ap.parse_args()
    if a.repeat < 1:
        sys.exit("bench_engine: --repeat must be at least 1")
    m = get_machine("ppro4")
    sm = None                       # the machine with --rr-slice-min's slice
    if a.rr_slice_min is not None:
        try:
            sm = with_slice(m, a.rr_slice_min)
        except ConfigError as e:
            sys.exit(f"bench_engine: --rr-slice-min: {e}")
    spec = RunSpec(m, parse_variant(a.kernel, m), Workload(tasks=a.tasks))
    layout = runner.prepare(spec, progress=lambda *_: None)
    eng = QemuEngine()
    tspec = RunSpec(m, parse_variant(a.kernel, m), Workload(tasks=a.tasks),
                    timing=True)
    tlayout = runner.prepare(tspec, progress=lambda *_: None)
    qspec = RunSpec(converged(m), parse_variant(a.kernel, m),
                    Workload(tasks=a.tasks), timing=True)
    qlayout = runner.prepare(qspec, progress=lambda *_: None)
    modes = {
        "plain": (lambda d: eng.command(spec, d, layout, plugin=False), False),
        "counting": (lambda d: eng.command(spec, d, layout), True),
        "timing": (lambda d: eng.command(tspec, d, tlayout), True),
        "converged": (lambda d: eng.command(qspec, d, qlayout), True),
    }
    if a.costs:
        for off in [[c] for c in SWITCHABLE] + [list(SWITCHABLE)]:
            ospec = RunSpec(m.without_costs(off), parse_variant(a.kernel, m),
                            Workload(tasks=a.tasks), timing=True)
            olayout = runner.prepare(ospec, progress=lambda *_: None)
            name = "timing, " + ("all of them" if len(off) > 1 else off[0]) + " off"
            modes[name] = (lambda d, s=ospec, lo=olayout: eng.command(s, d, lo), True)
        for add in TIMING_ADDITIONS:        # the what-ifs, each on
            aspec = RunSpec(dataclasses.replace(m, timing=m.timing.adding(add)),
                            parse_variant(a.kernel, m), Workload(tasks=a.tasks),
                            timing=True)
            alayout = runner.prepare(aspec, progress=lambda *_: None)
            modes[f"timing, {add} on"] = (
                lambda d, s=aspec, lo=alayout: eng.command(s, d, lo), True)
    if sm is not None:
        for name, timing in (("counting with slice", False), ("timing with slice", True)):
            sspec = RunSpec(sm, parse_variant(a.kernel, sm), Workload(tasks=a.tasks),
                            timing=timing)
            slayout = runner.prepare(sspec, progress=lambda *_: None)
            modes[name] = (lambda d, s=sspec, lo=slayout: eng.command(s, d, lo), True)
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        times, cpu, switches, stats = run_modes(modes, a.repeat, tmp)
        load_after = load_average()
        # before figure1, whose Python process (plotting) is a child too
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        fig_wall = None
        if not a.no_figure1:
            fig_wall, p = timed([sys.executable, "-m", "colorsim", "figure1",
                                 "--out", str(tmp / "fig1"), "--force"], cwd=ROOT)
            if p.returncode:
                sys.exit(f"figure1 failed: {p.stderr[-800:]}")
    best = {name: min(t) for name, t in times.items()}
    best_cpu = {name: min(t) for name, t in cpu.items()}
    insts = stats["counting"]["insts_since_start"]
    tjson = stats["timing"]
    tinsts = tjson["insts_since_start"]
    print(f"machine: {platform.node()} ({platform.processor() or platform.machine()}), "
          f"{os.cpu_count()} host CPUs; QEMU {qemu_version()}")
    print(f"host load average (1, 5, 15 min): {load_before} before, "
          f"{load_after} after the timed runs")
    print(f"workload: ppro4, 4 vCPUs, {a.kernel}, {a.tasks} tasks, boot + warmup "
          f"+ region of interest; {insts / 1e6:.1f} M guest instructions")
    print(f"{'configuration':32} {'wall s (best of ' + str(a.repeat) + ')':>22} "
          f"{'guest MIPS':>11}   all runs, s")
    labels = (("plain", "QEMU, no plugin"),
              ("counting", "QEMU + busmon (caches, MESI)"))
    for name, label in labels:
        print(f"{label:32} {best[name]:22.2f} {insts / best[name] / 1e6:11.1f}   "
              + " ".join(f"{t:.2f}" for t in times[name]))
    label = (f"--timing, clocks within {m.timing.quantum * 10**6 // m.processor.clock_hz} µs"
             if m.timing.quantum else "QEMU + busmon --timing")
    print(f"{label:32} {best['timing']:22.2f} "
          f"{tinsts / best['timing'] / 1e6:11.1f}   "
          + " ".join(f"{t:.2f}" for t in times["timing"])
          + f"   ({tinsts / 1e6:.1f} M instructions)")
    qjson = stats["converged"]
    qinsts = qjson["insts_since_start"]
    print(f"{'timing, clocks within ' + str(converged_us()) + ' µs':32} "
          f"{best['converged']:22.2f} {qinsts / best['converged'] / 1e6:11.1f}   "
          + " ".join(f"{t:.2f}" for t in times["converged"])
          + f"   ({qinsts / 1e6:.1f} M instructions; "
          f"{sum(qjson['sync']['skipped_turns'])} turns sat out, "
          f"{sum(qjson['sync']['held_turns'])} cut to a TB)")
    print(f"plugin slowdown: {best['counting'] / best['plain']:.1f}x; timing mode over "
          f"counting mode: {best['timing'] / best['counting']:.2f}x (ratio of the bests); "
          f"per guest instruction {best['timing'] / tinsts / (best['counting'] / insts):.2f}x "
          f"(the timing run executes {tinsts / insts - 1:.0%} more: its ticks, and so "
          f"its warm-up and region, last modelled time)")
    print("QEMU's own CPU time (user + system), best of each: "
          + ", ".join(f"{name} {best_cpu[name]:.2f} s" for name in modes)
          + f"; timing over counting {best_cpu['timing'] / best_cpu['counting']:.2f}x")
    print("QEMU's voluntary context switches (last run of each; each one a thread "
          "that blocked and must be woken, slower on a busy host): "
          + ", ".join(f"{name} {switches[name]}" for name in modes))
    hz = m.processor.clock_hz
    print(f"timing mode: {tjson['sync_polls']} clock publications (free poll TBs, "
          f"{tjson['sync_polls'] / tinsts * 1e3:.2f} per kinst), "
          f"{tjson['idle_catchups']} idle catch-ups; largest lead over the slowest "
          f"running CPU in the region: {tjson['max_skew_cycles']} cycles "
          f"({tjson['max_skew_cycles'] / hz * 1e6:.0f} µs modelled); a lead a CPU "
          f"ran into by itself (not one taken at a metered lock), which the quantum "
          f"bounds: {tjson['max_held_skew_cycles']} cycles "
          f"({tjson['max_held_skew_cycles'] / hz * 1e6:.0f} µs)")
    sync = tjson["sync"]
    print(f"synchronisation: {tjson['sync_insts']} guest instructions in the "
          f"kernel's free poll and hold loop ({tjson['sync_insts'] / tinsts:.1%} "
          f"of the timing run's); quantum {sync['quantum_cycles']} cycles: "
          f"{sum(sync['held_turns'])} round-robin turns cut short by busmon in "
          f"the region (no guest instructions)")
    if a.costs:
        print_costs(best, stats)
    if a.rr_slice_min is not None:
        print_slices(best, stats, a.rr_slice_min)
    if fig_wall is not None:
        print(f"README first command (figure1, 2 runs + plot, kernels built): {fig_wall:.1f} s")
    print(f"peak QEMU resident memory: {peak_mib:.0f} MiB")


if __name__ == "__main__":
    main()
