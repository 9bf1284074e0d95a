"""Run directories that never lie.

A run directory ``NAME`` exists only when a run completed and was verified.
Four rules keep it so:

* **Ownership.** A run holds ``.NAME.lock`` (an flock) for its whole life;
  a second process asking for the same name is refused at once.  The lock
  dies with its holder, whatever kills it.
* **No orphans.** The emulator is started so that the kernel kills it when
  its runner dies (PR_SET_PDEATHSIG), even by SIGKILL; a leftover from a
  crashed runner is killed again when the name is next locked.  So no old
  process ever writes into a new run.
* **One atomic step.** Work happens in ``.NAME.partial``.  Only a run whose
  result files pass :func:`check_results` gets a manifest (size, SHA-256,
  rows, dumps of every result file) in its config.json and is renamed to
  ``NAME``.  A complete run being replaced (``--force``) stays in place
  until its replacement is complete.
* **Damage is detected.** :func:`verify_run` checks a run against its
  manifest, config.json against the digest completion recorded, and the
  configuration against what the guest printed, the kernel's layout and
  the emulator's command, when it is loaded, and names the file.  A run
  without a manifest is only ever "unverified", never good.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

from colorsim import ROOT
from colorsim.errors import ConfigError, ResultsError
from colorsim.describe.runspec import NAME_MAX, file_sha256

MAX_NAME = NAME_MAX
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+=-]*$")
_RESERVED_SUFFIXES = (".failed", ".partial", ".lock", ".replaced", ".tmp")

# Every result file a complete run has, and how to check what it holds.
CSV_COLUMNS = {
    "bus_offsets.csv": ("dump", "cpu", "mode", "kind", "offset", "count"),
    "counters.csv": ("dump", "cpu", "mode", "stat", "value"),
}
# The files a QEMU run's manifest covers (config.json carries the manifest;
# an engine may name others, e.g. gem5's gem5/stats.txt).
MANIFEST_FILES = ("layout.json", "console.log", "stats.txt",
                  "bus_offsets.csv", "counters.csv")
PAGE = 4096


RUNS = ROOT / "runs"             # the default runs folder


def runs_root(path=None) -> Path:
    """The runs folder a command works in, absolute (each point's worker
    process starts in the checkout, not in the caller's directory):
    ``path``, or ``runs/`` in the checkout."""
    return Path(os.path.abspath(path)) if path else RUNS


# -- names and places ---------------------------------------------------

def check_run_name(name: str) -> str:
    """A run name is one plain, portable directory name."""
    if not name:
        raise ConfigError("run name is empty")
    if len(name) > MAX_NAME:
        raise ConfigError(f"run name is {len(name)} characters long; the "
                          f"limit is {MAX_NAME}")
    if not _NAME.match(name):
        raise ConfigError(f"run name {name!r} may hold only letters, digits "
                          f"and . _ + = - and must start with a letter or "
                          f"digit")
    if name.endswith(_RESERVED_SUFFIXES):
        raise ConfigError(f"run name {name!r} ends in a suffix the runner "
                          f"uses itself ({', '.join(_RESERVED_SUFFIXES)})")
    return name


def check_out_dir(out: Path, option: str = "--out", create: bool = True) -> Path:
    """The directory runs go into: absent or a directory.  With ``create``
    it is made now, so that a folder that cannot be made (no permission, a
    read-only or special file system such as /proc) is refused before
    anything is built; only probing by making it is sure, for root too.

    Returned absolute: the emulator runs in the kernel's directory (env -C),
    where a relative path would name another place."""
    out = Path(os.path.abspath(out))
    for p in (out, *out.parents):
        if p.exists() and not p.is_dir():
            raise ConfigError(f"{option} {out}: {p} is a file, not a directory")
        if p.exists():
            break
    if out.exists() and not os.access(out, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {out}: the directory is not writable")
    if create:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ConfigError(f"{option} {out}: cannot make the directory: "
                              f"{e.strerror}") from None
    return out


def partial_dir(out: Path, name: str) -> Path:
    return Path(out) / f".{name}.partial"


def failed_dir(out: Path, name: str) -> Path:
    return Path(out) / f"{name}.failed"


# -- ownership ----------------------------------------------------------

class RunLock:
    """``with RunLock(out, name):`` -- this process owns the run name.

    The lock file also records the pid of the emulator the run started
    (:meth:`record_child`), so a later owner can make sure it is gone.
    """

    def __init__(self, out: Path, name: str):
        self.path = Path(out) / f".{name}.lock"
        self.name = name
        self.fd = None

    def __enter__(self) -> "RunLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                holder = self._read().get("runner", "?")
                raise ConfigError(f"run {self.name} is already being made by "
                                  f"process {holder}; wait for it to finish or "
                                  f"choose another --name") from None
            # The holder before us unlinks the file before it unlocks; if
            # that happened between our open and flock, ours is a dead file.
            try:
                if os.stat(self.path).st_ino == os.fstat(fd).st_ino:
                    break
            except FileNotFoundError:
                pass
            os.close(fd)
        self.fd = fd
        self._kill_leftover(self._read())
        self._write({"runner": os.getpid()})
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            self.path.unlink(missing_ok=True)   # still locked: nobody races us
            os.close(self.fd)                   # releases the flock
            self.fd = None

    def record_child(self, pid: int, marker: str) -> None:
        self._write({"runner": os.getpid(), "child": pid, "marker": marker})

    def _read(self) -> dict:
        try:
            return json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return {}

    def _write(self, data: dict) -> None:
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, json.dumps(data).encode(), 0)

    @staticmethod
    def _kill_leftover(old: dict) -> None:
        """Kill an emulator a dead runner left behind (belt and braces:
        PR_SET_PDEATHSIG already did, where the kernel supports it)."""
        pid, marker = old.get("child"), old.get("marker")
        if not isinstance(pid, int) or not marker:
            return
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return
        if marker.encode() in cmdline:         # the same process, not a reuse
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# -- child processes ----------------------------------------------------

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_PR_SET_PDEATHSIG = 1
_PR_SET_THP_DISABLE = 41


def _die_with(parent: int, huge_pages: bool):
    def preexec():
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:          # the parent died before prctl
            os._exit(1)
        if not huge_pages:      # best effort: Linux 3.15 and later have it
            _libc.prctl(_PR_SET_THP_DISABLE, 1, 0, 0, 0)
    return preexec


def spawn(cmd, huge_pages: bool = True, **kwargs) -> subprocess.Popen:
    """Popen whose child the kernel kills when this process dies.

    huge_pages=False: the child's memory is never backed by transparent
    huge pages.  For QEMU, which asks for them on all guest RAM (madvise):
    the guest's first store into each 2 MiB of RAM then has the host zero
    all 2 MiB, so a short ppro4 run kept some 400 MiB resident instead of
    70 MiB and spent 0.1-0.8 s (as fragmented as the host's memory is) in
    the host kernel zeroing pages."""
    return subprocess.Popen(cmd, preexec_fn=_die_with(os.getpid(), huge_pages),
                            **kwargs)


def stop(proc: subprocess.Popen, grace_s: float = 5.0) -> None:
    """Terminate ``proc`` (then kill it) and reap it."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# -- the atomic step ----------------------------------------------------

def recover(out: Path, name: str) -> None:
    """Finish or undo a replacement a crash interrupted (lock held)."""
    final, old = Path(out) / name, Path(out) / f".{name}.replaced"
    if old.exists():
        if final.exists():
            shutil.rmtree(old)          # the new run was published
        else:
            old.rename(final)           # it was not: the old run stands


def publish(partial: Path, final: Path) -> None:
    """Make ``partial`` the run ``final``; an old ``final`` goes only after."""
    if final.exists():
        old = final.with_name(f".{final.name}.replaced")
        final.rename(old)
        partial.rename(final)
        shutil.rmtree(old)
    else:
        partial.rename(final)


# -- what a complete run holds ------------------------------------------

def _damaged(path: Path, why: str) -> ResultsError:
    return ResultsError(f"{path} is damaged: {why}")


def read_table(path: Path):
    """One result CSV as a DataFrame, its schema checked."""
    import pandas as pd
    name = path.name
    if not path.is_file():
        raise ResultsError(f"{path} is missing")
    try:
        df = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise _damaged(path, "it is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise _damaged(path, f"not a readable CSV ({first})") from None
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) != b"\n":
            raise _damaged(path, "its last line is incomplete (truncated?)")
    want = CSV_COLUMNS[name]
    missing = [c for c in want if c not in df.columns]
    if missing:
        raise _damaged(path, f"columns {', '.join(missing)} are missing")
    short = df.isna().any(axis=1)
    if short.any():
        raise _damaged(path, f"line {int(short.to_numpy().nonzero()[0][0]) + 2}: "
                             f"a field is empty or missing")
    numeric = [c for c in want if c not in ("mode", "kind", "stat")]
    for c in numeric:
        col = pd.to_numeric(df[c], errors="coerce")
        if col.isna().any():
            row = int(col.isna().to_numpy().nonzero()[0][0]) + 2
            raise _damaged(path, f"line {row}: {c} is not a number")
        df[c] = col
    if name == "bus_offsets.csv":
        bad = df[(df["offset"] < 0) | (df["offset"] >= PAGE) |
                 (df["offset"] % 1 != 0)]
        if len(bad):
            raise _damaged(path, f"line {bad.index[0] + 2}: offset "
                                 f"{bad['offset'].iloc[0]:g} is not a page "
                                 f"offset (0..4095)")
        if (df["count"] < 0).any():
            raise _damaged(path, "a negative count")
        df["offset"] = df["offset"].astype("int64")
        df["count"] = df["count"].astype("int64")
    return df


def count_dumps(path: Path) -> int:
    """Begin/End statistics blocks in a gem5-format stats.txt."""
    if not path.is_file():
        raise ResultsError(f"{path} is missing")
    text = path.read_text(errors="replace")
    begins = text.count("---------- Begin Simulation Statistics ----------")
    ends = text.count("---------- End Simulation Statistics   ----------")
    if begins != ends:
        raise _damaged(path, f"{begins} statistics blocks begin but {ends} "
                             f"end (truncated?)")
    return begins


def check_results(run_dir: Path, files=MANIFEST_FILES,
                  dumps_expected: int = None) -> dict:
    """Check every result file of a (partial) run; return its manifest."""
    run_dir = Path(run_dir)
    manifest = {}
    for rel in files:
        path = run_dir / rel
        name = path.name
        if not path.is_file():
            raise ResultsError(f"{path} is missing")
        entry = {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
        if name in CSV_COLUMNS:
            entry["rows"] = len(read_table(path))
        elif name == "stats.txt":
            entry["dumps"] = count_dumps(path)
            if entry["dumps"] == 0:
                raise _damaged(path, "it holds no statistics block")
            if dumps_expected is not None and entry["dumps"] != dumps_expected:
                raise _damaged(path, f"{entry['dumps']} statistics blocks, "
                                     f"expected {dumps_expected}")
        elif name == "layout.json":
            _read_json(path)
        manifest[rel] = entry
    return manifest


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ResultsError(f"{path} is missing") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise _damaged(path, f"not JSON ({e})") from None


def read_config(run_dir: Path) -> dict:
    """config.json of a run directory, or a ResultsError saying why not."""
    path = Path(run_dir) / "config.json"
    if not path.is_file():
        hint = (" (a failed run: see failure.txt)"
                if Path(run_dir).name.endswith(".failed") else "")
        raise ResultsError(f"{run_dir} is not a run directory: no "
                           f"config.json{hint}")
    cfg = _read_json(path)
    if not isinstance(cfg, dict):
        raise _damaged(path, "not a JSON object")
    for key in ("machine", "variant", "workload", "engine"):
        if cfg.get("complete") and key not in cfg:
            raise _damaged(path, f"no {key!r} entry")
    return cfg


CONFIG_DIGEST = "config_sha256"
# What a run's console, layout and command say, against its config.json.
_CMDLINE_KEYS = (("tasks", "tasks"), ("burst", "burst"), ("buffer", "buffer"),
                 ("warmup_ticks", "warmup"), ("roi_ticks", "roi"),
                 ("seed", "seed"), ("program", "init"), ("args", "initargs"))
_LAYOUT_KEYS = ("name", "build_id", "colors", "line", "scheduler")


def config_digest(config: dict) -> str:
    """SHA-256 of a run's configuration (canonical JSON) without the digest
    itself: completion records it, so any later edit of config.json shows."""
    body = {k: v for k, v in config.items() if k != CONFIG_DIGEST}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def verify_run(run_dir: Path, config: dict):
    """Check a complete run against what its completion recorded.

    Damage raises a ResultsError that names the file: a result file that
    differs from the manifest, a config.json edited since (its digest), or
    a configuration the run's own record contradicts (:func:`check_identity`).
    Returns None for a verified run, or why it cannot be verified: a run
    without a manifest (made before manifests existed, or an imported
    recording) or without the configuration's checksum is never good, only
    "unverified", and callers say so.
    """
    run_dir = Path(run_dir)
    digest = config.get(CONFIG_DIGEST)
    if digest is not None and digest != config_digest(config):
        raise _damaged(run_dir / "config.json",
                       "it was edited after the run completed (it differs "
                       "from the checksum its completion recorded)")
    manifest = config.get("results")
    if manifest is not None:
        _check_manifest(run_dir, manifest)
    check_identity(run_dir, config)
    if manifest is None:
        return ("no manifest (made before manifests existed, or imported): "
                "its files cannot be checked")
    if digest is None:      # its files are checked, its configuration is not:
        # an edited build hash, timing table or cache policy would not show
        return ("no configuration checksum (made before checksums existed): "
                "an edit of its config.json cannot be seen")
    return None


def _check_manifest(run_dir: Path, manifest) -> None:
    if not isinstance(manifest, dict):
        raise _damaged(run_dir / "config.json", "its manifest is not a table")
    for name, want in manifest.items():
        path = run_dir / name
        if not path.is_file():
            raise ResultsError(f"{path} is missing")
        size = path.stat().st_size
        if size != want["bytes"]:
            raise _damaged(path, f"{size} bytes, but the run recorded "
                                 f"{want['bytes']} at completion")
        if file_sha256(path) != want["sha256"]:
            raise _damaged(path, "its content differs from what the run "
                                 "recorded at completion (SHA-256)")


def check_identity(run_dir: Path, config: dict) -> None:
    """The configuration must be the one the run used: the kernel command
    line the guest printed (console.log), the kernel's layout.json and the
    emulator's cache options agree with config.json, or it was edited.
    Runs made before digests existed are caught this way too."""
    run_dir = Path(run_dir)
    where = run_dir / "config.json"
    w = config.get("workload") or {}
    console = run_dir / "console.log"
    text = console.read_text(errors="replace") if console.is_file() else ""
    m = re.search(r'^boot: .*cmdline "([^"]*)"', text, re.M)
    if m and isinstance(w, dict):
        said = dict(word.split("=", 1) for word in m.group(1).split()
                    if "=" in word)
        for key, word in _CMDLINE_KEYS:
            if key in w and str(w[key] or "") != said.get(word, ""):
                raise _damaged(where, f"workload.{key} is {w[key]!r}, but "
                                      f"the guest ran with {word}="
                                      f"{said.get(word, '')} (console.log)")
        hz = ((config.get("machine") or {}).get("processor") or {}).get("clock_hz")
        if config.get("timing") and "timing_hz" in said and str(hz) != said["timing_hz"]:
            raise _damaged(where, f"machine.processor.clock_hz is {hz!r}, but "
                                  f"the guest ran with timing_hz="
                                  f"{said['timing_hz']} (console.log)")
    v = config.get("variant") or {}
    try:
        lv = json.loads((run_dir / "layout.json").read_text())["variant"]
    except (OSError, ValueError, KeyError, TypeError):
        lv = {}
    for key in _LAYOUT_KEYS:
        if key in v and key in lv and v[key] != lv[key]:
            raise _damaged(where, f"variant.{key} is {v[key]!r}, but the "
                                  f"kernel it ran was built as {lv[key]!r} "
                                  f"(layout.json)")
    _check_command(where, config)


def _check_command(where: Path, config: dict) -> None:
    """A QEMU run's recorded command against its machine's caches and CPUs."""
    cmd, m = config.get("command"), config.get("machine")
    if not isinstance(cmd, list) or not isinstance(m, dict):
        return
    plugin = next((a for a in cmd if isinstance(a, str) and ",l2=" in a), "")
    opts = dict(x.split("=", 1) for x in plugin.split(",")[1:] if "=" in x)
    try:
        l2 = m["caches"]["l2"]
        want = {"l2": f"{l2['size']}:{l2['assoc']}:{l2['line']}",
                "cpus": str(m["processor"]["cpus"])}
    except (KeyError, TypeError):
        raise _damaged(where, "machine.caches.l2 or machine.processor is "
                              "missing") from None
    for key, value in want.items():
        if key in opts and opts[key] != value:
            raise _damaged(where, f"its machine says {key} {value}, but the "
                                  f"emulator ran with {key}={opts[key]} "
                                  f"(its command)")
