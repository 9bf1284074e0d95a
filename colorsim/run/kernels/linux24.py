"""The user's Linux 2.4 (x86_64), built from their tree
(colorsim/run/linux24.py), booted as a bzImage with an ext2 initrd."""

from __future__ import annotations

from colorsim.run.kernels.base import KernelKind
from colorsim.describe.runspec import file_sha256


class Linux24Kernel(KernelKind):
    name = "linux24"

    def owns(self, variant) -> bool:
        from colorsim.describe.linux24 import is_linux24
        return is_linux24(variant)

    def check_source(self, spec) -> None:
        from colorsim.describe.linux24 import source_tree
        source_tree()                    # LINUX24_SRC set and a 2.4 tree

    def prepare_all(self, specs, progress, plugin: bool = False) -> None:
        from colorsim.run import linux24
        from colorsim.run.build import build_lock, ensure_built
        from colorsim.run.linux24web import web_initrd
        if plugin:
            ensure_built([], plugin=True, progress=progress)
        with build_lock("linux24", progress):
            for v in {s.variant for s in specs}:
                linux24.prepare(v, progress)
            for arch in {s.variant.arch for s in specs if s.workload.program}:
                web_initrd(progress, arch)    # one image per architecture
            for v, rd in {(s.variant, s.rootfs_image) for s in specs
                          if s.engine == "gem5"}:   # the kernel, its entry, initrd
                from colorsim.run.linux24gem5 import boot_image
                boot_image(v, rd, progress)

    def identity(self, spec) -> dict:
        from colorsim.run import linux24
        src = linux24.source_record(spec.variant)   # the user's tree, by content
        ident = {"rootfs_sha256": file_sha256(spec.rootfs_image),
                 "linux24_source_sha256": src.get("sha256"),
                 "linux24_version": src.get("version")}
        if spec.engine == "gem5":       # what gem5 boots: our entry stub too
            from colorsim.run.linux24gem5 import image_path
            ident["gem5_boot_sha256"] = file_sha256(
                image_path(spec.variant, spec.rootfs_image))
        return ident

    def config(self, spec) -> dict:
        from colorsim.run import linux24web
        # where its web clients run: not the testbed's layout
        if not spec.workload.program:
            return {}
        return {"clients": (linux24web.CLIENTS_PARTITION if spec.workload.client_cpus
                            else linux24web.CLIENTS)}

    def check_output(self, spec, console) -> None:
        from colorsim.describe.linux24 import WEB_PROGRAM
        if spec.workload.program == WEB_PROGRAM:
            from colorsim.run import linux24web
            linux24web.check_web_output(console)

    def gem5_kernel(self, spec, cmdline, rootfs_base):
        from colorsim.run.linux24gem5 import image_path
        # the initrd is inside the image; its place is the stub's
        return {"path": str(image_path(spec.variant, spec.rootfs_image)),
                "layout": str(spec.layout_file), "cmdline": cmdline}

    def built_files(self, spec) -> list:
        from colorsim.run.linux24 import SOURCE_FILE
        from colorsim.run.linux24gem5 import image_path
        # its initrd, and the tree it was built from (and gem5's image)
        files = [spec.rootfs_image, spec.variant.dir / SOURCE_FILE]
        if spec.engine == "gem5":
            files.append(image_path(spec.variant, spec.rootfs_image))
        return files

    def kernel_image(self, spec):
        return spec.kernel_elf64

    def qemu_boot(self, spec, machine, run_dir, cmdline):
        from colorsim.run.linux24 import qemu_args
        return qemu_args(spec.variant, machine, spec.rootfs_image,
                         run_dir / "console.log", cmdline, spec.vcpus)

    def has_compute_unit(self, spec) -> bool:
        # its init (workloads/linux24/l24tasks.c) has its own compute();
        # the web image's programs have none
        return not spec.workload.program
