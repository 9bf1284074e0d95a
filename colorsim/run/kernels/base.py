"""The interface every kernel kind implements (colorsim/run/kernels)."""

from __future__ import annotations

from pathlib import Path


def loop_ranges(layout: dict) -> list:
    """The run-queue loop's instruction ranges ``[[lo, hi), ...]`` that a
    kernel's layout.json names, as one range or a list of them (the
    testbed's loop is one range; Linux's inlined walk is several)."""
    rq = layout["ranges"]["rqloop"]
    return [list(r) for r in (rq if isinstance(rq[0], list) else [rq])]


class KernelKind:
    """What the runner, the QEMU engine and the sweep need of a kernel."""

    name = "?"
    # Whether the kernel reads the TSC as nanoseconds of guest time (QEMU's
    # -icount clock), so that gem5 must give every core a TSC in ns; a
    # kernel that calibrates its TSC (Linux) counts the core's cycles.
    tsc_ns = False

    def owns(self, variant) -> bool:
        """Whether ``variant`` is a kernel of this kind."""
        raise NotImplementedError

    def check_source(self, spec) -> None:
        """Refuse, before anything runs, a run whose kernel cannot be
        built here (Linux 2.4 without the user's tree)."""

    def prepare(self, spec, progress) -> None:
        """Build what one run of ``spec`` boots (its kernel, its image), and
        the bus-monitor plugin for a QEMU run."""
        self.prepare_all([spec], progress, plugin=spec.engine == "qemu")

    def prepare_all(self, specs, progress, plugin: bool = False) -> None:
        """Build, once, what every run of ``specs`` (all of this kind)
        boots, and with ``plugin`` the bus-monitor plugin: a sweep's
        builds."""
        raise NotImplementedError

    def built_files(self, spec) -> list:
        """The files, beyond the kernel and the engine's, that must exist
        for a run's identity to be computed without building."""
        return []

    def identity(self, spec) -> dict:
        """Entries of a run's identity beyond the kernel and the engine:
        what else the result depends on."""
        raise NotImplementedError

    def config(self, spec) -> dict:
        """Entries of a run's config.json that differ by kind."""
        return {}

    def check_output(self, spec, console: Path) -> None:
        """Refuse a finished run whose console does not show a complete
        workload (raise ResultsError)."""

    def kernel_image(self, spec) -> Path:
        """The file QEMU boots."""
        raise NotImplementedError

    def qemu_boot(self, spec, machine, run_dir: Path, cmdline: str):
        """QEMU's options to boot this kernel, or None: the QEMU engine's
        own multiboot command line (the testbed's)."""
        return None

    def gem5_kernel(self, spec, cmdline: str, rootfs_base: int) -> dict:
        """gem5_spec.json's ``kernel`` entry: the ELF64 gem5's X86 loader
        starts (``path``), the run's ``layout`` and ``cmdline``, and for a
        user program its root file system raw in memory (``rootfs``)."""
        raise NotImplementedError

    def has_compute_unit(self, spec) -> bool:
        """Whether the booted workload has the built-in ``compute`` loop,
        the bus monitor's unit of work."""
        return True
