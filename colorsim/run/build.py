"""Build what a run needs, through SCons (which skips what is up to date)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess

from colorsim import BUILD, ROOT
from colorsim.errors import ConfigError, RunError

PLUGIN = BUILD / "engine" / "busmon.so"
PREBUILT_ENV = "COLORSIM_PREBUILT"   # set by a sweep for its runs' processes


@contextlib.contextmanager
def build_lock(kind: str, progress=print):
    """Hold the lock of one kind of build (``build/KIND/.build.lock``): one
    process at a time builds its images, since two runs that need the same
    image (two sweeps, or a sweep's two workers) would otherwise build it
    into one folder at once."""
    path = BUILD / kind / ".build.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"build: waiting for another process's {kind} build")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ensure_built(build_ids, plugin=True, progress=print, image=False):
    """Build the kernel variants ``build_ids`` (and the plugin, and the
    user programs' root-file-system image) if needed."""
    if not shutil.which("scons"):
        raise ConfigError("scons is not installed: run scripts/setup.sh")
    ids = sorted(set(build_ids))
    if os.environ.get(PREBUILT_ENV) == "1":
        return        # a sweep built everything before starting its runs
    targets = [str(BUILD / "kernels" / i) for i in ids]
    if plugin:
        targets.append(str(BUILD / "engine"))
    if image:
        if not shutil.which("musl-gcc"):
            raise ConfigError("musl-gcc is not installed (Debian's musl-tools): "
                              "run scripts/setup.sh")
        targets.append(str(BUILD / "disk-images"))
    progress(f"build: scons {' '.join(t.replace(str(ROOT) + '/', '') for t in targets)}")
    cmd = ["scons", "-Q", f"variants={','.join(ids)}"] + targets
    BUILD.mkdir(parents=True, exist_ok=True)
    with open(BUILD / ".scons.lock", "w") as lock:   # one scons at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        tail = "\n".join((p.stdout + p.stderr).splitlines()[-25:])
        raise RunError(f"build failed ({' '.join(cmd)}):\n{tail}")
