"""Orchestrate: many runs.

Sweeps of an experiment's grid with their executors (local processes,
Dask, Slurm) and worker, and the commands that make a set of runs and
report on them (the timing table, the cross-check with gem5, the README's
headline table).  Imports the layers below: report, results, run, describe
and the base modules; only the command line is above it."""
