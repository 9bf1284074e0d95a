"""The user's Linux 2.4 as one ELF64 that gem5's X86 loader starts (x86_64;
the i386 image is made the same way and boots on the loader stand-in, but
gem5 v24 runs no 32-bit protected-mode kernel: docs/linux24.md).

gem5 loads a kernel ELF's segments at their physical addresses and enters
it in 64-bit long mode; 2.4's vmlinux expects its real-mode setup code to
have run and to be entered in 32-bit mode (kernels/linux24/gem5-entry.S says
what its entry stub does instead).  The boot image holds three things:

- the entry stub, linked at ``ENTRY_BASE``, with the initrd's place and size
  in its slots; its address is the ELF's entry point;
- vmlinux's loadable segments at their physical addresses (2.4 links them at
  the kernel map's base + physical: 0xffffffff80000000 on x86_64, whose
  vmlinux is an ELF64, 0xC0000000 on i386, whose vmlinux is an ELF32);
- the ext2 initrd at ``INITRD_BASE``, which the kernel takes as /dev/ram0
  once the stub has written its place into the zero page, as a boot loader
  would.

Nothing here is Linux code: the stub is ours, the rest is the user's build
copied byte for byte.  The image is written next to the build, named after
its initrd, and made again only when the stub, the kernel or the initrd
changed.
"""

from __future__ import annotations

import hashlib
import struct
import subprocess
import tempfile
from pathlib import Path

from colorsim import ROOT
from colorsim.errors import RunError
from colorsim.describe.linux24 import ARCH

ENTRY_SOURCE = ROOT / "kernels" / "linux24" / "gem5-entry.S"
# Free low memory on gem5's X86Board: its boot page tables and GDT end at
# 0x77000, the command line and zero page start at 0x90000.
ENTRY_BASE = 0x80000
ENTRY_MAGIC = b"C24GEM5\0"
# Far above the kernel image and its boot-time allocations, below the
# smallest machine's memory (the testbed's programs' root file system sits
# at the same place on gem5).
INITRD_BASE = 0x8000000
PT_LOAD = 1


def load_segments(elf: bytes) -> tuple:
    """(entry, [(paddr, data, memsz, flags)]) of a little-endian ELF's
    PT_LOAD segments (ELF64 or ELF32), their addresses as the file gives
    them."""
    if elf[:4] != b"\x7fELF" or elf[4] not in (1, 2) or elf[5] != 1:
        raise RunError("not a little-endian ELF64 or ELF32 image")
    if elf[4] == 2:
        entry, phoff = struct.unpack_from("<QQ", elf, 0x18)
        phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
        fields = "<IIQQQQQQ"
    else:
        entry, phoff = struct.unpack_from("<II", elf, 0x18)
        phentsize, phnum = struct.unpack_from("<HH", elf, 0x2A)
        fields = "<IIIIIII"        # type, offset, vaddr, paddr, filesz, memsz, flags
    segs = []
    for i in range(phnum):
        v = struct.unpack_from(fields, elf, phoff + i * phentsize)
        if elf[4] == 2:
            ptype, flags, off, _vaddr, paddr, filesz, memsz = v[:7]
        else:
            ptype, off, _vaddr, paddr, filesz, memsz, flags = v
        if ptype == PT_LOAD and memsz:
            segs.append((paddr, elf[off:off + filesz], memsz, flags))
    return entry, segs


