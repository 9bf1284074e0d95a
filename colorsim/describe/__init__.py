"""Describe: what to run, as data.

Machines (``configs/machines.toml``), kernel variants, one run's
specification, and experiments (``configs/experiments.toml``) as grids of
run specifications.  Imports only the base modules (``colorsim.errors``,
``colorsim.units``)."""
