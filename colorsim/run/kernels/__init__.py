"""Kernel kinds: what a run needs from the kind of kernel it boots.

A run boots either the suite's testbed kernel (kernels/, built by SCons) or
the user's Linux 2.4 (colorsim/run/linux24.py, built from their tree).  The
two differ in how they are built, what goes into a run's identity, how QEMU
boots them and what their console must show; each kind says so behind one
interface (:class:`KernelKind`), the way ``run/engines/`` does for engines,
so that the runner, the QEMU engine and the sweep ask the kind instead of
testing which kernel it is, and a new kind (Linux 2.4 on i386) is one more
module here.  :func:`kind_of` gives a variant's kind.
"""

from colorsim.run.kernels.base import KernelKind
from colorsim.run.kernels.linux24 import Linux24Kernel
from colorsim.run.kernels.testbed import TestbedKernel

KINDS = (TestbedKernel(), Linux24Kernel())


def kind_of(variant) -> KernelKind:
    """The kind of kernel ``variant`` (a parse_variant result) is."""
    for k in KINDS:
        if k.owns(variant):
            return k
    raise TypeError(f"no kernel kind for {variant!r}")


__all__ = ["KINDS", "KernelKind", "Linux24Kernel", "TestbedKernel", "kind_of"]
