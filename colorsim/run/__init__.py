"""Run: make one run and collect its results into a run directory.

Building the kernel and plugin, the engines (QEMU with the bus monitor,
gem5), the run directory with its manifest, a run's identity, and the
runner that ties them together.  Parsers of what the engines write (the
console, ``stats.txt``) live here too.  Imports only the layers below:
describe and the base modules."""
