"""The Slurm executor on a real single-node Slurm cluster.

The fixture starts one with the user's script, ``scripts/slurm-local.sh``
(Debian's slurm-wlm, no accounting daemon, a configuration of its own in a
temporary folder; munged if none answers), and stops what it started.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from colorsim import ROOT
from colorsim.sweep import run_sweep

from test_sweep import HUNG, QUIET, catalog_bytes, exps  # noqa: F401

SCRIPT = ROOT / "scripts" / "slurm-local.sh"


def slurm_local(*args, check=True):
    return subprocess.run(["bash", str(SCRIPT), *map(str, args)], check=check,
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    for tool in ("slurmctld", "slurmd", "sbatch", "munged"):
        assert shutil.which(tool), f"{tool} missing: scripts/setup.sh installs slurm-wlm"
    d = tmp_path_factory.mktemp("slurm")
    mp = pytest.MonkeyPatch()
    try:
        p = slurm_local("start", d, check=False)
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"export SLURM_CONF={d / 'slurm.conf'}" in p.stdout
        mp.setenv("SLURM_CONF", str(d / "slurm.conf"))
        yield d
    finally:
        slurm_local("stop", d, check=False)
        mp.undo()


def test_sweep_through_slurm_lands_in_the_catalog(slurm_cluster, exps, tmp_path):  # noqa: F811
    exps()
    root = tmp_path / "runs"
    c = run_sweep("tiny", quick=True, jobs=2, executor="slurm", root=root, **QUIET)
    assert c["done"] == 2 and c["failed"] == 0 and c["ran"] == 2, c
    # each run was a Slurm batch job, not a process of ours
    assert all(str(p).startswith("slurm:") for p in c["executor_pids"]), c
    ref = tmp_path / "ref"
    run_sweep("tiny", quick=True, jobs=2, root=ref, **QUIET)
    assert catalog_bytes(root) == catalog_bytes(ref)     # same runs, same catalog


def test_a_run_killed_for_time_is_recorded_as_such(slurm_cluster, exps, tmp_path,  # noqa: F811
                                                  monkeypatch):
    # One minute of wall time and the warning 45 s before it: the run (which
    # would take far longer) is stopped by the warning and recorded.
    exps(HUNG.format(timeout=900))
    monkeypatch.setenv("COLORSIM_SLURM_TIME", "1")
    monkeypatch.setenv("COLORSIM_SLURM_SIGNAL_S", "45")
    root = tmp_path / "runs"
    c = run_sweep("hung", quick=False, jobs=1, executor="slurm", root=root,
                  retries=0, **QUIET)
    assert c["failed"] == 1 and c["done"] == 0, c
    failed = list((root).rglob("*.failed"))
    assert len(failed) == 1
    text = (failed[0] / "failure.txt").read_text()
    assert text.startswith("killed for time") and "SIGUSR1" in text, text


def test_stop_stops_only_the_daemons_it_started(tmp_path):
    # Processes named like the daemons but not started by the script must
    # survive its stop; the ones it started must not.
    decoys = []
    for name in ("munged", "slurmctld", "slurmd"):
        exe = tmp_path / "decoys" / name
        exe.parent.mkdir(exist_ok=True)
        shutil.copy("/bin/sleep", exe)
        decoys.append(subprocess.Popen([str(exe), "300"]))
    d = tmp_path / "cluster"
    try:
        p = slurm_local("start", d, check=False)
        assert p.returncode == 0, p.stdout + p.stderr
        started = {f.stem: int(f.read_text()) for f in d.glob("*.pid")}
        assert {"slurmctld", "slurmd"} <= set(started), started
        assert slurm_local("status", d).returncode == 0
    finally:
        stop = slurm_local("stop", d, check=False)
    try:
        assert stop.returncode == 0, stop.stderr
        for name, pid in started.items():
            assert not Path(f"/proc/{pid}").exists(), f"{name} {pid} still runs"
        for p in decoys:
            assert p.poll() is None, f"{p.args[0]} was stopped"
        assert slurm_local("status", d, check=False).returncode == 1
    finally:
        for p in decoys:
            p.kill()
            p.wait()
