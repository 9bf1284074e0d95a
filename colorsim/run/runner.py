"""Run one experiment and leave one complete run directory, or none.

A run directory holds: config.json (the full configuration, the engine's
mode and command, the kernel image hash, the manifest of its result files),
layout.json (the kernel's), the console log, the engine's stats dump
(stats.txt) and the two tables every engine writes (bus_offsets.csv,
counters.csv).  How a directory named like a run is always a complete,
verified one is colorsim/rundir.py's job: a lock per name, an emulator that
dies with its runner, one atomic rename.  A failed run is kept as
``NAME.failed`` with ``failure.txt`` (reason + console tail).
"""

from __future__ import annotations

import datetime
import errno
import json
import os
import platform
import re
import shutil
import subprocess
import time
from pathlib import Path

from colorsim import ROOT
from colorsim.describe.programs import MAX_HOURS_DEFAULT, check_host_time
from colorsim.run.build import PLUGIN
from colorsim.run.engines import get_engine
from colorsim.run.kernels import kind_of
from colorsim.errors import ConfigError, Interrupted, ResultsError, RunError
from colorsim.run.rundir import (CONFIG_DIGEST, RunLock, check_out_dir, check_results,
                     check_run_name, config_digest, partial_dir, publish,
                     read_config, recover, spawn, stop, verify_run)
from colorsim.describe.runspec import RunSpec, file_sha256
from colorsim.run.schedshare import describe, scheduler_shares

from colorsim.run.rundir import RUNS  # noqa: E402  (the default runs folder)
CONSOLE_TAIL = 30


