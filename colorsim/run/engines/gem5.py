"""The gem5 engine: host side of ``configs/gem5/run_fs.py``.

The host writes one JSON spec per run (``gem5_spec.json``) from the
:class:`~colorsim.describe.runspec.RunSpec`; inside gem5, ``configs/gem5`` maps it to
stdlib components through ``configs/gem5/testbed_params.py`` -- the same
module this file uses for ``describe()``, so the dry run shows exactly what
gem5 will build.

Flow of one measured run (see ``configs/gem5/README.md``):

1. ``boot``: atomic CPUs from power-on until the kernel's m5 checkpoint op;
   the checkpoint is cached under ``build/gem5-checkpoints/<key>/cpt``.
   The key covers what the booted state depends on (kernel image, command
   line, CPUs, clock, memory size) but not the caches: atomic CPUs do not
   stall on caches, so every L2 choice restores the same state.
2. ``measure``: restore into timing (or O3) CPUs, run the kernel's region of
   interest (resetstats ... dumpstats), stop on m5 exit.
3. :meth:`Gem5Engine.collect` turns ``stats.txt`` into ``bus_offsets.csv``
   and ``counters.csv``, the same tables the QEMU engine writes.

Two views of the bus traffic land in ``bus_offsets.csv``, told apart by its
``view`` column: ``bus`` (one CommMonitor per CPU between its L2 and the
memory bus: every request the L2 puts on the bus, per CPU, as the paper's
front-side-bus tracer saw it) and ``memory`` (the CommMonitor between the bus
and memory, cpu -1: only what memory serves).  Runs recorded before the bus
view have the memory view only.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from colorsim import BUILD, ROOT
from colorsim.errors import ConfigError, RunError
from colorsim.run.kernels import kind_of
from colorsim.run.engines.gem5stats import (BUS_HEADER, COUNTER_HEADER,
                                           bus_rows, counter_rows, global_rows)
from colorsim.run.rundir import spawn, stop
from colorsim.run.engines.gem5show import describe_params
from colorsim.describe.gem5build import cached_gem5   # scripts/build-gem5.sh's
from colorsim.describe.runspec import file_sha256

GEM5_ENV = "GEM5"
GEM5_VERSION = "v24.0.0.1"
PLACEHOLDER = "$GEM5"
CONFIG_DIR = ROOT / "configs" / "gem5"
CONFIG_SCRIPT = CONFIG_DIR / "run_fs.py"
SPEC_FILE = "gem5_spec.json"
OUTDIR = "gem5"                      # gem5's --outdir inside the run dir
CHECKPOINT_ROOT = BUILD / "gem5-checkpoints"
CONSOLE_LOG = "console.log"


VERSION_LINE = "gem5 version "       # gem5's banner (src/python/m5/main.py)
VERSION_PROBE_S = 120.0
PROBE_LINE = "colorsim-loop-probe"   # what binary_identity's script prints
BUS_LINE = "colorsim-p6-bus"         # ... and whether it can build a P6 bus
TSC_LINE = "colorsim-tsc-period"     # ... and give every core one TSC rate
TSC_PERIOD_PS = 1000                 # a TSC in ns, as QEMU's -icount clock


@functools.lru_cache(maxsize=None)
def binary_identity(path: str, size: int, mtime_ns: int) -> tuple:
    """(version, SHA-256, has the loop probe, can build a P6 bus, has a
    constant-rate TSC) of the gem5 binary at ``path``; cached while the
    file keeps its size and time.  gem5 prints its version in the banner
    of every start; the script it is given says whether the binary has the
    suite's PcRangeCacheProbe (gem5 patch 0002), CoherentXBar's
    single_response_layer (patch 0003) and X86ISA's tsc_period (patch
    0004): the suite's build has all three, a gem5 of the user's own may
    not."""
    digest = file_sha256(Path(path))
    with tempfile.TemporaryDirectory() as d:
        probe = Path(d) / "probe.py"
        probe.write_text("import m5.objects\n"
                         f"print('{PROBE_LINE}', "
                         "int(hasattr(m5.objects, 'PcRangeCacheProbe')))\n"
                         f"print('{BUS_LINE}', int('single_response_layer' "
                         "in m5.objects.CoherentXBar._params))\n"
                         f"print('{TSC_LINE}', int('tsc_period' in "
                         "getattr(getattr(m5.objects, 'X86ISA', None), '_params', ())))\n")
        proc = spawn([path, f"--outdir={d}/m5out", "--listener-mode=off",
                      str(probe)], stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                     text=True, cwd=d)
        try:
            out, _ = proc.communicate(timeout=VERSION_PROBE_S)
        except subprocess.TimeoutExpired:
            out = ""
        finally:
            stop(proc, grace_s=0)
    lines = out.splitlines()
    has_probe = f"{PROBE_LINE} 1" in lines
    has_bus = f"{BUS_LINE} 1" in lines
    has_tsc = f"{TSC_LINE} 1" in lines
    for line in lines:
        if line.startswith(VERSION_LINE):
            return (line[len(VERSION_LINE):].strip(), digest, has_probe,
                    has_bus, has_tsc)
    raise ConfigError(f"{GEM5_ENV}={path} printed no '{VERSION_LINE}...' line "
                      f"when started (is it a gem5 binary?): "
                      f"{(out.strip().splitlines() or ['no output'])[-1][:160]}")


def params_module():
    """``configs/gem5/testbed_params.py``, loaded by path (no gem5 needed)."""
    name = "colorsim_gem5_testbed_params"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, CONFIG_DIR / "testbed_params.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


class Gem5Engine:
    """Runs a RunSpec on gem5 v24 full system.

    :param cpu: CPU model of the measured run: ``timing`` (default),
        ``o3`` or ``atomic``.
    :param checkpoint: boot once with atomic CPUs and restore (default);
        ``False`` runs power-on to exit with ``cpu`` (phase ``full``).
    :param checkpoint_root: where booted checkpoints are cached.
    """

    name = "gem5"

    # What a complete run's manifest covers; gem5 appends its own exit
    # dump after the kernel's dumpstats, so the count is not fixed.
    result_files = ("layout.json", "console.log", f"{OUTDIR}/stats.txt",
                    "bus_offsets.csv", "counters.csv")
    dumps_expected = None

    def __init__(self, cpu: str = "timing", checkpoint: bool = True,
                 checkpoint_root: Path = CHECKPOINT_ROOT) -> None:
        self.cpu = self._cpu(cpu)
        self.checkpoint = checkpoint
        self.checkpoint_root = Path(checkpoint_root)

    @staticmethod
    def _cpu(text):
        try:
            return params_module().CpuType.from_str(text)
        except ValueError as e:
            raise ConfigError(str(e)) from None

    # -- availability --------------------------------------------------
    def check_available(self) -> Path:
        """The gem5 binary named by ``$GEM5``, else the one
        scripts/build-gem5.sh built last.

        :raises ConfigError: neither is an executable file.
        """
        value = os.environ.get(GEM5_ENV, "") or str(cached_gem5() or "")
        how = (f"build it with GEM5_SRC=<your gem5 source> bash "
               f"scripts/build-gem5.sh (about 45 minutes), or set {GEM5_ENV} "
               f"to a gem5 {GEM5_VERSION} X86 binary (gem5.opt or gem5.fast); "
               f"--dry-run shows the command without gem5")
        if not value:
            raise ConfigError(f"gem5 is missing: the {GEM5_ENV} environment "
                              f"variable is not set and no build is cached; {how}")
        path = Path(value).expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            raise ConfigError(f"gem5 is missing: {GEM5_ENV}={value} is not "
                              f"an executable file; {how}")
        return path

    def identity(self, spec) -> dict:
        """What a gem5 run's result depends on beyond its configuration and
        kernel: the binary (version line and SHA-256), and the configuration
        scripts with the parameters they are given (the assumed latencies
        of testbed_params.DEFAULT_TIMING, the CPU model, checkpointing)."""
        version, digest = self._binary_facts()[:2]
        return {"engine_version": version, "engine_sha256": digest,
                "engine_config_sha256": self.config_sha256(spec)}

    def config_sha256(self, spec) -> str:
        """SHA-256 of configs/gem5/*.py and of the spec they read, less its
        paths (the run's, the kernel's: the kernel hash covers the image)."""
        h = hashlib.sha256()
        for f in sorted(CONFIG_DIR.glob("*.py")):
            h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
        d = self.spec_dict(spec)
        params = {k: v for k, v in d.items() if k not in ("run", "kernel")}
        params["cmdline"] = d["kernel"]["cmdline"]
        params["checkpoint"] = self.checkpoint
        h.update(json.dumps(params, sort_keys=True).encode())
        return h.hexdigest()

    def has_loop_probe(self) -> bool:
        """Whether the gem5 to run can count the run-queue loop's L2 reads
        (the suite's probe, gem5 patch 0002).  Without it a run goes on
        and its loop miss ratio is missing (its spec's ``rqloop`` is
        empty).  True when no gem5 is at hand: a dry run shows what the
        suite's build would do."""
        return self._binary_has(2)

    def has_p6_bus(self) -> bool:
        """Whether the gem5 to run can build the machine's P6 bus (one
        response layer per bus and snoop responses between crossbars: gem5
        patch 0003).  Without it a run goes on with gem5's own crossbar
        (its spec's ``bus`` is empty).  True when no gem5 is at hand."""
        return self._binary_has(3)

    def has_constant_tsc(self) -> bool:
        """Whether the gem5 to run can give every core a TSC that counts
        simulated time at one rate whatever the core's clock (gem5 patch
        0004).  Without it a run goes on with each core counting its own
        cycles (its spec's ``tsc_period_ps`` empty).  True when no gem5 is
        at hand."""
        return self._binary_has(4)

    def _binary_has(self, fact: int) -> bool:
        """binary_identity's yes/no ``fact`` of the gem5 to run; True when
        there is none (what the suite's build would answer)."""
        try:
            return self._binary_facts()[fact]
        except ConfigError:
            return True

    def _binary_facts(self) -> tuple:
        """binary_identity of the gem5 to run (ConfigError: none)."""
        path = self.check_available().resolve()
        st = path.stat()
        return binary_identity(str(path), st.st_size, st.st_mtime_ns)

    def binary(self) -> str:
        """``$GEM5`` if set, else the cached build, else the placeholder
        ``$GEM5`` (dry runs)."""
        return os.environ.get(GEM5_ENV) or str(cached_gem5() or PLACEHOLDER)

    # -- inputs --------------------------------------------------------
    def lapic_hz(self, spec) -> int:
        """gem5's local APIC timer runs at the CPU clock / 16."""
        return spec.machine.processor.clock_hz // 16

    def spec_dict(self, spec) -> dict:
        """The JSON spec the gem5 config reads (one copy of the numbers)."""
        p = params_module()
        lapic_hz = self.lapic_hz(spec)
        tsc = (TSC_PERIOD_PS if kind_of(spec.variant).tsc_ns
               and self.has_constant_tsc() else None)
        d = {
            "schema": p.SCHEMA,
            "run": spec.default_name(),
            "machine": spec.machine.to_dict(),
            "variant": spec.to_dict()["variant"],
            "kernel": kind_of(spec.variant).gem5_kernel(
                spec, spec.kernel_cmdline(lapic_hz), p.ROOTFS_BASE),
            "cpu_type": self.cpu.value,
            # cores beyond the measured ones, for a program's clients
            "client_cpus": spec.workload.client_cpus,
            "timing": json.loads(json.dumps(p.DEFAULT_TIMING)),
            # the machine's P6 bus costs (core clocks), when it has them
            "bus": self.bus_costs(spec) if self.has_p6_bus() else None,
            # a kernel that reads the TSC as ns (the testbed's, written
            # for QEMU's -icount clock) gets a TSC in ns on every core
            "tsc_period_ps": tsc,
            # the client cores' clock, the client PCs' model: only where
            # every core's TSC counts alike, or the wire's CPU and the
            # clients' would disagree on the time
            "client_clock_hz": spec.client_core_hz if tsc else None,
        }
        d["kernel"]["rqloop"] = (rqloop_ranges(d["kernel"].get("layout"))
                                 if self.has_loop_probe() else [])
        try:
            p.validate_spec(d)
        except p.SpecError as e:
            raise ConfigError(f"gem5 cannot build this machine: {e}") from None
        return d

    @staticmethod
    def bus_costs(spec):
        """The [timing] costs gem5 builds the P6 bus from (BUS_COSTS);
        ``None`` for a machine without a timing table."""
        t = spec.machine.timing
        if t is None:
            return None
        return {k: getattr(t, k) for k in params_module().BUS_COSTS}

    def params(self, spec, phase: str = "measure") -> dict:
        """Plain gem5 parameters for ``spec`` (what run_fs.py builds)."""
        p = params_module()
        try:
            return p.gem5_params(self.spec_dict(spec), phase=phase)
        except p.SpecError as e:
            raise ConfigError(f"gem5 cannot build this machine: {e}") from None

    def write_inputs(self, spec, run_dir, d: dict = None) -> Path:
        """Write ``gem5_spec.json`` (``d``, or the spec's dict) into
        ``run_dir``; returns its path."""
        run_dir = Path(run_dir)
        (run_dir / OUTDIR).mkdir(parents=True, exist_ok=True)
        path = run_dir / SPEC_FILE
        path.write_text(json.dumps(d or self.spec_dict(spec), indent=2,
                                   sort_keys=True) + "\n")
        return path

    # -- checkpoints ---------------------------------------------------
    def checkpoint_key(self, spec) -> str:
        """Hash of what the booted state depends on (not the caches)."""
        d = self.spec_dict(spec)
        kernel = Path(d["kernel"]["path"])
        m = d["machine"]
        key = {"schema": d["schema"],
               "kernel": (file_sha256(kernel) if kernel.is_file()
                          else str(kernel)),
               "cmdline": d["kernel"]["cmdline"],
               "cpus": m["processor"]["cpus"],
               "clock_hz": m["processor"]["clock_hz"],
               "memory": m["memory"]["size"]}
        if d["client_cpus"]:      # more cores boot
            key["client_cpus"] = d["client_cpus"]
        for k in ("client_clock_hz", "tsc_period_ps"):  # boot at them
            if d[k]:
                key[k] = d[k]
        rootfs = d["kernel"].get("rootfs")
        if rootfs:      # in memory at the checkpoint (after init's exec)
            image = Path(rootfs["path"])
            key["rootfs"] = (file_sha256(image) if image.is_file()
                             else str(image))
        text = json.dumps(key, sort_keys=True).encode()
        return hashlib.sha256(text).hexdigest()[:16]

    def checkpoint_dir(self, spec) -> Path:
        """Directory of the cached checkpoint (``.../<key>/cpt``)."""
        return self.checkpoint_root / self.checkpoint_key(spec) / "cpt"

    def has_checkpoint(self, spec) -> bool:
        return (self.checkpoint_dir(spec) / "m5.cpt").is_file()

    # -- command lines -------------------------------------------------
    def _gem5(self, outdir, run_dir, phase, extra=()) -> list[str]:
        return [self.binary(), f"--outdir={outdir}", "--listener-mode=off",
                str(CONFIG_SCRIPT), "--spec", str(Path(run_dir) / SPEC_FILE),
                "--phase", phase, *extra]

    def boot_command(self, spec, run_dir, ckpt_dir=None) -> list[str]:
        """gem5 command that boots with atomic CPUs and saves a checkpoint.

        :param ckpt_dir: where to save (default :meth:`checkpoint_dir`).
        """
        ckpt = Path(ckpt_dir) if ckpt_dir else self.checkpoint_dir(spec)
        return self._gem5(ckpt.parent / "m5out", run_dir, "boot",
                          ["--checkpoint-dir", str(ckpt)])

    def command(self, spec, run_dir) -> list[str]:
        """The complete gem5 command line of the measured run."""
        out = Path(run_dir) / OUTDIR
        if not self.checkpoint:
            return self._gem5(out, run_dir, "full", ["--cpu", self.cpu.value])
        return self._gem5(out, run_dir, "measure",
                          ["--cpu", self.cpu.value, "--checkpoint-dir",
                           str(self.checkpoint_dir(spec))])

    def commands(self, spec, run_dir) -> list[list[str]]:
        """Every gem5 invocation the run needs, in order."""
        cmds = []
        if self.checkpoint and not self.has_checkpoint(spec):
            cmds.append(self.boot_command(spec, run_dir))
        cmds.append(self.command(spec, run_dir))
        return cmds

    # -- dry run -------------------------------------------------------
    def describe(self, spec, run_dir=None) -> str:
        """Dry-run text: the gem5 command line(s) and the system built."""
        run_dir = Path(run_dir) if run_dir else (ROOT / "runs" /
                                                 spec.default_name())
        prm = self.params(spec)
        out = [f"gem5 {GEM5_VERSION} run {spec.default_name()} (dry run)"]
        if self.binary() == PLACEHOLDER:
            out.append(f"  {GEM5_ENV} is not set: {PLACEHOLDER} below stands "
                       f"for the gem5 binary (build/X86/gem5.opt)")
        out.append("commands:")
        if self.checkpoint:
            state = ("present" if self.has_checkpoint(spec)
                     else "missing, so booted first")
            out.append(f"  boot (checkpoint {state}):")
            out.append("    " + show_command(self.boot_command(spec, run_dir)))
            out.append("  measure:")
        else:
            out.append("  full (no checkpoint):")
        out.append("    " + show_command(self.command(spec, run_dir)))
        out.append("system:")
        out.extend("  " + line for line in describe_params(prm))
        kernel = Path(prm["kernel"]["path"])
        note = "" if kernel.is_file() else "  (not built yet: the run builds it first)"
        out.append(f"  kernel     {kernel}{note}")
        out.append(f"  cmdline    {prm['kernel']['cmdline']}")
        out.append(f"  console    {run_dir / OUTDIR / prm['console']} -> "
                   f"{run_dir / CONSOLE_LOG}")
        if self.checkpoint:
            out.append(f"  checkpoint {self.checkpoint_dir(spec)}")
        out.append(f"  spec       {run_dir / SPEC_FILE}")
        return "\n".join(out)

    # -- running -------------------------------------------------------
    def run(self, spec, run_dir, timeout_s=None) -> dict:
        """Boot (if needed), measure and collect one run.

        :raises ConfigError: gem5 or the kernel image is missing.
        :raises RunError: gem5 failed or left no complete result.
        """
        self.check_available()
        d = self.spec_dict(spec)
        kernel = Path(d["kernel"]["path"])
        if not kernel.is_file():
            raise ConfigError(f"kernel image {kernel} is missing: a run "
                              f"builds it (colorsim run), a bare engine "
                              f"call does not")
        run_dir = Path(run_dir)
        self.write_inputs(spec, run_dir, d)
        if self.checkpoint and not self.has_checkpoint(spec):
            self._boot(spec, run_dir, timeout_s)
        self._call(self.command(spec, run_dir), run_dir / OUTDIR, timeout_s)
        return self.collect(run_dir)

    def _boot(self, spec, run_dir, timeout_s) -> None:
        final = self.checkpoint_dir(spec)
        tmp = final.parent.with_name(final.parent.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "m5out").mkdir(parents=True)
        try:
            self._call(self.boot_command(spec, run_dir, tmp / "cpt"),
                       tmp / "m5out", timeout_s)
            if not (tmp / "cpt" / "m5.cpt").is_file():
                raise RunError("gem5 boot wrote no checkpoint: the kernel "
                               "must issue the m5 checkpoint op (0x43) "
                               "after boot; or run without checkpoints")
        except BaseException:          # a failed boot leaves no .tmp behind
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if final.parent.exists():      # another run finished first
            shutil.rmtree(tmp, ignore_errors=True)
            return
        tmp.rename(final.parent)

    @staticmethod
    def _call(cmd, outdir, timeout_s) -> None:
        outdir = Path(outdir)
        outdir.mkdir(parents=True, exist_ok=True)
        with open(outdir / "simout.txt", "w") as so, \
                open(outdir / "simerr.txt", "w") as se:
            proc = spawn(cmd, stdout=so, stderr=se, cwd=ROOT,
                         stdin=subprocess.DEVNULL)
            try:
                rc = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise RunError(f"gem5 timed out after {timeout_s} s: "
                               f"{shlex.join(cmd)}") from None
            finally:               # timeout, Ctrl-C, SIGTERM: no orphan gem5
                stop(proc)
        if rc != 0:
            tail = (outdir / "simerr.txt").read_text()[-2000:]
            raise RunError(f"gem5 exited with status {rc}: "
                           f"{shlex.join(cmd)}\n{tail}")

    # -- results -------------------------------------------------------
    def collect(self, run_dir) -> dict:
        """Convert gem5's outputs in ``run_dir`` to the engine tables.

        Writes ``bus_offsets.csv`` (dump,cpu,mode,kind,offset,count; gem5
        rows have cpu -1 = all CPUs, mode 'all', kind 'read' for
        readAddrDist -- ReadEx included -- and 'writeback' for
        writeAddrDist) and ``counters.csv`` (dump,cpu,mode,stat,value, see
        :data:`COUNTER_MAP`), copies the console to ``console.log``, and
        checks ``config.json`` against the spec when both exist.

        Dump 0 is the kernel's dumpstats (the region of interest); gem5
        appends a final dump at exit.

        :returns: a summary dict (dumps, rows, checks).
        :raises RunError: stats.txt is missing or empty, a monitor key was
            printed inexactly, or the built caches differ from the spec.
        """
        from colorsim.run.statstxt import parse_stats

        run_dir = Path(run_dir)
        out = run_dir / OUTDIR
        stats = out / "stats.txt"
        if not stats.is_file() or stats.stat().st_size == 0:
            raise RunError(f"{stats} is missing or empty: gem5 did not dump "
                           f"statistics (did the kernel reach dumpstats?)")
        dumps = parse_stats(stats)
        if not dumps:
            raise RunError(f"{stats} holds no Begin/End statistics block")
        p = params_module()
        bus = bus_rows(dumps, p.MONITOR_NAME, p.BUS_MONITOR_NAME)
        console = out / p.CONSOLE_FILE
        if console.is_file():
            shutil.copyfile(console, run_dir / CONSOLE_LOG)
        from colorsim.run.console import roi_counters
        roi = roi_counters(run_dir / CONSOLE_LOG)
        measured = json.loads((run_dir / SPEC_FILE).read_text())["machine"][
            "processor"]["cpus"] if (run_dir / SPEC_FILE).is_file() else None
        counters = counter_rows(dumps, measured) + global_rows(dumps, roi)
        _write_csv(run_dir / "bus_offsets.csv", BUS_HEADER, bus)
        _write_csv(run_dir / "counters.csv", COUNTER_HEADER, counters)
        checks = self._check_config(run_dir)
        views = sorted({r[6] for r in bus})
        return {"dumps": len(dumps), "roi_dump": 0, "bus_rows": len(bus),
                "views": views, "counter_rows": len(counters),
                "schedule_calls": roi.get("schedule_calls"),
                "config_checks": checks}

    def _check_config(self, run_dir) -> list[str]:
        spec_path = run_dir / SPEC_FILE
        cfg_path = run_dir / OUTDIR / "config.json"
        if not (spec_path.is_file() and cfg_path.is_file()):
            return ["config.json or gem5_spec.json absent: not checked"]
        p = params_module()
        prm = p.gem5_params(json.loads(spec_path.read_text()))
        config = json.loads(cfg_path.read_text())
        problems = check_config_json(config, prm)
        if problems:
            raise RunError("gem5 built a different machine than the spec:\n  "
                           + "\n  ".join(problems))
        checks = ["config.json matches the spec"]
        if not bus_view_built(config, prm):
            checks.append("no bus-view monitors in config.json (recorded "
                          "before the bus view): memory view only")
        return checks


# -- pure helpers (tested without gem5) ---------------------------------

def rqloop_ranges(layout_path) -> list:
    """The run-queue loop's ``[[lo, hi), ...]`` from a built kernel's
    layout.json (the ranges the QEMU plugin gets as ``rqloop=``); none
    before the kernel is built."""
    from colorsim.run.kernels.base import loop_ranges
    path = Path(layout_path) if layout_path else None
    if path is None or not path.is_file():
        return []
    return loop_ranges(json.loads(path.read_text()))


def show_command(cmd: list[str]) -> str:
    """Shell-quoted command; the ``$GEM5`` placeholder stays expandable."""
    if cmd and cmd[0] == PLACEHOLDER:
        return PLACEHOLDER + " " + shlex.join(cmd[1:])
    return shlex.join(cmd)


def check_config_json(config: dict, prm: dict) -> list[str]:
    """Compare gem5's ``config.json`` with the parameters we asked for.

    Checks the board's line size, every private cache's size, assoc,
    prefetcher (must be null) and tag block size, and the monitor masks.
    """
    problems = []
    board = config.get("board", {})
    line = prm["board"]["cache_line_size"]
    if board.get("cache_line_size") not in (None, line):
        problems.append(f"cache_line_size {board['cache_line_size']} != "
                        f"{line}")
    ch = board.get("cache_hierarchy", {})
    cores = prm["processor"]["num_cores"]
    for level in ("l1i", "l1d", "l2"):
        want = prm["caches"][level]
        objs = ch.get(f"{level}caches")
        if isinstance(objs, dict):
            objs = [objs]
        if not objs:
            problems.append(f"no {level}caches in config.json")
            continue
        if len(objs) != cores:
            problems.append(f"{len(objs)} {level} caches for {cores} CPUs")
        for i, c in enumerate(objs):
            if c.get("size") != want["size"] or c.get("assoc") != \
                    want["assoc"]:
                problems.append(f"{level}[{i}] is {c.get('size')} B "
                                f"{c.get('assoc')}-way, expected "
                                f"{want['size']} B {want['assoc']}-way")
            if c.get("prefetcher") not in (None, "Null", "null", "NULL"):
                problems.append(f"{level}[{i}] has a prefetcher")
            block = (c.get("tags") or {}).get("block_size")
            if block not in (None, line):
                problems.append(f"{level}[{i}] tag block size {block} != "
                                f"{line}")
    mon = ch.get(prm["monitor"]["name"])
    if mon is not None:
        for k in ("read_addr_mask", "write_addr_mask"):
            if mon.get(k) not in (None, prm["monitor"][k]):
                problems.append(f"monitor {k} {mon.get(k)} != "
                                f"{prm['monitor'][k]}")
        if mon.get("disable_addr_dists") is True:
            problems.append("monitor address distributions are disabled")
    else:
        problems.append("no memory-side CommMonitor in config.json")
    bus = prm["bus_monitors"]
    mons = ch.get(bus["name"])
    if isinstance(mons, dict):
        mons = [mons]
    if mons:                  # absent in runs recorded before the bus view
        if len(mons) != bus["count"]:
            problems.append(f"{len(mons)} bus-view monitors for "
                            f"{bus['count']} measured CPUs")
        for i, m in enumerate(mons):
            for k in ("read_addr_mask", "write_addr_mask"):
                if m.get(k) not in (None, bus[k]):
                    problems.append(f"bus-view monitor {i} {k} {m.get(k)} "
                                    f"!= {bus[k]}")
            if m.get("disable_addr_dists") is True:
                problems.append(f"bus-view monitor {i} address "
                                f"distributions are disabled")
    return problems


def bus_view_built(config: dict, prm: dict) -> bool:
    """Whether gem5's ``config.json`` holds the per-CPU bus-view monitors."""
    ch = config.get("board", {}).get("cache_hierarchy", {})
    mons = ch.get(prm["bus_monitors"]["name"])
    if isinstance(mons, dict):
        mons = [mons]
    return bool(mons)


def _write_csv(path: Path, header, rows) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)

