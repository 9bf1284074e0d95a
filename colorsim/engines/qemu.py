"""The embedded engine: QEMU full-system emulation + our bus-monitor plugin.

QEMU runs round-robin TCG with ``-icount shift=N,sleep=off``: one host
thread runs every vCPU in turn and each instruction advances virtual time by
2^N ns, so a run repeats exactly (same interleaving, same counts) and the
plugin's callbacks are serialized.  Guest RAM stays at or below 2 GiB so the
plugin's physical addresses are exact.  The kernel enters through its
multiboot ELF32 container; it ends the run through isa-debug-exit, which
makes QEMU exit with status (code << 1) | 1.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from ..build import PLUGIN
from ..errors import ConfigError
from ..rundir import MANIFEST_FILES
from ..runspec import RunSpec

QEMU = "qemu-system-x86_64"
LAPIC_HZ = 1_000_000_000   # QEMU's APIC timer counts virtual nanoseconds
EXIT_OK = 1                # isa-debug-exit with code 0
EXIT_PANIC = 5             # code 2: the kernel panicked


class QemuEngine:
    name = "qemu"
    result_files = MANIFEST_FILES     # what a complete run's manifest covers
    dumps_expected = 1                # the kernel's one dumpstats

    def check_available(self) -> None:
        if not shutil.which(QEMU):
            raise ConfigError(f"{QEMU} is not installed: run scripts/setup.sh "
                              f"(it installs Debian's qemu-system-x86)")

    def lapic_hz(self, spec: RunSpec) -> int:
        return LAPIC_HZ

    def mode(self, spec: RunSpec) -> dict:
        """How the emulator runs: stored in every run's configuration."""
        return {"accel": "tcg,thread=single",
                "icount_shift": spec.machine.emulation.icount_shift,
                "icount_sleep": False, "deterministic": True}

    def plugin_args(self, spec: RunSpec, run_dir: Path, layout: dict) -> str:
        c = spec.machine.caches
        args = [f"out={run_dir}",
                f"l1d={c.l1d.size}:{c.l1d.assoc}:{c.l1d.line}",
                f"l2={c.l2.size}:{c.l2.assoc}:{c.l2.line}",
                f"cpus={spec.cpus}"]
        lo, hi = layout["ranges"]["rqloop"]
        args.append(f"rqloop={lo:#x}-{hi:#x}")
        for lo, hi in layout["ranges"]["user"]:
            args.append(f"user={lo:#x}-{hi:#x}")
        return ",".join([str(PLUGIN)] + args)

    def command(self, spec: RunSpec, run_dir: Path, layout: dict,
                plugin: bool = True) -> list:
        m = spec.machine
        cmd = [QEMU, "-display", "none", "-nodefaults", "-machine", "pc",
               "-m", f"{m.memory.size // 2**20}M",
               "-smp", f"{spec.cpus}",
               "-accel", "tcg,thread=single",
               "-icount", f"shift={m.emulation.icount_shift},sleep=off",
               "-rtc", "base=2002-06-10T00:00:00,clock=vm",
               "-no-reboot",
               "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
               "-serial", f"file:{run_dir / 'console.log'}",
               "-kernel", str(spec.kernel_multiboot),
               "-append", spec.kernel_cmdline(self.lapic_hz(spec))]
        if spec.workload.program:            # a multiboot module
            cmd += ["-initrd", str(spec.rootfs_image)]
        if plugin:
            cmd += ["-plugin", self.plugin_args(spec, run_dir, layout)]
        return cmd

    def describe(self, spec: RunSpec, run_dir: Path, layout: dict) -> str:
        c = spec.machine.caches
        lines = [f"engine: QEMU ({QEMU}), round-robin TCG, icount shift "
                 f"{spec.machine.emulation.icount_shift}, deterministic",
                 f"cpus: {spec.cpus}; memory {spec.machine.memory.size // 2**20} MiB",
                 f"L1D: {c.l1d.describe()}; L2: {c.l2.describe()} (private, MESI bus)",
                 f"kernel: {spec.kernel_multiboot}",
                 "command: " + shlex.join(self.command(spec, run_dir, layout))]
        return "\n".join(lines)

    def judge_exit(self, returncode: int):
        """None when the guest ended the run normally, else a reason."""
        if returncode == EXIT_OK:
            return None
        if returncode == EXIT_PANIC:
            return "the guest kernel panicked"
        return f"QEMU exited with status {returncode}"

    def collect(self, run_dir: Path) -> None:
        """The plugin writes the tables itself; check they are there, and add
        the view column (``bus``: busmon sees every request on the bus) to
        ``bus_offsets.csv`` and the kernel's region numbers
        (``schedule_calls``, cpu -1) from the console to ``counters.csv``."""
        from ..console import roi_counters
        from ..tables import add_to_counters, add_view_column
        for f in ("stats.txt", "bus_offsets.csv", "counters.csv"):
            if not (run_dir / f).is_file():
                raise FileNotFoundError(f"the bus monitor wrote no {f}: the "
                                        f"region of interest never ended")
        add_view_column(run_dir / "bus_offsets.csv", "bus")
        roi = roi_counters(run_dir / "console.log")
        if roi:
            add_to_counters(run_dir / "counters.csv", roi)
        busmon = run_dir / "busmon.json"
        if busmon.is_file():
            json.loads(busmon.read_text())
