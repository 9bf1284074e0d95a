"""Sweep executors beyond the local pool (colorsim/sweep.py has ``local``).

Every executor runs the same thing: :func:`colorsim.sweep.execute`, which
starts one point's worker process (``python3 -m colorsim.sweepworker``) and
returns its result record.  They differ only in where that call runs.

* ``dask``: dask.distributed.  Without ``COLORSIM_DASK_SCHEDULER`` a
  :class:`LocalCluster` of ``--jobs`` worker processes (one thread each) is
  started and closed with the sweep; with it (``tcp://host:8786``) the sweep
  uses that scheduler, e.g. one dask-jobqueue started on Slurm or PBS.  The
  run directories must be on a file system every worker sees.
* ``slurm``: not implemented yet; refused with a one-line message.
"""

from __future__ import annotations

import os

from . import ROOT
from .errors import ConfigError

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
        from .sweep import execute
        # pure=False: a retry of the same command is a new task
        return self.client.submit(execute, cmd, timeout_s, str(ROOT), pure=False)

    def as_completed(self, futures):
        from dask.distributed import as_completed
        return as_completed(futures)

    def close(self):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


class SlurmExecutor:
    name = "slurm"

    def __init__(self, jobs, root):
        raise ConfigError("the slurm executor is not implemented yet; use "
                          "--executor dask with a dask-jobqueue scheduler "
                          f"(${DASK_SCHEDULER_ENV}) on a Slurm cluster")