def git_revision() -> dict:
    def git(*args):
        try:
            p = subprocess.run(["git", *args], cwd=ROOT, capture_output=True,
                               text=True)
        except FileNotFoundError:          # no git: a tarball checkout
            return ""
        return p.stdout.strip() if p.returncode == 0 else ""
    return {"commit": git("rev-parse", "HEAD") or None,
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


# The built files a run's identity hashes, beside its settings, and what
# each is (the engine's own are below).
BUILD_HASHES = (("kernel_sha256", "kernel image"),
                ("plugin_sha256", "bus-monitor plugin"),
                ("layout_sha256", "kernel layout (the monitor's address ranges)"),
                ("firmware_sha256", "firmware (SeaBIOS and option ROMs)"),
                ("rootfs_sha256", "root file-system image"),
                ("linux24_source_sha256", "Linux source tree"),
                ("gem5_boot_sha256", "gem5 boot image (entry stub, kernel, initrd)"))


def differences(old: dict, spec: RunSpec, identity: dict) -> list:
    """What makes the complete run ``old`` not a run of ``spec``."""
    diffs = []
    d = spec.to_dict()
    now = _flat(d)
    # every setting the spec has, and the settings' tables an older run had
    keys = set(d) | {"machine", "variant", "workload", "timing", "network", "clients"}
    was = _flat({k: old.get(k) for k in keys if isinstance(old.get(k), dict) or k in d})
    for key in sorted(set(now) | set(was)):
        if now.get(key) != was.get(key):
            diffs.append(f"{key} {was.get(key)!r} -> {now.get(key)!r}")
    # Every build the run's identity hashes (colorsim/run/identity.py):
    # a run of another image is not this run, whatever its name says.
    for key, what in BUILD_HASHES:
        if key in identity and old.get(key) != identity[key]:
            diffs.append(f"the {what} changed since")
    engine = "QEMU" if spec.engine == "qemu" else spec.engine
    if "engine_version" in identity and old.get("engine_version") != identity["engine_version"]:
        before = old.get("engine_version") or ("7.2 or older" if spec.engine == "qemu"
                                               else "an unrecorded version")
        diffs.append(f"it was made by {engine} {before}, "
                     f"not {identity['engine_version']}")
    for key, what in (("engine_sha256", f"the {engine} binary"),
                      ("engine_config_sha256", f"the {engine} configuration "
                       f"scripts or their parameters")):
        if key in identity and old.get(key) != identity[key]:
            diffs.append(f"{what} changed since")
    return diffs


def existing_run(final: Path, spec: RunSpec, identity: dict):
    """(state, detail) of what is at ``final``: absent, same, other,
    damaged or unverified (no manifest: never reused as a good run)."""
    if not final.exists():
        return "absent", None
    try:
        old = read_config(final)
    except ResultsError as e:
        return "damaged", str(e)
    if not old.get("complete"):
        return "damaged", f"{final} is not a complete run"
    try:                              # an edited config.json is damage,
        unverified = verify_run(final, old)   # not "other settings"
    except ResultsError as e:
        return "damaged", str(e)
    diffs = differences(old, spec, identity)
    if diffs:
        return "other", diffs
    if unverified:
        return "unverified", f"{final} cannot be checked: {unverified}"
    return "same", None


def console_tail(run_dir: Path, n: int = CONSOLE_TAIL) -> str:
    log = run_dir / "console.log"
    if not log.is_file():
        return "(no console output)"
    lines = log.read_text(errors="replace").replace("\r", "").splitlines()
    return "\n".join(lines[-n:]) or "(no console output)"


def _write_json(path: Path, data) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


PROGRESS_EVERY_S = 60.0      # a run longer than this says how far it is


def read_progress(run_dir: Path) -> dict:
    """The bus monitor's .progress (guest instructions so far, the furthest
    CPU's modelled cycles under --timing), or {} before it wrote one."""
    try:
        text = (run_dir / ".progress").read_text()
    except OSError:
        return {}
    return {k: int(v) for k, v in re.findall(r"^(\w+) (\d+)$", text, re.M)}


def progress_line(spec, elapsed: float, got: dict, expected) -> str:
    """One line of how far a run is: host time, the guest's instructions
    and modelled time, and the time left by the measured cost estimate."""
    def mmss(t):
        return f"{int(t // 60)}:{int(t % 60):02d}"
    words = [f"{mmss(elapsed)} elapsed"]
    if got.get("insts"):
        words.append(f"guest {got['insts'] / 1e9:.2f} G instructions "
                     f"({got['insts'] / elapsed / 1e6:.0f} M/s)")
    if got.get("cycles"):
        hz = spec.machine.processor.clock_hz
        words.append(f"modelled {got['cycles'] / hz:.3f} s")
    if expected:
        left = expected - elapsed
        words.append(f"about {mmss(left)} left by the measured cost estimate"
                     if left > 0 else "past the measured cost estimate")
    return "  run: " + ", ".join(words)


def _watch(proc, run_dir: Path, timeout_s: float, progress, spec=None) -> int:
    """Wait for the emulator, echoing the kernel's region-of-interest lines
    and, once a minute, how far the guest is; stop it when ``timeout_s``
    seconds have passed."""
    start = time.monotonic()
    deadline, seen = start + timeout_s, 0
    next_note = start + PROGRESS_EVERY_S
    expected = None
    if spec is not None:
        from colorsim.describe.programs import expected_host_s
        est = expected_host_s(spec.workload.program, spec.workload.args)
        expected = est[0] if est else None
    log = run_dir / "console.log"
    while True:
        left = deadline - time.monotonic()
        try:
            return proc.wait(timeout=max(0.0, min(0.5, left)))
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if spec is not None and now >= next_note:
            next_note = now + PROGRESS_EVERY_S
            progress(progress_line(spec, now - start, read_progress(run_dir),
                                   expected))
        if log.is_file():
            lines = log.read_text(errors="replace").splitlines()
            for line in lines[seen:]:
                if line.startswith(("roi:", "workload:", "cpus:", "init:")):
                    progress(f"  guest: {line.strip()}")
            seen = len(lines)
        if time.monotonic() >= deadline:
            stop(proc)
            raise TimeoutError(f"no result after {timeout_s:g} s (--timeout): "
                               f"the guest hung or the region of interest is "
                               f"too long")


LOW_SPACE = 1 << 20        # bytes: below this, a missing file means a full disk


def _disk_full(run_dir: Path):
    """The reason a run failed if its file system is full, else None.  Both
    emulators then fail to write a result and say only that it is missing
    (the emulator's own message may not fit into qemu.log either)."""
    try:
        st = os.statvfs(run_dir)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if free >= LOW_SPACE:
        return None
    return (f"no space left on the disk holding {run_dir.parent} ({free} "
            f"bytes free): the results could not be written in full")


# Free space a run needs before it boots: its directory measured 0.2-2.5 MiB
# (console, counters, offsets, stats), so 64 MiB leaves room for the largest
# console a workload prints; a gem5 run also writes a checkpoint of guest
# memory (at most the memory's size).
RUN_OUTPUT_BYTES = 64 << 20


def check_free_space(spec: RunSpec, out: Path) -> None:
    """Refuse, before boot, a runs folder whose disk cannot hold the run's
    output: an OSError ENOSPC, which the command line reports in one line
    with exit status 74."""
    need = RUN_OUTPUT_BYTES + (spec.machine.memory.size if spec.engine == "gem5" else 0)
    where = Path(out)
    while not where.exists() and where != where.parent:
        where = where.parent
    st = os.statvfs(where)
    free = st.f_bavail * st.f_frsize
    if free < need:
        raise OSError(errno.ENOSPC, f"no space for the run: {free >> 20} MiB "
                      f"free, a run needs {need >> 20} MiB", str(where))


def _no_space(partial: Path, final: Path, reason: str) -> OSError:
    """A run the disk could not hold: kept as NAME.failed like any failed
    run, reported as the system's refusal (one line, exit status 74)."""
    _fail(partial, final, reason)
    return OSError(errno.ENOSPC, f"{reason}; the attempt is kept in "
                   f"{final.name}.failed", str(final.parent))


def _fail(partial: Path, final: Path, reason: str) -> RunError:
    """Keep a failed attempt as NAME.failed; never touch a complete NAME."""
    failed = final.with_name(final.name + ".failed")
    tail = console_tail(partial)
    try:
        (partial / "failure.txt").write_text(f"{reason}\n\nconsole tail:\n{tail}\n")
    except OSError:                 # a full disk: the message still says why
        (partial / "failure.txt").unlink(missing_ok=True)
    if failed.exists():
        shutil.rmtree(failed)
    partial.rename(failed)
    kept = (f"; the complete run {final} is unchanged" if final.exists() else "")
    return RunError(f"run {final.name} failed: {reason}\n"
                    f"kept for inspection in {failed}{kept}\n"
                    f"--- console tail ---\n{tail}")


def preflight(spec: RunSpec, engine_needed: bool = True,
              max_hours: float = MAX_HOURS_DEFAULT, out: Path = None) -> None:
    """Every refusal a run makes that needs nothing built or booted: the
    engine is there, the kernel keeps the command line whole, the run ends
    within ``max_hours`` of host time, the user's Linux 2.4 tree is there.
    A dry run makes the same checks, less the engine's where it can show
    the command without it (gem5)."""
    engine = get_engine(spec.engine)
    if engine_needed:
        engine.check_available()
    spec.kernel_cmdline(engine.lapic_hz(spec))
    check_host_time(spec.workload.program, spec.workload.args, max_hours)
    if out is not None:
        check_free_space(spec, out)
    kind_of(spec.variant).check_source(spec)


def prepare(spec: RunSpec, progress=print) -> dict:
    """Check the engine, build what is missing, return the kernel layout."""
    engine = get_engine(spec.engine)
    engine.check_available()
    kind_of(spec.variant).prepare(spec, progress)
    return json.loads(spec.layout_file.read_text())


def identity(spec: RunSpec) -> dict:
    """The builds a run's result depends on, beside its configuration."""
    from colorsim.run.identity import engine_version
    ident = {"kernel_sha256": file_sha256(spec.kernel_elf64),
             "engine_version": engine_version(spec.engine)}
    if spec.layout_file.is_file():      # the ranges the monitor is given
        ident["layout_sha256"] = file_sha256(spec.layout_file)
    if spec.engine == "qemu":
        ident["plugin_sha256"] = file_sha256(PLUGIN)
        ident.update(get_engine("qemu").identity(spec))     # its firmware
    if spec.engine == "gem5":           # its binary, scripts and parameters
        ident.update(get_engine("gem5").identity(spec))
    ident.update(kind_of(spec.variant).identity(spec))   # its image, its tree
    return ident


def _refuse_existing(final: Path, state: str, detail) -> ConfigError:
    if state == "other":
        return ConfigError(
            f"run {final.name} already exists in {final.parent} with other "
            f"settings ({'; '.join(detail)}): choose another --name, or pass "
            f"--force to replace it (it is kept until the new run completes)")
    return ConfigError(f"{detail}: pass --force to replace run {final.name} "
                       f"(or remove {final})")


def run_each(specs, out: Path, label: str, log=print) -> None:
    """Make each of ``specs`` in ``out`` under its default name, one after
    another, saying which ("``label``: run i/n: name"); a complete run is
    reused (run())."""
    todo = list(specs)
    for i, spec in enumerate(todo, 1):
        log(f"{label}: run {i}/{len(todo)}: {spec.default_name()}")
        run(spec, name=spec.default_name(), out=out)


def run(spec: RunSpec, name: str = None, out: Path = RUNS, force=False,
        progress=print, replace_unverified=False,
        max_hours: float = MAX_HOURS_DEFAULT) -> Path:
    """Run ``spec``; return the complete run directory.

    A complete run of the same configuration and builds is reused; one of
    other settings is never replaced without ``force``.  A run that cannot
    be verified (no manifest) is not reused: it is refused without
    ``force``, or replaced with ``replace_unverified`` (a sweep's runs are
    named by content, so a fresh run of that name is the same run).
    """
    name = check_run_name(name or spec.default_name())
    out = check_out_dir(out)
    final = out / name
    preflight(spec, max_hours=max_hours, out=out)
    with RunLock(out, name) as lock:
        recover(out, name)
        layout = prepare(spec, progress)
        ident = identity(spec)
        state, detail = existing_run(final, spec, ident)
        if state == "same" and not force:
            progress(f"run {name}: already complete in {final} (use --force "
                     f"to run again)")
            return final
        if state == "unverified" and replace_unverified:
            progress(f"run {name}: {detail}; running it again")
        elif state in ("other", "damaged", "unverified") and not force:
            raise _refuse_existing(final, state, detail)
        return _run_locked(spec, name, out, layout, ident, lock, progress)


def _run_locked(spec, name, out, layout, ident, lock, progress) -> Path:
    engine = get_engine(spec.engine)
    final, partial = out / name, partial_dir(out, name)
    if partial.exists():                # a killed runner's: its emulator is dead
        shutil.rmtree(partial)
    partial.mkdir()
    config = spec.to_dict()
    config.update(name=name, complete=False,
                  kernel_image=str(spec.kernel_elf64.relative_to(ROOT)),
                  kernel_cmdline=spec.kernel_cmdline(engine.lapic_hz(spec)),
                  source=git_revision(), host=platform.node(),
                  started=datetime.datetime.now().isoformat(timespec="seconds"),
                  **_batch_job(), **ident)
    config.update(kind_of(spec.variant).config(spec))
    if spec.engine == "qemu":
        config["emulation"] = engine.mode(spec)
        config["command"] = engine.command(spec, partial, layout)

    progress(f"run {name}: {spec.engine}, {spec.machine.name} {spec.cpus} CPUs, "
             f"L2 {spec.machine.caches.l2.describe()}, kernel "
             f"{spec.variant.name}, " + (f"init={spec.workload.program}"
             if spec.workload.program else f"{spec.workload.tasks} tasks"))
    t0 = time.monotonic()
    try:
        shutil.copy(spec.layout_file, partial / "layout.json")
        _write_json(partial / "config.json", config)
        if spec.engine == "qemu":
            _run_qemu(engine, spec, config["command"], partial, lock, progress)
        else:
            engine.run(spec, partial, timeout_s=spec.timeout_s)
        engine.collect(partial)
        _check_builds_unchanged(spec, ident)
        if spec.workload.program:
            _check_program_finished(partial / "console.log", spec.workload.program)
        kind_of(spec.variant).check_output(spec, partial / "console.log")
        manifest = check_results(partial, engine.result_files,
                                  engine.dumps_expected)
    except (RuntimeError, TimeoutError, OSError, ResultsError) as e:
        full = _disk_full(partial) if isinstance(e, (OSError, ResultsError)) else None
        if full:
            raise _no_space(partial, final, full) from None
        raise _fail(partial, final, str(e)) from None
    except Interrupted as e:
        _fail(partial, final, f"interrupted by {e.signame}")
        raise
    except BaseException as e:
        _fail(partial, final, f"interrupted ({type(e).__name__})")
        raise
    config.update(complete=True, results=manifest,
                  wall_s=round(time.monotonic() - t0, 2),
                  finished=datetime.datetime.now().isoformat(timespec="seconds"))
    config[CONFIG_DIGEST] = config_digest(config)   # last: covers all above
    try:
        _write_json(partial / "config.json", config)
    except OSError as e:
        full = _disk_full(partial)
        if full:
            raise _no_space(partial, final, full) from None
        raise _fail(partial, final, str(e)) from None
    publish(partial, final)
    progress(f"run {name}: done in {config['wall_s']} s -> {final}")
    shares = describe(scheduler_shares(final))
    if shares:
        progress(f"run {name}: {shares}")
    return final


def _batch_job() -> dict:
    """``{"slurm_job": id}`` when a Slurm job runs this (an array task as
    ``ARRAYID_TASK``, as squeue and scontrol name it), so a run directory
    says which job's log to read.  Not part of the run's identity."""
    env = os.environ
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        return {"slurm_job": f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"}
    if env.get("SLURM_JOB_ID"):
        return {"slurm_job": env["SLURM_JOB_ID"]}
    return {}


def _check_builds_unchanged(spec: RunSpec, ident: dict) -> None:
    """The run's identity names the kernel, plugin and image hashed before
    it started; the engine read them later.  A rebuild in between (scons
    in the same checkout while a sweep runs) would publish results under
    builds that did not make them, so the run fails instead."""
    now = identity(spec)
    changed = [k.replace("_sha256", "") for k in ident
               if k.endswith("_sha256") and now.get(k) != ident[k]]
    if changed:
        raise RuntimeError(f"the {', '.join(changed)} build changed while the "
                           f"run was in progress (rebuilt in this checkout?): "
                           f"its results cannot say which build made them")


def _check_program_finished(console: Path, program: str) -> None:
    """A user program's run is complete only if init exited with status 0 or
    the program stopped the machine itself (m5 exit): a machine that stopped
    at the region's end while the program was still running (or failing) has
    not shown that its measured work was correct."""
    text = console.read_text(errors="replace") if console.is_file() else ""
    if re.search(r"^roi: exit requested by pid \d+$", text, re.M):
        return                        # the program stopped the machine (m5 exit)
    m = re.findall(r"^init: exited with status (-?\d+)$", text, re.M)
    if not m:
        raise RuntimeError(f"{program} did not finish: the machine stopped before "
                           f"init exited (console.log ends: "
                           f"{text.strip().splitlines()[-1][:120] if text.strip() else 'empty'})")
    if m[-1] != "0":
        fails = [l for l in text.splitlines() if "FAIL" in l]
        raise RuntimeError(f"{program} failed: init exited with status {m[-1]}"
                           + (f" ({fails[-1][:160]})" if fails else ""))


def _run_qemu(engine, spec, command, partial, lock, progress) -> None:
    with open(partial / "qemu.log", "w") as qlog:
        proc = spawn(command, huge_pages=False, stdout=qlog,
                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            lock.record_child(proc.pid, str(partial))
            rc = _watch(proc, partial, spec.timeout_s, progress, spec)
        finally:                      # Ctrl-C, SIGTERM, any error: no orphan
            stop(proc, grace_s=0)
            (partial / ".progress").unlink(missing_ok=True)   # not a result
    text = (partial / "qemu.log").read_text(errors="replace")
    said = engine.errors_said(text)
    reason = engine.judge_exit(rc)
    if said:                  # its own words first: they say what went wrong
        raise RuntimeError(f"the emulator stopped with an error: {said[0]}"
                           + (f" ({reason})" if reason else ""))
    if reason:
        qtail = text[-2000:]
        raise RuntimeError(f"{reason}" + (f"\nQEMU said: {qtail}" if qtail.strip() else ""))
