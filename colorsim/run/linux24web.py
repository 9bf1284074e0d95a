"""The web and chat workloads on real Linux 2.4: their RAM-disk image and
its checks.

The image (build/linux24/initrd-web.ext2, initrd-web-i386.ext2 for the
i386 kernels) holds /init (workloads/linux24/l24web.c), /bin/web and
/bin/chat (workloads/web/, workloads/chat/: the testbed's programs from the
same sources, chat with its threads as clone() tasks, as LinuxThreads made
them) and the file set under /www (workloads/web/mkfileset.py).  The three
programs are linked with musl as plain static executables, as the task
image's init is: 2.4's ELF loader is older than static-pie.  The task workload's image (initrd.ext2) is
untouched, so runs of it keep their identity.
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
from colorsim.run.linux24 import EXIT_HEADER, build_ramdisk, musl_i386_link

INIT_SOURCE = ROOT / "workloads" / "linux24" / "l24web.c"
WEB_DIR = ROOT / "workloads" / "web"
CHAT_DIR = ROOT / "workloads" / "chat"
# chat built for 2.4 (workloads/chat/): its threads as LinuxThreads made
# them, clone() tasks, and the time of day as its clock (no clock_gettime)
CHAT_FLAGS = ["-DCHAT_LINUX24"]
INCLUDE = ROOT / "workloads" / "include"
# Where a web or chat run's clients are, in its config.json (the testbed's
# runs have theirs on client CPUs outside the measured machine by default).
CLIENTS = ("on the measured CPUs, beside the servers, over loopback: "
           "Linux 2.4 has no client partition")
CLIENTS_PARTITION = ("on client CPUs outside the measured machine, with their own run "
                     "queue and lock (the client partition patch); their packets reach "
                     "the server's cards, whose interrupts the server's CPUs take, and "
                     "the server's theirs (our cards patch), with no wire delay")
MUSL_FLAGS = ["-O2", "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-static",
              "-Wl,--build-id=none"]


def sources() -> list:
    """Every file the image is made from, in a fixed order."""
    return ([INIT_SOURCE, EXIT_HEADER, WEB_DIR / "mkfileset.py", INCLUDE / "m5roi.h"]
            + sorted(WEB_DIR.glob("*.[ch]")) + sorted(CHAT_DIR.glob("*.[ch]")))


def _key(arch: str) -> str:
    h = hashlib.sha256(" ".join(MUSL_FLAGS + CHAT_FLAGS).encode() + arch.encode() + b"\0")
    for p in sources():
        h.update(p.relative_to(ROOT).as_posix().encode() + b"\0"
                 + p.read_bytes() + b"\0")
    return h.hexdigest()


def _cc(out: Path, srcs: list, arch: str = "x86_64", extra: tuple = ()) -> None:
    # -ffile-prefix-map: the checkout's path stays out of the binaries
    flags = [*MUSL_FLAGS, *extra, f"-I{INCLUDE}", f"-ffile-prefix-map={ROOT}=."]
    if arch == "i386":              # the i386 musl, linked by hand
        cmd = musl_i386_link(out, srcs[0])
        i = cmd.index(str(srcs[0]))
        cmd[i:i + 1] = map(str, srcs)
        cmd[1:1] = [f for f in flags if f != "-static"]
    else:
        cmd = ["musl-gcc", *flags, "-o", str(out), *map(str, srcs)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RunError(f"{cmd[0]} {out.name} ({arch}) failed: {r.stderr.strip()[:300]}")


def web_initrd(progress=print, arch: str = "x86_64") -> Path:
    """The web image for ``arch``'s kernels, rebuilt when one of its
    sources changed."""
    def fill(stage: Path) -> None:
        (stage / "bin").mkdir()
        _cc(stage / "init", [INIT_SOURCE], arch)
        _cc(stage / "bin" / "web", sorted(WEB_DIR.glob("*.c")), arch)
        _cc(stage / "bin" / "chat", sorted(CHAT_DIR.glob("*.c")), arch, CHAT_FLAGS)
        r = subprocess.run([sys.executable, str(WEB_DIR / "mkfileset.py"), str(stage)],
                           capture_output=True, text=True)
        if r.returncode:
            raise RunError(f"mkfileset.py failed: {r.stderr.strip()[:200]}")
    return build_ramdisk(web_image(arch), _key(arch), fill, WEB_IMAGE_KIB,
                         f"the linux24 {arch} web initrd (init = l24web, /bin/web, "
                         "/bin/chat, /www)",
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
