#!/usr/bin/env python3
"""Sweep an experiment on Slurm through Dask, for users who run Dask there.

    scripts/sweep-dask-jobqueue.py EXPERIMENT [--quick] [--jobs N]
        [--walltime HH:MM:SS] [--memory 4GiB] [--queue P] [--account A]
        [--runs DIR] [--loopback]

dask-jobqueue (``python3 -m pip install dask-jobqueue``) starts ``--jobs``
Dask workers as Slurm jobs, one single-threaded worker each; the sweep's
points run on them through ``--executor dask``'s path, with the same run
directories, retries and catalog as every other executor.  ``--walltime``
must cover the whole sweep.  ``--loopback`` keeps the scheduler and the
workers on 127.0.0.1 (a cluster on this machine: scripts/slurm-local.sh).
Exit status as ``colorsim sweep``: 0, 1 if points failed or are missing, 2
for bad input.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from colorsim.errors import ConfigError, ResultsError, RunError  # noqa: E402


def main(argv=None) -> int:
    from colorsim.cli import _positive_int
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("experiment", help="an experiment name, or 'all'")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--jobs", type=_positive_int, default=2,
                   help="Dask workers, one Slurm job each (default 2)")
    p.add_argument("--walltime", default="04:00:00",
                   help="each worker job's wall time (default 04:00:00)")
    p.add_argument("--memory", default="4GiB", help="per worker job")
    p.add_argument("--queue", help="Slurm partition")
    p.add_argument("--account", help="Slurm account")
    p.add_argument("--runs", type=Path, default=None,
                   help="runs folder (default runs/), on a file system "
                        "every node sees")
    p.add_argument("--loopback", action="store_true",
                   help="scheduler and workers on 127.0.0.1")
    a = p.parse_args(argv)

    from colorsim.orchestrate.executors import slurm_dask_cluster
    from colorsim.orchestrate.sweep import run_sweep
    options = {k: v for k, v in (("queue", a.queue), ("account", a.account))
               if v}
    if a.loopback:
        options["interface"] = "lo"
    try:
        # bad input is refused before any worker job is submitted
        from colorsim.describe.experiments import load_experiments, select
        from colorsim.run.rundir import check_out_dir
        from colorsim.orchestrate.sweep import runs_root
        select(load_experiments(), a.experiment)
        check_out_dir(runs_root(a.runs))
        cluster = slurm_dask_cluster(a.jobs, walltime=a.walltime,
                                     memory=a.memory, runs=a.runs, **options)
        try:
            c = run_sweep(a.experiment, quick=a.quick, jobs=a.jobs,
                          executor="dask", dask=cluster, root=a.runs)
        finally:
            cluster.close()
    except (ConfigError, RunError, ResultsError) as e:
        print(f"sweep-dask-jobqueue: error: {e}", file=sys.stderr)
        return 2
    return 1 if c["failed"] or c["missing"] else 0


if __name__ == "__main__":
    sys.exit(main())
