#!/usr/bin/env python3
"""Build a CSRFS root-file-system image (format: disk-images/README.md).

    mkrootfs.py -o rootfs.img [--pattern /path:SIZE] /dst=src ...

Entries are sorted by path, every mtime is the same fixed date, and data
blocks are 4 KiB aligned and zero padded, so the same inputs always give
the same bytes.  Bad input: one line on stderr, exit status 2.
"""

import argparse
import os
import struct
import sys

MAGIC = b"CSRFS\0\0\1"
ENTRY = 128
NAME_MAX = 96
MTIME = 1023667200            # 2002-06-10, the guest's clock base
ALIGN = 4096


def fail(msg):
    print(f"mkrootfs: {msg}", file=sys.stderr)
    sys.exit(2)


def pattern(size):
    """byte i = (i * 7 + 3) & 0xff: checked by workloads/tests/filetest.c"""
    return bytes((i * 7 + 3) & 0xff for i in range(size))


def read_entries(a):
    files = {}
    for spec in a.files:
        dst, sep, src = spec.partition("=")
        if not sep or not dst.startswith("/") or len(dst.encode()) >= NAME_MAX:
            fail(f"bad entry {spec!r}: want /path=host-file, path < {NAME_MAX} bytes")
        if dst in files:
            fail(f"{dst} given twice")
        try:
            with open(src, "rb") as f:
                data = f.read()
            mode = 0o100755 if os.access(src, os.X_OK) else 0o100644
        except OSError as e:
            fail(f"cannot read {src}: {e.strerror}")
        files[dst] = (mode, data)
    for spec in a.pattern or []:
        dst, sep, size = spec.partition(":")
        if not sep or not size.isdigit() or not dst.startswith("/"):
            fail(f"bad --pattern {spec!r}: want /path:SIZE")
        files[dst] = (0o100644, pattern(int(size)))
    if not files:
        fail("no files given")
    return files


def image(files):
    names = sorted(files)
    off = -(-(16 + ENTRY * len(names)) // ALIGN) * ALIGN
    table, blobs = [], []
    for name in names:
        mode, data = files[name]
        table.append(struct.pack("<96sIIQQQ", name.encode(), mode, 0,
                                 len(data), off, MTIME))
        pad = -len(data) % ALIGN
        blobs.append(data + b"\0" * pad)
        off += len(data) + pad
    head = MAGIC + struct.pack("<II", len(names), 0) + b"".join(table)
    head += b"\0" * (-len(head) % ALIGN)
    return head + b"".join(blobs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--pattern", action="append")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    data = image(read_entries(a))
    tmp = a.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
