"""The Slurm executor on a real single-node Slurm cluster.

The fixture starts a private slurmctld and slurmd (Debian's slurm-wlm, no
accounting daemon) with a configuration of its own in a temporary folder,
and munged if it is not running; it stops what it started.
"""

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from colorsim.orchestrate.sweep import run_sweep

from test_sweep import HUNG, QUIET, catalog_bytes, exps  # noqa: F401

SLURM_CONF = """\
ClusterName=colorsimtest
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
MinJobAge=600
KillWait=10
NodeName={host} CPUs={cpus} RealMemory={mem_mb} State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pid(path: Path):
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    for tool in ("slurmctld", "slurmd", "sbatch", "munged"):
        assert shutil.which(tool), f"{tool} missing: scripts/setup.sh installs slurm-wlm"
    d = tmp_path_factory.mktemp("slurm")
    (d / "state").mkdir()
    (d / "spool").mkdir()
    mem_kb = int(next(line.split()[1] for line in open("/proc/meminfo")
                      if line.startswith("MemTotal")))
    conf = d / "slurm.conf"
    conf.write_text(SLURM_CONF.format(
        host=socket.gethostname().split(".")[0], ctld_port=_free_port(),
        d_port=_free_port(), d=d, cpus=os.cpu_count(),
        mem_mb=mem_kb // 1024 - 1024))
    started_munge = None
    if subprocess.run(["pgrep", "-x", "munged"], capture_output=True).returncode:
        Path("/run/munge").mkdir(exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        subprocess.run(["su", "-s", "/bin/sh", "munge", "-c", "munged"], check=True)
        started_munge = True
    env = dict(os.environ, SLURM_CONF=str(conf))
    subprocess.run(["slurmctld", "-f", str(conf)], env=env, check=True)
    subprocess.run(["slurmd", "-f", str(conf)], env=env, check=True)
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end:
            p = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
            if p.stdout.strip() == "idle":
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the test Slurm node never became idle: {p.stdout} {p.stderr}\n"
                        + (d / "slurmctld.log").read_text()[-2000:])
        yield d
    finally:
        for name in ("slurmd.pid", "slurmctld.pid"):
            pid = _pid(d / name)
            if pid:
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        if started_munge:
            subprocess.run(["pkill", "-x", "munged"])
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old


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