def write_elf(path: Path, entry: int, segs: list) -> None:
    """An ELF64 executable of ``segs`` (paddr = vaddr, 4 KiB aligned in the
    file), nothing else: no sections, no symbols."""
    ehsize, phsize = 64, 56
    off = -(-(ehsize + phsize * len(segs)) // 4096) * 4096
    headers, body = [], bytearray()
    for paddr, data, memsz, flags in segs:
        pad = (-(off + len(body)) + paddr) % 4096   # offset = address mod 4 KiB
        body += bytes(pad)
        headers.append(struct.pack("<IIQQQQQQ", PT_LOAD, flags, off + len(body),
                                   paddr, paddr, len(data), memsz, 4096))
        body += data
    eh = struct.pack("<4sBBBBB7sHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0,
                     bytes(7), 2, 0x3e, 1, entry, ehsize, 0, 0, ehsize,
                     phsize, len(segs), 64, 0, 0)
    head = eh + b"".join(headers)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(head + bytes(off - len(head)) + bytes(body))
    tmp.replace(path)


def entry_stub(initrd_size: int, arch: str = "x86_64") -> bytes:
    """The stub for ``arch`` assembled and linked at ENTRY_BASE, its slots
    filled."""
    defines = ["-DLINUX24_I386"] if arch == "i386" else []
    with tempfile.TemporaryDirectory() as d:
        obj, out = Path(d) / "entry.o", Path(d) / "entry.bin"
        for cmd in (["gcc", "-c", *defines, "-o", str(obj), str(ENTRY_SOURCE)],
                    ["ld", "-Ttext", f"{ENTRY_BASE:#x}", "--oformat", "binary",
                     "-e", "_start", "-o", str(out), str(obj)]):
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                raise RunError(f"{' '.join(cmd[:2])} failed on {ENTRY_SOURCE.name}: "
                               f"{r.stderr.strip()[:300]}")
        code = bytearray(out.read_bytes())
    at = code.find(ENTRY_MAGIC)
    if at != 8:
        raise RunError(f"{ENTRY_SOURCE.name}: its slots are not at offset 8")
    struct.pack_into("<QQ", code, at + 8, INITRD_BASE, initrd_size)
    return bytes(code)


def image_path(b, initrd: Path) -> Path:
    """Where the gem5 boot image of build ``b`` with ``initrd`` lives."""
    return b.dir / f"gem5-boot-{Path(initrd).stem}.elf"


def boot_image(b, initrd: Path, progress=print) -> Path:
    """The gem5 boot image of build ``b`` (its vmlinux) with ``initrd``,
    made again when the kernel, the initrd or the stub's source changed."""
    vmlinux = b.dir / "vmlinux"
    kernel, rd = vmlinux.read_bytes(), Path(initrd).read_bytes()
    arch = b.arch
    h = hashlib.sha256(arch.encode())
    for part in (ENTRY_SOURCE.read_bytes(), kernel, rd):
        h.update(hashlib.sha256(part).digest())
    path = image_path(b, initrd)
    made = path.with_name(path.name + ".sha256")
    if path.is_file() and made.is_file() and made.read_text().strip() == h.hexdigest():
        return path
    progress(f"build: {path.name} (gem5's boot image of {b.build_id})")
    _, segs = load_segments(kernel)
    base = ARCH[arch].kernel_base
    if (kernel[4] == 2) != (arch == "x86_64"):
        raise RunError(f"{vmlinux} is an ELF{64 if kernel[4] == 2 else 32}: "
                       f"not an {arch} vmlinux")
    phys = []
    for vaddr, data, memsz, flags in segs:
        if vaddr < base:
            raise RunError(f"{vaddr:#x}: {vmlinux} has a segment outside "
                           f"2.4's kernel map; not an {arch} 2.4 vmlinux?")
        phys.append((vaddr - base, data, memsz, flags))
    end = max(p + m for p, _, m, _ in phys)
    if end > INITRD_BASE:
        raise RunError(f"{vmlinux} reaches {end:#x}, past the initrd's place "
                       f"{INITRD_BASE:#x}")
    stub = entry_stub(len(rd), arch)
    segs = [(ENTRY_BASE, stub, len(stub), 7)] + phys + [(INITRD_BASE, rd, len(rd), 6)]
    write_elf(path, ENTRY_BASE, segs)
    made.write_text(h.hexdigest() + "\n")
    return path
