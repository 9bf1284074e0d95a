#!/usr/bin/env python3
"""Write the web workload's file set (fileset.h) into a directory:
OUTDIR/www/class<c>_<j>, byte i of file k = (k*37 + i*7 + (i >> 10)) mod 256.

    mkfileset.py OUTDIR
"""
import sys
from pathlib import Path


def files():
    for c in range(4):
        for j in range(1, 10):
            k = c * 9 + j - 1
            size = j * 1024 * 10 ** c // 10
            yield f"class{c}_{j}", k, size


def content(k, size):
    return bytes((k * 37 + i * 7 + (i >> 10)) & 0xFF for i in range(size))


def main():
    if len(sys.argv) != 2:
        print("usage: mkfileset.py OUTDIR", file=sys.stderr)
        return 2
    out = Path(sys.argv[1]) / "www"
    out.mkdir(parents=True, exist_ok=True)
    for name, k, size in files():
        (out / name).write_bytes(content(k, size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
