"""The web workload on real Linux 2.4: its RAM-disk image and its checks.

The image (build/linux24/initrd-web.ext2) holds /init
(workloads/linux24/l24web.c), /bin/web (workloads/web/, the testbed's
program from the same sources) and the file set under /www
(workloads/web/mkfileset.py).  Both are linked by musl-gcc as plain static
executables, as the task image's init is: 2.4's ELF loader is older than
static-pie.  The task workload's image (initrd.ext2) is untouched, so runs
of it keep their identity.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

from colorsim import ROOT
from colorsim.describe.linux24 import WEB_IMAGE_KIB, web_image
from colorsim.errors import RunError
from colorsim.run.linux24 import EXIT_HEADER, build_ramdisk

INIT_SOURCE = ROOT / "workloads" / "linux24" / "l24web.c"
WEB_DIR = ROOT / "workloads" / "web"
INCLUDE = ROOT / "workloads" / "include"
IMAGE = web_image()
# Where a web run's clients are, in its config.json (the testbed's web runs
# have theirs on client CPUs outside the measured machine by default).
CLIENTS = ("on the measured CPUs, beside the servers, over loopback: "
           "Linux 2.4 has no client partition")
MUSL_FLAGS = ["-O2", "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-static",
              "-Wl,--build-id=none"]


def sources() -> list:
    """Every file the image is made from, in a fixed order."""
    return ([INIT_SOURCE, EXIT_HEADER, WEB_DIR / "mkfileset.py", INCLUDE / "m5roi.h"]
            + sorted(WEB_DIR.glob("*.[ch]")))


def _key() -> str:
    h = hashlib.sha256(" ".join(MUSL_FLAGS).encode() + b"\0")
    for p in sources():
        h.update(p.relative_to(ROOT).as_posix().encode() + b"\0"
                 + p.read_bytes() + b"\0")
    return h.hexdigest()


def _cc(out: Path, srcs: list) -> None:
    # -ffile-prefix-map: the checkout's path stays out of the binaries
    r = subprocess.run(["musl-gcc", *MUSL_FLAGS, f"-I{INCLUDE}",
                        f"-ffile-prefix-map={ROOT}=.", "-o", str(out),
                        *map(str, srcs)], capture_output=True, text=True)
    if r.returncode:
        raise RunError(f"musl-gcc {out.name} failed: {r.stderr.strip()[:300]}")


def web_initrd(progress=print) -> Path:
    """The web image, rebuilt when one of its sources changed."""
    def fill(stage: Path) -> None:
        (stage / "bin").mkdir()
        _cc(stage / "init", [INIT_SOURCE])
        _cc(stage / "bin" / "web", sorted(WEB_DIR.glob("*.c")))
        r = subprocess.run([sys.executable, str(WEB_DIR / "mkfileset.py"), str(stage)],
                           capture_output=True, text=True)
        if r.returncode:
            raise RunError(f"mkfileset.py failed: {r.stderr.strip()[:200]}")
    return build_ramdisk(IMAGE, _key(), fill, WEB_IMAGE_KIB,
                         "the linux24 web initrd (init = l24web, /bin/web, /www)",
                         progress)


WEB_OK = re.compile(r"^web: ok \((\d+) requests, (\d+) bytes, every byte verified;",
                    re.M)
WEB_ROI = re.compile(r"^web: roi (\d+) requests \(completed (\d+)\.\.(\d+)\) "
                     r"in (-?[0-9.]+) s$", re.M)


def check_web_output(console: Path) -> None:
    """A web run on 2.4 is complete only if the program verified every
    response and counted a region of at least one request in a positive
    time: the same words the testbed's runs are judged by
    (runner._check_program_finished), and the region's own line."""
    text = console.read_text(errors="replace") if console.is_file() else ""
    fails = [line for line in text.splitlines() if "web: FAIL" in line]
    if fails:
        raise RuntimeError(f"/bin/web failed: {fails[-1][:160]}")
    if not WEB_OK.search(text):
        raise RuntimeError("/bin/web did not report its requests verified "
                           "(no 'web: ok' line on the console)")
    m = WEB_ROI.findall(text)
    if not m or int(m[-1][0]) < 1 or not float(m[-1][3]) > 0:
        raise RuntimeError("/bin/web's region of interest holds no requests "
                           "or no time (its 'web: roi' line: "
                           f"{m[-1] if m else 'missing'})")
