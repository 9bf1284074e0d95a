"""scripts/build-qemu.sh takes turns on a shared cache, and a checkout
runs the build of its own patches.

Two builds start at once into a scratch cache that already holds a
(stand-in) binary: the idempotent path, so no QEMU is built.  The stand-in
records when each build looks at it, and takes a while to answer; with the
lock, one build says it is waiting and their looks do not overlap.
"""

import subprocess
import time

from colorsim import ROOT
# the same hash names the cache directory here and in build-qemu.sh: the
# stand-in below is only found as cached if the two agree
from colorsim.run.engines.qemu import patch_hash

SCRIPT = ROOT / "scripts" / "build-qemu.sh"

FAKE_QEMU = """#!/bin/sh
echo "start $$ $(date +%s.%N)" >> {log}
sleep 1
echo "end $$ $(date +%s.%N)" >> {log}
echo "QEMU emulator version 10.2.2 (stand-in)"
"""




def scratch_cache(tmp_path):
    cache = tmp_path / "cache"
    name = f"qemu-10.2.2+ds-1-p{patch_hash()}"
    binary = cache / name / "bin" / "qemu-system-x86_64"
    binary.parent.mkdir(parents=True)
    log = tmp_path / "calls.log"
    binary.write_text(FAKE_QEMU.format(log=log))
    binary.chmod(0o755)
    (cache / name / "debian-version").write_text("1:10.2.2+ds-1\n")
    (cache / "current").write_text(name + "\n")
    return cache, log


def test_two_builds_at_once_take_turns(tmp_path):
    cache, log = scratch_cache(tmp_path)
    env = {"PATH": "/usr/bin:/bin", "COLORSIM_QEMU_CACHE": str(cache)}
    procs = []
    for _ in range(2):
        procs.append(subprocess.Popen(["bash", str(SCRIPT)], env=env,
                                      stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
        time.sleep(0.3)         # the first one holds the lock by then
    outs = [p.communicate(timeout=60)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all("build-qemu: cached: QEMU emulator version 10.2.2" in o for o in outs)
    waited = [o for o in outs if "waiting for another build" in o]
    assert len(waited) == 1, outs
    # each build calls the binary twice; no call overlaps another build's
    calls = {}
    for line in log.read_text().split("\n"):
        if line:
            what, pid, t = line.split()
            calls.setdefault(pid, {})[what] = float(t)
    spans = sorted((c["start"], c["end"]) for c in calls.values())
    assert len(spans) == 4
    for (s0, e0), (s1, e1) in zip(spans, spans[1:]):
        assert s1 >= e0, spans


def test_a_checkout_runs_the_build_of_its_own_patches(tmp_path, monkeypatch):
    """``current`` names the last build in the cache, whichever checkout
    made it; a checkout runs the build of its own patches: the one
    ``current`` names when it matches, else a cached build that matches,
    else none (set-up must build it).  So another checkout's set-up does
    not change the QEMU under a running sweep."""
    import os
    import pytest
    from colorsim.errors import ConfigError
    from colorsim.run.engines import qemu
    cache, _ = scratch_cache(tmp_path)
    ours = f"qemu-10.2.2+ds-1-p{patch_hash()}"
    other = cache / "qemu-10.2.2+ds-1-p00000000" / "bin"
    other.mkdir(parents=True)
    (other / "qemu-system-x86_64").write_text("#!/bin/sh\n")
    (other / "qemu-system-x86_64").chmod(0o755)
    monkeypatch.delenv("COLORSIM_QEMU", raising=False)
    monkeypatch.setattr(qemu, "CACHE", cache)
    assert qemu.cached_build() == ours
    (cache / "current").write_text("qemu-10.2.2+ds-1-p00000000\n")   # another's build
    assert qemu.cached_build() == ours
    assert qemu.qemu_binary() == cache / ours / "bin" / "qemu-system-x86_64"
    os.remove(cache / ours / "bin" / "qemu-system-x86_64")
    assert qemu.cached_build() == ""
    with pytest.raises(ConfigError, match=f"p{patch_hash()}/bin/qemu-system-x86_64 is "
                                          "missing.*run scripts/setup.sh"):
        qemu.qemu_binary()
