"""Run one experiment and leave one complete run directory, or none.

A run directory holds: config.json (the full configuration, the engine's
mode and command, the kernel image hash), layout.json (the kernel's), the
console log, the engine's stats dump (stats.txt) and the two tables every
engine writes (bus_offsets.csv, counters.csv).  Work happens in a hidden
``.NAME.partial`` directory that is renamed to ``NAME`` only when the run
succeeded, so a directory named like a run is always complete.  A failed
run is kept as ``NAME.failed`` with ``failure.txt`` (reason + console tail).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path

from . import ROOT
from .build import PLUGIN, ensure_built
from .engines import get_engine
from .errors import ConfigError, RunError
from .runspec import RunSpec, file_sha256

RUNS = ROOT / "runs"
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


def stale_reason(run_dir: Path, spec: RunSpec):
    """Why an existing run directory does not stand for ``spec`` (or None)."""
    cfg = run_dir / "config.json"
    old = json.loads(cfg.read_text()) if cfg.is_file() else {}
    if not old.get("complete"):
        return "the earlier run is incomplete"
    now = spec.to_dict()
    for key in ("machine", "variant", "workload", "engine"):
        if old.get(key) != now[key]:
            return f"its {key} differs"
    if old.get("kernel_sha256") != file_sha256(spec.kernel_elf64):
        return "the kernel image changed since"
    if spec.engine == "qemu" and old.get("plugin_sha256") != file_sha256(PLUGIN):
        return "the bus-monitor plugin changed since"
    if spec.engine == "qemu":
        now_version = get_engine("qemu").version()
        if old.get("engine_version") != now_version:
            return (f"it was made by QEMU {old.get('engine_version') or '7.2 or older'}, "
                    f"not {now_version}")
    return None


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


def _watch(proc, run_dir: Path, timeout_s: float, progress) -> int:
    """Wait for QEMU, echoing the kernel's region-of-interest lines."""
    start, seen = time.monotonic(), 0
    log = run_dir / "console.log"
    while True:
        try:
            return proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
        if log.is_file():
            lines = log.read_text(errors="replace").splitlines()
            for line in lines[seen:]:
                if line.startswith(("roi:", "workload:", "cpus:")):
                    progress(f"  guest: {line.strip()}")
            seen = len(lines)
        if time.monotonic() - start > timeout_s:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            raise TimeoutError(f"no result after {timeout_s:.0f} s: the guest "
                               f"hung or the region of interest is too long")


def _fail(partial: Path, final: Path, reason: str) -> RunError:
    failed = final.with_name(final.name + ".failed")
    tail = console_tail(partial)
    (partial / "failure.txt").write_text(f"{reason}\n\nconsole tail:\n{tail}\n")
    if failed.exists():
        shutil.rmtree(failed)
    partial.rename(failed)
    return RunError(f"run {final.name} failed: {reason}\n"
                    f"kept for inspection in {failed}\n--- console tail ---\n{tail}")


def prepare(spec: RunSpec, progress=print) -> dict:
    """Check the engine, build what is missing, return the kernel layout."""
    engine = get_engine(spec.engine)
    engine.check_available()
    ensure_built([spec.variant.build_id], plugin=spec.engine == "qemu",
                 progress=progress)
    return json.loads(spec.layout_file.read_text())


def run(spec: RunSpec, name: str = None, out: Path = RUNS, force=False,
        progress=print) -> Path:
    """Run ``spec``; return the complete run directory."""
    name = name or spec.default_name()
    if "/" in name or name.startswith("."):
        raise ConfigError(f"run name {name!r} must be a plain directory name")
    out = Path(out)
    final = out / name
    layout = prepare(spec, progress)
    engine = get_engine(spec.engine)
    if final.exists():
        stale = stale_reason(final, spec)
        if not stale and not force:
            progress(f"run {name}: already complete in {final} (use --force "
                     f"to run again)")
            return final
        if stale:
            progress(f"run {name}: running again: {stale}")
        shutil.rmtree(final)
    out.mkdir(parents=True, exist_ok=True)
    partial = out / f".{name}.partial"
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir()
    shutil.copy(spec.layout_file, partial / "layout.json")
    config = spec.to_dict()
    config.update(name=name, complete=False,
                  kernel_image=str(spec.kernel_elf64.relative_to(ROOT)),
                  kernel_sha256=file_sha256(spec.kernel_elf64),
                  kernel_cmdline=spec.kernel_cmdline(engine.lapic_hz(spec)),
                  source=git_revision(), host=platform.node(),
                  started=datetime.datetime.now().isoformat(timespec="seconds"))
    if spec.engine == "qemu":
        config["emulation"] = engine.mode(spec)
        config["engine_version"] = engine.version()
        config["command"] = engine.command(spec, partial, layout)
        config["plugin_sha256"] = file_sha256(PLUGIN)
    _write_json(partial / "config.json", config)

    progress(f"run {name}: {spec.engine}, {spec.machine.name} {spec.cpus} CPUs, "
             f"L2 {spec.machine.caches.l2.describe()}, kernel "
             f"{spec.variant.name}, {spec.workload.tasks} tasks")
    t0 = time.monotonic()
    try:
        if spec.engine == "qemu":
            with open(partial / "qemu.log", "w") as qlog:
                proc = subprocess.Popen(config["command"], stdout=qlog,
                                        stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)
                try:
                    rc = _watch(proc, partial, spec.timeout_s, progress)
                finally:                      # Ctrl-C, or any error: no orphan
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
            reason = engine.judge_exit(rc)
            if reason:
                qtail = (partial / "qemu.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{reason}" + (f"\nQEMU said: {qtail}" if qtail.strip() else ""))
        else:
            engine.run(spec, partial, timeout_s=spec.timeout_s)
        engine.collect(partial)
    except (RuntimeError, TimeoutError, FileNotFoundError, OSError) as e:
        raise _fail(partial, final, str(e)) from None
    except BaseException:
        _fail(partial, final, "interrupted")
        raise
    config.update(complete=True, wall_s=round(time.monotonic() - t0, 2),
                  finished=datetime.datetime.now().isoformat(timespec="seconds"))
    _write_json(partial / "config.json", config)
    partial.rename(final)
    progress(f"run {name}: done in {config['wall_s']} s -> {final}")
    return final
