"""The suite's kernels and root-file-system image as gem5 resources.

gem5's standard library finds kernels and disk images through resource
descriptions (gem5-resources' JSON: category, id, architecture, md5sum,
url, ...); with ``GEM5_RESOURCE_JSON=FILE`` it reads a local list instead of
the online one.  ``colorsim build --resources FILE`` writes such a list
for what it built: each testbed kernel variant (``kernel``) and the image
(``disk-image``), as ``file://`` URLs with their MD5, so a gem5 user can
name them with ``obtain_resource("colorsim-kernel-c32-b17-l32")``.
"""

from __future__ import annotations

import json
from pathlib import Path

from colorsim import BUILD
from colorsim.describe.runspec import file_digest

GEM5_VERSIONS = ["24.0"]
VERSION = "1.0.0"


def _entry(category: str, rid: str, path: Path, what: str) -> dict:
    return {"category": category, "id": rid, "description": what,
            "architecture": "X86", "is_zipped": False, "md5sum": file_digest(path, "md5"),
            "url": path.resolve().as_uri(), "source": "colorsim",
            "resource_version": VERSION, "gem5_versions": GEM5_VERSIONS}


def resources(build_ids) -> list:
    """The resource entries of the built kernel variants ``build_ids`` and,
    when built, the root-file-system image."""
    out = []
    for bid in sorted(build_ids):
        elf = BUILD / "kernels" / bid / "kernel.elf"
        if elf.is_file():
            out.append(_entry("kernel", f"colorsim-kernel-{bid}", elf,
                              f"colorsim testbed kernel {bid} (Linux 2.4 "
                              f"scheduler model), 64-bit ELF for gem5's "
                              f"X86 loader"))
    image = BUILD / "disk-images" / "rootfs.img"
    if image.is_file():
        out.append(_entry("disk-image", "colorsim-rootfs", image,
                          "colorsim root-file-system image: /init and /bin/* "
                          "(web, chat, tests); no partitions"))
    return out


def write_resources(path: Path, build_ids) -> list:
    entries = resources(build_ids)
    Path(path).write_text(json.dumps(entries, indent=2) + "\n")
    return entries
