"""The embedded engine: QEMU full-system emulation + our bus-monitor plugin.

The QEMU is ours: scripts/build-qemu.sh (run by scripts/setup.sh) builds
qemu-system-x86_64 >= 10.1 from Debian's source package into a cache outside
the checkout, $COLORSIM_QEMU_CACHE (default /var/cache/colorsim), in a
directory named for the Debian version and the hash of our patches, and
names its last build in the cache's ``current`` file.  A checkout runs the
build of its own patches, so a checkout with other patches building into the
same cache does not change the QEMU under a sweep that is running.
COLORSIM_QEMU may name a binary instead.
The guest firmware is Debian's SeaBIOS, passed with -L.  Every run records
the binary's exact version, and a run made by another version is stale.

QEMU runs round-robin TCG with ``-icount shift=N,sleep=off``: one host
thread runs every vCPU in turn and each instruction advances virtual time by
2^N ns, so a run repeats exactly (same interleaving, same counts) and the
plugin's callbacks are serialized.  Guest RAM stays at or below 2 GiB so the
plugin's physical addresses are exact.  The kernel enters through its
multiboot ELF32 container; it ends the run through isa-debug-exit, which
makes QEMU exit with status (code << 1) | 1.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

from colorsim import ROOT
from colorsim.run.build import PLUGIN
from colorsim.errors import ConfigError
from colorsim.run.kernels import kind_of
from colorsim.run.kernels.base import loop_ranges
from colorsim.run.rundir import MANIFEST_FILES
from colorsim.describe.runspec import RunSpec

QEMU = "qemu-system-x86_64"
CACHE = Path(os.environ.get("COLORSIM_QEMU_CACHE", "/var/cache/colorsim"))
MIN_VERSION = (10, 1)      # plugin API 5: the plugin can write guest memory
SEABIOS = Path("/usr/share/seabios")   # Debian's seabios package
LAPIC_HZ = 1_000_000_000   # QEMU's APIC timer counts virtual nanoseconds
EXIT_OK = 1                # isa-debug-exit with code 0
EXIT_PANIC = 5             # code 2: the kernel panicked
# busmon publish=: it writes every CPU's modelled clock (slots 0-63), the
# floor (64) and the machine's time (65) into the array the kernel names
# (busmon.c PUBLISH_FLOOR, PUBLISH_NOW), 8 bytes a slot, whichever of them
# the kernel reads.  An array with fewer slots has the monitor write over
# whatever the kernel keeps after it.
PUBLISH_SLOTS = 66


def publish_arg(addr: int, size: int, what: str) -> str:
    """busmon's publish= for a clock array at ``addr`` of ``size`` bytes.

    :raises ConfigError: it holds fewer slots than the monitor writes.
    """
    if size < 8 * PUBLISH_SLOTS:
        raise ConfigError(f"{what} holds {size // 8} clock slots; the bus monitor writes "
                          f"{PUBLISH_SLOTS} (each CPU's clock, the floor, the machine's "
                          f"time) and would write over what follows it: rebuild the "
                          f"kernel from the suite's sources")
    return f"publish={addr:#x}"


@functools.lru_cache(maxsize=None)
def patch_hash() -> str:
    """The hash of this checkout's QEMU patches as scripts/build-qemu.sh
    names its install directory by it: the first 8 hex digits of SHA-256
    over scripts/qemu-patches/*.patch, one after another in name order
    (read once: a process does not see its checkout's patches change)."""
    h = hashlib.sha256()
    for p in sorted((ROOT / "scripts" / "qemu-patches").glob("*.patch")):
        h.update(p.read_bytes())
    return h.hexdigest()[:8]


def cached_build() -> str:
    """The cache directory of this checkout's QEMU: the one ``current``
    names if it carries this checkout's patches, else the newest build in
    the cache that does, else "" (not built).  ``current`` alone would be
    whatever any checkout built last."""
    tail = f"-p{patch_hash()}"
    cur = CACHE / "current"
    name = cur.read_text().strip() if cur.is_file() else ""
    if name.endswith(tail):
        return name
    same = [d for d in CACHE.glob(f"qemu-*{tail}") if (d / "bin" / QEMU).is_file()]
    return max(same, key=lambda d: d.stat().st_mtime).name if same else ""


def qemu_binary() -> Path:
    """The qemu-system-x86_64 the suite runs, or a one-line ConfigError."""
    env = os.environ.get("COLORSIM_QEMU")
    if env:
        path = Path(env)
        where = f"COLORSIM_QEMU={env}"
    else:
        name = cached_build()
        path = CACHE / name / "bin" / QEMU
        where = str(path) if name else f"{CACHE}/qemu-*-p{patch_hash()}/bin/{QEMU}"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ConfigError(f"QEMU >= {MIN_VERSION[0]}.{MIN_VERSION[1]} is not "
                          f"built ({where} is missing): run scripts/setup.sh")
    return path


@functools.lru_cache(maxsize=None)
def _version_of(path: str, mtime: float) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True,
                             text=True, timeout=30).stdout
    except OSError as e:
        raise ConfigError(f"{path} does not run ({e}): run scripts/setup.sh")
    first = out.splitlines()[0] if out else ""
    m = re.match(r"QEMU emulator version (\d+)\.(\d+)\S* ?(.*)$", first)
    if not m:
        raise ConfigError(f"{path} --version said {first!r}, not a QEMU "
                          f"version: run scripts/setup.sh")
    if (int(m.group(1)), int(m.group(2))) < MIN_VERSION:
        raise ConfigError(f"{path} is {first[len('QEMU emulator version '):]}; "
                          f"the suite needs >= {MIN_VERSION[0]}.{MIN_VERSION[1]}: "
                          f"run scripts/setup.sh")
    return first[len("QEMU emulator version "):]


def qemu_version() -> str:
    """The exact version: QEMU's own, the Debian source package build-qemu.sh
    built it from, and our patches, e.g. '10.2.2 (Debian source
    1:10.2.2+ds-1 + 0001-plugin-cpu-index-under-round-robin.patch)'."""
    path = qemu_binary()
    version = _version_of(str(path), path.stat().st_mtime)
    deb = path.parent.parent / "debian-version"     # written by build-qemu.sh
    if deb.is_file():
        source, *patches = deb.read_text().split()
        version += f" (Debian source {source}" + \
            "".join(f" + {p}" for p in patches) + ")"
    return version


def firmware_sha256() -> str:
    """SHA-256 over every file in the -L directories (name, then content):
    the BIOS and option ROMs the guest executes before the kernel.  Under
    -icount their instructions shift every later timer interrupt, and the
    QEMU version does not name Debian's SeaBIOS package, so a run's identity
    hashes them."""
    files = sorted(f for d in firmware_dirs(qemu_binary()) if d.is_dir()
                   for f in d.iterdir() if f.is_file())
    return _firmware_sha(tuple((str(f), f.stat().st_mtime, f.stat().st_size)
                               for f in files))


@functools.lru_cache(maxsize=None)
def _firmware_sha(files: tuple) -> str:
    import hashlib
    h = hashlib.sha256()
    for path, _, _ in files:
        h.update(Path(path).name.encode() + b"\0")
        h.update(hashlib.sha256(Path(path).read_bytes()).digest())
    return h.hexdigest()


def firmware_dirs(binary: Path) -> list:
    """-L directories: our option ROMs (built with QEMU), then SeaBIOS."""
    return [binary.parent.parent / "share" / "qemu", SEABIOS]


def client_arg(spec: RunSpec) -> str:
    """busmon's clients= for a run with a client model: its client CPUs
    but the wire's stand for the PCs (describe/clients.py)."""
    return spec.client_model.plugin_arg(spec.machine.processor.clock_hz,
                                        spec.workload.client_cpus - 1)


class QemuEngine:
    name = "qemu"
    result_files = MANIFEST_FILES     # what a complete run's manifest covers
    dumps_expected = 1                # the kernel's one dumpstats

    def check_available(self) -> None:
        qemu_version()
        if not (SEABIOS / "bios-256k.bin").is_file():
            raise ConfigError(f"Debian's SeaBIOS is missing "
                              f"({SEABIOS}/bios-256k.bin): run scripts/setup.sh")

    def version(self) -> str:
        """Recorded in every run's config.json as engine_version."""
        return qemu_version()

    def identity(self, spec: RunSpec) -> dict:
        """What a run depends on beside QEMU's version: its firmware."""
        return {"firmware_sha256": firmware_sha256()}

    def lapic_hz(self, spec: RunSpec) -> int:
        return LAPIC_HZ

    def mode(self, spec: RunSpec) -> dict:
        """How the emulator runs: stored in every run's configuration."""
        mode = {"accel": spec.machine.emulation.accel,
                "icount_shift": spec.machine.emulation.icount_shift,
                "icount_sleep": False, "deterministic": True}
        if spec.timing:
            mode["timing"] = True
        return mode

    @staticmethod
    def fetches(spec: RunSpec) -> bool:
        """Whether busmon models instruction fetches: the machine's
        caches.instruction_fetch, or with --timing its timing.fetch (code
        competes with data in L2, and its misses cost time)."""
        t = spec.machine.timing
        return (spec.machine.cache_policy.instruction_fetch
                or bool(spec.timing and t is not None and t.fetch))

    def plugin_args(self, spec: RunSpec, run_dir: Path, layout: dict) -> str:
        c, p = spec.machine.caches, spec.machine.cache_policy
        args = [f"out={run_dir}",
                f"l1d={c.l1d.size}:{c.l1d.assoc}:{c.l1d.line}",
                f"l2={c.l2.size}:{c.l2.assoc}:{c.l2.line}",
                f"l1repl={p.l1_replacement}", f"l2repl={p.l2_replacement}",
                f"inclusive={int(p.inclusion == 'inclusive')}",
                f"cpus={spec.cpus}"]
        if spec.vcpus > spec.cpus:    # the client CPUs are not measured
            args.append(f"measured={spec.cpus}")
        if spec.nic_dma:              # the cards' DMA (wire.c, nicdma=1)
            args.append(f"dma={spec.dma_gap_cycles}")
        if self.fetches(spec):
            args.append(f"l1i={c.l1i.size}:{c.l1i.assoc}:{c.l1i.line}")
        if layout is None:       # --dry-run before the kernel is built
            if spec.timing:
                args.append(f"timing={spec.machine.timing.plugin_arg()}")
            if spec.client_model is not None:
                args.append(client_arg(spec))
            args.append("<rqloop=, user=" + (", lock=, publish=, free=, unit="
                                             if spec.timing else "")
                        + " from layout.json of the built kernel>")
            return ",".join([str(PLUGIN)] + args)
        for lo, hi in loop_ranges(layout):
            args.append(f"rqloop={lo:#x}-{hi:#x}")
        for lo, hi in layout["ranges"]["user"]:
            args.append(f"user={lo:#x}-{hi:#x}")
        if "m5base" in layout:   # where the guest maps the m5-op page (i386 Linux)
            args.append(f"m5base={layout['m5base']:#x}")
        if spec.nic_dma and "dmabell" in layout:   # Linux 2.4's cards tell their DMA
            args.append(f"dmabell={layout['dmabell']:#x}")
        # the scheduler's code: its share of instructions and cycles
        for lo, hi in layout["ranges"].get("sched", []):
            args.append(f"sched={lo:#x}-{hi:#x}")
        if spec.timing:
            args.extend(spec.machine.timing.plugin_args())
            if spec.client_model is not None:
                args.append(client_arg(spec))
            sym = layout["symbols"]
            args.append(self.lock_arg(spec, layout))
            if (layout.get("lockmeter") or {}).get("bytes", 4) != 4:
                args.append(f"lockbytes={layout['lockmeter']['bytes']}")
            # Guest time from modelled time: busmon publishes the clocks
            # into the kernel (the testbed's kernels/kernel/timer.c, Linux
            # 2.4's patch 0004, whose layout says where).
            if "modeled_clock" in sym:
                # The kernel is identity-mapped: a symbol's address is physical.
                args.append(publish_arg(sym["modeled_clock"]["addr"],
                                        sym["modeled_clock"]["size"],
                                        "the testbed kernel's modeled_clock"))
                # the kernel's clock reads, free: timing_check, and the
                # wire's modeled_time (kernels built before it lack it)
                for name in ("timing_check", "modeled_time"):
                    if name in sym:
                        lo = sym[name]["addr"]
                        args.append(f"free={lo:#x}-{lo + sym[name]['size']:#x}")
            elif "timing" in layout:     # Linux 2.4's --timing image (patch 0004)
                lo, hi = layout["timing"]["free"]
                args.append(publish_arg(layout["timing"]["publish"],
                                        layout["timing"].get("publish_bytes", 0),
                                        "Linux 2.4's colorsim_clock (patch 0004)"))
                args.append(f"free={lo:#x}-{hi:#x}")
            # A unit of work: one burst of the built-in workload (a call of
            # its compute loop, kernels/workload/tasks.c; Linux 2.4's init,
            # workloads/linux24/l24tasks.c, has its own compute()).
            # The web image's programs have no compute(): no units there.
            if kind_of(spec.variant).has_compute_unit(spec):
                args.append(f"unit={sym['compute']['addr']:#x}")
        return ",".join([str(PLUGIN)] + args)

    @staticmethod
    def lock_arg(spec: RunSpec, layout: dict) -> str:
        """busmon's lock=: the run-queue lock words from layout.json's
        ``lockmeter`` (vanilla and cN: runqueue_lock alone, as lock=ADDR;
        mq and mq-cN: the first ``cpus`` per-CPU locks, as
        lock=ADDR:STRIDE:COUNT).  Layouts from before that key name
        runqueue_lock only."""
        lm = layout.get("lockmeter") or {
            "addr": layout["symbols"]["runqueue_lock"]["addr"],
            "stride": 4, "count": 1}
        count = min(lm["count"], spec.cpus)
        if count == 1:
            return f"lock={lm['addr']:#x}"
        return f"lock={lm['addr']:#x}:{lm['stride']}:{count}"

    def command(self, spec: RunSpec, run_dir: Path, layout: dict,
                plugin: bool = True) -> list:
        m = spec.machine
        binary = qemu_binary()
        # QEMU hands the guest "<-kernel path> <append>" as the multiboot
        # command line, and the kernel steps over the path: a longer path
        # is a few more instructions at boot, which moves every later
        # timer interrupt.  So QEMU runs in the kernel's directory and is
        # given file names relative to it: the same build gives the same
        # run wherever the checkout lives (env -C keeps the command whole).
        kdir = spec.kernel_dir
        cmd = ["env", "-C", str(kdir), str(binary)]
        for d in firmware_dirs(binary):
            cmd += ["-L", str(d)]
        boot = kind_of(spec.variant).qemu_boot(   # real Linux: bzImage + initrd
            spec, m, run_dir, spec.kernel_cmdline(self.lapic_hz(spec)))
        if boot is not None:
            cmd += boot
            if plugin:
                cmd += ["-plugin", self.plugin_args(spec, run_dir, layout)]
            return cmd
        cmd += ["-display", "none", "-nodefaults", "-machine", "pc",
               "-m", f"{m.memory.size // 2**20}M",
               "-smp", f"{spec.vcpus}",
               "-accel", m.emulation.accel,
               "-icount", f"shift={m.emulation.icount_shift},sleep=off",
               "-rtc", "base=2002-06-10T00:00:00,clock=vm",
               "-no-reboot",
               "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
               "-serial", f"file:{run_dir / 'console.log'}",
               "-kernel", spec.kernel_multiboot.name,
               "-append", spec.kernel_cmdline(self.lapic_hz(spec))]
        if spec.workload.program:            # a multiboot module
            cmd += ["-initrd", os.path.relpath(spec.rootfs_image, kdir)]
        if plugin:
            cmd += ["-plugin", self.plugin_args(spec, run_dir, layout)]
        return cmd

    def describe(self, spec: RunSpec, run_dir: Path, layout: dict) -> str:
        c, p = spec.machine.caches, spec.machine.cache_policy
        lines = [f"engine: QEMU {qemu_version()}, round-robin TCG, icount shift "
                 f"{spec.machine.emulation.icount_shift}, deterministic",
                 f"cpus: {spec.cpus}; memory {spec.machine.memory.size // 2**20} MiB",
                 f"L1D: {c.l1d.describe()}; L2: {c.l2.describe()} (private, MESI bus); "
                 f"{p.inclusion}, replacement L1 {p.l1_replacement} L2 {p.l2_replacement}"
                 + (f"; L1I {c.l1i.describe()} with instruction fetches"
                    if self.fetches(spec) else ""),
                 f"kernel: {kind_of(spec.variant).kernel_image(spec)}" + (
                     "" if layout is not None else
                     " (not built yet: the run builds it first, and its "
                     "layout gives the plugin's PC ranges)"),
                 "command: " + shlex.join(self.command(spec, run_dir, layout))]
        return "\n".join(lines)

    def judge_exit(self, returncode: int):
        """None when the guest ended the run normally, else a reason."""
        if returncode == EXIT_OK:
            return None
        if returncode == EXIT_PANIC:
            return "the guest kernel panicked"
        return f"QEMU exited with status {returncode}"

    @staticmethod
    def errors_said(log_text: str) -> list:
        """QEMU's and the bus monitor's own error lines in qemu.log.  QEMU
        exits with status 1 after an error such as an unopenable -serial
        file, the same status the guest's normal end gives, so its words
        are the only sign of what went wrong."""
        return [line.strip() for line in log_text.splitlines()
                if re.match(r"\S*qemu-system-\S+: (?!warning:)", line)
                or line.startswith("busmon: cannot")]

    def collect(self, run_dir: Path) -> None:
        """The plugin writes the tables itself; check they are there, and add
        the view column (``bus``: busmon sees every request on the bus) to
        ``bus_offsets.csv`` and the kernel's region numbers
        (``schedule_calls``, cpu -1) from the console to ``counters.csv``."""
        from colorsim.run.console import roi_counters
        from colorsim.run.tables import add_to_counters, add_view_column
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
