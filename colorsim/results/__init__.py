"""Results: run directories as tidy tables.

Loading and checking a run (``rundata``), the Parquet catalog of every run
below a runs folder, and the comparison of a QEMU run with a gem5 run.
Imports only the layers below: run, describe and the base modules."""
