"""The suite's own testbed kernel (kernels/), built by SCons."""

from __future__ import annotations

from pathlib import Path

from colorsim.run.kernels.base import KernelKind
from colorsim.describe.runspec import file_sha256


class TestbedKernel(KernelKind):
    name = "testbed"
    tsc_ns = True           # kernels/kernel/wire.c: the TSC, in ns

    def owns(self, variant) -> bool:
        from colorsim.describe.variants import KernelVariant
        return isinstance(variant, KernelVariant)

    def prepare_all(self, specs, progress, plugin: bool = False) -> None:
        from colorsim.run.build import ensure_built
        ensure_built({s.variant.build_id for s in specs}, plugin=plugin,
                     image=any(s.workload.program for s in specs),
                     progress=progress)       # one scons call for all of it

    def identity(self, spec) -> dict:
        # a user program boots with the root file system's image
        return ({"rootfs_sha256": file_sha256(spec.rootfs_image)}
                if spec.workload.program else {})

    def kernel_image(self, spec):
        return spec.kernel_multiboot

    def gem5_kernel(self, spec, cmdline, rootfs_base):
        # gem5 does not trap SSE on CR0.TS (kernels/include/fpu.h)
        k = {"path": str(spec.kernel_elf64), "layout": str(spec.layout_file),
             "cmdline": cmdline + " fpu_eager=1"}
        if spec.workload.program:   # the image, where the kernel finds it
            image = Path(spec.rootfs_image)
            size = image.stat().st_size if image.is_file() else 0
            k["rootfs"] = {"path": str(image), "base": rootfs_base, "size": size}
            k["cmdline"] += f" rootfs_base={rootfs_base:#x} rootfs_size={size}"
        return k
