"""Sweep executors beyond the local pool (colorsim/sweep.py has ``local``).

Every executor runs the same thing: :func:`colorsim.orchestrate.sweep.execute`, which
starts one point's worker process (``python3 -m colorsim.orchestrate.sweepworker``) and
returns its result record.  They differ only in where that call runs.

* ``dask``: dask.distributed.  Without ``COLORSIM_DASK_SCHEDULER`` a
  :class:`LocalCluster` of ``--jobs`` worker processes (one thread each) is
  started and closed with the sweep; with it (``tcp://host:8786``) the sweep
  uses that scheduler, e.g. one dask-jobqueue started on Slurm or PBS.  The
  run directories must be on a file system every worker sees.
* ``slurm``: every point is one batch job (``sbatch``), its worker the job's
  batch shell, so Slurm's wall-time warning (``--signal=B:USR1@N``) reaches
  it and the run is recorded as killed for time.  The sweep process polls
  ``squeue``/``scontrol`` for finished jobs; no accounting daemon is needed.
  ``COLORSIM_SLURM_ARGS`` adds sbatch options (a partition, an account);
  ``COLORSIM_SLURM_TIME`` (minutes) and ``COLORSIM_SLURM_SIGNAL_S`` override
  the wall time (default: the run's timeout) and the warning's lead.
"""

from __future__ import annotations

import math
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from colorsim import ROOT
from colorsim.errors import ConfigError

DASK_SCHEDULER_ENV = "COLORSIM_DASK_SCHEDULER"


class DaskExecutor:
    name = "dask"

    def __init__(self, jobs: int, address: str = None):
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise ConfigError("the dask executor needs dask.distributed: run "
                              "scripts/setup.sh") from None
        pp = os.environ.get("PYTHONPATH", "")
        if str(ROOT) not in pp.split(os.pathsep):      # workers import colorsim
            os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (str(ROOT), pp) if x)
        address = address or os.environ.get(DASK_SCHEDULER_ENV)
        self.cluster = None
        if address:
            self.client = Client(address)
        else:
            self.cluster = LocalCluster(n_workers=jobs, threads_per_worker=1,
                                        processes=True, dashboard_address=None,
                                        silence_logs=40)
            self.client = Client(self.cluster)

    def submit(self, cmd, timeout_s):
        from colorsim.orchestrate.sweep import execute
        # pure=False: a retry of the same command is a new task
        return self.client.submit(execute, cmd, timeout_s, str(ROOT), pure=False)

    def as_completed(self, futures):
        from dask.distributed import as_completed
        return as_completed(futures)

    def close(self):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


class SlurmJob:
    """One submitted point: a job id and the files its worker writes."""

    def __init__(self, job_id: str, out: Path, err: Path):
        self.job_id, self.out, self.err = job_id, out, err
        self.t0 = time.monotonic()
        self.state = None                # JobState once finished

    def result(self) -> dict:
        from colorsim.orchestrate.sweep import parse_result
        out = self.out.read_text(errors="replace") if self.out.is_file() else ""
        err = self.err.read_text(errors="replace") if self.err.is_file() else ""
        state, rc = _job_state(self.job_id)
        res = parse_result(rc, out, err)
        if res["status"] != "done" and state == "TIMEOUT" and res.get("kind") == "crash":
            res = {"status": "failed", "kind": "time-limit",
                   "reason": f"killed for time: Slurm job {self.job_id} reached "
                             f"its wall-time limit before the run ended",
                   "tail": res.get("tail", "")}
        res["seconds"] = round(time.monotonic() - self.t0, 2)
        res["slurm_job"] = self.job_id
        res["executor_pid"] = f"slurm:{self.job_id}"
        return res


def _slurm(*args) -> str:
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        raise ConfigError(f"{' '.join(args[:2])} failed: "
                          f"{(p.stderr or p.stdout).strip().splitlines()[-1:]}")
    return p.stdout


def _job_state(job_id: str) -> tuple:
    """(JobState, exit code) from slurmctld's record of a finished job."""
    p = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True,
                       text=True)
    fields = dict(kv.split("=", 1) for kv in p.stdout.split() if "=" in kv)
    state = fields.get("JobState", "UNKNOWN")
    code = fields.get("ExitCode", "0:0").split(":")
    rc = -int(code[1]) if len(code) > 1 and code[1] != "0" else int(code[0] or 0)
    return state, rc


class SlurmExecutor:
    """Each point a Slurm batch job; results read from the job's files."""

    name = "slurm"
    POLL_S = 1.0

    def __init__(self, jobs, root):
        for tool in ("sbatch", "squeue", "scontrol", "scancel"):
            if not shutil.which(tool):
                raise ConfigError(f"the slurm executor needs {tool} (Debian's "
                                  f"slurm-client) and a running Slurm cluster")
        self.dir = Path(root) / "slurm"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.extra = shlex.split(os.environ.get("COLORSIM_SLURM_ARGS", ""))
        self.live = {}
        _slurm("squeue", "-h", "-o", "%i")          # is a controller there?

    def submit(self, cmd, timeout_s) -> SlurmJob:
        from colorsim.orchestrate.sweep import _env
        minutes = int(os.environ.get("COLORSIM_SLURM_TIME") or
                      max(1, math.ceil(timeout_s / 60)))
        lead = int(os.environ.get("COLORSIM_SLURM_SIGNAL_S") or 60)
        n = len(list(self.dir.glob("job-*.sh")))
        script = self.dir / f"job-{os.getpid()}-{n}.sh"
        env = _env()
        script.write_text(
            "#!/bin/sh\n"
            "# One colorsim sweep point; the worker replaces this shell so that\n"
            "# Slurm's wall-time warning (SIGUSR1) reaches it.\n"
            f"cd {shlex.quote(str(ROOT))}\n"
            f"export PYTHONPATH={shlex.quote(env['PYTHONPATH'])}\n"
            "export COLORSIM_PREBUILT=1\n"
            f"exec {shlex.join(cmd)}\n")
        out, err = script.with_suffix(".out"), script.with_suffix(".err")
        job_id = _slurm("sbatch", "--parsable", "--job-name=colorsim",
                        "--cpus-per-task=1", f"--time={minutes}",
                        f"--signal=B:USR1@{lead}", f"--output={out}",
                        f"--error={err}", *self.extra, str(script)).strip()
        job_id = job_id.split(";")[0]
        job = SlurmJob(job_id, out, err)
        self.live[job_id] = job
        return job

    def as_completed(self, futures):
        waiting = {f.job_id: f for f in futures}
        while waiting:
            queued = set(_slurm("squeue", "-h", "-o", "%i").split())
            for job_id in [j for j in waiting if j not in queued]:
                self.live.pop(job_id, None)
                yield waiting.pop(job_id)
            if waiting:
                time.sleep(self.POLL_S)

    def close(self):
        if self.live:                  # an interrupted sweep: cancel its jobs
            subprocess.run(["scancel", "--signal=TERM", *self.live],
                           capture_output=True)
            self.live.clear()
