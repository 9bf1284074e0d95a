"""A run's identity: a content hash of everything that determines its result.

The hash covers the machine (CPUs, caches, memory, emulation settings), the
kernel variant, the workload with its seed and region of interest, (web
runs with outside clients) the wire's cards, bandwidth and latency, the
engine and its version, the kernel image's SHA-256 and that of its
layout.json (the ranges the bus monitor is given), (QEMU) the firmware's, (QEMU) the bus
monitor plugin's SHA-256, (Linux 2.4) the user's source tree's hash, and (gem5) the gem5 binary's SHA-256 and that of
its configuration scripts with their parameters.  It is computed from the same dictionary a run's
config.json holds, so the catalog recomputes it from a run directory alone
and a sweep can name run directories by it: after an interruption or a
change only what is missing or changed runs again.
"""

from __future__ import annotations

import functools
import hashlib
import json

ID_KEYS = ("machine", "variant", "workload", "engine", "engine_version",
           "kernel_sha256", "plugin_sha256", "rootfs_sha256")
# gem5 runs only: the binary's SHA-256 and that of its configuration
# scripts and parameters.  Covered only where present, so the ids of QEMU
# runs, and of gem5 runs recorded before them, stay what they were.
ENGINE_KEYS = ("engine_sha256", "engine_config_sha256")
# Linux 2.4 runs only: the content hash of the user's source tree their
# image was built from (colorsim/run/linux24.py), and on gem5 that of the
# boot image gem5 loads (our entry stub, the kernel and its initrd:
# colorsim/run/linux24gem5.py), covered where present.
SOURCE_KEYS = ("linux24_source_sha256", "gem5_boot_sha256")
# Web runs whose clients are outside the measured machine only: the wire
# between them (cards, bandwidth, latency; RunSpec.to_dict), covered where
# present, so the ids of runs without a wire stay what they were; and, in
# timed ones, the client model (describe/clients.py), likewise.
SETTING_KEYS = ("network", "clients")
# The kernel's layout.json: the address ranges and symbols the bus monitor
# is told (run-queue loop, user code, scheduler, locks), made by build code
# that does not change the kernel image; and (QEMU) the firmware the guest
# runs before the kernel (engines/qemu.py, firmware_sha256).  Covered where
# recorded, so runs made before them keep their ids (and a sweep runs their
# points again).
LAYOUT_KEYS = ("layout_sha256", "firmware_sha256")
SHORT = 16          # hex digits of a run directory's name (64 bits)


@functools.lru_cache(maxsize=None)
def _version_of(name: str) -> str:
    from colorsim.run.engines import get_engine
    engine = get_engine(name)
    v = getattr(engine, "version", None)
    if callable(v):
        v = v()
    return str(v) if v else name


def engine_version(name: str) -> str:
    """``engine.version()`` where the engine has one, else its name."""
    return _version_of(name)


def identity_dict(config: dict) -> dict:
    """The part of a run's configuration its identity covers."""
    d = {k: config.get(k) for k in ID_KEYS}
    d.update({k: config[k] for k in ENGINE_KEYS + SOURCE_KEYS + SETTING_KEYS
              + LAYOUT_KEYS if config.get(k)})
    if config.get("timing"):        # timing runs only: counting-only ids
        d["timing"] = config["timing"]  # stay what they were
    if not d["engine_version"]:
        d["engine_version"] = config.get("engine")
    return d


def run_id(config: dict) -> str:
    """SHA-256 (hex) of the canonical JSON of :func:`identity_dict`."""
    text = json.dumps(identity_dict(config), sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def short_id(full: str) -> str:
    return full[:SHORT]
